// The provider layer against the fake provider server, through the real @google/genai and openai SDKs.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  chatWithTools,
  embed,
  ProviderError,
  type AssistantMessage,
  type Message,
  type ToolDefinition,
} from '../llm/index.ts';
import type { LlmSettings } from '../config.ts';
import { reasoningEffort } from '../llm/openai.ts';
import { providerRawAgrees } from '../llm/provider-raw.ts';
import {
  startFakeProvider,
  type FakeProvider,
  type ProviderName,
} from '../testing/fake-provider.ts';

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

/** The settings every call below is given: the fake server, for one provider. */
let llm: LlmSettings;
function use(provider: ProviderName) {
  llm = fake.llm(provider);
}

const question: Message[] = [
  { role: 'system', content: 'You are Nimbus.' },
  { role: 'user', content: 'Where is order 1043?' },
];

/** A reply that never comes: the request stays in flight until the client gives up. */
const never = new Promise<never>(() => {});

/** Runs `test` with the whole-call limit (LLM_TIMEOUT_SECONDS) set to 1 s, then puts the previous one back. */
async function withOneSecondLimit(test: () => Promise<void>): Promise<void> {
  const previous = llm;
  llm = { ...llm, timeoutMs: 1000 };
  try {
    await test();
  } finally {
    llm = previous;
  }
}

/** An OpenAI chat completion around `message`, for bodies the scripted format cannot express. */
function completion(message: Record<string, unknown>) {
  return {
    id: 'chatcmpl-odd',
    object: 'chat.completion',
    created: 1767225600,
    model: 'gpt-fake',
    choices: [
      {
        index: 0,
        message: { role: 'assistant', refusal: null, ...message },
        finish_reason: 'stop',
      },
    ],
  };
}

/** The tool result message answering `id`. */
function resultFor(id: string): Message {
  return {
    role: 'tool',
    tool_call_id: id,
    name: 'get_order_status',
    content: '{"status":"delivered"}',
  };
}

/** Runs one tool round trip: the model's call, our result, the model's answer. Returns the full history. */
async function roundTrip(
  results: Record<string, unknown>[],
): Promise<{ history: Message[]; answer: string }> {
  const first = await chatWithTools(llm, question, [ORDER_TOOL], quiet);
  const history: Message[] = [...question, first.message];
  first.tool_calls.forEach((call, i) =>
    history.push({
      role: 'tool',
      tool_call_id: call.id,
      name: call.name,
      content: JSON.stringify(results[i]),
    }),
  );
  const second = await chatWithTools(llm, history, [ORDER_TOOL], quiet);
  history.push(second.message);
  return { history, answer: second.text };
}

