// The provider layer against the fake provider server, through the real @google/genai and openai SDKs.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { chatWithTools, embed, ProviderError, type Message, type ToolDefinition } from '../llm/index.ts';
import { reasoningEffort } from '../llm/openai.ts';
import { startFakeProvider, type FakeProvider, type ProviderName } from '../testing/fake-provider.ts';

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

function use(provider: ProviderName) {
  Object.assign(process.env, fake.env(provider));
}

const question: Message[] = [
  { role: 'system', content: 'You are Nimbus.' },
  { role: 'user', content: 'Where is order 1043?' },
];

/** Runs one tool round trip: the model's call, our result, the model's answer. Returns the full history. */
async function roundTrip(results: Record<string, unknown>[]): Promise<{ history: Message[]; answer: string }> {
  const first = await chatWithTools(question, [ORDER_TOOL], quiet);
  const history: Message[] = [...question, first.message];
  first.tool_calls.forEach((call, i) =>
    history.push({ role: 'tool', tool_call_id: call.id, name: call.name, content: JSON.stringify(results[i]) }),
  );
  const second = await chatWithTools(history, [ORDER_TOOL], quiet);
  history.push(second.message);
  return { history, answer: second.text };
}

describe.each(['gemini', 'openai'] as const)('%s through the real SDK', (provider) => {
  beforeEach(() => use(provider));

  it('returns a text answer with the provider message kept verbatim and token usage', async () => {
    fake.reply({ text: 'Hello from Nimbus', usage: { input: 12, output: 5 } });
    const result = await chatWithTools(question, [], quiet);
    expect(result.text).toBe('Hello from Nimbus');
    expect(result.tool_calls).toEqual([]);
    expect(result.message).toMatchObject({ role: 'assistant', content: 'Hello from Nimbus', provider_raw: { provider } });
    expect(result.usage).toEqual({ input_tokens: 12, output_tokens: 5 });
    expect(fake.chats()[0].view?.system).toBe('You are Nimbus.');
    expect(fake.chats()[0].view?.lastUserText).toBe('Where is order 1043?');
  });

  it('runs a tool call and sends the result back in a request the API accepts', async () => {
    fake.reply(
      { tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1043 } }] },
      (view) => ({ text: `Order 1043 is ${(view.toolResults[0].result as { status: string }).status}.` }),
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
      (view) => ({ text: view.toolResults.map((r) => (r.result as { status: string }).status).join(' and ') }),
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
        tool_calls: [{ id: 'call_from_elsewhere', name: 'get_order_status', arguments: { order_id: 1043 } }],
        provider_raw: { provider: other, message: { something: 'only the other provider understands' } },
      },
      { role: 'tool', tool_call_id: 'call_from_elsewhere', name: 'get_order_status', content: '{"status":"delivered"}' },
    ];
    fake.reply({ text: 'It was delivered.' });
    const result = await chatWithTools(history, [ORDER_TOOL], quiet);
    expect(result.text).toBe('It was delivered.');
    const sent = fake.chats()[0];
    expect(sent.status).toBe(200);
    expect(JSON.stringify(sent.body)).not.toContain('only the other provider understands');
    expect(sent.view?.messages[1].tool_calls?.[0]).toMatchObject({ name: 'get_order_status', arguments: { order_id: 1043 } });
    if (provider === 'gemini') {
      expect(sent.view?.messages[1].tool_calls?.[0].signature).toBe('skip_thought_signature_validator');
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
    const error = await chatWithTools(broken, [ORDER_TOOL], quiet).catch((e) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ status: 400, kind: 'bad_request', retryable: false });
    expect(error.message).toMatch(provider === 'gemini' ? /number of function response parts/ : /did not have response messages: call_1/);
    expect(fake.chats()).toHaveLength(1);
  });

  it('honours the retry hint of a 429, then succeeds', async () => {
    fake.reply(
      { error: { status: 429, retryDelay: '7s', retryAfter: '7' } },
      { text: 'Back again.' },
    );
    const seen: number[] = [];
    const result = await chatWithTools(question, [], { sleep, onRetry: (info) => seen.push(info.waitMs) });
    expect(result.text).toBe('Back again.');
    expect(waits).toEqual([7000]);
    expect(seen).toEqual([7000]);
    expect(fake.chats()).toHaveLength(2);
  });

  it('retries a 503 with growing backoff, at most 3 times', async () => {
    fake.reply(...Array.from({ length: 4 }, () => ({ error: { status: 503 } })));
    const error = await chatWithTools(question, [], quiet).catch((e) => e);
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
    const error = await chatWithTools(question, [], quiet).catch((e) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error.message).toMatch(/wait 3600 s, which is too long/);
    expect(fake.chats()).toHaveLength(1);
    expect(waits).toEqual([]);
  });

  it('does not retry a daily quota error, and says why', async () => {
    fake.reply(
      provider === 'gemini'
        ? { error: { status: 429, quotaId: 'GenerateRequestsPerDayPerProjectPerModel-FreeTier', retryDelay: '20s' } }
        : { error: { status: 429, code: 'insufficient_quota' } },
    );
    const error = await chatWithTools(question, [], quiet).catch((e) => e);
    expect(error).toMatchObject({ kind: 'quota', retryable: false });
    expect(error.message).toMatch(provider === 'gemini' ? /daily quota.*Retrying will not help/ : /no quota left.*Retrying will not help/);
    expect(fake.chats()).toHaveLength(1);
  });

  it('turns a 401 into one clear sentence naming the variable to fix', async () => {
    fake.reply({ error: { status: 401 } });
    const error = await chatWithTools(question, [], quiet).catch((e) => e);
    expect(error).toMatchObject({ kind: 'auth', status: 401, retryable: false });
    expect(error.message).toContain(provider === 'gemini' ? 'GEMINI_API_KEY' : 'OPENAI_API_KEY');
    expect(error.message).not.toContain('\n');
    expect(fake.chats()).toHaveLength(1);
  });

  it('retries when nothing answers, then reports a connection error', async () => {
    Object.assign(process.env, provider === 'gemini' ? { GEMINI_BASE_URL: 'http://127.0.0.1:9' } : { OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' });
    const error = await chatWithTools(question, [], quiet).catch((e) => e);
    expect(error).toMatchObject({ kind: 'connection', retryable: true });
    expect(error.message).toContain('127.0.0.1:9');
    expect(waits).toHaveLength(3);
  });

  it('cancels an in-flight request when its signal is aborted', async () => {
    let release!: () => void;
    fake.reply({ text: 'too late', gate: new Promise<void>((resolve) => (release = resolve)) });
    const controller = new AbortController();
    const pending = chatWithTools(question, [], { ...quiet, signal: controller.signal }).catch((e) => e);
    await fake.waitForChat(1);
    controller.abort();
    const error = await pending;
    release();
    expect(error).toMatchObject({ kind: 'aborted' });
    expect(fake.chats()).toHaveLength(1);
  });

  it('embeds texts as float vectors, one per text', async () => {
    const vectors = await embed(['refund window', 'shipping costs'], 'document', quiet);
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
    await chatWithTools([...history, { role: 'user', content: 'Thanks' }], [ORDER_TOOL], quiet);
    expect(fake.chats()[2].body.contents[3]).toEqual((history[5] as any).provider_raw.message);
    expect(fake.chats()[2].status).toBe(200);
  });

  it('puts all results of one step in one user content', async () => {
    fake.reply(
      { tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1 } }, { name: 'get_order_status', arguments: { order_id: 2 } }] },
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
    await chatWithTools(question, [ORDER_TOOL], quiet);
    const declaration = fake.chats()[0].body.tools[0].functionDeclarations[0];
    expect(declaration.parametersJsonSchema).toEqual(ORDER_TOOL.parameters);
    expect(declaration.parameters).toBeUndefined();
  });

  it('gives calls without ids distinct ids of our own, and echoes no id back', async () => {
    fake.reply({ tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1 } }, { name: 'get_order_status', arguments: { order_id: 2 } }] }, { text: 'ok' });
    const { history } = await roundTrip([{ status: 'paid' }, { status: 'paid' }]);
    const ids = (history[2] as any).tool_calls.map((c: any) => c.id);
    expect(ids[0]).toMatch(/^call_[0-9a-f]{16}$/);
    expect(ids[0]).not.toBe(ids[1]);
    expect(fake.chats()[1].body.contents[2].parts[0].functionResponse.id).toBeUndefined();
  });

  it('keeps the ids Gemini sends and echoes them in the function responses', async () => {
    const withIds = await startFakeProvider({ geminiIds: true });
    Object.assign(process.env, withIds.env('gemini'));
    try {
      withIds.reply({ tool_calls: [{ name: 'get_order_status', arguments: { order_id: 7 }, id: 'fc-abc' }] }, { text: 'ok' });
      const first = await chatWithTools(question, [ORDER_TOOL], quiet);
      expect(first.tool_calls[0].id).toBe('fc-abc');
      await chatWithTools(
        [...question, first.message, { role: 'tool', tool_call_id: 'fc-abc', name: 'get_order_status', content: '{"status":"paid"}' }],
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
    const result = await chatWithTools(question, [], quiet);
    expect(result.text).toBe('Let me check.');
  });

  it('the fake server rejects a current-turn call that lost its signature', async () => {
    fake.reply({ tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1043 } }] });
    const first = await chatWithTools(question, [ORDER_TOOL], quiet);
    const raw = structuredClone(first.message.provider_raw!.message) as any;
    delete raw.parts[0].thoughtSignature;
    const damaged: Message[] = [
      ...question,
      { ...first.message, provider_raw: { provider: 'gemini', message: raw } },
      { role: 'tool', tool_call_id: first.tool_calls[0].id, name: 'get_order_status', content: '{"status":"delivered"}' },
    ];
    const error = await chatWithTools(damaged, [ORDER_TOOL], quiet).catch((e) => e);
    expect(error).toMatchObject({ status: 400 });
    expect(error.message).toContain('missing a thought_signature');
  });
});

