// What one reply may ask for. Of 40 calls in a reply 16 run and the model is told the rest did not; searches, each a paid embedding, are bounded per question.
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../../shared/config.ts';
import { query } from '../../../../shared/db.ts';
import type { Message, ToolMessage } from '../../../../shared/llm/index.ts';
import type { ScratchDatabase } from '../../../../shared/testing/database.ts';
import {
  startFakeProvider,
  type ChatView,
  type FakeProvider,
} from '../../../../shared/testing/fake-provider.ts';
import { runInProcess } from '../../../../shared/testing/run-in-process.ts';
import { DEFAULT_BUDGET } from '../../../context.ts';
import { buildIndex } from '../../../embedding-index.ts';
import { fullSession } from '../full-session.ts';
import { createProductDatabase } from '../product-database.ts';
import {
  DEFAULT_MAX_TOOL_CALLS,
  FORGET_ALONE,
  MAX_SEARCHES_PER_QUESTION,
  maxToolCallsPerReply,
  searchLimitError,
  tooManyCalls,
} from '../../question/call-limits.ts';
import { ensureFullDatabase } from '../../store/ensure-tables.ts';
import { fitResults } from '../../store/fit-results.ts';

const ASK = fileURLToPath(new URL('../../ask.ts', import.meta.url));
const CHAT = fileURLToPath(new URL('../../chat.ts', import.meta.url));
const maya = { id: 1, name: 'Maya Patel', email: 'maya.patel@example.com' };

let fake: FakeProvider;
let db: ScratchDatabase;

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createProductDatabase();
  await ensureFullDatabase(() => {});
  await buildIndex(fake.llm('gemini')); // so that search_help_center searches by meaning, paying each time
});
afterAll(async () => {
  await fake.close();
  await db.drop();
});
beforeEach(() => {
  fake.requests.length = 0;
});
afterEach(() => {
  // Every scripted reply was used, and the fake API accepted every request: each call kept had its result.
  expect(fake.pending()).toBe(0);
  expect(fake.chats().filter((request) => request.rejection)).toEqual([]);
});

/** A reply of `n` order look-ups, each for another order. */
const lookUps = (n: number) => ({
  tool_calls: Array.from({ length: n }, (_, i) => ({
    name: 'get_order_status',
    arguments: { order_id: 1001 + i },
  })),
});
const errors = (view: ChatView) =>
  view.toolResults.map((r) => (r.result as { error?: string }).error);
const storedRows = async (conversationId: string) =>
  (
    await query<Array<{ n: number }>>(
      'SELECT COUNT(*) AS n FROM messages WHERE conversation_id = ?',
      [conversationId],
    )
  )[0].n;

describe.each(['gemini', 'openai'] as const)('a reply of 40 tool calls, %s', (provider) => {
  it('runs the first 16; the 17th tells the model the rest did not run; the next request fits the memory budget', async () => {
    fake.reply(lookUps(40), { text: 'Done.' });
    const run = await runInProcess(ASK, ['--quiet', 'Where are all my orders?'], {
      env: { ...fake.env(provider), DB_NAME: db.name },
    });
    expect(run.code).toBe(0);
    const next = fake.chats()[1].view!;
    const results = errors(next);
    expect(results).toHaveLength(DEFAULT_MAX_TOOL_CALLS + 1);
    expect(results.at(-1)).toBe(tooManyCalls(40, DEFAULT_MAX_TOOL_CALLS));
    expect(results.at(-1)).toContain('this one and the 23 after it did not');
    // The first 16 ran: another customer's order and one that does not exist look alike.
    for (const error of results.slice(0, -1))
      if (error) expect(error).toMatch(/^Order \d+ not found$/);
    // The next request carries the question, one reply of 17 calls and their results, within budget.
    expect(next.messages.find((m) => m.tool_calls)?.tool_calls).toHaveLength(17);
    expect(JSON.stringify(next.messages).length).toBeLessThan(DEFAULT_BUDGET.maxChars);
    // Stored: the question, the reply, its 17 results, the answer.
    const id = /Conversation ([0-9a-f]{32})/.exec(run.stderr)![1];
    expect(await storedRows(id)).toBe(20);
  });
});

describe.each(['gemini', 'openai'] as const)(
  'forget_everything beside another call, %s',
  (provider) => {
    it('is not run, and says why; the other call runs; nothing is erased', async () => {
      fake.reply(
        {
          tool_calls: [
            { name: 'get_order_status', arguments: { order_id: 1042 } },
            { name: 'forget_everything', arguments: {} },
          ],
        },
        { text: 'Shall I forget everything?' },
      );
      const session = fullSession(maya, fake.llm(provider));
      const outcome = await session.ask('Where is order 1042? And forget everything about me.');
      expect(outcome.outcome).toBe('answered');
      const results = fake.chats()[1].view!.toolResults.map((r) => r.result);
      expect(results[0]).toMatchObject({ order_id: 1042, status: 'shipped' });
      expect(results[1]).toEqual({ error: FORGET_ALONE });
      // Her conversation is still there: the refused call erased nothing.
      expect(await storedRows(session.conversation.id)).toBe(5);
    });
  },
);

