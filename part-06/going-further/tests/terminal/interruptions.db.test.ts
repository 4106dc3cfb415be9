// Killed, interrupted or blocked mid-turn, a chat keeps every completed step, never a half of one, for both providers: the core chat.ts killed, the full one interrupted (Ctrl-C) or sharing a conversation.
import { fileURLToPath } from 'node:url';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connectionOptions, query } from '../../../../shared/db.ts';
import type { ScratchDatabase } from '../../../../shared/testing/database.ts';
import {
  startFakeProvider,
  type ChatView,
  type FakeProvider,
  type ProviderName,
} from '../../../../shared/testing/fake-provider.ts';
import { runInProcess } from '../../../../shared/testing/run-in-process.ts';
import {
  collect,
  runScript,
  startScript,
  waitForOutput,
} from '../../../../shared/testing/run-script.ts';
import { waitUntil } from '../../../../shared/testing/wait-until.ts';
import { DEFAULT_BUDGET, splitIntoTurns } from '../../../context.ts';
import { findConversation, loadMessages, plainStore, type Conversation } from '../../../memory.ts';
import { loadRows } from '../../store/message-rows.ts';
import { WAITING_FOR_OTHER_QUESTION } from '../../question/lease.ts';
import { ensureFullDatabase } from '../../store/ensure-tables.ts';
import { readHistory } from '../../store/read-history.ts';
import { coreSession } from '../../../tests/test-session.ts';
import { fullSession } from '../full-session.ts';
import { createProductDatabase } from '../product-database.ts';
import { whatHappened } from '../../nimbus.ts';
import { hardenedStore } from '../../store/hardened-store.ts';
import type { LlmSettings } from '../../../../shared/config.ts';
import type { AgentResult } from '../../../agent.ts';
import type { Customer } from '../../../session.ts';

/** The chapter's chat (plain store, readline). */
const CHAT = fileURLToPath(new URL('../../../chat.ts', import.meta.url));
/** The full Nimbus: Ctrl-C handled for piped input too, one question at a time per conversation. */
const FULL_CHAT = fileURLToPath(new URL('../../chat.ts', import.meta.url));
const FULL_ASK = fileURLToPath(new URL('../../ask.ts', import.meta.url));
/** Which chat, and the session that asks in-process the way it does. */
type Chat = {
  script: string;
  session: (
    customer: Customer,
    llm: LlmSettings,
    conversation?: Conversation,
  ) => { conversation: Conversation; ask(question: string): Promise<AgentResult> };
};
const core: Chat = { script: CHAT, session: coreSession };
const full: Chat = { script: FULL_CHAT, session: fullSession };
const maya = { id: 1, name: 'Maya Patel', email: 'maya.patel@example.com' };
let fake: FakeProvider;
let db: ScratchDatabase;
let admin: mysql.Connection; // the test's own connection, to hold locks

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createProductDatabase(); // the full chat's, fenced by the lease, in-process too
  await ensureFullDatabase(() => {}); // the core chat and the full one share it
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
async function conversationWithOneTurn(provider: ProviderName, chat: Chat): Promise<string> {
  const session = chat.session(maya, fake.llm(provider));
  fake.reply(
    { tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1042 } }] },
    { text: 'Order 1042 has shipped.' },
  );
  await session.ask('Where is order 1042?');
  return session.conversation.id;
}

/** The conversation as the full chat reads it: defensively. */
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

/**
 * After a crash: nothing damaged, every stored turn complete or closed when loaded, and both providers
 * accept the history, asked the way `chat` asks.
 */
async function expectValidHistory(id: string, turns: number, chat: Chat) {
  const history = await loadHistory(id);
  expect(history.damaged).toEqual([]);
  expect(history.messages.filter((m) => m.role === 'user')).toHaveLength(turns);
  for (const [i, provider] of (['gemini', 'openai'] as const).entries()) {
    fake.reply({ text: `still fine (${provider})` });
    const conversation = await findConversation(id, maya.id);
    const next = await chat
      .session(maya, fake.llm(provider), conversation!)
      .ask('Are you still there?');
    expect(next.answer).toBe(`still fine (${provider})`);
    expect(fake.chats().at(-1)!.status).toBe(200);
    // Every turn before the question sent ends with an answer.
    const sent = fake.chats().at(-1)!.view!.messages;
    expect(sent.filter((m) => m.role === 'user')).toHaveLength(turns + i + 1);
    expect(sent.at(-2)).toMatchObject({ role: 'assistant' });
  }
}