describe.each(['gemini', 'openai'] as const)('%s through the real SDK', (provider) => {
  beforeEach(() => use(provider));

  it('returns a text answer with the provider message kept verbatim and token usage', async () => {
    fake.reply({ text: 'Hello from Nimbus', usage: { input: 12, output: 5 } });
    const result = await chatWithTools(llm, question, [], quiet);
    expect(result.text).toBe('Hello from Nimbus');
    expect(result.tool_calls).toEqual([]);
    expect(result.message).toMatchObject({
      role: 'assistant',
      content: 'Hello from Nimbus',
      provider_raw: { provider },
    });
    expect(result.usage).toEqual({ input_tokens: 12, output_tokens: 5 });
    expect(fake.chats()[0].view?.system).toBe('You are Nimbus.');
    expect(fake.chats()[0].view?.lastUserText).toBe('Where is order 1043?');
  });

  it('runs a tool call and sends the result back in a request the API accepts', async () => {
    fake.reply(
      { tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1043 } }] },
      (view) => ({
        text: `Order 1043 is ${(view.toolResults[0].result as { status: string }).status}.`,
      }),
    );
    const { history, answer } = await roundTrip([{ status: 'delivered' }]);
    expect(answer).toBe('Order 1043 is delivered.');
    const call = (history[2] as { tool_calls: unknown[] }).tool_calls[0];
    expect(call).toMatchObject({ name: 'get_order_status', arguments: { order_id: 1043 } });
    expect(fake.chats().map((r) => r.status)).toEqual([200, 200]);
    expect(fake.chats()[1].view?.tools).toEqual(['get_order_status']);
  });

  it('handles parallel calls: every result goes back, matched to its call', async () => {
    fake.reply(
      {
        tool_calls: [
          { name: 'get_order_status', arguments: { order_id: 1042 } },
          { name: 'get_order_status', arguments: { order_id: 1043 } },
        ],
      },
      (view) => ({
        text: view.toolResults.map((r) => (r.result as { status: string }).status).join(' and '),
      }),
    );
    const { history, answer } = await roundTrip([{ status: 'shipped' }, { status: 'delivered' }]);
    expect(answer).toBe('shipped and delivered');
    const ids = (history[2] as { tool_calls: Array<{ id: string }> }).tool_calls.map((c) => c.id);
    expect(new Set(ids).size).toBe(2);
    expect(fake.chats()[1].status).toBe(200);
  });

  it('rebuilds a reply written by the other provider from its neutral fields', async () => {
    const other = provider === 'gemini' ? 'openai' : 'gemini';
    const history: Message[] = [
      ...question,
      {
        role: 'assistant',
        content: '',
        tool_calls: [
          { id: 'call_from_elsewhere', name: 'get_order_status', arguments: { order_id: 1043 } },
        ],
        provider_raw: {
          provider: other,
          message: { something: 'only the other provider understands' },
        },
      },
      {
        role: 'tool',
        tool_call_id: 'call_from_elsewhere',
        name: 'get_order_status',
        content: '{"status":"delivered"}',
      },
    ];
    fake.reply({ text: 'It was delivered.' });
    const result = await chatWithTools(llm, history, [ORDER_TOOL], quiet);
    expect(result.text).toBe('It was delivered.');
    const sent = fake.chats()[0];
    expect(sent.status).toBe(200);
    expect(JSON.stringify(sent.body)).not.toContain('only the other provider understands');
    expect(sent.view?.messages[1].tool_calls?.[0]).toMatchObject({
      name: 'get_order_status',
      arguments: { order_id: 1043 },
    });
    if (provider === 'gemini') {
      expect(sent.view?.messages[1].tool_calls?.[0].signature).toBe(
        'skip_thought_signature_validator',
      );
    } else {
      expect(sent.body.messages[2].tool_calls[0].id).toBe('call_from_elsewhere');
      expect(sent.body.messages[3].tool_call_id).toBe('call_from_elsewhere');
    }
  });

  it('the fake server rejects a tool call without its result, as the real API does', async () => {
    const broken: Message[] = [
      ...question,
      {
        role: 'assistant',
        content: '',
        tool_calls: [{ id: 'call_1', name: 'get_order_status', arguments: { order_id: 1043 } }],
      },
      { role: 'user', content: 'Hello?' },
    ];
    const error = await chatWithTools(llm, broken, [ORDER_TOOL], quiet).catch((e) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ status: 400, kind: 'bad_request', retryable: false });
    expect(error.message).toMatch(
      provider === 'gemini'
        ? /number of function response parts/
        : /did not have response messages: call_1/,
    );
    expect(fake.chats()).toHaveLength(1);
  });

  it('honours the retry hint of a 429, then succeeds', async () => {
    fake.reply(
      { error: { status: 429, retryDelay: '7s', retryAfter: '7' } },
      { text: 'Back again.' },
    );
    const seen: number[] = [];
    const result = await chatWithTools(llm, question, [], {
      sleep,
      onRetry: (info) => seen.push(info.waitMs),
    });
    expect(result.text).toBe('Back again.');
    expect(waits).toEqual([7000]);
    expect(seen).toEqual([7000]);
    expect(fake.chats()).toHaveLength(2);
  });

  it('retries a 503 with growing backoff, at most 3 times', async () => {
    fake.reply(...Array.from({ length: 4 }, () => ({ error: { status: 503 } })));
    const error = await chatWithTools(llm, question, [], quiet).catch((e) => e);
    expect(error).toMatchObject({ kind: 'server', status: 503 });
    expect(fake.chats()).toHaveLength(4);
    expect(waits).toHaveLength(3);
    // Each wait is between half and all of 1 s, 2 s, 4 s (jitter).
    waits.forEach((ms, i) => {
      expect(ms).toBeGreaterThanOrEqual(500 * 2 ** i);
      expect(ms).toBeLessThanOrEqual(1000 * 2 ** i);
    });
  });

  it('fails fast when the provider asks for a wait longer than we accept', async () => {
    fake.reply({ error: { status: 429, retryDelay: '3600s', retryAfter: '3600' } });
    const error = await chatWithTools(llm, question, [], quiet).catch((e) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error.message).toMatch(/wait 3600 s, which is too long/);
    expect(fake.chats()).toHaveLength(1);
    expect(waits).toEqual([]);
  });

  it('does not retry a daily quota error, and says why', async () => {
    fake.reply(
      provider === 'gemini'
        ? {
            error: {
              status: 429,
              quotaId: 'GenerateRequestsPerDayPerProjectPerModel-FreeTier',
              retryDelay: '20s',
            },
          }
        : { error: { status: 429, code: 'insufficient_quota' } },
    );
    const error = await chatWithTools(llm, question, [], quiet).catch((e) => e);
    expect(error).toMatchObject({ kind: 'quota', retryable: false });
    expect(error.message).toMatch(
      provider === 'gemini'
        ? /daily quota.*Retrying will not help/
        : /no quota left.*Retrying will not help/,
    );
    expect(fake.chats()).toHaveLength(1);
  });

  it('turns a 401 into one clear sentence naming the variable to fix', async () => {
    fake.reply({ error: { status: 401 } });
    const error = await chatWithTools(llm, question, [], quiet).catch((e) => e);
    expect(error).toMatchObject({ kind: 'auth', status: 401, retryable: false });
    expect(error.message).toContain(provider === 'gemini' ? 'GEMINI_API_KEY' : 'OPENAI_API_KEY');
    expect(error.message).not.toContain('\n');
    expect(fake.chats()).toHaveLength(1);
  });

  it('retries when nothing answers, then reports a connection error', async () => {
    llm = {
      ...llm,
      baseUrl: provider === 'gemini' ? 'http://127.0.0.1:9' : 'http://127.0.0.1:9/v1',
    };
    const error = await chatWithTools(llm, question, [], quiet).catch((e) => e);
    expect(error).toMatchObject({ kind: 'connection', retryable: true });
    expect(error.message).toContain('127.0.0.1:9');
    expect(waits).toHaveLength(3);
  });

  it('cancels an in-flight request when its signal is aborted', async () => {
    let release!: () => void;
    fake.reply({ text: 'too late', gate: new Promise<void>((resolve) => (release = resolve)) });
    const controller = new AbortController();
    const pending = chatWithTools(llm, question, [], { ...quiet, signal: controller.signal }).catch(
      (e) => e,
    );
    await fake.waitForChat(1);
    controller.abort();
    const error = await pending;
    release();
    expect(error).toMatchObject({ kind: 'aborted', retryable: false });
    expect(error.message).toMatch(/was cancelled/);
    expect(fake.chats()).toHaveLength(1);
  });

  it('ends the whole call at LLM_TIMEOUT_SECONDS, retries included: a 503, then a reply that never comes', async () => {
    await withOneSecondLimit(async () => {
      fake.reply(
        { error: { status: 503, retryDelay: '0s', retryAfter: '0' } },
        { text: 'too late', gate: never },
      );
      const error = await chatWithTools(llm, question, [], quiet).catch((e) => e);
      expect(error).toBeInstanceOf(ProviderError);
      expect(error).toMatchObject({ kind: 'timeout', retryable: false });
      expect(error.message).toMatch(
        /^(Gemini|The OpenAI-compatible server) did not answer within 1 s \(LLM_TIMEOUT_SECONDS in \.env; retries included\)\./,
      );
      expect(error.message).toMatch(/Before that: .*503/);
      expect(fake.chats()).toHaveLength(2);
      expect(waits).toEqual([0]);
    });
  });

  it('fails at once when the wait before a retry would pass the deadline', async () => {
    await withOneSecondLimit(async () => {
      fake.reply({ error: { status: 429, retryDelay: '30s', retryAfter: '30' } });
      const error = await chatWithTools(llm, question, [], quiet).catch((e) => e);
      expect(error).toMatchObject({ kind: 'timeout', status: 429, retryable: false });
      expect(error.message).toMatch(
        /Retrying in 30 s would pass the 1 s limit: LLM_TIMEOUT_SECONDS/,
      );
      expect(fake.chats()).toHaveLength(1);
      expect(waits).toEqual([]);
    });
  });

  it('ends embeddings at LLM_TIMEOUT_SECONDS too, against a server that never answers', async () => {
    const silent = http.createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    llm = { ...llm, baseUrl: provider === 'gemini' ? url : `${url}/v1` };
    try {
      await withOneSecondLimit(async () => {
        const error = await embed(llm, ['refund window'], 'document', quiet).catch((e) => e);
        expect(error).toMatchObject({ kind: 'timeout', retryable: false });
        expect(error.message).toMatch(/did not answer within 1 s/);
      });
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  });

  it('reports a 200 whose body is not JSON as a bad response, without retrying', async () => {
    fake.reply({ body: 'not json at all' });
    const error = await chatWithTools(llm, question, [], quiet).catch((e) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ kind: 'bad_response', retryable: false });
    expect(error.message).toMatch(
      /answered( 200)?, but its body was not JSON \(.*not json.*\)\. Check (GEMINI|OPENAI)_BASE_URL in \.env\.$/,
    );
    expect(fake.chats()).toHaveLength(1);
  });

  it('embeds texts as float vectors, one per text', async () => {
    const vectors = await embed(llm, ['refund window', 'shipping costs'], 'document', quiet);
    expect(vectors).toHaveLength(2);
    expect(vectors[0].length).toBeGreaterThan(0);
    expect(vectors[0]).not.toEqual(vectors[1]);
    const request = fake.requests.find((r) => r.kind === 'embed')!;
    if (provider === 'openai') expect(request.body.encoding_format).toBe('float');
    else expect(request.body.requests[0].taskType).toBe('RETRIEVAL_DOCUMENT');
  });
});

