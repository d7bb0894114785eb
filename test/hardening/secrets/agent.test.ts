/**
 * Secrets suite, in process: the agent (startAgent on the production edges and logger) through the scenario's
 * failures; no log line, status event, failure reason or error it produces may hold a planted secret.
 */
import { waitFor } from '../../../src/testing/wait';
import { useAgentHarness } from '../../helpers/agent-harness';
import { useHttpServers } from '../../helpers/http-servers';
import { SecretScan } from '../../helpers/secrets';
import { secretsScenario } from './scenario';

const start = useAgentHarness();
const serve = useHttpServers();

/** The harness's timeouts are 10 s: the hanging download is the real process's case (cli.test.ts). */
const slowCases = ['hang'];

describe('secrets in what the in-process agent produces', () => {
  it('keeps every planted secret out of log lines, status events and failure reasons', async () => {
    const scenario = await secretsScenario(serve);
    const outcomes = Object.entries(scenario.outcomes).filter(([model]) => !slowCases.includes(model));
    const h = await start({ env: scenario.env, models: scenario.modelsJson(slowCases) });
    await h.waitForReady();
    for (const [model, outcome] of outcomes) {
      expect([model, h.lastStatus(model)?.phase, h.lastStatus(model)?.errorKind]).toEqual([
        model,
        outcome.phase,
        outcome.errorKind,
      ]);
    }
    for (const [i, text] of scenario.badConfigs.entries()) {
      h.write(text);
      await waitFor(() => h.sink.withMessage('config rejected').length > i, 10_000, `bad config ${i}`);
    }

    // What an operator or a status document sees of an event: everything but the spec, which is the config itself.
    const shown = h.events.map((event) =>
      event._tag === 'Status' ? { ...event.status, spec: undefined } : event,
    );
    const reasons = h.events.flatMap((e) =>
      e._tag === 'Status' && e.status.reason ? [e.status.reason] : [],
    );
    expect(reasons.length).toBeGreaterThanOrEqual(outcomes.filter(([, o]) => o.phase === 'Failed').length);
    const scan = new SecretScan(scenario.secrets).add('log lines', h.sink.lines).add('status events', shown);
    expect(scan.size.texts).toBeGreaterThan(100);
    scan.expectNoLeaks();
  });
});
