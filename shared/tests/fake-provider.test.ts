// The fake provider itself, over plain HTTP: it must refuse what the real APIs refuse, or other tests prove nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeProvider, type FakeProvider } from '../testing/fake-provider.ts';

let fake: FakeProvider;
beforeAll(async () => {
  fake = await startFakeProvider();
});
afterAll(() => fake.close());

async function post(path: string, body: unknown): Promise<{ status: number; text: string }> {
  const response = await fetch(`${fake.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, text: await response.text() };
}

const customCall = {
  id: 'call_custom',
  type: 'custom',
  custom: { name: 'code_exec', input: 'print(1)' },
};
const functionCall = {
  id: 'call_fn',
  type: 'function',
  function: { name: 'get_order_status', arguments: '{"order_id":1}' },
};
const answer = (id: string) => ({ role: 'tool', tool_call_id: id, content: '{"status":"paid"}' });

describe('OpenAI wire', () => {
  it('rejects an assistant message whose custom tool call has no answer, as it does for function calls', async () => {
    const { status, text } = await post('/v1/chat/completions', {
      model: 'gpt-fake',
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: null, tool_calls: [customCall, functionCall] },
        answer('call_fn'),
      ],
    });
    expect(status).toBe(400);
    expect(JSON.parse(text).error.message).toMatch(/did not have response messages: call_custom$/);
  });

  it('accepts the same history once every call is answered, and reads the custom call into the view', async () => {
    fake.reply({ text: 'ok' });
    const { status } = await post('/v1/chat/completions', {
      model: 'gpt-fake',
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: null, tool_calls: [customCall, functionCall] },
        answer('call_custom'),
        answer('call_fn'),
      ],
    });
    expect(status).toBe(200);
    expect(
      fake
        .chats()
        .at(-1)!
        .view?.toolResults.map((r) => r.name),
    ).toEqual(['code_exec', 'get_order_status']);
  });

  it('rejects a tool call in the history without an id or without a name', async () => {
    const withoutId = { type: 'function', function: functionCall.function };
    const noId = await post('/v1/chat/completions', {
      model: 'gpt-fake',
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: null, tool_calls: [withoutId] },
      ],
    });
    expect(noId.status).toBe(400);
    expect(JSON.parse(noId.text).error.message).toBe(
      "Missing required parameter: 'messages[1].tool_calls[0].id'.",
    );
    const noName = await post('/v1/chat/completions', {
      model: 'gpt-fake',
      messages: [
        { role: 'user', content: 'Hi' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ ...functionCall, function: { arguments: '{}' } }],
        },
        answer('call_fn'),
      ],
    });
    expect(noName.status).toBe(400);
    expect(JSON.parse(noName.text).error.message).toBe(
      "Missing required parameter: 'messages[1].tool_calls[0].function.name'.",
    );
  });
});

describe('Gemini wire', () => {
  // @google/genai 3 calls the stable /v1 by default, 2.x and a client pinned to the beta /v1beta: Google
  // serves generateContent, its stream and batchEmbedContents on both, and rejects the same mistakes on both.
  it.each(['v1', 'v1beta'])('serves and rejects the same on /%s', async (version) => {
    const hi = { role: 'user', parts: [{ text: 'Hi' }] };
    fake.reply({ text: 'Hello' });
    const answered = await post(`/${version}/models/gemini-fake:generateContent`, {
      contents: [hi],
    });
    expect(answered.status).toBe(200);
    expect(JSON.parse(answered.text).candidates[0].content.parts[0].text).toBe('Hello');

    const unsigned = await post(`/${version}/models/gemini-fake:generateContent`, {
      contents: [
        hi,
        { role: 'model', parts: [{ functionCall: { name: 'x', args: {} } }] },
        { role: 'user', parts: [{ functionResponse: { name: 'x', response: { output: 1 } } }] },
      ],
    });
    expect(unsigned.status).toBe(400);
    expect(JSON.parse(unsigned.text).error.message).toMatch(/missing a thought_signature/);

    fake.reply({ text: 'Hel' });
    const streamed = await postStream(
      `/${version}/models/gemini-fake:streamGenerateContent?alt=sse`,
      { contents: [hi] },
    );
    expect(streamed.type).toMatch(/text\/event-stream/);
    expect(JSON.parse(streamed.events[0]).candidates[0].content.parts[0].text).toBe('Hel');

    const embedded = await post(`/${version}/models/gemini-embedding-fake:batchEmbedContents`, {
      requests: [{ content: { parts: [{ text: 'alpha' }] }, outputDimensionality: 3 }],
    });
    expect(embedded.status).toBe(200);
    expect(JSON.parse(embedded.text).embeddings[0].values).toHaveLength(3);
  });

  it('has no route for an API version Google does not serve', async () => {
    const { status, text } = await post('/v2/models/gemini-fake:generateContent', {
      contents: [{ role: 'user', parts: [{ text: 'Hi' }] }],
    });
    expect(status).toBe(404);
    expect(JSON.parse(text).error.message).toBe(
      'No fake route for POST /v2/models/gemini-fake:generateContent',
    );
  });

  it('rejects a function call without a name', async () => {
    const { status, text } = await post('/v1beta/models/gemini-fake:generateContent', {
      contents: [
        { role: 'user', parts: [{ text: 'Hi' }] },
        {
          role: 'model',
          parts: [
            { functionCall: { args: {} }, thoughtSignature: 'skip_thought_signature_validator' },
          ],
        },
        { role: 'user', parts: [{ functionResponse: { name: 'x', response: { output: 1 } } }] },
      ],
    });
    expect(status).toBe(400);
    expect(JSON.parse(text).error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
    expect(JSON.parse(text).error.message).toMatch(/function_call\.name: Name cannot be empty/);
  });
});

describe('scripted bodies', () => {
  it.each([
    [
      'gemini',
      '/v1beta/models/gemini-fake:generateContent',
      { contents: [{ role: 'user', parts: [{ text: 'Hi' }] }] },
    ],
    [
      'openai',
      '/v1/chat/completions',
      { model: 'gpt-fake', messages: [{ role: 'user', content: 'Hi' }] },
    ],
  ])(
    'are sent verbatim on %s: a string as it is, an object as JSON',
    async (_provider, path, request) => {
      fake.reply({ body: '<html>not an API</html>' }, { body: { anything: ['goes', 1] } });
      expect(await post(path, request)).toEqual({ status: 200, text: '<html>not an API</html>' });
      const second = await post(path, request);
      expect(second.status).toBe(200);
      expect(JSON.parse(second.text)).toEqual({ anything: ['goes', 1] });
    },
  );
});

/** A streamed answer as it comes over the wire: the content type and each event's `data:`, in order. */
async function postStream(path: string, body: unknown) {
  const response = await fetch(`${fake.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  const events = text
    .split('\n\n')
    .filter(Boolean)
    .map((event) => event.replace(/^data: /, ''));
  return { status: response.status, type: response.headers.get('content-type'), text, events };
}

const openaiStream = {
  model: 'gpt-fake',
  messages: [{ role: 'user', content: 'Hi' }],
  stream: true,
};
const geminiStream = '/v1beta/models/gemini-fake:streamGenerateContent?alt=sse';

describe('streamed replies', () => {
  it('OpenAI: chunks, the finish chunk, usage in a chunk without choices only when asked for, then [DONE]', async () => {
    const reply = { text: ['Hel', 'lo'], usage: { input: 3, output: 1 } };
    fake.reply(reply, reply);
    const plain = await postStream('/v1/chat/completions', openaiStream);
    expect(plain.type).toBe('text/event-stream');
    expect(plain.events.at(-1)).toBe('[DONE]');
    const chunks = plain.events.slice(0, -1).map((event) => JSON.parse(event));
    expect(chunks.every((chunk) => chunk.object === 'chat.completion.chunk')).toBe(true);
    expect(chunks.map((chunk) => chunk.choices[0].delta)).toEqual([
      { role: 'assistant', content: '', refusal: null },
      { content: 'Hel' },
      { content: 'lo' },
      {},
    ]);
    expect(chunks.map((chunk) => chunk.choices[0].finish_reason)).toEqual([
      null,
      null,
      null,
      'stop',
    ]);
    expect(chunks.some((chunk) => 'usage' in chunk)).toBe(false);

    const withUsage = await postStream('/v1/chat/completions', {
      ...openaiStream,
      stream_options: { include_usage: true },
    });
    const last = JSON.parse(withUsage.events.at(-2)!);
    expect(last).toMatchObject({
      choices: [],
      usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
    });
    expect(withUsage.events.slice(0, -2).map((event) => JSON.parse(event).usage)).toEqual([
      null,
      null,
      null,
      null,
    ]);
  });

  it('OpenAI: tool calls in fragments by index, and each compatible-server quirk changes only itself', async () => {
    const calls = [
      { name: 'get_order_status', arguments: { order_id: 1 }, id: 'call_1' },
      { name: 'get_order_status', arguments: { order_id: 2 }, id: 'call_2' },
    ];
    const fragments = async (stream: object) => {
      fake.reply({ tool_calls: calls, stream });
      const { events } = await postStream('/v1/chat/completions', openaiStream);
      return events
        .slice(0, -1)
        .flatMap((event) => JSON.parse(event).choices[0].delta.tool_calls ?? []);
    };
    expect(await fragments({ argumentChunks: 2 })).toEqual([
      {
        index: 0,
        id: 'call_1',
        type: 'function',
        function: { name: 'get_order_status', arguments: '{"order' },
      },
      { index: 0, function: { arguments: '_id":1}' } },
      {
        index: 1,
        id: 'call_2',
        type: 'function',
        function: { name: 'get_order_status', arguments: '{"order' },
      },
      { index: 1, function: { arguments: '_id":2}' } },
    ]);
    expect((await fragments({ quirks: ['reused-index'] })).map((f: any) => f.index)).toEqual([
      0, 0,
    ]);
    const bare = await fragments({ quirks: ['no-index', 'no-type'] });
    expect(bare.map((f: any) => Object.keys(f))).toEqual([
      ['id', 'function'],
      ['id', 'function'],
    ]);
  });

  it('Gemini: one whole response per event from :streamGenerateContent, the last one complete, no end marker', async () => {
    fake.reply({ text: ['Hel', 'lo'], usage: { input: 3, output: 1 } });
    const { type, events } = await postStream(geminiStream, {
      contents: [{ role: 'user', parts: [{ text: 'Hi' }] }],
    });
    expect(type).toBe('text/event-stream');
    const chunks = events.map((event) => JSON.parse(event));
    expect(chunks.map((chunk) => chunk.candidates[0].content.parts)).toEqual([
      [{ text: 'Hel' }],
      [{ text: 'lo' }],
      // The signature of a reply without calls, on a last empty part, as Gemini 3 streams it.
      [{ text: '', thoughtSignature: expect.stringMatching(/^sig-/) }],
    ]);
    expect(chunks.map((chunk) => chunk.candidates[0].finishReason)).toEqual([
      undefined,
      undefined,
      'STOP',
    ]);
    expect(chunks.at(-1).usageMetadata).toEqual({
      promptTokenCount: 3,
      candidatesTokenCount: 1,
      totalTokenCount: 4,
    });
  });

  it.each([
    ['gemini', geminiStream, { contents: [{ role: 'user', parts: [{ text: 'Hi' }] }] }],
    ['openai', '/v1/chat/completions', openaiStream],
  ])(
    '%s: an error in the middle of the stream is an event in the provider’s error shape, then the end',
    async (provider, path, request) => {
      fake.reply({ text: ['Hel', 'lo'], stream: { fault: { after: 1, error: { status: 503 } } } });
      const { status, events } = await postStream(path, request);
      expect(status).toBe(200);
      expect(events).toHaveLength(2);
      const { error } = JSON.parse(events[1]);
      expect(error).toMatchObject(
        provider === 'gemini'
          ? {
              code: 503,
              status: 'UNAVAILABLE',
              message: 'The model is overloaded. Please try again later.',
            }
          : { type: 'server_error', message: 'The model is overloaded. Please try again later.' },
      );
    },
  );

  it('refuses a streamed request the real API would refuse with a 400 in JSON, not a stream', async () => {
    const { status, type, text } = await postStream('/v1/chat/completions', {
      ...openaiStream,
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: null, tool_calls: [functionCall] },
      ],
    });
    expect(status).toBe(400);
    expect(type).toMatch(/^application\/json/);
    expect(JSON.parse(text).error.message).toMatch(/did not have response messages: call_fn$/);
  });
});