describe('OpenAI specifics', () => {
  beforeEach(() => use('openai'));

  it('reports malformed tool arguments on the call instead of throwing', async () => {
    fake.reply({ tool_calls: [{ name: 'get_order_status', arguments: '{"order_id": 10' }] });
    const result = await chatWithTools(question, [ORDER_TOOL], quiet);
    expect(result.tool_calls[0]).toMatchObject({ name: 'get_order_status', arguments: {} });
    expect(result.tool_calls[0].arguments_error).toMatch(/not a valid JSON object/);
  });

  it('replays its own message exactly as it arrived', async () => {
    fake.reply({ tool_calls: [{ name: 'get_order_status', arguments: { order_id: 5 } }] }, { text: 'ok' });
    const { history } = await roundTrip([{ status: 'paid' }]);
    expect(fake.chats()[1].body.messages[2]).toEqual((history[2] as any).provider_raw.message);
  });

  it('switches reasoning off only where OpenAI requires it', () => {
    const base = { provider: 'openai' as const, apiKey: 'k', model: 'gpt-5.4-mini' };
    expect(reasoningEffort(base, true)).toBe('none');
    expect(reasoningEffort(base, false)).toBeUndefined();
    expect(reasoningEffort({ ...base, model: 'gpt-4.1-mini' }, true)).toBeUndefined();
    expect(reasoningEffort({ ...base, baseUrl: 'http://localhost:11434/v1' }, true)).toBeUndefined();
    expect(reasoningEffort({ ...base, reasoningEffort: 'low' }, true)).toBe('low');
  });

  it('sends reasoning_effort to a custom server only when configured', async () => {
    process.env.OPENAI_REASONING_EFFORT = 'low';
    fake.reply({ text: 'ok' });
    await chatWithTools(question, [ORDER_TOOL], quiet);
    expect(fake.chats()[0].body.reasoning_effort).toBe('low');
    process.env.OPENAI_REASONING_EFFORT = '';
    fake.reply({ text: 'ok' });
    await chatWithTools(question, [ORDER_TOOL], quiet);
    expect(fake.chats()[1].body).not.toHaveProperty('reasoning_effort');
  });
});
