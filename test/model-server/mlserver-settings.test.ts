/**
 * mlserverSettingsVet: MLServer reads every model-settings.json of its repository (a recursive glob, hidden dirs
 * skipped), and serves each as the model its "name" (or its folder's name) says. A model's files holding one for
 * another model are refused before the server can see them; its own, anywhere, and files MLServer skips pass.
 */
import type { ModelName } from '../../src/core/model-name';
import { mlserverSettingsVet } from '../../src/model-server/mlserver-settings';
import type { ModelFiles } from '../../src/ports';
import { effectError } from '../helpers/effect-error';

const good = 'good' as ModelName;

/** ModelFiles over texts by relative path, recording what was read. */
const filesOf = (texts: Readonly<Record<string, string>>): ModelFiles & { readonly reads: string[] } => {
  const reads: string[] = [];
  return {
    reads,
    sizes: new Map(Object.entries(texts).map(([path, text]) => [path, Buffer.byteLength(text)])),
    read: (path, maxBytes) => {
      reads.push(path);
      const bytes = Buffer.from(texts[path] ?? '');
      if (bytes.length > maxBytes) return Promise.reject(new Error(`${path} is over ${maxBytes} bytes`));
      return Promise.resolve(bytes);
    },
  };
};

const settings = (fields: Record<string, unknown> = {}): string =>
  JSON.stringify({ implementation: 'mlserver_sklearn.SKLearnModel', ...fields });

describe('mlserverSettingsVet', () => {
  it('refuses a nested model-settings.json naming another model, naming the file and the model', async () => {
    const error = await effectError(
      mlserverSettingsVet(
        good,
        filesOf({
          'model-settings.json': settings(),
          'extra/model-settings.json': settings({ name: 'victim' }),
        }),
      ),
    );
    expect(error).toMatchObject({ kind: 'refused', retryable: false });
    expect(error.message).toContain('model "good": its files hold extra/model-settings.json');
    expect(error.message).toContain('MLServer would take for the model "victim"');
  });

  it('refuses a nested one without a name in a folder named otherwise: MLServer names it after its folder', async () => {
    const error = await effectError(
      mlserverSettingsVet(good, filesOf({ 'a/victim/model-settings.json': settings({ name: '' }) })),
    );
    expect(error.message).toContain('its files hold a/victim/model-settings.json');
    expect(error.message).toContain('for the model "victim"');
  });

  it('refuses one at the top naming another model, as the check before a load says it', async () => {
    const error = await effectError(
      mlserverSettingsVet(good, filesOf({ 'model-settings.json': settings({ name: 'victim' }) })),
    );
    expect(error).toMatchObject({ kind: 'refused', retryable: false });
    expect(error.message).toContain(
      'the config names the model "good" but its model-settings.json names it "victim"',
    );
  });

  it('passes its own settings anywhere: named after it, or unnamed at the top or in a folder of its name', async () => {
    const files = filesOf({
      'model-settings.json': settings(),
      'v2/model-settings.json': settings({ name: 'good' }),
      'x/good/model-settings.json': settings(),
      'model.joblib': 'bytes',
    });
    await expect(mlserverSettingsVet(good, files)).resolves.toBeUndefined();
    expect(files.reads.sort()).toEqual([
      'model-settings.json',
      'v2/model-settings.json',
      'x/good/model-settings.json',
    ]);
  });

  it('passes what MLServer skips: hidden dirs, other file names, no JSON object, a name that is no string', async () => {
    const files = filesOf({
      '.git/model-settings.json': settings({ name: 'victim' }),
      'a/.cache/b/model-settings.json': settings({ name: 'victim' }),
      'other/model-settings.json.bak': settings({ name: 'victim' }),
      'x/model-settings.json': '{"name": "victim"',
      'y/model-settings.json': '["victim"]',
      'z/model-settings.json': settings({ name: 7 }),
    });
    await expect(mlserverSettingsVet(good, files)).resolves.toBeUndefined();
    expect(files.reads.sort()).toEqual([
      'x/model-settings.json',
      'y/model-settings.json',
      'z/model-settings.json',
    ]);
  });

  it('refuses a model-settings.json it cannot read to the end (past 1 MiB): MLServer would read it', async () => {
    const huge = settings({ name: 'victim', pad: 'x'.repeat(1024 * 1024) });
    const error = await effectError(mlserverSettingsVet(good, filesOf({ 'deep/model-settings.json': huge })));
    expect(error).toMatchObject({ kind: 'refused', retryable: false });
    expect(error.message).toContain('its deep/model-settings.json could not be read to be vetted');
  });

  it('quotes a hostile name escaped and cut', async () => {
    const name = `x\n{"level":50}${'y'.repeat(500)}`;
    const error = await effectError(
      mlserverSettingsVet(good, filesOf({ 'e/model-settings.json': settings({ name }) })),
    );
    expect(error.message).toContain(String.raw`"x\n{\"level\":50}yyy`);
    expect(error.message).not.toContain('y'.repeat(201));
  });
});