// Where the kill lands matters, not which provider answers (the history is checked with both afterwards).
describe('killing the core chat.ts', () => {
  it('during the model call leaves the earlier turns whole and nothing of the new one', async () => {
    const provider = 'gemini';
    const id = await conversationWithOneTurn(provider, core);
    const before = fake.chats().length;
    fake.reply({ text: 'never delivered', gate: new Promise(() => {}) });
    const child = startScript(CHAT, ['--quiet', `--resume=${id}`], { env: env(provider) });
    const done = collect(child);
    child.stdin.write('Can I get a refund for order 1043?\n');
    await fake.waitForChat(before + 1);
    child.kill('SIGKILL');
    expect((await done).signal).toBe('SIGKILL');
    await expectValidHistory(id, 1, core);
  });

  it('during a tool leaves the earlier turns whole and nothing of the new one', async () => {
    const provider = 'openai';
    const id = await conversationWithOneTurn(provider, core);
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
    await expectValidHistory(id, 1, core);
  });

  it('during the save of a step leaves the earlier turns whole and nothing of the new one', async () => {
    const provider = 'gemini';
    const id = await conversationWithOneTurn(provider, core);
    fake.reply({
      tool_calls: [{ name: 'check_refund_eligibility', arguments: { order_id: 1043 } }],
    });
    await admin.beginTransaction();
    await admin.query('SELECT id FROM conversations WHERE id = ? FOR UPDATE', [id]); // the save now waits for us
    try {
      const child = startScript(CHAT, ['--quiet', `--resume=${id}`], { env: env(provider) });
      const done = collect(child);
      child.stdin.write('Can I get a refund for order 1043?\n');
      // The plain store's save starts with the conversation's row: it now waits for us.
      await waitUntil('the step is being saved', () =>
        running(`INSERT INTO conversations (id, customer_id) VALUES ('${id}'`),
      );
      child.kill('SIGKILL');
      expect((await done).signal).toBe('SIGKILL');
    } finally {
      await admin.rollback();
    }
    await expectValidHistory(id, 1, core);
  });
});

/**
 * The chapter's risk: a ticket opened, then the answer never comes. SIGKILL lands on the core chat
 * (nothing can be done at all); SIGINT on the full one, which cancels the question and goes on.
 */
const interrupt = { SIGKILL: { chat: core }, SIGINT: { chat: full } } as const;

