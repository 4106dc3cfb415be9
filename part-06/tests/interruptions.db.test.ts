// Killed or interrupted mid-turn, chat.ts leaves either the whole turn or none of it, for both providers.
import { fileURLToPath } from 'node:url';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionOptions } from '../../shared/db.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../shared/testing/database.ts';
import { startFakeProvider, type ChatView, type FakeProvider, type ProviderName } from '../../shared/testing/fake-provider.ts';
import { collect, runScript, startScript, waitForOutput } from '../../shared/testing/run-script.ts';
import { waitUntil } from '../../shared/testing/wait-until.ts';
import { runAgent } from '../agent.ts';
import { loadHistory, newConversation } from '../memory.ts';
import { setupDatabase } from '../setup-database.ts';

const CHAT = fileURLToPath(new URL('../chat.ts', import.meta.url));
const ASK = fileURLToPath(new URL('../ask-agent.ts', import.meta.url));
let fake: FakeProvider;
let db: ScratchDatabase;
let admin: mysql.Connection; // the test's own connection, to hold locks

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createScratchDatabase();
  await setupDatabase(() => {});
  admin = await mysql.createConnection({ ...connectionOptions(), database: db.name });
});
afterAll(async () => {
  await admin.end();
  await fake.close();
  await db.drop();
});

const env = (provider: ProviderName) => ({ ...fake.env(provider), DB_NAME: db.name });

/** A conversation with one finished turn that used a tool, so there is real history to damage. */
async function conversationWithOneTurn(provider: ProviderName): Promise<string> {
  Object.assign(process.env, fake.env(provider));
  const id = await newConversation();
  fake.reply({ tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1042 } }] }, { text: 'Order 1042 has shipped.' });
  await runAgent('Where is order 1042?', id, { quiet: true });
  return id;
}

/** Is a statement containing `text` running (or waiting) on the server right now? */
async function running(text: string): Promise<boolean> {
  const [rows] = await admin.query('SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE INFO LIKE ? AND ID <> CONNECTION_ID()', [`%${text}%`]);
  return (rows as Array<{ n: number }>)[0].n > 0;
}

/** After a crash: nothing damaged, only whole turns, and both providers accept the history. */
async function expectValidHistory(id: string, turns: number) {
  const history = await loadHistory(id);
  expect(history.damaged).toEqual([]);
  expect(history.messages.filter((m) => m.role === 'user')).toHaveLength(turns);
  expect(history.messages.at(-1)).toMatchObject({ role: 'assistant' });
  for (const provider of ['gemini', 'openai'] as const) {
    fake.reply({ text: `still fine (${provider})` });
    const next = await runScript(ASK, ['--quiet', `--conversation=${id}`, 'Are you still there?'], { env: env(provider) });
    expect(next.stdout).toBe(`still fine (${provider})\n`);
    expect(fake.chats().at(-1)!.status).toBe(200);
    turns++;
  }
}

