// Streamed replies against the fake provider, through the real @google/genai and openai SDKs: pieces, faults, replay.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LlmSettings } from '../../../../shared/config.ts';
import {
  chatWithTools,
  type ChatOptions,
  type ChatResult,
  type Message,
  type ToolDefinition,
} from '../../../../shared/llm/index.ts';
import { streamWithTools, type StreamOptions } from '../../model/stream-with-tools.ts';
import { providerRawAgrees } from '../../../../shared/llm/provider-raw.ts';
import {
  startFakeProvider,
  type FakeProvider,
  type OpenAIQuirk,
  type ProviderName,
} from '../../../../shared/testing/fake-provider.ts';
import { waitUntil } from '../../../../shared/testing/wait-until.ts';

const ORDER_TOOL: ToolDefinition = {
  name: 'get_order_status',
  description: 'Look up an order.',
  parameters: {
    type: 'object',
    properties: { order_id: { type: 'integer' } },
    required: ['order_id'],
    additionalProperties: false,
  },
};

let fake: FakeProvider;
let waits: number[];
/** Records the waits instead of sleeping, so retry tests are instant and can check the wait asked for. */
const sleep = async (ms: number) => {
  waits.push(ms);
};
const quiet = { sleep, onRetry: () => {} };

beforeAll(async () => {
  fake = await startFakeProvider();
});
afterAll(() => fake.close());
beforeEach(() => {
  waits = [];
  fake.requests.length = 0;
  expect(fake.pending()).toBe(0);
});

/** The settings every call below is given: a fake server, for one provider. */
let llm: LlmSettings;
function use(server: FakeProvider, provider: ProviderName) {
  llm = server.llm(provider);
}

const question: Message[] = [
  { role: 'system', content: 'You are Nimbus.' },
  { role: 'user', content: 'Where is order 1043?' },
];

/** A promise that never settles: a stall that lasts forever. */
const never = new Promise<never>(() => {});

/** The non-streaming call, for comparison and for the requests after a streamed one. */
function chat(messages: Message[], tools: ToolDefinition[] = [], options: ChatOptions = quiet) {
  return chatWithTools(llm, messages, tools, options);
}

/** Streams a reply, recording every piece handed to onText (also when the call then fails). */
function streamed(
  messages: Message[],
  tools: ToolDefinition[] = [],
  options: Partial<StreamOptions> = {},
): { pieces: string[]; done: Promise<ChatResult> } {
  const pieces: string[] = [];
  const done = streamWithTools(llm, messages, tools, {
    ...quiet,
    ...options,
    onText: (text) => {
      pieces.push(text);
      options.onText?.(text);
    },
  });
  return { pieces, done };
}

/** What a result says, without what differs between two requests: generated ids and the raw reply. */
function said(result: ChatResult) {
  const calls = result.tool_calls.map(({ id: _id, ...call }) => call);
  return {
    text: result.text,
    tool_calls: calls,
    content: result.message.content,
    usage: result.usage,
  };
}

/** A tool result message answering `id`. */
function resultFor(id: string, status = 'delivered'): Message {
  return {
    role: 'tool',
    tool_call_id: id,
    name: 'get_order_status',
    content: JSON.stringify({ status }),
  };
}

/** Two calls, one reply: order 1042 and order 1043. */
const parallelCalls = [
  { name: 'get_order_status', arguments: { order_id: 1042 }, id: 'call_a' },
  { name: 'get_order_status', arguments: { order_id: 1043 }, id: 'call_b' },
];