describe('Gemini specifics', () => {
  beforeEach(() => use('gemini'));

  it("never sends the key where the SDK's own GOOGLE_GEMINI_BASE_URL points: only our GEMINI_BASE_URL moves it", async () => {
    const elsewhere = await startFakeProvider();
    const saved = process.env.GOOGLE_GEMINI_BASE_URL;
    process.env.GOOGLE_GEMINI_BASE_URL = elsewhere.url;
    try {
      // Without a base URL of ours the request goes to Google (not reachable here: it fails), never there.
      const { baseUrl: _, ...ours } = llm as LlmSettings & { baseUrl?: string };
      await chatWithTools({ ...ours, timeoutMs: 5000 } as LlmSettings, question, [], quiet).catch(
        () => {},
      );
      expect(elsewhere.requests).toEqual([]);
    } finally {
      process.env.GOOGLE_GEMINI_BASE_URL = saved ?? '';
      await elsewhere.close();
    }
  });

  it("uses Gemini's stable v1 API, the SDK's default, for answers and embeddings", async () => {
    fake.reply({ text: 'ok' });
    await chatWithTools(llm, question, [ORDER_TOOL], quiet);
    await embed(llm, ['refund window'], 'query', quiet);
    expect(fake.requests.map((r) => r.path)).toEqual([
      '/v1/models/gemini-fake:generateContent',
      '/v1/models/fake-embedding-001:batchEmbedContents',
    ]);
  });

  it('replays thought signatures on exactly the parts they came with', async () => {
    fake.reply(
      {
        tool_calls: [
          { name: 'get_order_status', arguments: { order_id: 1042 } },
          { name: 'get_order_status', arguments: { order_id: 1043 } },
        ],
      },
      { text: 'Both found.' },
    );
    const { history } = await roundTrip([{ status: 'shipped' }, { status: 'delivered' }]);
    const issued = (history[2] as any).provider_raw.message.parts;
    expect(issued[0].thoughtSignature).toMatch(/^sig-/);
    expect(issued[1].thoughtSignature).toBeUndefined();
    const replayed = fake.chats()[1].body.contents[1].parts;
    expect(replayed).toEqual(issued);
    // And on a later turn, the signed text answer goes back untouched too.
    fake.reply({ text: 'Anything else?' });
    await chatWithTools(
      llm,
      [...history, { role: 'user', content: 'Thanks' }],
      [ORDER_TOOL],
      quiet,
    );
    expect(fake.chats()[2].body.contents[3]).toEqual((history[5] as any).provider_raw.message);
    expect(fake.chats()[2].status).toBe(200);
  });

  it('puts all results of one step in one user content', async () => {
    fake.reply(
      {
        tool_calls: [
          { name: 'get_order_status', arguments: { order_id: 1 } },
          { name: 'get_order_status', arguments: { order_id: 2 } },
        ],
      },
      { text: 'ok' },
    );
    await roundTrip([{ status: 'paid' }, { status: 'pending' }]);
    const contents = fake.chats()[1].body.contents;
    expect(contents).toHaveLength(3);
    expect(contents[2].role).toBe('user');
    expect(contents[2].parts.map((p: any) => p.functionResponse.response)).toEqual([
      { output: { status: 'paid' } },
      { output: { status: 'pending' } },
    ]);
  });

  it('sends tool schemas as parametersJsonSchema, unchanged', async () => {
    fake.reply({ text: 'ok' });
    await chatWithTools(llm, question, [ORDER_TOOL], quiet);
    const declaration = fake.chats()[0].body.tools[0].functionDeclarations[0];
    expect(declaration.parametersJsonSchema).toEqual(ORDER_TOOL.parameters);
    expect(declaration.parameters).toBeUndefined();
  });

  it('gives calls without ids distinct ids of our own, and echoes no id back', async () => {
    fake.reply(
      {
        tool_calls: [
          { name: 'get_order_status', arguments: { order_id: 1 } },
          { name: 'get_order_status', arguments: { order_id: 2 } },
        ],
      },
      { text: 'ok' },
    );
    const { history } = await roundTrip([{ status: 'paid' }, { status: 'paid' }]);
    const ids = (history[2] as any).tool_calls.map((c: any) => c.id);
    expect(ids[0]).toMatch(/^call_[0-9a-f]{16}$/);
    expect(ids[0]).not.toBe(ids[1]);
    expect(fake.chats()[1].body.contents[2].parts[0].functionResponse.id).toBeUndefined();
  });

  it('keeps the ids Gemini sends and echoes them in the function responses', async () => {
    const withIds = await startFakeProvider({ geminiIds: true });
    llm = withIds.llm('gemini');
    try {
      withIds.reply(
        { tool_calls: [{ name: 'get_order_status', arguments: { order_id: 7 }, id: 'fc-abc' }] },
        { text: 'ok' },
      );
      const first = await chatWithTools(llm, question, [ORDER_TOOL], quiet);
      expect(first.tool_calls[0].id).toBe('fc-abc');
      await chatWithTools(
        llm,
        [
          ...question,
          first.message,
          {
            role: 'tool',
            tool_call_id: 'fc-abc',
            name: 'get_order_status',
            content: '{"status":"paid"}',
          },
        ],
        [ORDER_TOOL],
        quiet,
      );
      expect(withIds.chats()[1].body.contents[2].parts[0].functionResponse.id).toBe('fc-abc');
      expect(withIds.chats()[1].status).toBe(200);
    } finally {
      await withIds.close();
    }
  });

  it('leaves thought summaries out of the answer text', async () => {
    fake.reply({ thought: 'The customer wants a status.', text: 'Let me check.' });
    const result = await chatWithTools(llm, question, [], quiet);
    expect(result.text).toBe('Let me check.');
  });

  it('the fake server rejects a current-turn call that lost its signature', async () => {
    fake.reply({ tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1043 } }] });
    const first = await chatWithTools(llm, question, [ORDER_TOOL], quiet);
    const raw = structuredClone(first.message.provider_raw!.message) as any;
    delete raw.parts[0].thoughtSignature;
    const damaged: Message[] = [
      ...question,
      { ...first.message, provider_raw: { provider: 'gemini', message: raw } },
      {
        role: 'tool',
        tool_call_id: first.tool_calls[0].id,
        name: 'get_order_status',
        content: '{"status":"delivered"}',
      },
    ];
    const error = await chatWithTools(llm, damaged, [ORDER_TOOL], quiet).catch((e) => e);
    expect(error).toMatchObject({ status: 400 });
    expect(error.message).toContain('missing a thought_signature');
  });
});