describe.each(['gemini', 'openai'] as const)('killing chat.ts (%s)', (provider) => {
  it('during the model call leaves the earlier turns whole and nothing of the new one', async () => {
    const id = await conversationWithOneTurn(provider);
    const before = fake.chats().length;
    fake.reply({ text: 'never delivered', gate: new Promise(() => {}) });
    const child = startScript(CHAT, ['--quiet', `--resume=${id}`], { env: env(provider) });
    const done = collect(child);
    child.stdin.write('Can I get a refund for order 1043?\n');
    await fake.waitForChat(before + 1);
    child.kill('SIGKILL');
    expect((await done).signal).toBe('SIGKILL');
    await expectValidHistory(id, 1);
  });

  it('during a tool leaves the earlier turns whole and nothing of the new one', async () => {
    const id = await conversationWithOneTurn(provider);
    fake.reply({ tool_calls: [{ name: 'check_refund_eligibility', arguments: { order_id: 1043 } }] });
    await admin.query('LOCK TABLES orders WRITE'); // the tool's query now waits for us
    try {
      const child = startScript(CHAT, ['--quiet', `--resume=${id}`], { env: env(provider) });
      const done = collect(child);
      child.stdin.write('Can I get a refund for order 1043?\n');
      await waitUntil('the tool is querying orders', () => running('FROM orders WHERE id = 1043'));
      child.kill('SIGKILL');
      expect((await done).signal).toBe('SIGKILL');
    } finally {
      await admin.query('UNLOCK TABLES');
    }
    await expectValidHistory(id, 1);
  });

  it('during the save leaves the earlier turns whole and nothing of the new one', async () => {
    const id = await conversationWithOneTurn(provider);
    fake.reply({ tool_calls: [{ name: 'check_refund_eligibility', arguments: { order_id: 1043 } }] }, { text: 'Not eligible.' });
    await admin.beginTransaction();
    await admin.query('SELECT id FROM conversations WHERE id = ? FOR UPDATE', [id]); // the save now waits for us
    try {
      const child = startScript(CHAT, ['--quiet', `--resume=${id}`], { env: env(provider) });
      const done = collect(child);
      child.stdin.write('Can I get a refund for order 1043?\n');
      await waitUntil('the turn is being saved', () => running(`UPDATE conversations SET updated_at = NOW(3) WHERE id = '${id}'`));
      child.kill('SIGKILL');
      expect((await done).signal).toBe('SIGKILL');
    } finally {
      await admin.rollback();
    }
    await expectValidHistory(id, 1);
  });
});

describe('two processes in one conversation', () => {
  it('save their turns one after the other, never interleaved', async () => {
    const id = await conversationWithOneTurn('openai');
    const before = fake.chats().length;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    // Both questions look something up, then answer; the answers wait until both processes are mid-turn.
    // The two processes' requests can arrive in any order, so each reply is chosen by what it answers.
    const reply = (view: ChatView) =>
      view.toolResults.length
        ? { text: `Answer to: ${view.lastUserText}`, gate }
        : { tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1042 } }] };
    fake.reply(reply, reply, reply, reply);
    const first = runScript(ASK, ['--quiet', `--conversation=${id}`, 'First process'], { env: env('openai') });
    const second = runScript(ASK, ['--quiet', `--conversation=${id}`, 'Second process'], { env: env('openai') });
    await fake.waitForChat(before + 4);
    release();
    expect((await first).code).toBe(0);
    expect((await second).code).toBe(0);
    const history = await loadHistory(id);
    expect(history.damaged).toEqual([]);
    const roles = history.messages.map((m) => `${m.role}${m.role === 'user' ? `:${m.content}` : ''}`);
    // Each turn is whole: user, the call, its result, the answer — whichever process saved first.
    const turns = roles.slice(4).join(' ').split(/ (?=user:)/);
    expect(turns.sort()).toEqual(['user:First process assistant tool assistant', 'user:Second process assistant tool assistant']);
  });
});

describe('Ctrl-C in chat.ts', () => {
  it('while Nimbus is working cancels that question, saves nothing of it, and goes on', async () => {
    const id = await conversationWithOneTurn('gemini');
    const before = fake.chats().length;
    let release!: () => void;
    fake.reply({ text: 'too late', gate: new Promise<void>((resolve) => (release = resolve)) }, { text: 'Second answer.' });
    const child = startScript(CHAT, ['--quiet', `--resume=${id}`], { env: env('gemini') });
    const done = collect(child);
    child.stdin.write('First question\nSecond question\n');
    await fake.waitForChat(before + 1);
    child.kill('SIGINT');
    await waitForOutput(child, 'Nimbus: Second answer.');
    child.stdin.end();
    release();
    const result = await done;
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('(Cancelled: nothing from this question was saved.)');
    expect(result.stdout).toContain(`Bye! Resume later with: npx tsx chat.ts --resume=${id}`);
    expect(fake.chats()[before].aborted).toBe(true);
    const history = await loadHistory(id);
    expect(history.messages.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['Where is order 1042?', 'Second question']);
  });

  it('at an empty prompt leaves with the resume hint', async () => {
    const child = startScript(CHAT, [], { env: env('gemini') });
    const done = collect(child);
    await waitForOutput(child, 'You: ');
    child.kill('SIGINT');
    const result = await done;
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/Bye! Resume later with: npx tsx chat\.ts --resume=[0-9a-f]{32}\n$/);
  });
});
