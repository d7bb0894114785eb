/**
 * The storage initializer with KServe's patterns (`STORAGE_ALLOW_PATTERNS`, `STORAGE_IGNORE_PATTERNS`, as its
 * LLMInferenceService controller sets them for a tokenizer) and with `pvc://` URIs, in process on local files.
 */
import { join } from 'node:path';
import { listTree, writeFiles } from '../helpers/file-tree';

/** The names under `dest` (with `--local-model-files link`, a file lands as `name -> where it lies`). */
const landed = async (dest: string): Promise<string[]> =>
  (await listTree(dest)).map((entry) => entry.split(' -> ')[0]!);
import { initializerConfig, runInitializer } from '../helpers/initializer';
import { useTempDir } from '../helpers/temp-dir';

const tmp = useTempDir('initializer-patterns');

// What KServe's controller sets on the tokenizer's init container (workload_storage.go, tokenizerOnlyDownload).
const tokenizerOnly =
  '["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json", "merges.txt", "config.json", "generation_config.json"]';

const llm = {
  'config.json': '{}',
  'generation_config.json': '{}',
  'tokenizer.json': '{"v":1}',
  'tokenizer_config.json': '{}',
  'model-00001-of-00002.safetensors': 'w1',
  'model-00002-of-00002.safetensors': 'w2',
  'model.safetensors.index.json': '{}',
  'original/consolidated.pth': 'pth',
};

describe('initializerMode with patterns', () => {
  it('downloads only the files STORAGE_ALLOW_PATTERNS takes, for every pair', async () => {
    const claim = join(tmp.path, 'claim-a');
    await writeFiles(join(claim, 'models', 'llama'), llm);
    await writeFiles(join(tmp.path, 'pvc', 'llama'), llm);
    const dest = (name: string): string => join(tmp.path, 'mnt-a', name);
    const pairs = [
      { uri: 'pvc://models-claim/models/llama', dest: dest('from-pvc') },
      { uri: join(tmp.path, 'pvc', 'llama'), dest: dest('from-path') },
    ];
    const config = initializerConfig({ pvcMountRoot: claim, localStorageRoots: [join(tmp.path, 'pvc')] });

    const run = await runInitializer(pairs, config, { STORAGE_ALLOW_PATTERNS: tokenizerOnly });

    expect(run.errors).toEqual([]);
    expect(run.exitCode).toBe(0);
    const tokenizer = ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json'];
    expect(await landed(dest('from-pvc'))).toEqual(tokenizer);
    expect(await landed(dest('from-path'))).toEqual(tokenizer);
    expect(run.logs.find((line) => line.msg === 'storage initializer starting')).toMatchObject({
      select: { allowPatterns: JSON.parse(tokenizerOnly) as unknown },
    });
  });

  it('leaves out what STORAGE_IGNORE_PATTERNS takes, comma-separated as KServe reads it', async () => {
    const claim = join(tmp.path, 'claim-b');
    await writeFiles(join(claim, 'llama'), llm);
    const dest = join(tmp.path, 'mnt-b', 'models');

    const run = await runInitializer(
      [{ uri: 'pvc://c/llama', dest }],
      initializerConfig({ pvcMountRoot: claim }),
      { STORAGE_IGNORE_PATTERNS: '*.pth, original/,*.safetensors' },
    );

    expect(run.exitCode).toBe(0);
    expect(await landed(dest)).toEqual([
      'config.json',
      'generation_config.json',
      'model.safetensors.index.json',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
  });

  it('exits 1 with one error line when the patterns take none of the files, leaving dest as it was', async () => {
    const claim = join(tmp.path, 'claim-c');
    await writeFiles(join(claim, 'llama'), llm);
    const dest = join(tmp.path, 'mnt-c', 'models');
    await writeFiles(dest, { 'keep.txt': 'kept' });

    const run = await runInitializer(
      [{ uri: 'pvc://c/llama', dest }],
      initializerConfig({ pvcMountRoot: claim }),
      { STORAGE_ALLOW_PATTERNS: '*.gguf' },
    );

    expect(run.exitCode).toBe(1);
    expect(run.errors).toEqual([
      expect.objectContaining({
        storageUri: 'pvc://c/llama',
        errorKind: 'not-found',
        reason: expect.stringContaining(
          'the patterns allow=["*.gguf"] ignore=[] select none of its 8 files',
        ) as unknown,
      }),
    ]);
    expect(await listTree(dest)).toEqual(['keep.txt']);
  });

  it('exits 2 before any download when a pattern variable cannot be used, naming it', async () => {
    const dest = join(tmp.path, 'mnt-d', 'models');

    const run = await runInitializer([{ uri: 'pvc://c/llama', dest }], initializerConfig(), {
      STORAGE_ALLOW_PATTERNS: '["*.json", 7]',
    });

    expect(run.exitCode).toBe(2);
    expect(run.errors).toEqual([
      expect.objectContaining({
        msg: 'cannot start: the settings are invalid',
        reason: expect.stringContaining('STORAGE_ALLOW_PATTERNS') as unknown,
      }),
    ]);
    expect(run.logs.some((line) => line.msg === 'storage initializer starting')).toBe(false);
  });
});