describe('Gemini odd replies', () => {
  beforeEach(() => use('gemini'));

  it('leaves out a call without a name, drops the raw that still has it, and rebuilds the next request', async () => {
    fake.reply({
      body: {
        candidates: [
          {
            content: {
              role: 'model',
              parts: [
                { functionCall: { args: {} }, thoughtSignature: 'c2lnLW5hbWVsZXNz' },
                { functionCall: { name: 'get_order_status', args: { order_id: 1043 } } },
              ],
            },
          },
        ],
      },
    });
    const first = await chatWithTools(llm, question, [ORDER_TOOL], quiet);
    expect(first.tool_calls).toEqual([
      {
        id: expect.stringMatching(/^call_[0-9a-f]{16}$/),
        name: 'get_order_status',
        arguments: { order_id: 1043 },
      },
    ]);
    expect(first.message.provider_raw).toBeUndefined();
    fake.reply({ text: 'Delivered.' });
    await chatWithTools(
      llm,
      [...question, first.message, resultFor(first.tool_calls[0].id)],
      [ORDER_TOOL],
      quiet,
    );
    expect(fake.chats()[1].status).toBe(200);
    expect(fake.chats()[1].body.contents[1].parts).toEqual([
      {
        functionCall: { name: 'get_order_status', args: { order_id: 1043 } },
        thoughtSignature: 'skip_thought_signature_validator',
      },
    ]);
  });

  it('reports a JSON null, which the SDK cannot read, as a bad response instead of a connection error', async () => {
    fake.reply({ body: 'null' });
    const error = await chatWithTools(llm, question, [], quiet).catch((e) => e);
    expect(error).toMatchObject({ kind: 'bad_response', retryable: false });
    expect(error.message).toMatch(/^Gemini answered, but with something the SDK could not read/);
    expect(fake.chats()).toHaveLength(1);
  });

  it('ignores a stored raw that disagrees with the neutral fields', async () => {
    const answer: Message = {
      role: 'assistant',
      content: 'Order 1043 was delivered.',
      provider_raw: {
        provider: 'gemini',
        message: { role: 'model', parts: [{ text: 'Something else entirely' }] },
      },
    };
    fake.reply({ text: 'ok' });
    await chatWithTools(llm, [...question, answer, { role: 'user', content: 'Thanks' }], [], quiet);
    expect(fake.chats()[0].body.contents[1]).toEqual({
      role: 'model',
      parts: [{ text: 'Order 1043 was delivered.' }],
    });
  });
});

