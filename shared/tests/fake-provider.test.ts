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