describe.each(['gemini', 'openai'] as const)('%s streaming through the real SDK', (provider) => {
  beforeEach(() => use(fake, provider));
  /** How many chunks come before the n-th text chunk ends: OpenAI's first chunk carries only the role. */
  const throughText = (n: number) => (provider === 'openai' ? n + 1 : n);

  it('hands out the answer in pieces, in order, and resolves with what the non-streaming call returns', async () => {
    const reply = {
      text: ['Order 1043 ', 'shipped ', 'on Monday.'],
      thought: 'The customer wants a status.',
      usage: { input: 12, output: 5 },
    };
    fake.reply(reply, reply);
    const whole = await chat(question);
    const { pieces, done } = streamed(question);
    const result = await done;
    expect(pieces).toEqual(['Order 1043 ', 'shipped ', 'on Monday.']);
    expect(said(result)).toEqual(said(whole));
    expect(result.text).toBe('Order 1043 shipped on Monday.');
    expect(result.usage).toEqual({ input_tokens: 12, output_tokens: 5 });
    expect(result.message.provider_raw?.provider).toBe(provider);
    expect(providerRawAgrees(result.message)).toBe(true);
    const [plain, stream] = fake.chats();
    expect([plain.stream, stream.stream]).toEqual([false, true]);
    if (provider === 'openai') expect(stream.body.stream_options).toEqual({ include_usage: true });
  });

  it('puts parallel calls with arguments in fragments back together, as the non-streaming call reads them', async () => {
    const reply = {
      text: ['Let me check ', 'both.'],
      tool_calls: parallelCalls,
      stream: { argumentChunks: 4 },
      usage: { input: 40, output: 20 },
    };
    fake.reply(reply, reply);
    const whole = await chat(question, [ORDER_TOOL]);
    const { pieces, done } = streamed(question, [ORDER_TOOL]);
    const result = await done;
    expect(pieces).toEqual(['Let me check ', 'both.']);
    expect(said(result)).toEqual(said(whole));
    expect(result.tool_calls.map((call) => call.arguments)).toEqual([
      { order_id: 1042 },
      { order_id: 1043 },
    ]);
    expect(new Set(result.tool_calls.map((call) => call.id)).size).toBe(2);
    expect(providerRawAgrees(result.message)).toBe(true);

    // The streamed reply goes back in the next request, streamed too, and the API accepts it.
    fake.reply({ text: ['Both ', 'are on their way.'] });
    const history = [
      ...question,
      result.message,
      ...result.tool_calls.map((call) => resultFor(call.id, 'shipped')),
    ];
    const next = streamed(history, [ORDER_TOOL]);
    expect((await next.done).text).toBe('Both are on their way.');
    expect(fake.chats().map((request) => request.status)).toEqual([200, 200, 200]);
    expect(fake.chats()[2].view?.toolResults).toHaveLength(2);
  });

  it('retries a 429 before the stream begins, honouring its hint, like a whole reply', async () => {
    fake.reply(
      { error: { status: 429, retryDelay: '7s', retryAfter: '7' } },
      { text: ['Back ', 'again.'] },
    );
    const { pieces, done } = streamed(question);
    expect((await done).text).toBe('Back again.');
    expect(pieces).toEqual(['Back ', 'again.']);
    expect(waits).toEqual([7000]);
    expect(fake.chats()).toHaveLength(2);
  });

  it('is refused, as a whole reply is, when the history has a call without its result', async () => {
    const broken: Message[] = [
      ...question,
      {
        role: 'assistant',
        content: '',
        tool_calls: [{ id: 'call_1', name: 'get_order_status', arguments: { order_id: 1043 } }],
      },
      { role: 'user', content: 'Hello?' },
    ];
    const { pieces, done } = streamed(broken, [ORDER_TOOL]);
    const error = await done.catch((e) => e);
    expect(error).toMatchObject({ kind: 'bad_request', status: 400, retryable: false });
    expect(pieces).toEqual([]);
    expect(fake.chats()).toHaveLength(1);
  });

  it('retries a connection dropped before any text was shown; only the retry is shown', async () => {
    fake.reply(
      {
        thought: 'Checking.',
        text: ['Never ', 'shown.'],
        // Gemini has sent the thought, OpenAI the role: nothing for onText yet.
        stream: { fault: { after: 1, drop: true } },
      },
      { text: ['Second ', 'try.'] },
    );
    const { pieces, done } = streamed(question);
    expect((await done).text).toBe('Second try.');
    expect(pieces).toEqual(['Second ', 'try.']);
    expect(fake.chats()).toHaveLength(2);
    expect(waits).toHaveLength(1);
  });

  it('does not retry a connection dropped after text was shown: one clear error, the text stays shown', async () => {
    fake.reply({
      text: ['Order ', '1043 ', 'shipped.'],
      stream: { fault: { after: throughText(2), drop: true } },
    });
    const { pieces, done } = streamed(question);
    const error = await done.catch((e) => e);
    expect(error).toMatchObject({ kind: 'connection', retryable: false });
    expect(error.message).toMatch(
      /reply broke off: the connection dropped \(.+\)\. \(Part of the answer was already shown, so it was not retried\.\)$/,
    );
    expect(pieces).toEqual(['Order ', '1043 ']);
    expect(fake.chats()).toHaveLength(1);
    expect(waits).toEqual([]);
  });

  it('turns an error sent in the middle of the stream into a ProviderError, not retried after text', async () => {
    fake.reply({
      text: ['Order ', '1043 ', 'shipped.'],
      stream: { fault: { after: throughText(1), error: { status: 503 } } },
    });
    const { pieces, done } = streamed(question);
    const error = await done.catch((e) => e);
    expect(error).toMatchObject({ kind: 'server', retryable: false });
    expect(error.message).toMatch(
      /The model is overloaded\. Please try again later\. \(Part of the answer was already shown, so it was not retried\.\)$/,
    );
    expect(pieces).toEqual(['Order ']);
    expect(fake.chats()).toHaveLength(1);
  });

  it('fails a stream that stalls longer than the stall limit', async () => {
    fake.reply({
      text: ['Order ', '1043 ', 'shipped.'],
      stream: { fault: { after: throughText(2), stall: never } },
    });
    const { pieces, done } = streamed(question, [], { stallMs: 250 });
    const error = await done.catch((e) => e);
    expect(error).toMatchObject({ kind: 'timeout', retryable: false });
    expect(error.message).toMatch(
      /stopped sending in the middle of its reply: nothing arrived for 0\.25 s\.$/,
    );
    expect(pieces).toEqual(['Order ', '1043 ']);
    expect(fake.chats()).toHaveLength(1);
  });

  it('keeps a complete reply when the server then leaves the connection open', async () => {
    // Every chunk: Gemini's two pieces and signed empty part; OpenAI's role, two pieces, finish, usage, [DONE].
    const all = provider === 'gemini' ? 3 : 6;
    fake.reply({
      text: ['Order 1043 ', 'shipped.'],
      usage: { input: 12, output: 5 },
      stream: { fault: { after: all, stall: never } },
    });
    const { pieces, done } = streamed(question, [], { stallMs: 250 });
    const result = await done;
    expect(result.text).toBe('Order 1043 shipped.');
    expect(result.usage).toEqual({ input_tokens: 12, output_tokens: 5 });
    expect(pieces).toEqual(['Order 1043 ', 'shipped.']);
  });

  it('waits through a pause shorter than the stall limit', async () => {
    let resume!: () => void;
    const pause = new Promise<void>((resolve) => (resume = resolve));
    fake.reply({
      text: ['Order ', '1043 ', 'shipped.'],
      stream: { fault: { after: throughText(1), stall: pause } },
    });
    // The server sends the rest only once the first piece has been shown.
    const { pieces, done } = streamed(question, [], { onText: () => resume() });
    expect((await done).text).toBe('Order 1043 shipped.');
    expect(pieces).toEqual(['Order ', '1043 ', 'shipped.']);
  });

  it('ends the whole stream at LLM_TIMEOUT_SECONDS, however long the stall limit', async () => {
    const previous = llm;
    llm = { ...llm, timeoutMs: 1000 };
    try {
      fake.reply({
        text: ['Order ', '1043 ', 'shipped.'],
        stream: { fault: { after: throughText(2), stall: never } },
      });
      const { pieces, done } = streamed(question, [], { stallMs: 600_000 });
      const error = await done.catch((e) => e);
      expect(error).toMatchObject({ kind: 'timeout', retryable: false });
      expect(error.message).toMatch(/did not answer within 1 s \(LLM_TIMEOUT_SECONDS/);
      expect(pieces).toEqual(['Order ', '1043 ']);
    } finally {
      llm = previous;
    }
  });

  it('stops at once on Ctrl-C in the middle of the stream: kind aborted, the text shown stays shown', async () => {
    fake.reply({
      text: ['Order ', '1043 ', 'shipped.'],
      stream: { fault: { after: throughText(2), stall: never } },
    });
    const controller = new AbortController();
    const { pieces, done } = streamed(question, [], {
      signal: controller.signal,
      onText: () => {
        if (pieces.length === 2) controller.abort();
      },
    });
    const error = await done.catch((e) => e);
    expect(error).toMatchObject({ kind: 'aborted', retryable: false });
    expect(error.message).toMatch(/was cancelled/);
    expect(pieces).toEqual(['Order ', '1043 ']);
    // The request itself was cancelled, not left running.
    await waitUntil('the fake sees the client hang up', async () => fake.chats()[0].aborted);
    expect(fake.chats()).toHaveLength(1);
  });

  it('reports a server that answers a stream with a whole JSON reply as a bad response, without retrying', async () => {
    const whole =
      provider === 'gemini'
        ? { candidates: [{ content: { role: 'model', parts: [{ text: 'Hi' }] } }] }
        : { choices: [{ index: 0, message: { role: 'assistant', content: 'Hi' } }] };
    fake.reply({ body: whole });
    const { pieces, done } = streamed(question);
    const error = await done.catch((e) => e);
    expect(error).toMatchObject({ kind: 'bad_response', retryable: false });
    expect(error.message).toMatch(
      provider === 'gemini'
        ? /^Gemini's streamed reply could not be read \(Incomplete JSON segment at the end\)\.$/
        : /^The OpenAI-compatible server answered, but not with a stream: not one chunk arrived\./,
    );
    expect(pieces).toEqual([]);
    expect(fake.chats()).toHaveLength(1);
  });

  it('does not take a stream that ends before its last chunk for the whole reply', async () => {
    // The first text chunk, then a clean end: no finish (and for OpenAI no [DONE]).
    const cutShort =
      provider === 'gemini'
        ? [{ candidates: [{ content: { role: 'model', parts: [{ text: 'Order ' }] }, index: 0 }] }]
        : [
            { choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] },
            { choices: [{ index: 0, delta: { content: 'Order ' } }] },
          ];
    fake.reply({ stream: { events: cutShort } });
    const { pieces, done } = streamed(question);
    const error = await done.catch((e) => e);
    expect(error).toMatchObject({ kind: 'connection', retryable: false });
    expect(error.message).toMatch(/the stream ended before the reply was complete/);
    expect(pieces).toEqual(['Order ']);
    expect(fake.chats()).toHaveLength(1);
  });
});

