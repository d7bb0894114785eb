/**
 * The Dockerfile lint run by `npm test` (there is no container engine here, and hadolint is in no registry we
 * reach): dockerfile-utils' validator (syntax, arguments, JSON forms, absolute WORKDIR, one CMD/ENTRYPOINT/
 * HEALTHCHECK) and our rules on top, read from dockerfile-ast's parse.
 */
import { Copy, DockerfileParser, From, Healthcheck, JSONInstruction, type Instruction } from 'dockerfile-ast';
import { validate, ValidationSeverity } from 'dockerfile-utils';

/** One stage: its FROM and the instructions up to the next FROM. */
interface Stage {
  readonly from: From;
  readonly name: string | null;
  readonly image: string;
  readonly instructions: ReadonlyArray<Instruction>;
}

const lineOf = (instruction: Instruction): number => instruction.getRange().start.line + 1;
const words = (instruction: Instruction): string[] =>
  instruction.getExpandedArguments().map((argument) => argument.getValue());
const ofKind = (stage: Stage, keyword: string): Instruction[] =>
  stage.instructions.filter((instruction) => instruction.getKeyword() === keyword);

const stagesOf = (text: string): Stage[] => {
  const stages: Array<{ from: From; instructions: Instruction[] }> = [];
  for (const instruction of DockerfileParser.parse(text).getInstructions()) {
    if (instruction instanceof From) stages.push({ from: instruction, instructions: [] });
    else stages.at(-1)?.instructions.push(instruction);
  }
  return stages.map(({ from, instructions }) => ({
    from,
    name: from.getBuildStage(),
    image: words(from)[0] ?? '',
    instructions,
  }));
};

const secretName = /TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|API_?KEY|PRIVATE_?KEY|ACCESS_?KEY/i;

const baseImageProblems = (stages: ReadonlyArray<Stage>, nodeVersion: string): string[] =>
  stages.flatMap((stage, index) => {
    if (stages.slice(0, index).some((earlier) => earlier.name === stage.image)) return [];
    const [, tag] = /^[^@]*?(?::([^:/@]+))?(?:@sha256:[0-9a-f]{64})?$/.exec(stage.image) ?? [];
    const pinned = tag !== undefined || stage.image.includes('@sha256:');
    if (!pinned || tag === 'latest')
      return [
        `line ${lineOf(stage.from)}: base image ${stage.image} is not pinned to a tag or digest (nor latest)`,
      ];
    return stage.image.startsWith(`node:${nodeVersion}-`)
      ? []
      : [
          `line ${lineOf(stage.from)}: base image ${stage.image} is not Node ${nodeVersion}, which the tests run on`,
        ];
  });

const userProblems = (runtime: Stage): string[] => {
  const user = ofKind(runtime, 'USER').at(-1);
  if (user === undefined) return ['the runtime stage sets no USER: it would run as root'];
  const [uid, gid] = (words(user)[0] ?? '').split(':');
  if (!/^\d+$/.test(uid ?? '') || !/^\d+$/.test(gid ?? ''))
    return [`line ${lineOf(user)}: USER must be numeric uid:gid (runAsNonRoot cannot check a name)`];
  return Number(uid) === 0 ? [`line ${lineOf(user)}: USER 0 is root`] : [];
};

const entrypointProblems = (runtime: Stage): string[] => {
  const entrypoint = ofKind(runtime, 'ENTRYPOINT').at(-1);
  const json =
    entrypoint instanceof JSONInstruction ? entrypoint.getJSONStrings().map((s) => s.getJSONValue()) : [];
  // Node.js flags may stand between node and the script (src/command/node-flags.ts).
  const flags = json.slice(1, -1);
  return json[0] === 'node' &&
    json.at(-1) === '/app/dist/cli.js' &&
    flags.every((flag) => flag.startsWith('--'))
    ? []
    : [
        'ENTRYPOINT must be the exec form ["node", <node flags>, "/app/dist/cli.js"] (a shell would not pass on SIGTERM)',
      ];
};

