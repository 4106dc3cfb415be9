// forget.ts asks before an erasure: it says what would go, --dry-run deletes nothing, and without a terminal it needs --yes.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../../../shared/db.ts';
import type { ScratchDatabase } from '../../../../shared/testing/database.ts';
import { type FakeProvider } from '../../../../shared/testing/fake-provider.ts';
import { runInProcess } from '../../../../shared/testing/run-in-process.ts';
import { whereIs as findText } from '../../../../shared/testing/where-is.ts';
import { fullSession } from '../full-session.ts';
import { closeTestBed, openTestBed } from '../test-bed.ts';
import { saveNote } from '../../notes/notes-queries.ts';
import {
  forgetCustomer,
  planCustomerErasure,
  planForgetConversation,
} from '../../privacy/delete-conversations.ts';

const FORGET = fileURLToPath(new URL('../../forget.ts', import.meta.url));
let fake: FakeProvider;
let db: ScratchDatabase;
let logs: string;
let env: Record<string, string>;

beforeAll(async () => {
  ({ fake, db, logs } = await openTestBed('forget'));
  env = { ...fake.env('gemini'), DB_NAME: db.name, LOG_DIR: logs };
});
afterAll(() => closeTestBed({ fake, db, logs }));

const whereIs = (text: string) => findText(db.name, logs, text);

/** A customer of this test's own, with one answered question holding `phrase` and one note. */
async function customerWith(phrase: string) {
  const email = `${phrase}@example.com`;
  await query('INSERT INTO customers (name, email) VALUES (?, ?)', [phrase, email]);
  const [{ id }] = await query<Array<{ id: number }>>('SELECT id FROM customers WHERE email = ?', [
    email,
  ]);
  const customer = { id, name: phrase, email };
  fake.reply({ text: 'Noted.' });
  const session = fullSession(customer, fake.llm('gemini'), undefined, { logDir: logs });
  await session.ask(`My secret word is ${phrase}.`);
  await saveNote(id, session.conversation.id, `Likes ${phrase}.`, null);
  return { ...customer, conversation: session.conversation.id };
}

describe('forget.ts --customer', () => {
  it('plans exactly what the erasure then deletes, and the plan deletes nothing', async () => {
    const zoe = await customerWith('zoe-5521');
    const plan = await planCustomerErasure(logs, zoe.id);
    const trace = path.join(logs, 'conversations', `${zoe.conversation}.jsonl`);
    expect(plan).toEqual({
      conversations: [{ id: zoe.conversation, messages: 2, traceFile: trace }],
      notes: 1,
      tickets: [],
    });
    expect(await planForgetConversation(logs, zoe.conversation)).toEqual({
      conversationId: zoe.conversation,
      messages: 2,
      notes: 1,
      traceFile: trace,
    });
    expect(await whereIs('zoe-5521')).not.toEqual([]); // still all there
    const erasure = await forgetCustomer(logs, zoe.id);
    expect(erasure.conversations.map((c) => c.conversationId)).toEqual([zoe.conversation]);
    expect(erasure.notes).toBe(1);
    expect(await whereIs(zoe.conversation)).toEqual([]);
  });

  it('with --dry-run says what would go and deletes nothing', async () => {
    const ida = await customerWith('ida-3307');
    const before = (await whereIs('ida-3307')).sort();
    const run = await runInProcess(FORGET, [`--customer=${ida.email}`, '--dry-run'], { env });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.split('\n')).toEqual([
      expect.stringMatching(
        new RegExp(
          `^Would delete conversation ${ida.conversation}: 2 messages and its trace file `,
        ),
      ),
      'Would keep their orders and refunds.',
      `Would delete 1 conversation (2 messages) and 1 note of ${ida.email}. Nothing was deleted (--dry-run).`,
      '',
    ]);
    expect((await whereIs('ida-3307')).sort()).toEqual(before);
  });

  it('without a terminal and without --yes says what it would delete, deletes nothing and exits 2', async () => {
    const ana = await customerWith('ana-8813');
    const before = (await whereIs('ana-8813')).sort();
    const run = await runInProcess(FORGET, [`--customer=${ana.email}`], { env, input: 'yes\n' });
    expect(run.code).toBe(2);
    expect(run.stdout).toBe(
      `Forgetting ${ana.email} deletes 1 conversation (2 messages) and 1 note, with their trace files.\n`,
    );
    expect(run.stderr.split('\n')[0]).toMatch(
      new RegExp(
        `^Nothing was changed: to confirm, run npx tsx \\S*forget\\.ts --customer=${ana.email} --yes$`,
      ),
    );
    expect((await whereIs('ana-8813')).sort()).toEqual(before);
  });
});