describe.each(['gemini', 'openai'] as const)(
  '%s: two calls sharing one id in one reply',
  (provider) => {
    // Gemini sends ids here, so that it can repeat one.
    let withIds: FakeProvider;
    beforeAll(async () => {
      withIds = await startFakeProvider({ geminiIds: true });
    });
    afterAll(() => withIds.close());
    beforeEach(() => use(withIds, provider));

    it.each([
      ['a whole reply', (tools: ToolDefinition[]) => chat(question, tools)],
      ['a streamed reply', (tools: ToolDefinition[]) => streamed(question, tools).done],
    ])('get distinct ids in %s, and both results go back', async (_, ask) => {
      withIds.requests.length = 0;
      withIds.reply(
        {
          tool_calls: parallelCalls.map((call) => ({ ...call, id: 'call_dup' })),
          stream: { argumentChunks: 2 },
        },
        { text: 'Both found.' },
      );
      const first = await ask([ORDER_TOOL]);
      const [kept, fresh] = first.tool_calls.map((call) => call.id);
      expect(kept).toBe('call_dup');
      expect(fresh).toMatch(/^call_[0-9a-f]{16}$/);
      expect(first.tool_calls.map((call) => call.arguments)).toEqual([
        { order_id: 1042 },
        { order_id: 1043 },
      ]);
      // OpenAI's raw still has the repeated id, and OpenAI needs them unique: it is not replayed. Gemini
      // matches results by position, and gets its own id back in each.
      expect(first.message.provider_raw === undefined).toBe(provider === 'openai');

      const second = await chat(
        [...question, first.message, resultFor(kept), resultFor(fresh, 'shipped')],
        [ORDER_TOOL],
      );
      expect(second.text).toBe('Both found.');
      const sent = withIds.chats()[1];
      expect(sent.status).toBe(200);
      if (provider === 'openai') {
        expect(sent.body.messages[2].tool_calls.map((call: any) => call.id)).toEqual([kept, fresh]);
        expect(sent.body.messages.slice(3).map((m: any) => m.tool_call_id)).toEqual([kept, fresh]);
      } else {
        expect(sent.body.contents[2].parts.map((p: any) => p.functionResponse.id)).toEqual([
          'call_dup',
          'call_dup',
        ]);
      }
    });
  },
);

