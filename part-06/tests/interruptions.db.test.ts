// Killed, interrupted or blocked mid-turn, chat.ts keeps every completed step, never a half of one, for both providers.
import { fileURLToPath } from 'node:url';
import mysql from 'mysql2/promise';
import { llmSettings } from '../../shared/config.ts';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connectionOptions, query } from '../../shared/db.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../shared/testing/database.ts';
import {
  startFakeProvider,
  type ChatView,
  type FakeProvider,
  type ProviderName,
} from '../../shared/testing/fake-provider.ts';
import { collect, runScript, startScript, waitForOutput } from '../../shared/testing/run-script.ts';
import { waitUntil } from '../../shared/testing/wait-until.ts';
import { runAgent } from '../agent.ts';
import { findConversation, loadHistory, loadMessages, newConversation } from '../memory.ts';
import { ensureDatabase } from '../setup-database.ts';
import { INTERRUPTED_ANSWER } from '../stored-history.ts';

const CHAT = fileURLToPath(new URL('../chat.ts', import.meta.url));
const ASK = fileURLToPath(new URL('../ask.ts', import.meta.url));
const maya = { id: 1, name: 'Maya Patel', email: 'maya.patel@example.com' };
let fake: FakeProvider;
let db: ScratchDatabase;
let admin: mysql.Connection; // the test's own connection, to hold locks

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createScratchDatabase();
  await ensureDatabase(() => {});
  admin = await mysql.createConnection({ ...connectionOptions(), database: db.name });
});
beforeEach(async () => {
  await query("UPDATE tickets SET status = 'closed'"); // each test opens its tickets afresh
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
  const conversation = newConversation(maya.id);
  fake.reply(
    { tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1042 } }] },
    { text: 'Order 1042 has shipped.' },
  );
  await runAgent(
    'Where is order 1042?',
    { customer: maya, conversation },
    { llm: llmSettings(), quiet: true },
  );
  return conversation.id;
}

/** Is a statement containing `text` running (or waiting) on the server right now? */
async function running(text: string): Promise<boolean> {
  const [rows] = await admin.query(
    'SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE INFO LIKE ? AND ID <> CONNECTION_ID()',
    [`%${text}%`],
  );
  return (rows as Array<{ n: number }>)[0].n > 0;
}

/** After a crash: nothing damaged, every turn ends with an answer, and both providers accept the history. */
async function expectValidHistory(id: string, turns: number) {
  const history = await loadHistory(id);
  expect(history.damaged).toEqual([]);
  expect(history.messages.filter((m) => m.role === 'user')).toHaveLength(turns);
  expect(history.messages.at(-1)).toMatchObject({ role: 'assistant' });
  for (const provider of ['gemini', 'openai'] as const) {
    Object.assign(process.env, fake.env(provider));
    fake.reply({ text: `still fine (${provider})` });
    const conversation = await findConversation(id, maya.id);
    const next = await runAgent(
      'Are you still there?',
      { customer: maya, conversation: conversation! },
      { llm: llmSettings(), quiet: true },
    );
    expect(next.answer).toBe(`still fine (${provider})`);
    expect(fake.chats().at(-1)!.status).toBe(200);
  }
}

// Where the kill lands matters, not which provider answers (the history is checked with both afterwards).
describe('killing chat.ts', () => {
  it('during the model call leaves the earlier turns whole and nothing of the new one', async () => {
    const provider = 'gemini';
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
    const provider = 'openai';
    const id = await conversationWithOneTurn(provider);
    fake.reply({
      tool_calls: [{ name: 'check_refund_eligibility', arguments: { order_id: 1043 } }],
    });
    const child = startScript(CHAT, ['--quiet', `--resume=${id}`], { env: env(provider) });
    const done = collect(child);
    await waitForOutput(child, 'You: ');
    await admin.query('LOCK TABLES orders WRITE'); // the tool's query now waits for us
    try {
      child.stdin.write('Can I get a refund for order 1043?\n');
      await waitUntil('the tool is querying orders', () => running('FROM orders WHERE id = 1043'));
      child.kill('SIGKILL');
      expect((await done).signal).toBe('SIGKILL');
    } finally {
      await admin.query('UNLOCK TABLES');
    }
    await expectValidHistory(id, 1);
  });

  it('during the save of a step leaves the earlier turns whole and nothing of the new one', async () => {
    const provider = 'gemini';
    const id = await conversationWithOneTurn(provider);
    fake.reply({
      tool_calls: [{ name: 'check_refund_eligibility', arguments: { order_id: 1043 } }],
    });
    await admin.beginTransaction();
    await admin.query('SELECT id FROM conversations WHERE id = ? FOR UPDATE', [id]); // the save now waits for us
    try {
      const child = startScript(CHAT, ['--quiet', `--resume=${id}`], { env: env(provider) });
      const done = collect(child);
      child.stdin.write('Can I get a refund for order 1043?\n');
      await waitUntil('the step is being saved', () =>
        running(`UPDATE conversations SET updated_at = NOW(3) WHERE id = '${id}'`),
      );
      child.kill('SIGKILL');
      expect((await done).signal).toBe('SIGKILL');
    } finally {
      await admin.rollback();
    }
    await expectValidHistory(id, 1);
  });
});

