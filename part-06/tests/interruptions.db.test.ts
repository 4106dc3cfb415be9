// Killed, interrupted or blocked mid-turn, chat.ts keeps every completed step, never a half of one, for both providers.
import { fileURLToPath } from 'node:url';
import mysql from 'mysql2/promise';
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
import { splitIntoTurns } from '../context.ts';
import { findConversation, loadMessages } from '../memory.ts';
import { ensureDatabase } from '../setup-database.ts';
import { loadRows } from '../stored-conversations.ts';
import { readHistory } from '../going-further/stored-history.ts';
import { fullSession } from './test-session.ts';
import { WAITING_FOR_OTHER_QUESTION } from '../going-further/conversation-lock.ts';

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
  const session = fullSession(maya, fake.llm(provider));
  fake.reply(
    { tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1042 } }] },
    { text: 'Order 1042 has shipped.' },
  );
  await session.ask('Where is order 1042?');
  return session.conversation.id;
}

/** The conversation as stored, read defensively. */
async function loadHistory(id: string) {
  return readHistory(await loadRows(id));
}

/**
 * Is a statement containing `text` running (or waiting) on the server right now, in this file's own
 * database? (Other test files run at the same time, with statements of their own.)
 */
async function running(text: string): Promise<boolean> {
  const [rows] = await admin.query(
    'SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE DB = ? AND INFO LIKE ? AND ID <> CONNECTION_ID()',
    [db.name, `%${text}%`],
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
    fake.reply({ text: `still fine (${provider})` });
    const conversation = await findConversation(id, maya.id);
    const next = await fullSession(maya, fake.llm(provider), conversation!).ask(
      'Are you still there?',
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
          // Stored by chat.ts: the closing note names the ticket, so it outlives compaction.
          expect((await loadMessages(id)).at(-1)).toEqual({
            role: 'assistant',
            content: expect.stringMatching(
              new RegExp(
                `^\\(This answer was interrupted\\. Done before that: create_support_ticket → .*"ticket_id":${ticket}`,
              ),
            ),
          });
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
    await waitUntil('the other process waits for the conversation', () =>
      running(`GET_LOCK('nimbus-conversation:${id}', 30)`),
    );
    release();
    const results = [await first, await second];
    expect(results.map((r) => r.code)).toEqual([0, 0]);
    // The one that waited said so, and what for.
    expect(results.map((r) => r.stderr).join('')).toContain(WAITING_FOR_OTHER_QUESTION);
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

describe('a question whose lock was lost with its connection', () => {
  it('never mixes its turn with the question that got in meanwhile: it goes on in a turn of its own', async () => {
    const id = await conversationWithOneTurn('gemini');
    const before = fake.chats().length;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    // Every question looks something up, then answers; the first one's answer waits for us, its
    // lookup already saved.
    const reply = (view: ChatView) =>
      view.toolResults.length
        ? {
            text: `Answer to: ${view.lastUserText}`,
            ...(view.lastUserText === 'First process' && { gate }),
          }
        : { tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1042 } }] };
    fake.reply(reply, reply, reply, reply);
    const first = runScript(ASK, ['--quiet', `--conversation=${id}`, 'First process'], {
      env: env('gemini'),
    });
    await fake.waitForChat(before + 2);
    // The first process's lock connection drops (wait_timeout, a restart, a network blip): the lock is gone.
    const [[holder]] = await admin.query<Array<{ thread: number } & mysql.RowDataPacket>>(
      'SELECT IS_USED_LOCK(?) AS thread',
      [`nimbus-conversation:${id}`],
    );
    await admin.query('KILL ?', [holder.thread]);
    // A second question gets in at once and answers completely.
    const second = await runScript(ASK, ['--quiet', `--conversation=${id}`, 'Second process'], {
      env: env('gemini'),
    });
    expect(second.code, second.stderr).toBe(0);
    release();
    const firstDone = await first;
    expect(firstDone.code, firstDone.stderr).toBe(0);

    const history = await loadHistory(id);
    expect(history.damaged).toEqual([]);
    // The first question's lookup, closed by a note; the second question whole; then the first
    // question's answer, in a turn of its own with its question repeated. No turn holds another's answer.
    const turns = splitIntoTurns(history.messages)
      .slice(1)
      .map((turn) => turn.map((m) => (m.role === 'tool' ? 'tool' : `${m.role}: ${m.content}`)));
    expect(turns).toEqual([
      [
        'user: First process',
        'assistant: ',
        'tool',
        expect.stringMatching(
          /^assistant: \(This answer was interrupted\. Done before that: get_order_status/,
        ),
      ],
      ['user: Second process', 'assistant: ', 'tool', 'assistant: Answer to: Second process'],
      ['user: First process', 'assistant: Answer to: First process'],
    ]);
  });
});

describe('Ctrl-C in chat.ts', () => {
  it('while Nimbus is working cancels that question and the lines typed meanwhile, saves nothing of it, and goes on', async () => {
    const id = await conversationWithOneTurn('gemini');
    const before = fake.chats().length;
    let release!: () => void;
    fake.reply(
      { text: 'too late', gate: new Promise<void>((resolve) => (release = resolve)) },
      { text: 'Second answer.' },
    );
    const child = startScript(CHAT, ['--quiet', `--resume=${id}`], { env: env('gemini') });
    const done = collect(child);
    // A paste: the first line is asked, the next two wait their turn.
    child.stdin.write('First question\nNever asked\nNor this\n');
    await fake.waitForChat(before + 1);
    child.kill('SIGINT');
    await waitForOutput(child, 'Cancelled: nothing from this question was saved.');
    child.stdin.write('Second question\n');
    await waitForOutput(child, 'Nimbus: Second answer.');
    child.stdin.end();
    release();
    const result = await done;
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('(Dropped 2 lines typed meanwhile.)');
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

  it('while a tool waits for a lock, lets it finish, saves its step, and closes the turn naming what it did', async () => {
    const id = await conversationWithOneTurn('gemini');
    const before = fake.chats().length;
    fake.reply({
      tool_calls: [
        {
          name: 'create_support_ticket',
          arguments: { category: 'damaged_item', summary: 'Cracked screen.', order_id: 1043 },
        },
      ],
    });
    await admin.beginTransaction();
    // The ticket tool locks the customer's row first: it now waits for us.
    await admin.query('SELECT id FROM customers WHERE id = 1 FOR UPDATE');
    let result;
    try {
      const child = startScript(CHAT, ['--quiet', `--resume=${id}`], { env: env('gemini') });
      const done = collect(child);
      child.stdin.write('My screen arrived cracked, please open a ticket.\n');
      await waitUntil('the tool waits for the customer row', () =>
        running('SELECT id FROM customers WHERE id = 1 FOR UPDATE'),
      );
      child.kill('SIGINT');
      await admin.rollback(); // the tool goes on, opens the ticket, and its step is saved
      await waitForOutput(child, 'saved, so the next question knows about it');
      child.stdin.end();
      result = await done;
    } finally {
      await admin.rollback();
    }
    expect(result.code).toBe(0);
    expect(fake.chats().length).toBe(before + 1); // cancelled before the next model call
    const [ticket] = await query<Array<{ id: number }>>(
      "SELECT id FROM tickets WHERE order_id = 1043 AND category = 'damaged_item' AND status = 'open'",
    );
    const stored = await loadMessages(id);
    expect(stored.map((m) => m.role).slice(-4)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(stored.at(-1)!.content).toContain(`"ticket_id":${ticket.id}`);
    await expectValidHistory(id, 2);
  });

  it.each(['gemini', 'openai'] as const)(
    'in the middle of a streamed answer (%s) stops it at once, keeps what was shown, stores none of it, and the next request is valid',
    async (provider) => {
      const id = await conversationWithOneTurn(provider);
      const before = fake.chats().length;
      // The first piece arrives, then the stream goes quiet (OpenAI sends a role chunk first).
      const after = provider === 'openai' ? 2 : 1;
      fake.reply(
        {
          text: ['Your order ', 'is on its way.'],
          stream: { fault: { after, stall: new Promise(() => {}) } },
        },
        { text: 'Still here.' },
      );
      const child = startScript(CHAT, ['--quiet', `--resume=${id}`], { env: env(provider) });
      const done = collect(child);
      child.stdin.write('Where is order 1042?\n');
      await waitForOutput(child, 'Nimbus: Your order ');
      child.kill('SIGINT');
      await waitForOutput(child, 'Cancelled: nothing from this question was saved.');
      child.stdin.end('And now?\n');
      const result = await done;
      expect(result.code).toBe(0);
      expect(result.stdout).toContain('Nimbus: Your order \n'); // what was shown stays shown
      expect(result.stdout).toContain('Nimbus: Still here.');
      expect(fake.chats()[before].aborted).toBe(true);
      expect(fake.chats().at(-1)!.status).toBe(200);
      const history = await loadHistory(id);
      expect(history.messages.map((m) => m.content).filter(Boolean)).not.toContain('Your order ');
      expect(history.messages.filter((m) => m.role === 'user').map((m) => m.content)).toEqual([
        'Where is order 1042?',
        'And now?',
      ]);
    },
  );

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