describe('Gemini streaming specifics', () => {
  beforeEach(() => use(fake, 'gemini'));

  it('keeps every part with its signature: the first call of a batch, and a last empty text part', async () => {
    fake.reply({ tool_calls: parallelCalls }, { text: ['Both ', 'found.'] });
    const first = await streamed(question, [ORDER_TOOL]).done;
    const callParts = (first.message.provider_raw!.message as any).parts;
    expect(callParts).toEqual([
      {
        functionCall: { name: 'get_order_status', args: { order_id: 1042 } },
        thoughtSignature: expect.stringMatching(/^sig-/),
      },
      { functionCall: { name: 'get_order_status', args: { order_id: 1043 } } },
    ]);
    const history = [
      ...question,
      first.message,
      ...first.tool_calls.map((call) => resultFor(call.id)),
    ];
    const answer = await streamed(history, [ORDER_TOOL]).done;
    const answerParts = (answer.message.provider_raw!.message as any).parts;
    // The pieces are joined; the signed empty part stays, apart.
    expect(answerParts).toEqual([
      { text: 'Both found.' },
      { text: '', thoughtSignature: expect.stringMatching(/^sig-/) },
    ]);
    expect(fake.chats()[1].body.contents[1].parts).toEqual(callParts);

    // A later whole request replays both verbatim, and the fake (checking signatures) accepts it.
    fake.reply({ text: 'Anything else?' });
    await chat([...history, answer.message, { role: 'user', content: 'Thanks' }], [ORDER_TOOL]);
    const contents = fake.chats()[2].body.contents;
    expect(contents[1]).toEqual({ role: 'model', parts: callParts });
    expect(contents[3]).toEqual({ role: 'model', parts: answerParts });
    expect(fake.chats().map((request) => request.status)).toEqual([200, 200, 200]);
  });

  it('never merges a signed text part, and keeps thoughts in the raw but out of the answer', async () => {
    const chunk = (part: object, end = {}) => ({
      candidates: [{ content: { role: 'model', parts: [part] }, index: 0, ...end }],
    });
    fake.reply({
      stream: {
        events: [
          chunk({ text: 'The customer wants a status.', thought: true }),
          chunk({ text: 'Your order ', thoughtSignature: 'c2lnLTE=' }),
          chunk({ text: 'has ' }),
          chunk({ text: 'shipped.' }),
          chunk({ text: '', thoughtSignature: 'c2lnLTI=' }, { finishReason: 'STOP' }),
        ],
      },
    });
    const { pieces, done } = streamed(question);
    const result = await done;
    expect(pieces).toEqual(['Your order ', 'has ', 'shipped.']);
    expect(result.text).toBe('Your order has shipped.');
    expect((result.message.provider_raw!.message as any).parts).toEqual([
      { text: 'The customer wants a status.', thought: true },
      { text: 'Your order ', thoughtSignature: 'c2lnLTE=' },
      { text: 'has shipped.' },
      { text: '', thoughtSignature: 'c2lnLTI=' },
    ]);
  });
});

