// Every write of a question checks its lease in the product's database; once an erasure took its conversation, a tool's ticket, its saves and its trace lines land nowhere, and the chat names no erased conversation.
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { logDir } from '../../../../shared/config.ts';
import { query } from '../../../../shared/db.ts';
import type { ScratchDatabase } from '../../../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../../../shared/testing/fake-provider.ts';
import {
  collect,
  runScript,
  startScript,
  waitForOutput,
} from '../../../../shared/testing/run-script.ts';
import { conversationTraceFile } from '../../../trace.ts';
import { fullSession } from '../full-session.ts';
import { createProductDatabase } from '../product-database.ts';
import { whatHappened } from '../../nimbus.ts';
import { takeLeases } from '../../question/lease.ts';
import { saveNote } from '../../notes/notes-queries.ts';
import { forgetCustomer } from '../../privacy/delete-conversations.ts';
import { waitUntil } from '../../../../shared/testing/wait-until.ts';
import { ensureFullDatabase } from '../../store/ensure-tables.ts';

const CHAT = fileURLToPath(new URL('../../chat.ts', import.meta.url));
const SETUP = fileURLToPath(new URL('../../setup.ts', import.meta.url));
const maya = { id: 1, name: 'Maya Patel', email: 'maya.patel@example.com' };
const SECRET = 'my door code is 4711-SECRET';
let fake: FakeProvider;
let db: ScratchDatabase;

beforeAll(async () => {
  fake = await startFakeProvider();
  // The product's database: every write of a question checks its lease, as in the chat.
  db = await createProductDatabase();
  await ensureFullDatabase(() => {});
});
afterAll(async () => {
  await fake.close();
  await db.drop();
});

/** Another process's lease, as a test makes one up: gone with the test, or the next would wait for it. */
const OTHER_HOLDER = 'e'.repeat(32);
afterEach(() => query('DELETE FROM question_leases WHERE holder = ?', [OTHER_HOLDER]));

/** What every entry says once a question's conversation was erased while it was answered. */
const ERASED_WHILE_ANSWERING = whatHappened({
  conversation: { id: '', customerId: 0, saved: false },
  restarted: false,
  lost: 'erased',
  tickets: [],
})!;

/** The erasure as forget.ts makes it, without its wait: the lease taken from the question, the conversation and its trace deleted. */
async function eraseNow(id: string): Promise<void> {
  const letGo = await takeLeases([{ id, customerId: maya.id }], { waitSeconds: 0, takeOver: true });
  await query('DELETE FROM conversations WHERE id = ?', [id]);
  rmSync(conversationTraceFile(logDir(process.env), id), { force: true });
  await letGo();
}