describe('OpenAI specifics', () => {
  beforeEach(() => use('openai'));

  it('reports malformed tool arguments on the call instead of throwing', async () => {
    fake.reply({ tool_calls: [{ name: 'get_order_status', arguments: '{"order_id": 10' }] });
    const result = await chatWithTools(llm, question, [ORDER_TOOL], quiet);
    expect(result.tool_calls[0]).toMatchObject({ name: 'get_order_status', arguments: {} });
    expect(result.tool_calls[0].arguments_error).toMatch(/not a valid JSON object/);
  });

  it('replays its own message exactly as it arrived', async () => {
    fake.reply(
      { tool_calls: [{ name: 'get_order_status', arguments: { order_id: 5 } }] },
      { text: 'ok' },
    );
    const { history } = await roundTrip([{ status: 'paid' }]);
    expect(fake.chats()[1].body.messages[2]).toEqual((history[2] as any).provider_raw.message);
  });

  it('switches reasoning off only where OpenAI requires it', () => {
    const base = {
      provider: 'openai' as const,
      apiKey: 'k',
      model: 'gpt-5.4-mini',
      timeoutMs: 1000,
    };
    expect(reasoningEffort(base, true)).toBe('none');
    expect(reasoningEffort(base, false)).toBeUndefined();
    expect(reasoningEffort({ ...base, model: 'gpt-4.1-mini' }, true)).toBeUndefined();
    expect(
      reasoningEffort({ ...base, baseUrl: 'http://localhost:11434/v1' }, true),
    ).toBeUndefined();
    expect(reasoningEffort({ ...base, reasoningEffort: 'low' }, true)).toBe('low');
  });

  it('sends reasoning_effort to a custom server only when configured', async () => {
    llm = { ...fake.llm('openai'), reasoningEffort: 'low' } as LlmSettings;
    fake.reply({ text: 'ok' });
    await chatWithTools(llm, question, [ORDER_TOOL], quiet);
    expect(fake.chats()[0].body.reasoning_effort).toBe('low');
    llm = fake.llm('openai');
    fake.reply({ text: 'ok' });
    await chatWithTools(llm, question, [ORDER_TOOL], quiet);
    expect(fake.chats()[1].body).not.toHaveProperty('reasoning_effort');
  });

  it('keeps a custom tool call out of the history, so the next request is one the API accepts', async () => {
    const raw = {
      content: null,
      tool_calls: [
        { id: 'call_custom', type: 'custom', custom: { name: 'code_exec', input: 'print(1)' } },
        {
          id: 'call_fn',
          type: 'function',
          function: { name: 'get_order_status', arguments: '{"order_id":1043}' },
        },
      ],
    };
    fake.reply({ body: completion(raw) });
    const first = await chatWithTools(llm, question, [ORDER_TOOL], quiet);
    expect(first.tool_calls).toEqual([
      { id: 'call_fn', name: 'get_order_status', arguments: { order_id: 1043 } },
    ]);
    expect(first.message.provider_raw).toBeUndefined();

    fake.reply({ text: 'Delivered.' }, { text: 'Delivered.' });
    const second = await chatWithTools(
      llm,
      [...question, first.message, resultFor('call_fn')],
      [ORDER_TOOL],
      quiet,
    );
    expect(second.text).toBe('Delivered.');
    expect(fake.chats()[1].status).toBe(200);
    expect(fake.chats()[1].body.messages[2].tool_calls).toEqual([
      {
        id: 'call_fn',
        type: 'function',
        function: { name: 'get_order_status', arguments: '{"order_id":1043}' },
      },
    ]);
    // A row saved by older code still has the raw with the unanswered custom call: it is rebuilt the same way.
    const stored: Message = {
      ...first.message,
      provider_raw: { provider: 'openai', message: { role: 'assistant', ...raw } },
    };
    await chatWithTools(llm, [...question, stored, resultFor('call_fn')], [ORDER_TOOL], quiet);
    expect(fake.chats()[2].status).toBe(200);
    expect(JSON.stringify(fake.chats()[2].body)).not.toContain('call_custom');
  });

  it('joins content sent as a list of text parts, and sends it back as a string', async () => {
    fake.reply({
      body: completion({
        content: [
          { type: 'text', text: 'Hello ' },
          { type: 'text', text: 'there' },
        ],
      }),
    });
    const first = await chatWithTools(llm, question, [], quiet);
    expect(first.text).toBe('Hello there');
    expect(first.message.provider_raw).toBeUndefined();
    fake.reply({ text: 'ok' });
    await chatWithTools(
      llm,
      [...question, first.message, { role: 'user', content: 'Thanks' }],
      [],
      quiet,
    );
    expect(fake.chats()[1].body.messages[2]).toEqual({ role: 'assistant', content: 'Hello there' });
  });

  it('reports content that is neither text nor parts as a bad response', async () => {
    fake.reply({ body: completion({ content: 42 }) });
    const error = await chatWithTools(llm, question, [], quiet).catch((e) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ kind: 'bad_response', retryable: false });
    expect(error.message).toBe(
      'The OpenAI-compatible server\'s reply had content of type number where text was expected ("42").',
    );
    expect(fake.chats()).toHaveLength(1);
  });

  it('reports a body without a message as a bad response', async () => {
    fake.reply({ body: { choices: [] } });
    const error = await chatWithTools(llm, question, [], quiet).catch((e) => e);
    expect(error).toMatchObject({ kind: 'bad_response', retryable: false });
    expect(error.message).toMatch(/answered 200, but its body had no choices\[0\]\.message/);
  });

  it('gives a tool call without an id one of our own, used in the call and in its result', async () => {
    fake.reply({
      body: completion({
        content: null,
        tool_calls: [
          { type: 'function', function: { name: 'get_order_status', arguments: '{"order_id":7}' } },
        ],
      }),
    });
    const first = await chatWithTools(llm, question, [ORDER_TOOL], quiet);
    const id = first.tool_calls[0].id;
    expect(id).toMatch(/^call_[0-9a-f]{16}$/);
    expect(first.message.provider_raw).toBeUndefined();
    fake.reply({ text: 'ok' });
    await chatWithTools(llm, [...question, first.message, resultFor(id)], [ORDER_TOOL], quiet);
    expect(fake.chats()[1].status).toBe(200);
    expect(fake.chats()[1].body.messages[2].tool_calls[0].id).toBe(id);
    expect(fake.chats()[1].body.messages[3].tool_call_id).toBe(id);
  });

  it('leaves out a tool call without a name: it can be neither run nor answered', async () => {
    fake.reply({
      body: completion({
        content: null,
        tool_calls: [
          { id: 'call_nameless', type: 'function', function: { arguments: '{}' } },
          {
            id: 'call_ok',
            type: 'function',
            function: { name: 'get_order_status', arguments: '{"order_id":7}' },
          },
        ],
      }),
    });
    const first = await chatWithTools(llm, question, [ORDER_TOOL], quiet);
    expect(first.tool_calls.map((call) => call.id)).toEqual(['call_ok']);
    expect(first.message.provider_raw).toBeUndefined();
    fake.reply({ text: 'ok' });
    await chatWithTools(
      llm,
      [...question, first.message, resultFor('call_ok')],
      [ORDER_TOOL],
      quiet,
    );
    expect(fake.chats()[1].status).toBe(200);
    expect(JSON.stringify(fake.chats()[1].body)).not.toContain('call_nameless');
  });
});

