// The chapter's agent with its plain store: each step saved as it completes, earlier turns sent back, fallbacks stored as answers, a turn cut short closed when it is loaded.
import { existsSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { logDir } from '../../shared/config.ts';
import { query } from '../../shared/db.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../shared/testing/fake-provider.ts';
import {
  API_ERROR_ANSWER,
  EMPTY_ANSWER,
  MAX_STEPS,
  REFUSED_ANSWER,
  STEP_LIMIT_ANSWER,
} from '../agent.ts';
import { interruptedAnswer } from '../context.ts';
import { loadMessages, saveMessages, type StoredMessage } from '../memory.ts';
import { ensureDatabase } from '../setup-database.ts';
import { conversationTraceFile } from '../trace.ts';
import { coreSession, type TestSession } from './test-session.ts';

const maya = { id: 1, name: 'Maya Patel', email: 'maya.patel@example.com' };
let fake: FakeProvider;
let db: ScratchDatabase;
let session: TestSession;

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createScratchDatabase();
  await ensureDatabase(() => {});
});
afterAll(async () => {
  await fake.close();
  await db.drop();
});
afterEach(() => {
  expect(fake.pending()).toBe(0);
  expect(fake.chats().filter((r) => r.rejection)).toEqual([]);
});

/** The conversation's rows as the chapter's table holds them, in order. */
const storedRows = (id: string) =>
  query<Array<{ role: string; input_tokens: number | null; output_tokens: number | null }>>(
    'SELECT role, input_tokens, output_tokens FROM messages WHERE conversation_id = ? ORDER BY seq',
    [id],
  );
const storedRoles = async () => (await storedRows(session.conversation.id)).map((row) => row.role);

