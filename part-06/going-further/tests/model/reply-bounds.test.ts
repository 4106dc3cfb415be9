// What a model writes is bounded in the provider layer, whole or streamed, and a stream ends at its last chunk, through the real SDKs.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LlmSettings } from '../../../../shared/config.ts';
import { chatWithTools, type ChatResult, type Message } from '../../../../shared/llm/index.ts';
import { streamWithTools, type StreamOptions } from '../../model/stream-with-tools.ts';
import {
  ANSWER_CUT_MARKER,
  ARGUMENTS_TOO_LONG,
  MAX_ANSWER_CHARS,
  MAX_ARGUMENTS_CHARS,
  MAX_NAME_CHARS,
} from '../../../../shared/llm/reply-limits.ts';
import {
  startFakeProvider,
  type FakeProvider,
  type ScriptedReply,
} from '../../../../shared/testing/fake-provider.ts';
import { waitUntil } from '../../../../shared/testing/wait-until.ts';

let fake: FakeProvider;
beforeAll(async () => {
  fake = await startFakeProvider();
});
afterAll(() => fake.close());
beforeEach(() => {
  fake.requests.length = 0;
  expect(fake.pending()).toBe(0);
});

const question: Message[] = [
  { role: 'system', content: 'You are Nimbus.' },
  { role: 'user', content: 'Where is order 1043?' },
];
const quiet = { sleep: async () => {}, onRetry: () => {} };
/** A promise that never settles: a server that never sends more, nor closes the connection. */
const never = new Promise<never>(() => {});

/** The reply, asked for whole or streamed; `pieces` is what a streamed answer showed. */
async function ask(
  llm: LlmSettings,
  streamed: boolean,
  options: Partial<StreamOptions> = {},
): Promise<{ result: ChatResult; pieces: string[] }> {
  const pieces: string[] = [];
  const result = streamed
    ? await streamWithTools(llm, question, [], {
        ...quiet,
        ...options,
        onText: (text) => pieces.push(text),
      })
    : await chatWithTools(llm, question, [], quiet);
  return { result, pieces };
}

describe.each(['gemini', 'openai'] as const)('%s replies are bounded', (provider) => {
  describe.each([false, true])('streamed: %s', (streamed) => {
    const llm = () => fake.llm(provider);

    it('an answer past MAX_ANSWER_CHARS is cut with a marker; a stream shows no more than that', async () => {
      const third = 'x'.repeat(MAX_ANSWER_CHARS / 2 + 1000);
      fake.reply({ text: [third, third.replaceAll('x', 'y'), third.replaceAll('x', 'z')] });
      const { result, pieces } = await ask(llm(), streamed);
      const kept = third + 'y'.repeat(MAX_ANSWER_CHARS - third.length);
      expect(result.text).toBe(kept + ANSWER_CUT_MARKER);
      expect(result.message.content).toBe(result.text);
      // The raw still holds all of it: a reply that was cut keeps none.
      expect(result.message.provider_raw).toBeUndefined();
      if (streamed) expect(pieces.join('')).toBe(result.text);
    });

    it('a call whose arguments pass MAX_ARGUMENTS_CHARS is refused, not held; the other calls stand, and the history stays valid', async () => {
      const summary = 'x'.repeat(MAX_ARGUMENTS_CHARS * 3);
      fake.reply({
        tool_calls: [
          { name: 'get_order_status', arguments: { order_id: 1043 } },
          { name: 'create_support_ticket', arguments: { category: 'other', summary } },
        ],
        // OpenAI: the long arguments arrive in fragments, and only the first ones are kept.
        stream: { argumentChunks: 6 },
      });
      const { result } = await ask(llm(), streamed);
      const [order, ticket] = result.tool_calls;
      expect(order).toMatchObject({ name: 'get_order_status', arguments: { order_id: 1043 } });
      expect(order.arguments_error).toBeUndefined();
      expect(ticket).toMatchObject({
        name: 'create_support_ticket',
        arguments: {},
        arguments_error: ARGUMENTS_TOO_LONG,
      });
      expect(result.message.provider_raw).toBeUndefined();
      expect(JSON.stringify(result).length).toBeLessThan(2000);

      // The next request carries both calls and their results, and the provider accepts it.
      const results: Message[] = result.tool_calls.map((call) => ({
        role: 'tool',
        tool_call_id: call.id,
        name: call.name,
        content: JSON.stringify(call.arguments_error ? { error: call.arguments_error } : {}),
      }));
      fake.reply({ text: 'Order 1043 has shipped.' });
      await chatWithTools(llm(), [...question, result.message, ...results], [], quiet);
      const [, next] = fake.chats();
      expect(next.status).toBe(200);
      expect(next.view!.toolResults[1]).toEqual({
        name: 'create_support_ticket',
        result: { error: ARGUMENTS_TOO_LONG },
      });
    });

    it(`a tool name past ${MAX_NAME_CHARS} characters is cut to that`, async () => {
      fake.reply({ tool_calls: [{ name: 'n'.repeat(MAX_NAME_CHARS * 100) }] });
      const { result } = await ask(llm(), streamed);
      expect(result.tool_calls[0].name).toBe('n'.repeat(MAX_NAME_CHARS));
      expect(result.message.provider_raw).toBeUndefined();
    });
  });
});

describe('OpenAI call ids', () => {
  it('an id too long to keep is replaced by one of ours', async () => {
    fake.reply({ tool_calls: [{ name: 'get_order_status', id: `call_${'i'.repeat(10_000)}` }] });
    const { result } = await ask(fake.llm('openai'), false);
    expect(result.tool_calls[0].id).toMatch(/^call_[0-9a-f]{16}$/);
    expect(result.message.provider_raw).toBeUndefined();
  });
});

/** Every chunk: Gemini's two pieces and signed empty part; OpenAI's role, two pieces, finish, usage, [DONE]. */
const ALL_CHUNKS = { gemini: 3, openai: 6 };

/**
 * A streamed reply whose server then keeps the connection open, after `after` chunks. Without the fix
 * the answer waited for the stall limit or the call's deadline, both longer than a test may run.
 */
async function openAfter(
  provider: 'gemini' | 'openai',
  after: number,
  reply: Partial<ScriptedReply> = {},
) {
  fake.reply({
    text: ['Order 1043 ', 'shipped.'],
    ...reply,
    stream: { fault: { after, stall: never } },
  });
  const result = await ask(fake.llm(provider), true, { stallMs: 600_000 });
  // The stream was closed by us: the server saw the client go.
  await waitUntil('the fake sees the client hang up', async () => fake.chats()[0].aborted);
  return result;
}

describe.each(['gemini', 'openai'] as const)('a %s stream', (provider) => {
  it('ends at its last chunk without waiting for the server to close the connection, and closes it', async () => {
    const { result, pieces } = await openAfter(provider, ALL_CHUNKS[provider], {
      usage: { input: 12, output: 5 },
    });
    expect(result.text).toBe('Order 1043 shipped.');
    expect(result.usage).toEqual({ input_tokens: 12, output_tokens: 5 });
    expect(pieces).toEqual(['Order 1043 ', 'shipped.']);
  });
});

describe('an OpenAI stream', () => {
  it('after its finish chunk, waits only briefly for a usage chunk that does not come', async () => {
    // Role, two pieces and the finish chunk; then nothing, and the connection stays open.
    const { result } = await openAfter('openai', ALL_CHUNKS.openai - 2);
    expect(result.text).toBe('Order 1043 shipped.');
    expect(result.usage).toBeUndefined();
  });
});