/** The chapter's risk: a ticket opened, then the answer never comes. Returns the ticket the first turn opened. */
async function ticketThenInterrupted(provider: ProviderName, signal: 'SIGINT' | 'SIGKILL') {
  const id = await conversationWithOneTurn(provider);
  const before = fake.chats().length;
  fake.reply(
    {
      tool_calls: [
        {
          name: 'create_support_ticket',
          arguments: { category: 'refund', summary: 'Refund for order 1042.', order_id: 1042 },
        },
      ],
    },
    { text: 'never delivered', gate: new Promise(() => {}) },
  );
  const child = startScript(CHAT, ['--quiet', `--resume=${id}`], { env: env(provider) });
  const done = collect(child);
  child.stdin.write('Please open a refund ticket for order 1042.\n');
  // The ticket tool has run and its step is saved: the next model call is in flight.
  await fake.waitForChat(before + 2);
  child.kill(signal);
  if (signal === 'SIGINT') {
    await waitForOutput(child, 'saved, so the next question knows about it');
    child.stdin.end();
  }
  const result = await done;
  const [ticket] = await query<Array<{ id: number }>>(
    "SELECT id FROM tickets WHERE order_id = 1042 AND status = 'open'",
  );
  return { id, ticket: ticket.id, result };
}

describe.each(['gemini', 'openai'] as const)(
  'a ticket opened just before the answer was cut off (%s)',
  (provider) => {
    it.each(['SIGINT', 'SIGKILL'] as const)(
      '%s: the conversation remembers the ticket, and "yes please" opens no second one',
      async (signal) => {
        const { id, ticket, result } = await ticketThenInterrupted(provider, signal);
        if (signal === 'SIGINT') {
          expect(result.code).toBe(0);
          expect(result.stdout).toContain(
            '(Cancelled. What Nimbus had already done is saved, so the next question knows about it.)',
          );
          expect((await loadMessages(id)).at(-1)).toEqual({
            role: 'assistant',
            content: INTERRUPTED_ANSWER,
          }); // stored by chat.ts
        } else {
          expect(result.signal).toBe('SIGKILL');
        }
        // The next question: its request holds the ticket, and asking again returns the same ticket.
        fake.reply(
          (view: ChatView) => {
            const known = view.messages.flatMap((m) =>
              m.tool_result ? [m.tool_result.result as { ticket_id?: number }] : [],
            );
            expect(known.some((r) => r.ticket_id === ticket)).toBe(true);
            return {
              tool_calls: [
                {
                  name: 'create_support_ticket',
                  arguments: {
                    category: 'refund',
                    summary: 'Refund for order 1042 (again).',
                    order_id: 1042,
                  },
                },
              ],
            };
          },
          (view: ChatView) => ({
            text: `Your ticket is #${(view.toolResults[0].result as { ticket_id: number }).ticket_id}.`,
          }),
        );
        const next = await runScript(CHAT, ['--quiet', `--resume=${id}`], {
          env: env(provider),
          input: 'Yes please.\n',
        });
        expect(next.stdout).toContain(`Nimbus: Your ticket is #${ticket}.`);
        expect(fake.chats().filter((r) => r.rejection)).toEqual([]);
        const open = await query<unknown[]>(
          "SELECT id FROM tickets WHERE order_id = 1042 AND status = 'open'",
        );
        expect(open).toHaveLength(1);
      },
    );
  },
);

