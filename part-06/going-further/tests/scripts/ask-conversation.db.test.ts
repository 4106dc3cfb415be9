// A conversation the chapter's ask.ts started continues in the full Nimbus's, its history sent.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createScratchDatabase,
  type ScratchDatabase,
} from '../../../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../../../shared/testing/fake-provider.ts';
import { runScript } from '../../../../shared/testing/run-script.ts';
import { loadMessages } from '../../../memory.ts';
import { ensureDatabase } from '../../../setup-database.ts';
import { coreSession } from '../../../tests/test-session.ts';

const FULL_ASK = fileURLToPath(new URL('../../ask.ts', import.meta.url));
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
  it('shares its conversations with the full Nimbus: one the core started continues in going-further/ask.ts', async () => {
    fake.reply({ text: 'Which order do you mean?' });
    const core = coreSession(
      { id: 1, name: 'Maya Patel', email: 'maya.patel@example.com' },
      fake.llm('openai'),
    );
    await core.ask('Where is my order?');
    fake.reply((view) => ({ text: `Earlier you asked: "${view.messages[0].text}"` }));
    const full = await runScript(
      FULL_ASK,
      [`--conversation=${core.conversation.id}`, 'It is 1042.'],
      { env },
    );
    expect(full.code, full.stderr).toBe(0);
    expect(full.stdout).toBe('Earlier you asked: "Where is my order?"\n');
    // The full Nimbus gains its tables on its first run; the chapter's conversation is untouched by it.
    expect(await loadMessages(core.conversation.id)).toHaveLength(4);
  });
});
