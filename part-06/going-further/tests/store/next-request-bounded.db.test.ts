// One question cannot swell the next (issue 42, item 3): searches of past conversations capped per question, and the newest stored turn fitted to the budget (its results cut, saying so, or compacted), so a follow-up's request stays within about the budget plus the system prompt and tools.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../../../shared/db.ts';
import type { ScratchDatabase } from '../../../../shared/testing/database.ts';
import {
  startFakeProvider,
  type FakeProvider,
  type ReceivedRequest,
} from '../../../../shared/testing/fake-provider.ts';
import { MAX_STEPS } from '../../../agent.ts';
import { DEFAULT_BUDGET } from '../../../context.ts';
import { findConversation } from '../../../memory.ts';
import type { Customer } from '../../../session.ts';
import { MAX_SEARCHES_PER_QUESTION, searchLimitError } from '../../question/call-limits.ts';
import { ensureFullDatabase } from '../../store/ensure-tables.ts';
import { fullSession } from '../full-session.ts';
import { newCustomer } from '../new-customer.ts';
import { createProductDatabase } from '../product-database.ts';

let fake: FakeProvider;
let db: ScratchDatabase;

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createProductDatabase();
  await ensureFullDatabase(() => {});
});
afterAll(async () => {
  await fake.close();
  await db.drop();
});

/**
 * What a request sends besides its system prompt and its tool definitions (the same for every
 * question, whatever the conversation): the history, the customer's notes, the question.
 */
function conversationPart(request: ReceivedRequest): number {
  const { body } = request;
  const system = body.messages.filter((m: { role: string }) => m.role === 'system');
  return (
    JSON.stringify(body).length - JSON.stringify(body.tools).length - JSON.stringify(system).length
  );
}
/** "About the budget": the history within MEMORY_MAX_CHARS, plus a short question and the wire format's own keys. */
const ABOUT_THE_BUDGET = DEFAULT_BUDGET.maxChars + 2_000;

/** Long lines about her parcel, so every search of past conversations finds plenty to return. */
const long = (i: number) =>
  `My parcel number ${i} with the umbrella and the blue raincoat was left at the wrong door again. `.repeat(
    4,
  );

/** Stores a conversation of hers holding one turn, as these rows, the way an older version could have left it. */
async function storedTurn(customerId: number, messages: object[]): Promise<string> {
  const id = randomBytes(16).toString('hex');
  await query('INSERT INTO conversations (id, customer_id) VALUES (?, ?)', [id, customerId]);
  for (let start = 0; start < messages.length; start += 1000) {
    const rows = messages
      .slice(start, start + 1000)
      .map((message, i) => [
        id,
        start + i + 1,
        (message as { role: string }).role,
        JSON.stringify(message),
      ]);
    await query('INSERT INTO messages (conversation_id, seq, role, data) VALUES ?', [rows]);
  }
  return id;
}

/** Her follow-up in that conversation, answered; the request it sent. */
async function followUp(customer: Customer, id: string, question: string) {
  const conversation = await findConversation(id, customer.id);
  const before = fake.chats().length;
  fake.reply({ text: 'They have all shipped.' });
  const result = await fullSession(customer, fake.llm('openai'), conversation!).ask(question);
  expect(result.outcome).toBe('answered');
  const request = fake.chats()[before];
  expect(request.status).toBe(200);
  return request;
}