describe('two processes in one conversation', () => {
  it('take turns: the second waits for the first, then sees its turn; no turn is ever mixed', async () => {
    const id = await conversationWithOneTurn('openai');
    const before = fake.chats().length;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    // Each question looks something up, then answers; the first answer waits until the second process is waiting too.
    const reply = (view: ChatView) =>
      view.toolResults.length
        ? { text: `Answer to: ${view.lastUserText}`, gate }
        : { tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1042 } }] };
    fake.reply(reply, reply, reply, reply);
    const first = runScript(ASK, ['--quiet', `--conversation=${id}`, 'First process'], {
      env: env('openai'),
    });
    const second = runScript(ASK, ['--quiet', `--conversation=${id}`, 'Second process'], {
      env: env('openai'),
    });
    await fake.waitForChat(before + 2);
    await waitUntil('the other process waits for the conversation', () => running('GET_LOCK'));
    release();
    expect((await first).code).toBe(0);
    expect((await second).code).toBe(0);
    const history = await loadHistory(id);
    expect(history.damaged).toEqual([]);
    const roles = history.messages.map(
      (m) => `${m.role}${m.role === 'user' ? `:${m.content}` : ''}`,
    );
    const turns = roles
      .slice(4)
      .join(' ')
      .split(/ (?=user:)/);
    expect(turns).toHaveLength(2);
    for (const turn of turns)
      expect(turn).toMatch(/^user:(First|Second) process assistant tool assistant$/);
    // The one that went second had the first one's whole turn in its request.
    const later = fake
      .chats()
      .slice(before)
      .filter((r) => r.view!.toolResults.length === 0)
      .at(-1)!;
    expect(later.view!.messages.filter((m) => m.role === 'user').map((m) => m.text)).toEqual([
      'Where is order 1042?',
      turns[0].match(/^user:(\w+ process)/)![1],
      turns[1].match(/^user:(\w+ process)/)![1],
    ]);
  });
});

describe('Ctrl-C in chat.ts', () => {
  it('while Nimbus is working cancels that question, saves nothing of it, and goes on', async () => {
    const id = await conversationWithOneTurn('gemini');
    const before = fake.chats().length;
    let release!: () => void;
    fake.reply(
      { text: 'too late', gate: new Promise<void>((resolve) => (release = resolve)) },
      { text: 'Second answer.' },
    );
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
    expect(result.stdout).toContain(
      `Bye! Resume later with: npx tsx part-06/chat.ts --resume=${id}`,
    );
    expect(fake.chats()[before].aborted).toBe(true);
    const history = await loadHistory(id);
    expect(history.messages.filter((m) => m.role === 'user').map((m) => m.content)).toEqual([
      'Where is order 1042?',
      'Second question',
    ]);
  });

  it('while a save waits for a lock rolls the save back at once, and the chat goes on', async () => {
    const id = await conversationWithOneTurn('gemini');
    fake.reply(
      { tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1043 } }] },
      { text: 'Answered.' },
    );
    await admin.beginTransaction();
    await admin.query('SELECT id FROM conversations WHERE id = ? FOR UPDATE', [id]);
    let result;
    try {
      const child = startScript(CHAT, ['--quiet', `--resume=${id}`], { env: env('gemini') });
      const done = collect(child);
      child.stdin.write('Where is order 1043?\n');
      await waitUntil('the step is being saved', () =>
        running(`UPDATE conversations SET updated_at = NOW(3) WHERE id = '${id}'`),
      );
      child.kill('SIGINT');
      await waitForOutput(child, 'Cancelled while saving');
      await waitUntil(
        'the server has stopped the save',
        async () =>
          !(await running(`UPDATE conversations SET updated_at = NOW(3) WHERE id = '${id}'`)),
      );
      child.stdin.end();
      result = await done;
    } finally {
      await admin.rollback();
    }
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(
      '(Cancelled while saving: the steps of this question were not saved.)',
    );
    // The answer the cancelled question never asked for goes to the next question.
    expect(
      (await runScript(ASK, ['--quiet', `--conversation=${id}`, 'Hi'], { env: env('gemini') }))
        .stdout,
    ).toBe('Answered.\n');
    await expectValidHistory(id, 2);
  });

  it('at an empty prompt leaves, with nothing to resume when nothing was asked', async () => {
    const child = startScript(CHAT, [], { env: env('gemini') });
    const done = collect(child);
    await waitForOutput(child, 'You: ');
    child.kill('SIGINT');
    const result = await done;
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/You: \nBye!\n$/);
  });
});