describe.each(['gemini', 'openai'] as const)('runAgent with memory, %s', (provider) => {
  beforeEach(async () => {
    fake.requests.length = 0;
    session = coreSession(maya, fake.llm(provider));
    await query("UPDATE tickets SET status = 'closed'"); // each test opens its tickets afresh
  });

  it('saves each step as it completes, and sends the turn back with the next question', async () => {
    let release!: () => void;
    fake.reply(
      { tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1042 } }] },
      {
        text: 'Order 1042 has shipped.',
        gate: new Promise<void>((resolve) => (release = resolve)),
      },
    );
    const first = session.ask('Where is order 1042?');
    await fake.waitForChat(2);
    // The answer is still being written, but the tool step is already on record: call and result together.
    expect(await storedRoles()).toEqual(['user', 'assistant', 'tool']);
    release();
    await first;
    const stored = await loadMessages(session.conversation.id);
    expect(stored.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(stored[1]).toMatchObject({
      tool_calls: [{ name: 'get_order_status' }],
      provider_raw: { provider },
    });
    expect(stored[3]).toMatchObject({
      content: 'Order 1042 has shipped.',
      provider_raw: { provider },
    });

    fake.reply((view) => ({
      text: `You asked ${view.messages.filter((m) => m.role === 'user').length} questions.`,
    }));
    const second = await session.ask('How many questions did I ask?');
    expect(second.answer).toBe('You asked 2 questions.');
    const sent = fake.chats()[2].view!;
    expect(sent.messages.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
      'user',
    ]);
    expect(sent.system).toContain('Nimbus');
    expect(sent.system).toContain('"Maya Patel" (maya.patel@example.com)');
    // The system prompt is never stored: it is added fresh to every request.
    expect(
      (await loadMessages(session.conversation.id)).some((m) => (m.role as string) === 'system'),
    ).toBe(false);
  });

  it('keeps the token counts and request size of every model call beside the message it wrote', async () => {
    fake.reply(
      {
        tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1042 } }],
        usage: { input: 321, output: 12 },
      },
      { text: 'Shipped.', usage: { input: 456, output: 7 } },
    );
    await session.ask('Where is order 1042?');
    const rows = await storedRows(session.conversation.id);
    expect(rows.map((r) => [r.role, r.input_tokens, r.output_tokens])).toEqual([
      ['user', null, null],
      ['assistant', 321, 12],
      ['tool', null, null],
      ['assistant', 456, 7],
    ]);
  });

  it('stores the fallback as a plain answer after the step limit, and the history stays valid', async () => {
    fake.reply(
      ...Array.from({ length: MAX_STEPS }, (_, i) => ({
        tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1030 + i } }],
      })),
    );
    const result = await session.ask('Everything, please');
    const stored = await loadMessages(session.conversation.id);
    expect(stored.at(-1)).toEqual({ role: 'assistant', content: STEP_LIMIT_ANSWER });
    // The sixth call's tokens are counted (and stored with the apology in its place), as every other's.
    const [row] = await query<Array<{ input_tokens: number | null }>>(
      'SELECT input_tokens FROM messages WHERE conversation_id = ? ORDER BY seq DESC LIMIT 1',
      [session.conversation.id],
    );
    expect(row.input_tokens).toBeGreaterThan(0);
    const rows = await query<Array<{ total: number }>>(
      'SELECT SUM(input_tokens) AS total FROM messages WHERE conversation_id = ?',
      [session.conversation.id],
    );
    expect(result.usage.input_tokens).toBe(Number(rows[0].total));
    // The last step's calls never ran: no model call was left to read their results.
    expect(stored.filter((m) => m.role === 'tool')).toHaveLength(MAX_STEPS - 1);
    fake.reply({ text: 'ok' });
    await session.ask('Still there?');
    expect(fake.chats().at(-1)!.status).toBe(200);
  });

  it('stores the fallback after a provider error, a refused request and an empty answer', async () => {
    // A daily quota is not retried: the customer hears the service cannot be reached right now.
    fake.reply({
      error: {
        status: 429,
        quotaId: 'GenerateRequestsPerDayPerProjectPerModel',
        code: 'insufficient_quota',
      },
    });
    expect((await session.ask('First')).outcome).toBe('api_error');
    // A 400 is not an outage: the provider refused what was sent, and says why.
    fake.reply({
      error: { status: 400, message: 'Invalid history: a function response is missing.' },
    });
    const refused = await session.ask('Second');
    expect(refused).toMatchObject({ outcome: 'refused', answer: REFUSED_ANSWER });
    expect(refused.problem).toContain('Invalid history: a function response is missing.');
    fake.reply({ text: '' });
    await session.ask('Third');
    expect(await loadMessages(session.conversation.id)).toEqual([
      { role: 'user', content: 'First' },
      { role: 'assistant', content: API_ERROR_ANSWER },
      { role: 'user', content: 'Second' },
      { role: 'assistant', content: REFUSED_ANSWER },
      { role: 'user', content: 'Third' },
      { role: 'assistant', content: EMPTY_ANSWER },
    ]);
  });

  it('saves nothing, not even the conversation, when cancelled before any tool ran', async () => {
    const controller = new AbortController();
    let release!: () => void;
    fake.reply({ text: 'too late', gate: new Promise<void>((resolve) => (release = resolve)) });
    const pending = session.ask('Cancel me', { signal: controller.signal });
    await fake.waitForChat(1);
    controller.abort();
    expect((await pending).outcome).toBe('cancelled');
    release();
    expect(session.conversation.saved).toBe(false);
    expect(
      await query('SELECT id FROM conversations WHERE id = ?', [session.conversation.id]),
    ).toEqual([]);
    // No trace file either: with no row to find it by, no export, forget or reset could delete it.
    expect(existsSync(conversationTraceFile(logDir(process.env), session.conversation.id))).toBe(
      false,
    );
  });

  it('keeps what a tool did when cancelled after it ran, closes the turn, and shows it to the next question', async () => {
    const controller = new AbortController();
    fake.reply(
      {
        tool_calls: [
          {
            name: 'create_support_ticket',
            arguments: { category: 'refund', summary: 'Refund for 1042.', order_id: 1042 },
          },
        ],
      },
      { text: 'never delivered', gate: new Promise(() => {}) },
    );
    const pending = session.ask('Open a refund ticket for 1042', { signal: controller.signal });
    await fake.waitForChat(2);
    controller.abort();
    expect((await pending).outcome).toBe('cancelled');
    const stored = await loadMessages(session.conversation.id);
    expect(stored.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    // Loading closes the turn with a note that names the ticket, so it survives when the turn is compacted.
    const { messages } = await session.options.store.loadContext(session.conversation, '');
    expect(messages[3]).toEqual({ role: 'assistant', content: interruptedAnswer(stored) });
    expect((messages[3] as { content: string }).content).toMatch(
      /create_support_ticket → .*ticket_id/,
    );
    const ticket = JSON.parse((stored[2] as { content: string }).content);
    expect(ticket).toMatchObject({ created: true });

    // "Yes please" again: the model sees the ticket, and asking for it again opens no second one.
    fake.reply(
      {
        tool_calls: [
          {
            name: 'create_support_ticket',
            arguments: { category: 'refund', summary: 'Refund for 1042, again.', order_id: 1042 },
          },
        ],
      },
      (view) => ({
        text: `Your ticket is #${(view.toolResults[0].result as { ticket_id: number }).ticket_id}.`,
      }),
    );
    const next = await session.ask('Yes please, open it.');
    const sent = fake
      .chats()
      .at(-2)!
      .view!.messages.map((m) => m.tool_result?.result as { ticket_id?: number } | undefined);
    expect(sent.some((result) => result?.ticket_id === ticket.ticket_id)).toBe(true);
    expect(next.answer).toBe(`Your ticket is #${ticket.ticket_id}.`);
    const [count] = await query<Array<{ n: number }>>(
      "SELECT COUNT(*) AS n FROM tickets WHERE order_id = 1042 AND customer_id = 1 AND status = 'open'",
    );
    expect(count.n).toBe(1);
  });

  // A turn left without its answer (a crash, Ctrl-C, older code): what the plain store reads back.
  const question: StoredMessage = { role: 'user', content: 'Where is order 1042?' };
  const lookup: StoredMessage[] = [
    {
      role: 'assistant',
      content: '',
      tool_calls: [{ id: 'call_1', name: 'get_order_status', arguments: { order_id: 1042 } }],
    },
    {
      role: 'tool',
      tool_call_id: 'call_1',
      name: 'get_order_status',
      content: '{"order_id":1042,"status":"shipped"}',
    },
  ];
  it.each([
    ['its question', [question]],
    ['its tool results', [question, ...lookup]],
  ])(
    'closes a stored turn that ends with %s when it loads it: the next request is valid, and nothing is written for it',
    async (_, cut) => {
      await saveMessages(
        session.conversation,
        cut.map((message) => ({ message })),
      );
      fake.reply({ text: 'Yes, still here.' });
      const next = await session.ask('Are you still there?');
      expect(next.outcome).toBe('answered');
      const request = fake.chats().at(-1)!;
      expect(request.status).toBe(200);
      expect(request.view!.messages.map((m) => m.role)).toEqual([
        ...cut.map((m) => m.role),
        'assistant',
        'user',
      ]);
      // The note says what the tools did, so the model does not do it again.
      const note = interruptedAnswer(cut);
      expect(request.view!.messages.at(-2)!.text).toBe(note);
      expect(note).toBe(
        cut.length === 1
          ? '(This answer was interrupted. Done before that: nothing.)'
          : '(This answer was interrupted. Done before that: get_order_status → {"order_id":1042,"status":"shipped"}.)',
      );
      // Closing happens when the context is built: the stored turn stays as it was.
      expect(await loadMessages(session.conversation.id)).toEqual([
        ...cut,
        { role: 'user', content: 'Are you still there?' },
        expect.objectContaining({ role: 'assistant', content: 'Yes, still here.' }),
      ]);
    },
  );

  it('keeps what a tool did when the key turns out wrong mid-turn', async () => {
    fake.reply(
      { tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1042 } }] },
      { error: { status: 401 } },
    );
    await expect(session.ask('Where is 1042?')).rejects.toThrow(/API_KEY/);
    expect((await loadMessages(session.conversation.id)).map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
    ]);
  });
});
