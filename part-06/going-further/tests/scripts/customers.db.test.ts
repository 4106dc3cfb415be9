// Whose data a session may see: the signed-in customer comes from configuration, and conversations belong to one customer.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { logDir } from '../../../../shared/config.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../../../shared/db.ts';
import {
  createScratchDatabase,
  type ScratchDatabase,
} from '../../../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../../../shared/testing/fake-provider.ts';
import { runInProcess } from '../../../../shared/testing/run-in-process.ts';
import { runScript } from '../../../../shared/testing/run-script.ts';
import { signIn } from '../../../session.ts';
import { conversationTraceFile } from '../../../trace.ts';
import { saveNote } from '../../notes/notes-queries.ts';
import { ensureFullDatabase } from '../../store/ensure-tables.ts';
import { coreSession } from '../../../tests/test-session.ts';

const FORGET = fileURLToPath(new URL('../../forget.ts', import.meta.url));
const SHOW = fileURLToPath(new URL('../../../show-conversation.ts', import.meta.url));
const SHOW_FULL = fileURLToPath(new URL('../../show-conversation.ts', import.meta.url));
let fake: FakeProvider;
let db: ScratchDatabase;
let env: Record<string, string>;

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createScratchDatabase();
  await ensureFullDatabase(() => {}); // forget.ts is going further's: its tables too
  env = { ...fake.env('openai'), DB_NAME: db.name };
});
afterAll(async () => {
  await fake.close();
  await db.drop();
});

/** One answered question as `email` (in this process: signing in is tested through the scripts below); returns the conversation id. */
async function conversationOf(email: string): Promise<string> {
  fake.reply({ text: 'Hello!' });
  const session = coreSession(await signIn(email, undefined), fake.llm('gemini'));
  await session.ask('Hi');
  return session.conversation.id;
}

describe('conversations belong to their customer', () => {
  it("the operator's show-conversation shows any conversation, and whose it is; going further's lists them all", async () => {
    const liams = await conversationOf('liam.obrien@example.com');
    const shown = await runScript(SHOW, [liams], { env });
    expect(shown.stdout.split('\n')[0]).toMatch(
      new RegExp(`^Conversation ${liams} of Liam O'Brien \\(liam\\.obrien@example\\.com\\): `),
    );
    // The list of recent conversations is going further's viewer's.
    const list = await runInProcess(SHOW_FULL, [], { env });
    expect(list.stdout).toMatch(new RegExp(`${liams} .* liam\\.obrien@example\\.com`));
  });

  it("going further's forget.ts --customer deletes every conversation and note of that customer, everywhere, and no one else's, whatever the case of the address", async () => {
    // Stored as typed at sign-up, not in lower case: the exact address must find it too.
    await query(
      "INSERT INTO customers (name, email) VALUES ('Zoe Mixed', 'Zoe.Mixed@Example.com')",
    );
    const zoes = [
      await conversationOf('Zoe.Mixed@Example.com'),
      await conversationOf('zoe.mixed@example.com'),
    ];
    const mayas = await conversationOf('maya.patel@example.com');
    const [{ id: zoe }] = await query<Array<{ id: number }>>(
      "SELECT id FROM customers WHERE name = 'Zoe Mixed'",
    );
    await saveNote(zoe, zoes[0], 'Zoe prefers letters.', null);
    await saveNote(1, mayas, 'Maya keeps this one.', null);
    for (const id of [...zoes, mayas])
      expect(existsSync(conversationTraceFile(logDir(process.env), id))).toBe(true);
    const run = await runInProcess(FORGET, ['--customer=Zoe.Mixed@Example.com', '--yes'], { env });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim().split('\n').at(-1)).toBe(
      'Deleted 2 conversations (4 messages) and 1 note of Zoe.Mixed@Example.com.',
    );
    expect(
      await query('SELECT text FROM customer_notes WHERE customer_id IN (1, ?)', [zoe]),
    ).toEqual([{ text: 'Maya keeps this one.' }]);
    expect(
      await query(
        "SELECT c.id FROM conversations c JOIN customers cu ON cu.id = c.customer_id WHERE cu.name = 'Zoe Mixed'",
      ),
    ).toEqual([]);
    for (const id of zoes)
      expect(existsSync(conversationTraceFile(logDir(process.env), id))).toBe(false);
    expect(existsSync(conversationTraceFile(logDir(process.env), mayas))).toBe(true);
    expect(await query('SELECT id FROM conversations WHERE id = ?', [mayas])).toHaveLength(1);
  });
});