describe('OpenAI streaming specifics', () => {
  beforeEach(() => use(fake, 'openai'));

  it('builds the message the non-streaming API returns, and replays it exactly', async () => {
    fake.reply({ tool_calls: [parallelCalls[0]], stream: { argumentChunks: 3 } }, { text: 'ok' });
    const first = await streamed(question, [ORDER_TOOL]).done;
    expect(first.message.provider_raw?.message).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [
        {
          id: 'call_a',
          type: 'function',
          function: { name: 'get_order_status', arguments: '{"order_id":1042}' },
        },
      ],
    });
    await chat([...question, first.message, resultFor('call_a')], [ORDER_TOOL]);
    expect(fake.chats()[1].status).toBe(200);
    expect(fake.chats()[1].body.messages[2]).toEqual(first.message.provider_raw?.message);
  });

  it.each<[string, OpenAIQuirk[], number, typeof parallelCalls]>([
    ['no index on one call in fragments (Ollama)', ['no-index'], 3, [parallelCalls[0]]],
    ['no index on whole parallel calls (Ollama)', ['no-index'], 1, parallelCalls],
    ['index 0 reused by parallel calls in fragments (Ollama)', ['reused-index'], 3, parallelCalls],
    ['no type (vLLM)', ['no-type'], 2, parallelCalls],
  ])('reads a compatible server that sends %s', async (_, quirks, argumentChunks, calls) => {
    fake.reply({ tool_calls: calls, stream: { quirks, argumentChunks } }, { text: 'ok' });
    const first = await streamed(question, [ORDER_TOOL]).done;
    expect(first.tool_calls).toEqual(calls);
    // The rebuilt raw says what the calls say, so it is replayed; the fake accepts it.
    expect(providerRawAgrees(first.message)).toBe(true);
    await chat(
      [...question, first.message, ...calls.map((call) => resultFor(call.id))],
      [ORDER_TOOL],
    );
    expect(fake.chats()[1].status).toBe(200);
  });

  it('gives one clear error for fragments that cannot be placed, and does not retry', async () => {
    // Two calls, no index, and arguments in fragments: which call does a fragment without an id continue?
    fake.reply({
      tool_calls: parallelCalls,
      stream: { quirks: ['no-index'], argumentChunks: 2 },
    });
    const error = await streamed(question, [ORDER_TOOL]).done.catch((e) => e);
    expect(error).toMatchObject({ kind: 'bad_response', retryable: false });
    expect(error.message).toBe(
      'The OpenAI-compatible server streamed tool calls that cannot be put back together: a fragment with neither index nor id, after 2 calls.',
    );
    expect(fake.chats()).toHaveLength(1);
  });
});

describe('Gemini streams', () => {
  it("come from Gemini's stable v1 API, the SDK's default, as answers do", async () => {
    use(fake, 'gemini');
    fake.reply({ text: ['o', 'k'] });
    await streamed(question, [ORDER_TOOL]).done;
    expect(fake.requests.map((r) => r.path)).toEqual([
      '/v1/models/gemini-fake:streamGenerateContent',
    ]);
  });
});