/** Returns the ticket the interrupted turn opened. */
async function ticketThenInterrupted(provider: ProviderName, signal: 'SIGINT' | 'SIGKILL') {
  const { chat } = interrupt[signal];
  const id = await conversationWithOneTurn(provider, chat);
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
  const child = startScript(chat.script, ['--quiet', `--resume=${id}`], { env: env(provider) });
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

// Each chat meets one provider here (the provider layer is the same for both, and tested for both).
describe('a ticket opened just before the answer was cut off', () => {
  it.each([
    ['SIGINT', 'gemini'],
    ['SIGKILL', 'openai'],
  ] as const)(
    '%s (the core chat killed, the full one interrupted), %s: the conversation remembers the ticket, and "yes please" opens no second one',
    async (signal, provider) => {
      const { chat } = interrupt[signal];
      const { id, ticket, result } = await ticketThenInterrupted(provider, signal);
      if (signal === 'SIGINT') {
        expect(result.code).toBe(0);
        expect(result.stdout).toContain(
          '(Cancelled. What Nimbus had already done is saved, so the next question knows about it.)',
        );
      } else {
        expect(result.signal).toBe('SIGKILL');
      }
      // Either way the turn is stored as far as it got, the ticket's step last: nothing is added to it.
      const stored = await loadMessages(id);
      expect(stored.map((m) => m.role).slice(-3)).toEqual(['user', 'assistant', 'tool']);
      // The context built on the next load closes it with a note that names the ticket, so it
      // outlives compaction.
      const conversation = (await findConversation(id, maya.id))!;
      const store = chat === core ? plainStore(DEFAULT_BUDGET) : hardenedStore(DEFAULT_BUDGET);
      const { messages } = await store.loadContext(conversation, '');
      expect(messages.at(-1)).toEqual({
        role: 'assistant',
        content: expect.stringMatching(
          new RegExp(
            `^\\(This answer was interrupted\\. Done before that: create_support_ticket → .*"ticket_id":${ticket}`,
          ),
        ),
      });
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
      const next = await runInProcess(chat.script, ['--quiet', `--resume=${id}`], {
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
});

describe('two processes in one conversation (going further’s ask.ts)', () => {
  it('take turns: the second waits for the first, then sees its turn; no turn is ever mixed', async () => {
    const id = await conversationWithOneTurn('openai', full);
    const before = fake.chats().length;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    // Each question looks something up, then answers; the first answer waits until the second process is waiting too.
    const reply = (view: ChatView) =>
      view.toolResults.length
        ? { text: `Answer to: ${view.lastUserText}`, gate }
        : { tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1042 } }] };
    fake.reply(reply, reply, reply, reply);
    const children = ['First process', 'Second process'].map((question) =>
      startScript(FULL_ASK, ['--quiet', `--conversation=${id}`, question], { env: env('openai') }),
    );
    const done = children.map((child) => collect(child));
    let stderr = '';
    for (const child of children) {
      child.stderr.on('data', (chunk) => (stderr += chunk));
      child.stdin.end();
    }
    await fake.waitForChat(before + 2);
    // The one that waits says so, and what for.
    await waitUntil('the other process waits for the conversation', () =>
      stderr.includes(WAITING_FOR_OTHER_QUESTION),
    );
    release();
    const results = await Promise.all(done);
    expect(results.map((r) => r.code)).toEqual([0, 0]);
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

describe('a question whose lease ran out while it worked (its process frozen past the expiry)', () => {
  it('writes nothing more once another question took the conversation: that one is whole, and the step saved before is closed', async () => {
    const id = await conversationWithOneTurn('gemini', full);
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
    const first = runScript(FULL_ASK, ['--quiet', `--conversation=${id}`, 'First process'], {
      env: env('gemini'),
    });
    await fake.waitForChat(before + 2);
    // The first process's lease expires (as if it had been frozen for longer than LEASE_SECONDS).
    await admin.query(
      'UPDATE question_leases SET expires_at = NOW(3) - INTERVAL 1 SECOND WHERE conversation_id = ?',
      [id],
    );
    // A second question gets in at once and answers completely.
    const second = await runScript(
      FULL_ASK,
      ['--quiet', `--conversation=${id}`, 'Second process'],
      {
        env: env('gemini'),
      },
    );
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).not.toContain(WAITING_FOR_OTHER_QUESTION);
    release();
    const firstDone = await first;
    // Its answer is shown, and it says why it was not kept: taken over, as every entry says it.
    expect(firstDone.stdout).toBe('Answer to: First process\n');
    const takenOver = whatHappened({
      conversation: { id, customerId: maya.id, saved: true },
      restarted: false,
      lost: 'taken over',
      tickets: [],
    })!;
    expect(firstDone.stderr).toContain(takenOver);
    expect(firstDone.stderr).not.toContain('Not saved');
    expect(firstDone.code).toBe(1);

    const history = await loadHistory(id);
    expect(history.damaged).toEqual([]);
    // The first question's lookup, closed by a note; the second question whole. No turn holds
    // another's answer, and the first answer, written after its lease was gone, is not stored.
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
    ]);
  });
});

describe('Ctrl-C in the full chat', () => {
  it('while Nimbus is working cancels that question and the lines typed meanwhile, saves nothing of it, and goes on', async () => {
    const id = await conversationWithOneTurn('gemini', full);
    const before = fake.chats().length;
    let release!: () => void;
    fake.reply(
      { text: 'too late', gate: new Promise<void>((resolve) => (release = resolve)) },
      { text: 'Second answer.' },
    );
    const child = startScript(FULL_CHAT, ['--quiet', `--resume=${id}`], { env: env('gemini') });
    const done = collect(child);
    // A paste: the first line is asked, the next two wait their turn.
    child.stdin.write('First question\nNever asked\nNor this\n');
    await fake.waitForChat(before + 1);
    child.kill('SIGINT');
    await waitForOutput(child, '(Cancelled');
    child.stdin.write('Second question\n');
    await waitForOutput(child, 'Nimbus: Second answer.');
    child.stdin.end();
    release();
    const result = await done;
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('(Dropped 2 lines typed meanwhile.)');
    expect(result.stdout).toContain('(Cancelled: nothing from this question was saved.)');
    expect(result.stdout).not.toContain('Never asked');
    expect(result.stdout).toContain(
      `Bye! Resume later with: npx tsx part-06/going-further/chat.ts --resume=${id}`,
    );
    expect(fake.chats()[before].aborted).toBe(true);
    // Nothing of the cancelled question was done, so nothing of it is stored.
    const history = await loadHistory(id);
    expect(history.messages.filter((m) => m.role === 'user').map((m) => m.content)).toEqual([
      'Where is order 1042?',
      'Second question',
    ]);
  });

  it('while a tool waits for a lock, lets it finish, saves its step, and the next load closes the turn naming what it did', async () => {
    const id = await conversationWithOneTurn('gemini', full);
    const before = fake.chats().length;
    fake.reply({
      tool_calls: [
        {
          name: 'create_support_ticket',
          arguments: { category: 'damaged_item', summary: 'Cracked screen.', order_id: 1043 },
        },
      ],
    });
    const child = startScript(FULL_CHAT, ['--quiet', `--resume=${id}`], { env: env('gemini') });
    const done = collect(child);
    await waitForOutput(child, 'You: ');
    // The ticket tool's look for an open ticket now waits for us.
    await admin.query('LOCK TABLES tickets WRITE');
    try {
      // A second line waits its turn: dropping it shows the Ctrl-C was handled before the tool went on.
      child.stdin.write('My screen arrived cracked, please open a ticket.\nNever asked\n');
      await waitUntil('the tool waits for the tickets table', () => running('FROM tickets'));
      child.kill('SIGINT');
      await waitForOutput(child, '(Dropped 1 line typed meanwhile.)');
    } finally {
      await admin.query('UNLOCK TABLES'); // the tool goes on, opens the ticket, and its step is saved
    }
    await waitForOutput(child, 'saved, so the next question knows about it');
    child.stdin.end();
    const result = await done;
    expect(result.code).toBe(0);
    expect(fake.chats().length).toBe(before + 1); // cancelled before the next model call
    const [ticket] = await query<Array<{ id: number }>>(
      "SELECT id FROM tickets WHERE order_id = 1043 AND category = 'damaged_item' AND status = 'open'",
    );
    // Stored as far as it got; no closing note is stored: loading adds it, naming the ticket.
    const stored = await loadMessages(id);
    expect(stored.map((m) => m.role).slice(-3)).toEqual(['user', 'assistant', 'tool']);
    const closed = (await loadHistory(id)).messages;
    expect(closed.at(-1)).toMatchObject({ role: 'assistant' });
    expect(closed.at(-1)!.content).toContain(`"ticket_id":${ticket.id}`);
    await expectValidHistory(id, 2, full);
  });

  it.each(['gemini', 'openai'] as const)(
    'in the middle of a streamed answer (%s) stops it at once, keeps what was shown, stores none of it, and the next request is valid',
    async (provider) => {
      const id = await conversationWithOneTurn(provider, full);
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
      const child = startScript(FULL_CHAT, ['--quiet', `--resume=${id}`], { env: env(provider) });
      const done = collect(child);
      child.stdin.write('Where is order 1042?\n');
      await waitForOutput(child, 'Nimbus: Your order ');
      child.kill('SIGINT');
      await waitForOutput(child, '(Cancelled');
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
    const child = startScript(FULL_CHAT, [], { env: env('gemini') });
    const done = collect(child);
    await waitForOutput(child, 'You: ');
    child.kill('SIGINT');
    const result = await done;
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/You: \nBye!\n$/);
  });
});
