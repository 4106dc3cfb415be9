// The agent with memory: each turn saved whole at the end, earlier turns sent back, fallbacks stored as answers.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { createScratchDatabase, type ScratchDatabase } from '../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../shared/testing/fake-provider.ts';
import { API_ERROR_ANSWER, EMPTY_ANSWER, MAX_STEPS, runAgent, STEP_LIMIT_ANSWER, TurnCancelled } from '../agent.ts';
import { loadMessages, newConversation } from '../memory.ts';
import { setupDatabase } from '../setup-database.ts';
import { conversationTraceFile } from '../trace.ts';

let fake: FakeProvider;
let db: ScratchDatabase;
let conversation: string;
const quiet = { quiet: true };

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createScratchDatabase();
  await setupDatabase(() => {});
});
afterAll(async () => {
  await fake.close();
  await db.drop();
});
afterEach(() => {
  expect(fake.pending()).toBe(0);
  expect(fake.chats().filter((r) => r.rejection)).toEqual([]);
});

describe.each(['gemini', 'openai'] as const)('runAgent with memory, %s', (provider) => {
  beforeEach(async () => {
    Object.assign(process.env, fake.env(provider));
    fake.requests.length = 0;
    conversation = await newConversation();
  });

  it('saves the whole turn at the end, and sends it back with the next question', async () => {
    fake.reply(
      { tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1042 } }] },
      { text: 'Order 1042 has shipped.' },
    );
    await runAgent('Where is order 1042?', conversation, quiet);
    const stored = await loadMessages(conversation);
    expect(stored.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(stored[1]).toMatchObject({ tool_calls: [{ name: 'get_order_status' }], provider_raw: { provider } });
    expect(stored[3]).toMatchObject({ content: 'Order 1042 has shipped.', provider_raw: { provider } });

    fake.reply((view) => ({ text: `You asked ${view.messages.filter((m) => m.role === 'user').length} questions.` }));
    const second = await runAgent('How many questions did I ask?', conversation, quiet);
    expect(second.answer).toBe('You asked 2 questions.');
    const sent = fake.chats()[2].view!;
    expect(sent.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'user']);
    expect(sent.system).toContain('Nimbus');
    // The system prompt is never stored: it is added fresh to every request.
    expect((await loadMessages(conversation)).some((m) => (m.role as string) === 'system')).toBe(false);
  });

  it('stores the fallback as a plain answer after the step limit, and the history stays valid', async () => {
    fake.reply(...Array.from({ length: MAX_STEPS }, (_, i) => ({ tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1030 + i } }] })));
    await runAgent('Everything, please', conversation, quiet);
    const stored = await loadMessages(conversation);
    expect(stored.at(-1)).toEqual({ role: 'assistant', content: STEP_LIMIT_ANSWER });
    fake.reply({ text: 'ok' });
    await runAgent('Still there?', conversation, quiet);
    expect(fake.chats().at(-1)!.status).toBe(200);
  });

  it('stores the fallback after a provider error and after an empty answer', async () => {
    fake.reply({ error: { status: 400, message: 'Bad request' } });
    await runAgent('First', conversation, quiet);
    fake.reply({ text: '' });
    await runAgent('Second', conversation, quiet);
    expect(await loadMessages(conversation)).toEqual([
      { role: 'user', content: 'First' },
      { role: 'assistant', content: API_ERROR_ANSWER },
      { role: 'user', content: 'Second' },
      { role: 'assistant', content: EMPTY_ANSWER },
    ]);
  });

  it('saves nothing when the question is cancelled while the model is working', async () => {
    const controller = new AbortController();
    let release!: () => void;
    fake.reply({ text: 'too late', gate: new Promise<void>((resolve) => (release = resolve)) });
    const pending = runAgent('Cancel me', conversation, { ...quiet, signal: controller.signal }).catch((e) => e);
    await fake.waitForChat(1);
    controller.abort();
    expect(await pending).toBeInstanceOf(TurnCancelled);
    release();
    expect(await loadMessages(conversation)).toEqual([]);
    const types = readFileSync(conversationTraceFile(conversation), 'utf8').trim().split('\n').map((line) => JSON.parse(line).type);
    expect(types).toEqual(['start', 'memory', 'cancelled']);
  });
});