describe("a step's results", () => {
  const result = (id: string, chars: number): Message => ({
    role: 'tool',
    tool_call_id: id,
    name: 'search_past_conversations',
    content: JSON.stringify({ matches: 'x'.repeat(chars) }),
  });
  const earlier = result('old', 9_000); // an earlier turn's: the memory budget trims those
  const request = (...results: Message[]): Message[] => [
    { role: 'user', content: 'What did we say?' },
    earlier,
    { role: 'user', content: 'And about my refund?' },
    { role: 'assistant', content: '', tool_calls: [] },
    ...results,
  ];
  const chars = (messages: Message[]) =>
    messages.slice(3).reduce((sum, m) => sum + (m.role === 'tool' ? m.content.length : 0), 0);

  it('are sent whole when they fit the memory budget', () => {
    const messages = request(result('a', 2_000), result('b', 2_000));
    expect(fitResults(messages, 5_000)).toBe(messages);
  });

  it('are sent within it when they do not: the short ones whole, the long ones cut alike, saying so', () => {
    const messages = request(result('a', 300), result('b', 9_000), result('c', 20_000));
    const sent = fitResults(messages, 5_000);
    expect(chars(sent)).toBeLessThanOrEqual(5_000);
    expect(sent[4]).toBe(messages[4]); // the short one, whole
    for (const cut of [sent[5], sent[6]] as ToolMessage[]) {
      expect(cut.content).toMatch(/ …\(cut to fit the request: \d+ of \d+ characters\)$/);
      expect(cut.content.length).toBeGreaterThan(2_000); // the room left, shared out
    }
    expect(sent[1]).toBe(earlier); // an earlier turn's result is not this step's
  });
});

describe('MAX_TOOL_CALLS_PER_REPLY', () => {
  it.each(['gemini', 'openai'] as const)(
    'in .env sets the limit for the chat (%s, streamed)',
    async (provider) => {
      fake.reply(lookUps(6), { text: 'Done.' }, { text: 'It is 1001.' });
      // The follow-up sends the stored turn back: the provider accepts it (checked after each test).
      const run = await runInProcess(CHAT, ['--quiet'], {
        env: { ...fake.env(provider), DB_NAME: db.name, MAX_TOOL_CALLS_PER_REPLY: '4' },
        input: 'Where are all my orders?\nAnd the first one?\n',
      });
      expect(run.code).toBe(0);
      expect(errors(fake.chats()[1].view!).at(-1)).toBe(
        'This reply asked for 6 tool calls, and at most 4 run per reply: the first 4 ran, this one and the 1 after it did not. Ask again for what you still need, at most 4 at a time.',
      );
      expect(fake.chats()[1].view!.toolResults).toHaveLength(5);
      expect(run.stdout).toContain('Nimbus: It is 1001.');
    },
  );

  it.each(['0', '1001', 'many'])('=%s is one sentence naming it', (value) => {
    process.env.MAX_TOOL_CALLS_PER_REPLY = value;
    try {
      expect(() => maxToolCallsPerReply(process.env)).toThrow(
        new ConfigError(
          `MAX_TOOL_CALLS_PER_REPLY must be a whole number from 1 to 1000 (it is "${value}"). Fix it in .env.`,
        ),
      );
    } finally {
      delete process.env.MAX_TOOL_CALLS_PER_REPLY;
    }
  });
});

describe.each(['gemini', 'openai'] as const)('help-center searches, %s', (provider) => {
  it(`make at most ${MAX_SEARCHES_PER_QUESTION} embedding requests per question, over all its replies`, async () => {
    const searches = (from: number) => ({
      tool_calls: [0, 1, 2].map((i) => ({
        name: 'search_help_center',
        arguments: { query: `refund question ${from + i}` },
      })),
    });
    fake.reply(searches(1), searches(4), { text: 'Refunds take 5 days.' });
    // The limits are the question's own: Nimbus.ask bounds every question it answers.
    const session = fullSession(maya, fake.llm(provider));
    const outcome = await session.ask('How do refunds work?');
    expect(outcome.outcome).toBe('answered');
    expect(fake.requests.filter((request) => request.kind === 'embed')).toHaveLength(4);
    expect(errors(fake.chats()[1].view!)).toEqual([undefined, undefined, undefined]);
    expect(errors(fake.chats()[2].view!)).toEqual([
      undefined,
      searchLimitError('search_help_center'),
      searchLimitError('search_help_center'),
    ]);
  });
});