describe('providerRawAgrees', () => {
  const call = {
    id: 'call_1',
    name: 'get_order_status',
    arguments: { order_id: 1, options: { a: 1, b: [1, 2] } },
  };
  const gemini = (parts: unknown[], extra: Partial<AssistantMessage> = {}): AssistantMessage => ({
    role: 'assistant',
    content: 'Checking.',
    tool_calls: [call],
    provider_raw: { provider: 'gemini', message: { role: 'model', parts } },
    ...extra,
  });
  const openai = (
    message: Record<string, unknown>,
    extra: Partial<AssistantMessage> = {},
  ): AssistantMessage => ({
    role: 'assistant',
    content: '',
    tool_calls: [call],
    provider_raw: { provider: 'openai', message: { role: 'assistant', ...message } },
    ...extra,
  });
  const openaiCall = {
    id: 'call_1',
    type: 'function',
    function: { name: 'get_order_status', arguments: '{"options":{"b":[1,2],"a":1},"order_id":1}' },
  };

  it('agrees with Gemini content that says the same, thoughts aside and keys in any order', () => {
    const parts = [
      { text: 'thinking…', thought: true },
      { text: 'Checking.' },
      {
        functionCall: {
          name: 'get_order_status',
          args: { options: { b: [1, 2], a: 1 }, order_id: 1 },
        },
        thoughtSignature: 'c2ln',
      },
    ];
    expect(providerRawAgrees(gemini(parts))).toBe(true);
    expect(providerRawAgrees(gemini(parts, { content: 'Something else.' }))).toBe(false);
    expect(
      providerRawAgrees(gemini(parts, { tool_calls: [{ ...call, arguments: { order_id: 2 } }] })),
    ).toBe(false);
    expect(providerRawAgrees(gemini([...parts, { functionCall: { args: {} } }]))).toBe(false);
  });

  it('agrees with an OpenAI message only when content, ids, names and arguments match and every call is a function', () => {
    expect(providerRawAgrees(openai({ content: null, tool_calls: [openaiCall] }))).toBe(true);
    expect(providerRawAgrees(openai({ content: 'Hi', tool_calls: [openaiCall] }))).toBe(false);
    expect(
      providerRawAgrees(openai({ content: null, tool_calls: [{ ...openaiCall, id: 'call_2' }] })),
    ).toBe(false);
    const custom = { id: 'call_3', type: 'custom', custom: { name: 'code_exec', input: 'x' } };
    expect(providerRawAgrees(openai({ content: null, tool_calls: [openaiCall, custom] }))).toBe(
      false,
    );
    expect(
      providerRawAgrees(
        openai(
          { content: [{ type: 'text', text: 'Hi' }] },
          { content: 'Hi', tool_calls: undefined },
        ),
      ),
    ).toBe(false);
    const objectArguments = {
      ...openaiCall,
      function: { name: 'get_order_status', arguments: call.arguments },
    };
    expect(providerRawAgrees(openai({ content: null, tool_calls: [objectArguments] }))).toBe(false);
  });

  it('is false, without throwing, for no raw or a damaged one', () => {
    expect(providerRawAgrees({ role: 'assistant', content: 'Hi' })).toBe(false);
    expect(
      providerRawAgrees({
        role: 'assistant',
        content: 'Hi',
        provider_raw: { provider: 'gemini', message: 'Hi' },
      }),
    ).toBe(false);
    expect(providerRawAgrees(gemini([null, 'text']))).toBe(false);
    expect(providerRawAgrees(openai({ content: null, tool_calls: [null] }))).toBe(false);
    expect(providerRawAgrees(openai({ content: null, tool_calls: 'call_1' }))).toBe(false);
  });
});