describe('an erasure that takes the conversation while its question runs', () => {
  it('is final: the ticket the model then asks for is never opened, nothing of the question is stored, and the chat names the erased conversation no more', async () => {
    fake.reply({ text: 'Hello!' });
    const earlier = fullSession(maya, fake.llm('gemini'));
    await earlier.ask('Hi');
    const id = earlier.conversation.id;
    const trace = conversationTraceFile(logDir(process.env), id);

    // The model answers slowly, then asks for a ticket holding the customer's words.
    let release!: () => void;
    fake.reply({
      tool_calls: [
        { name: 'create_support_ticket', arguments: { category: 'other', summary: SECRET } },
      ],
      gate: new Promise<void>((resolve) => (release = resolve)),
    });
    const asked = fake.chats().length;
    const env = { ...fake.env('gemini'), DB_NAME: db.name };
    const chat = startScript(CHAT, ['--quiet', `--resume=${id}`], { env });
    const done = collect(chat);
    chat.stdin.write('Please open a ticket.\n');
    await fake.waitForChat(asked + 1);

    // Meanwhile the erasure (as forget.ts does, here without its wait): takes the lease from the
    // question, deletes the conversation and its trace, lets the lease go.
    await eraseNow(id);
    release();

    // The ticket's write found the lease taken: the question stops there, and says so.
    await waitForOutput(chat, ERASED_WHILE_ANSWERING);
    chat.stdin.end();
    const { stdout, stderr, code } = await done;
    expect(code).toBe(0);
    expect(await query('SELECT id FROM tickets WHERE summary = ?', [SECRET])).toEqual([]);
    expect(fake.chats()).toHaveLength(asked + 1); // no paid call for a question that cannot be kept
    expect(await query('SELECT seq FROM messages WHERE conversation_id = ?', [id])).toEqual([]);
    expect(await query('SELECT id FROM conversations WHERE id = ?', [id])).toEqual([]);
    expect(existsSync(trace)).toBe(false);
    // Said once and truly, and the erased id is offered nowhere after it: no "Resume later with" it.
    expect(stdout.split(ERASED_WHILE_ANSWERING)).toHaveLength(2);
    const after = stdout.slice(stdout.indexOf(ERASED_WHILE_ANSWERING));
    expect(after).toMatch(/^[^\n]* Your next question starts a new conversation\.\n/);
    expect(after).not.toContain(id);
    expect(stdout).not.toContain(`--resume=${id}`);
    // Nothing claims the question's steps were saved, or that it was cancelled.
    expect(stdout + stderr).not.toContain('Not saved');
    expect(stdout + stderr).not.toContain('Cancelled');
  });

  it('holds back a question of the customer that starts while it runs: nothing it deletes is written back', async () => {
    // A note with her secret, and a question of hers at the model: the erasure waits for it.
    fake.reply({ text: 'Hello!' });
    const first = fullSession(maya, fake.llm('gemini'));
    await first.ask('Hi');
    await saveNote(maya.id, first.conversation.id, SECRET, null);
    let releaseFirst!: () => void;
    fake.reply({ text: 'Done.', gate: new Promise<void>((resolve) => (releaseFirst = resolve)) });
    const asked = fake.chats().length;
    const answeringFirst = first.ask('Thanks.');
    await fake.waitForChat(asked + 1);
    const erasing = forgetCustomer(logDir(process.env), maya.id);
    const marked = () =>
      query<unknown[]>(
        'SELECT 1 FROM customer_erasures WHERE customer_id = ? AND erasing_until > NOW(3)',
        [maya.id],
      );
    await waitUntil('the erasure has marked her', async () => (await marked()).length === 1);
    // Meanwhile she asks in a new conversation. The model repeats any note it was sent, and answers
    // only once the erasure is over: what it read before is then written after.
    let releaseSecond!: () => void;
    const secondGate = new Promise<void>((resolve) => (releaseSecond = resolve));
    fake.reply((view) => ({
      text: JSON.stringify(view).includes('4711-SECRET') ? `You told me: ${SECRET}` : 'No notes.',
      gate: secondGate,
    }));
    const second = fullSession(maya, fake.llm('gemini')); // with her notes, as the chat
    const answeringSecond = second.ask('What do you know about me?');
    releaseFirst();
    await answeringFirst;
    await erasing;
    releaseSecond();
    expect((await answeringSecond).answer).toBe('No notes.');
    expect(await query('SELECT seq FROM messages WHERE data LIKE ?', ['%4711-SECRET%'])).toEqual(
      [],
    );
  });

  it('brings back no trace file the erasure deleted: what the question did afterwards is written nowhere', async () => {
    fake.reply({ text: 'Hello!' });
    const session = fullSession(maya, fake.llm('openai'));
    await session.ask('Hi');
    const id = session.conversation.id;
    const trace = conversationTraceFile(logDir(process.env), id);
    let release!: () => void;
    fake.reply({
      tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1042 } }],
      gate: new Promise<void>((resolve) => (release = resolve)),
    });
    const asked = fake.chats().length;
    const answering = session.asked('Where is order 1042?');
    await fake.waitForChat(asked + 1);
    expect(readFileSync(trace, 'utf8')).toContain('Where is order 1042?'); // its first lines
    await eraseNow(id);
    release();

    const erased = await answering;
    expect(erased.lost).toBe('erased');
    expect(whatHappened(erased)).toBe(ERASED_WHILE_ANSWERING);
    expect(erased.result!.saved).toBe(false);
    // Its tool call and result, its failed save and its end came after: the file is not created again.
    expect(existsSync(trace)).toBe(false);
    expect(await query('SELECT seq FROM messages WHERE conversation_id = ?', [id])).toEqual([]);
    expect(fake.chats()).toHaveLength(asked + 1); // stopped at the save the fence refused
    // The next question starts a new conversation, traced in a file of its own.
    expect(session.conversation.id).not.toBe(id);
  });

  it('deletes no note through forget_notes once the lease is taken: the privacy tools write through the fence too', async () => {
    fake.reply({ text: 'Hello!' });
    const session = fullSession(maya, fake.llm('gemini'));
    await session.ask('Hi');
    const id = session.conversation.id;
    await saveNote(maya.id, id, 'Call me by email only.', null);
    let release!: () => void;
    fake.reply({
      tool_calls: [{ name: 'forget_notes', arguments: { all: true } }],
      gate: new Promise<void>((resolve) => (release = resolve)),
    });
    const asked = fake.chats().length;
    const answering = session.asked('Forget my notes, please.');
    await fake.waitForChat(asked + 1);
    // Another holder took the lease while the model was answering (an erasure, a reset).
    await query('UPDATE question_leases SET holder = ? WHERE conversation_id = ?', [
      OTHER_HOLDER,
      id,
    ]);
    release();
    const taken = await answering;
    expect(taken.lost).toBe('taken over');
    expect(fake.chats()).toHaveLength(asked + 1); // the question stopped: no paid call after
    const notes = await query<unknown[]>('SELECT id FROM customer_notes WHERE customer_id = ?', [
      maya.id,
    ]);
    expect(notes).toHaveLength(1);
    await query('DELETE FROM customer_notes WHERE customer_id = ?', [maya.id]);
  });

  it("after setup.ts --yes took over a question's lease, the ticket it then asks for lands nowhere, in the fresh database neither", async () => {
    await ensureFullDatabase(() => {}); // whatever an earlier test reset
    const summary = `Reset meanwhile: ${SECRET}`;
    let release!: () => void;
    fake.reply({
      tool_calls: [{ name: 'create_support_ticket', arguments: { category: 'billing', summary } }],
      gate: new Promise<void>((resolve) => (release = resolve)),
    });
    const asked = fake.chats().length;
    const env = { ...fake.env('gemini'), DB_NAME: db.name };
    const chat = startScript(CHAT, ['--quiet'], { env });
    const done = collect(chat);
    chat.stdin.write('Please open a ticket.\n');
    await fake.waitForChat(asked + 1);
    // The question's lease runs out (its process as if frozen past the expiry), so the reset takes it
    // at once instead of after its 30 s wait, and resets.
    await query('UPDATE question_leases SET expires_at = NOW(3) - INTERVAL 1 SECOND');
    const reset = await runScript(SETUP, ['--yes'], { env });
    expect(reset.code, reset.stderr).toBe(0);
    release();
    // The question stops at the ticket's write, and says what happened: the reset erased it.
    await waitForOutput(chat, ERASED_WHILE_ANSWERING);
    chat.stdin.end();
    const { stdout, stderr } = await done;
    expect(fake.chats()).toHaveLength(asked + 1);
    expect(await query('SELECT id FROM tickets WHERE summary = ?', [summary])).toEqual([]);
    expect(await query('SELECT id FROM conversations')).toEqual([]);
    expect(stdout + stderr).not.toContain('npm run setup');
    expect(stdout).not.toContain('Resume later with');
  });
});
