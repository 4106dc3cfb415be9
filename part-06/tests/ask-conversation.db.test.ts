// The core ask.ts in Part 6: each run is one turn of a conversation, continued with --conversation=<id>.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScratchDatabase, type ScratchDatabase } from '../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../shared/testing/fake-provider.ts';
import { runInProcess } from '../../shared/testing/run-in-process.ts';
import { ensureDatabase } from '../setup-database.ts';

const SCRIPT = fileURLToPath(new URL('../ask.ts', import.meta.url));
let fake: FakeProvider;
let db: ScratchDatabase;
let env: Record<string, string>;

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createScratchDatabase();
  await ensureDatabase(() => {});
  env = { ...fake.env('openai'), DB_NAME: db.name };
});
afterAll(async () => {
  await fake.close();
  await db.drop();
});

describe('ask.ts with conversations', () => {
  it('starts a conversation, prints its id after the answer, and continues it with --conversation', async () => {
    fake.reply({ text: 'Which order do you mean?' });
    const first = await runInProcess(SCRIPT, ['Where is my order?'], { env });
    expect(first.code).toBe(0);
    expect(first.stdout).toBe('Which order do you mean?\n');
    const id = first.stderr.match(
      /^Ask a follow-up with npx tsx part-06\/ask\.ts --conversation=([0-9a-f]{32}) "What about my other order\?"$/m,
    )![1];

    fake.reply((view) => ({ text: `Earlier you asked: "${view.messages[0].text}"` }));
    const second = await runInProcess(SCRIPT, [`--conversation=${id}`, 'It is 1042.'], { env });
    expect(second.stdout).toBe('Earlier you asked: "Where is my order?"\n');
    expect(second.stderr).toMatch(
      /\[step 0\] memory: 1 earlier turn — 1 full, 0 compacted, 0 dropped — \d+ of 12,000 chars/,
    );
    expect(second.stderr).toContain(
      `Ask a follow-up with npx tsx part-06/ask.ts --conversation=${id} `,
    );
  });

  it('starts a new conversation when the id is well-formed but unknown', async () => {
    fake.reply({ text: 'Hello!' });
    const result = await runInProcess(SCRIPT, [`--conversation=${'0'.repeat(32)}`, 'Hi'], { env });
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(
      `Conversation ${'0'.repeat(32)} was not found; starting a new one.`,
    );
    expect(result.stderr).toMatch(/Ask a follow-up with .* --conversation=(?!0{32})[0-9a-f]{32} /);
  });
});
