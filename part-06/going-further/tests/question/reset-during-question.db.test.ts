// A reset while a question is being answered waits for it, so nothing of that conversation is written after the reset.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logDir } from '../../../../shared/config.ts';
import { connectionOptions } from '../../../../shared/db.ts';
import {
  createScratchDatabase,
  type ScratchDatabase,
} from '../../../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../../../shared/testing/fake-provider.ts';
import { collect, startScript, waitForOutput } from '../../../../shared/testing/run-script.ts';
import { ensureFullDatabase } from '../../store/ensure-tables.ts';
import { conversationTraceFile } from '../../../trace.ts';
import { fullSession } from '../full-session.ts';

const CHAT = fileURLToPath(new URL('../../chat.ts', import.meta.url));
const SETUP = fileURLToPath(new URL('../../setup.ts', import.meta.url));
const maya = { id: 1, name: 'Maya Patel', email: 'maya.patel@example.com' };
let fake: FakeProvider;
let db: ScratchDatabase;
let admin: mysql.Connection;

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createScratchDatabase();
  await ensureFullDatabase(() => {});
  admin = await mysql.createConnection(connectionOptions());
});
afterAll(async () => {
  await admin.end();
  await fake.close();
  await db.drop();
});

describe('going further’s setup.ts --yes while a question is being answered', () => {
  it('waits for the question, then deletes its conversation and trace: nothing is written after the reset', async () => {
    await ensureFullDatabase(() => {}); // whatever an earlier test reset
    const before = fake.chats().length;
    fake.reply({ text: 'Hello!' });
    const session = fullSession(maya, fake.llm('gemini'));
    await session.ask('Hi');
    const id = session.conversation.id;
    const trace = conversationTraceFile(logDir(process.env), id);

    let release!: () => void;
    fake.reply({ text: 'Shipped.', gate: new Promise<void>((resolve) => (release = resolve)) });
    const env = { ...fake.env('gemini'), DB_NAME: db.name };
    const chat = startScript(CHAT, ['--quiet', `--resume=${id}`], { env });
    const chatDone = collect(chat);
    chat.stdin.write('Where is order 1042?\n');
    await fake.waitForChat(before + 2);
    const resetting = startScript(SETUP, ['--yes'], { env });
    const reset = collect(resetting);
    resetting.stdin.end();
    // The reset waits for the question's lease, and says so.
    await waitForOutput(resetting, 'Waiting for the questions being answered to finish…');
    release();
    await waitForOutput(chat, 'Nimbus: Shipped.');
    const done = await reset;
    expect(done.code, done.stderr).toBe(0);
    chat.stdin.end();
    expect((await chatDone).code).toBe(0);
    // The question finished before the reset went on, so its trace was complete when the reset deleted it.
    expect(existsSync(trace)).toBe(false);
    const [left] = await admin.query<mysql.RowDataPacket[]>(
      `SELECT COUNT(*) AS n FROM \`${db.name}\`.messages`,
    );
    expect(left[0].n).toBe(0);
    // The product is ready after its reset: going further's tables are there again, empty.
    const [tables] = await admin.query<mysql.RowDataPacket[]>(
      `SELECT table_name AS name FROM information_schema.tables
        WHERE table_schema = ? AND table_name IN ('customer_notes', 'message_words', 'question_leases')`,
      [db.name],
    );
    expect(tables.map((row) => row.name).sort()).toEqual([
      'customer_notes',
      'message_words',
      'question_leases',
    ]);
  });

  it("fences a new conversation's first question too: it has no row yet, but its lease names it", async () => {
    await ensureFullDatabase(() => {}); // whatever an earlier test reset
    let release!: () => void;
    fake.reply(
      { tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1042 } }] },
      { text: 'Shipped.', gate: new Promise<void>((resolve) => (release = resolve)) },
    );
    const asked = fake.chats().length;
    const env = { ...fake.env('gemini'), DB_NAME: db.name };
    const chat = startScript(CHAT, ['--quiet'], { env });
    const chatDone = collect(chat);
    chat.stdin.write('Where is order 1042?\n');
    await fake.waitForChat(asked + 2); // its first step (the tool's) is saved; the answer is on its way
    const resetting = startScript(SETUP, ['--yes'], { env });
    const reset = collect(resetting);
    resetting.stdin.end();
    await waitForOutput(resetting, 'Waiting for the questions being answered to finish…');
    release();
    const done = await reset;
    expect(done.code, done.stderr).toBe(0);
    chat.stdin.end();
    const { stdout } = await chatDone;
    const id = /New conversation ([0-9a-f]{32})/.exec(stdout)![1];
    // Nothing of it came back after the reset said it was done: no row, no message, no trace line.
    const [rows] = await admin.query<mysql.RowDataPacket[]>(
      `SELECT (SELECT COUNT(*) FROM \`${db.name}\`.conversations WHERE id = ?) AS conversations,
              (SELECT COUNT(*) FROM \`${db.name}\`.messages WHERE conversation_id = ?) AS messages`,
      [id, id],
    );
    expect(rows[0]).toMatchObject({ conversations: 0, messages: 0 });
    expect(existsSync(conversationTraceFile(logDir(process.env), id))).toBe(false);
  });
});