const healthcheckProblems = (runtime: Stage): string[] => {
  const healthcheck = ofKind(runtime, 'HEALTHCHECK').at(-1);
  if (!(healthcheck instanceof Healthcheck)) return ['the runtime stage has no HEALTHCHECK'];
  const command = healthcheck.getRawArgumentsContent()?.replace(/^.*?\bCMD\s+/s, '') ?? '';
  const parsed = ((): unknown => {
    try {
      return JSON.parse(command.replace(/\\\n/g, ' '));
    } catch {
      return undefined;
    }
  })();
  if (!Array.isArray(parsed))
    return [`line ${lineOf(healthcheck)}: HEALTHCHECK CMD must be an exec form (JSON) list`];
  const script = parsed.join(' ');
  if (/\b(curl|wget)\b/.test(script))
    return [`line ${lineOf(healthcheck)}: HEALTHCHECK uses curl/wget, not in the image`];
  return script.includes('/healthz')
    ? []
    : [`line ${lineOf(healthcheck)}: HEALTHCHECK does not ask /healthz`];
};

const npmProblems = (stages: ReadonlyArray<Stage>, runtime: Stage): string[] => {
  const runs = stages.flatMap((stage) => ofKind(stage, 'RUN'));
  const installs = runs
    .filter((run) => /\bnpm\s+(install|i|add)\b/.test(words(run).join(' ')))
    .map((run) => `line ${lineOf(run)}: npm install: use npm ci (the lock file, exactly)`);
  const modulesFrom = runtime.instructions
    .filter((instruction): instruction is Copy => instruction instanceof Copy)
    .find((copy) => words(copy).some((word) => word.endsWith('node_modules')))
    ?.getFromFlag()
    ?.getValue();
  const source = stages.find((stage) => stage.name === modulesFrom);
  const production =
    source !== undefined &&
    ofKind(source, 'RUN').some((run) => /\bnpm ci\b.*--omit=dev/.test(words(run).join(' ')));
  return [
    ...installs,
    ...(production ? [] : ['the runtime node_modules must come from a stage that runs npm ci --omit=dev']),
    ...ofKind(runtime, 'RUN').map(
      (run) => `line ${lineOf(run)}: the runtime stage runs nothing; build earlier`,
    ),
  ];
};

const secretProblems = (stages: ReadonlyArray<Stage>, text: string): string[] => [
  ...stages
    .flatMap((stage) => [...ofKind(stage, 'ENV'), ...ofKind(stage, 'ARG')])
    .filter((instruction) => words(instruction).some((word) => secretName.test(word.split('=')[0]!)))
    .map((instruction) => `line ${lineOf(instruction)}: a secret in ENV/ARG stays in the image's history`),
  ...DockerfileParser.parse(text)
    .getInstructions()
    .filter((instruction) => instruction.getKeyword() === 'ADD')
    .map((instruction) => `line ${lineOf(instruction)}: ADD fetches and unpacks; use COPY`),
];

/** Every problem of a Dockerfile, one line each; empty when it passes. */
export const lintDockerfile = (text: string, expectedPort: number, nodeVersion: string): string[] => {
  const generic = validate(text, {
    instructionCasing: ValidationSeverity.ERROR,
    instructionWorkdirRelative: ValidationSeverity.ERROR,
    instructionJSONInSingleQuotes: ValidationSeverity.ERROR,
  }).map(({ range, message }) => {
    const text = typeof message === 'string' ? message : message.value;
    return `line ${range.start.line + 1}: ${text}`;
  });
  const stages = stagesOf(text);
  const runtime = stages.at(-1);
  if (runtime === undefined) return [...generic, 'no FROM'];
  const exposed = ofKind(runtime, 'EXPOSE').flatMap(words);
  return [
    ...generic,
    ...baseImageProblems(stages, nodeVersion),
    ...userProblems(runtime),
    ...entrypointProblems(runtime),
    ...healthcheckProblems(runtime),
    ...npmProblems(stages, runtime),
    ...secretProblems(stages, text),
    ...(exposed.join(' ') === String(expectedPort)
      ? []
      : [`EXPOSE must be the HTTP port ${expectedPort} alone`]),
  ];
};

/** Problems of a .dockerignore: it must exclude everything (`*`) and let in only what the build reads. */
export const lintDockerignore = (text: string): string[] => {
  const lines = text.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('#'));
  const reincluded = lines
    .filter((line) => line.startsWith('!'))
    .map((line) => line.slice(1).replace(/\/$/, ''));
  return [
    ...(lines[0] === '*' ? [] : ['.dockerignore must start by excluding everything (*)']),
    ...reincluded
      .filter((path) => /^(node_modules|dist|\.git|\.env|\.npmrc)\b/.test(path))
      .map((path) => `.dockerignore lets ${path} into the build context`),
  ];
};
