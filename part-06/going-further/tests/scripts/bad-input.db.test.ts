// Whatever comes in — odd ids, hostile text, a missing database, a rate limit — gets one clear line and nothing half-saved (the core scripts; going further's limits through its own).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createScratchDatabase,
  type ScratchDatabase,
} from '../../../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../../../shared/testing/fake-provider.ts';
import { runInProcess } from '../../../../shared/testing/run-in-process.ts';
import { MAX_QUESTION_CHARS } from '../../question/question-limit.ts';
import { ensureFullDatabase } from '../../store/ensure-tables.ts';

const script = (name: string) => fileURLToPath(new URL(`../../../${name}`, import.meta.url));
let fake: FakeProvider;
let db: ScratchDatabase;
let env: Record<string, string>;

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createScratchDatabase();
  await ensureFullDatabase(() => {}); // the core scripts and the full Nimbus's share it
  env = { ...fake.env('gemini'), DB_NAME: db.name };
});
afterAll(async () => {
  await fake.close();
  await db.drop();
});

describe('flags that make no sense', () => {
  it('going further’s bench-memory.ts --runs=abc is refused instead of running 40, and quoted escaped', async () => {
    const bench = script('going-further/ops/bench-memory.ts');
    const result = await runInProcess(bench, ['--runs=abc\x1b[2J'], { env });
    expect(result.code).toBe(2);
    expect(result.stderr.split('\n')[0]).toBe(
      '--runs must be a whole number of at least 5 (got "abc\\x1b[2J").',
    );
  });
});

describe('two faults at once', () => {
  it('npm run load refuses --cut-connections with --freeze-node: one fault at a time', async () => {
    const load = script('going-further/ops/load-test.ts');
    const result = await runInProcess(load, ['--cut-connections=20', '--freeze-node=1'], { env });
    expect(result.code).toBe(2);
    expect(result.stderr.split('\n')[0]).toBe(
      'Give --cut-connections or --freeze-node, not both: one fault at a time.',
    );
  });

  it('npm run load --freeze-node with no cluster says so before the run begins, exit 1', async () => {
    const load = script('going-further/ops/load-test.ts');
    const empty = mkdtempSync(path.join(os.tmpdir(), 'nimbus-no-cluster-'));
    try {
      const result = await runInProcess(load, ['--freeze-node=1'], {
        env: { ...env, CLUSTER_DIR: empty },
      });
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        `There is no cluster in ${empty}. (--freeze-node needs a running local cluster.)\n`,
      );
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});

describe('hostile and unusual text', () => {
  it(`longer than ${MAX_QUESTION_CHARS} characters is refused by the full Nimbus before the model is called, and the chat goes on`, async () => {
    const before = fake.chats().length;
    fake.reply({ text: 'Short one answered.' });
    const chat = await runInProcess(script('going-further/chat.ts'), ['--quiet'], {
      env,
      input: `${'x'.repeat(MAX_QUESTION_CHARS + 1)}\nShort one?\n`,
    });
    expect(chat.code).toBe(0);
    expect(chat.stderr).toContain(
      `That question is ${(MAX_QUESTION_CHARS + 1).toLocaleString('en-US')} characters long; the limit is 4,000. Please shorten it.`,
    );
    expect(chat.stdout).toContain('Nimbus: Short one answered.');
    expect(fake.chats()).toHaveLength(before + 1);
    const ask = await runInProcess(
      script('going-further/ask.ts'),
      ['x'.repeat(MAX_QUESTION_CHARS + 1)],
      {
        env,
      },
    );
    expect(ask.code).toBe(2);
    expect(fake.chats()).toHaveLength(before + 1);
  });
});