describe("a follow-up's request", () => {
  it('after a question whose model made 6 replies of 16 search_past_conversations calls: only 4 ran, and the follow-up stays within about the budget', async () => {
    const customer = await newCustomer('searches');
    // Four earlier conversations full of the words she will search for.
    for (let i = 0; i < 4; i++) {
      fake.reply({ text: long(i + 100) });
      await fullSession(customer, fake.llm('openai')).ask(long(i));
    }
    const session = fullSession(customer, fake.llm('openai'));
    const replies = Array.from({ length: 6 }, (_, r) => ({
      tool_calls: Array.from({ length: 16 }, (_, c) => ({
        name: 'search_past_conversations',
        arguments: { query: `parcel umbrella raincoat door ${r * 16 + c}` },
      })),
    }));
    // The sixth reply is the last step: the agent's step limit ends the question, its calls not run.
    fake.reply(...replies);
    const first = await session.ask('What did I say about my parcel before?');
    expect(first.outcome).toBe('step_limit');
    expect(first.steps).toBe(MAX_STEPS);
    const before = fake.chats().length;
    fake.reply({ text: 'Yes.' });
    await session.ask('Was that all?');
    const followUp = fake.chats()[before];
    expect(followUp.view!.messages.filter((m) => m.role === 'user').map((m) => m.text)).toEqual([
      'What did I say about my parcel before?',
      'Was that all?',
    ]);
    expect(conversationPart(followUp)).toBeLessThanOrEqual(ABOUT_THE_BUDGET);

    // Of the 80 searches its five steps asked for, four ran; the rest were refused, saying why.
    const results = first.messages.filter((m) => m.role === 'tool');
    expect(results).toHaveLength(16 * (MAX_STEPS - 1));
    const refused = JSON.stringify({ error: searchLimitError('search_past_conversations') });
    const ran = results.filter((m) => m.content !== refused);
    expect(ran).toHaveLength(MAX_SEARCHES_PER_QUESTION);
    for (const result of ran) expect(JSON.parse(result.content).conversations.length).toBe(3);
  });

  it('after a stored turn of 10,000 tool calls (as older versions could leave): within about the budget, the turn fitted', async () => {
    const customer = await newCustomer('ten-thousand');
    const calls = Array.from({ length: 10_000 }, (_, i) => ({
      id: `call_${i}`,
      name: 'get_order_status',
      arguments: { order_id: 1000 + i },
    }));
    const messages = [
      { role: 'user', content: 'Where are all my orders?' },
      { role: 'assistant', content: '', tool_calls: calls },
      ...calls.map((call) => ({
        role: 'tool',
        tool_call_id: call.id,
        name: call.name,
        content: JSON.stringify({
          order_id: call.arguments.order_id,
          status: 'shipped',
          note: 'x'.repeat(150),
        }),
      })),
      { role: 'assistant', content: 'All 10,000 of your orders have shipped.' },
    ];
    const id = await storedTurn(customer.id, messages);
    const request = await followUp(customer, id, 'And the last one?');
    expect(request.view!.messages.filter((m) => m.role === 'user').map((m) => m.text)).toEqual([
      'Where are all my orders?',
      'And the last one?',
    ]);
    expect(conversationPart(request)).toBeLessThanOrEqual(ABOUT_THE_BUDGET);
    // Only the request is fitted: what is stored stays whole.
    const [{ n }] = await query<Array<{ n: number }>>(
      'SELECT COUNT(*) AS n FROM messages WHERE conversation_id = ?',
      [id],
    );
    expect(Number(n)).toBe(messages.length + 2);
  });

  it('after a stored turn whose few results alone are over the budget: they are sent cut, each saying so, within the budget', async () => {
    const customer = await newCustomer('long-results');
    const calls = [1, 2, 3].map((i) => ({
      id: `call_${i}`,
      name: 'search_help_center',
      arguments: { query: `returns ${i}` },
    }));
    const passage = JSON.stringify({ passages: ['Returns are free within 30 days. '.repeat(200)] });
    const id = await storedTurn(customer.id, [
      { role: 'user', content: 'How do returns work?' },
      { role: 'assistant', content: '', tool_calls: calls },
      ...calls.map((call) => ({
        role: 'tool',
        tool_call_id: call.id,
        name: call.name,
        content: passage,
      })),
      { role: 'assistant', content: 'Returns are free within 30 days.' },
    ]);
    const request = await followUp(customer, id, 'And exchanges?');
    const sent = request.body.messages.filter((m: { role: string }) => m.role === 'tool');
    expect(sent).toHaveLength(3); // the turn is sent whole, its results cut
    for (const result of sent)
      expect(result.content).toMatch(
        new RegExp(` …\\(cut to fit the request: \\d+ of ${passage.length} characters\\)$`),
      );
    expect(conversationPart(request)).toBeLessThanOrEqual(ABOUT_THE_BUDGET);
  });
});
