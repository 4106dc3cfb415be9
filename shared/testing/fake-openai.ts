// The fake server's OpenAI side: Chat Completions (whole or streamed) and embeddings as the openai SDK sends and reads them.
import { fakeEmbedding } from './embeddings.ts';
import type { ScriptedError, ViewMessage } from './fake-script.ts';
import {
  chatView,
  DEFAULT_DIMENSIONS,
  defaultErrorMessage,
  type FakeWire,
  type ReplyToRender,
} from './fake-wire.ts';

const ROLES = ['system', 'developer', 'user', 'assistant', 'tool'];

export function openaiWire(): FakeWire {
  return {
    route(path) {
      if (path === '/v1/chat/completions') return { kind: 'chat' };
      if (path === '/v1/embeddings') return { kind: 'embed' };
      return undefined;
    },
    streamed: (_path, body) => body.stream === true,
    rejection,
    view,
    render: renderReply,
    chunks,
    // The role, finish and usage chunks and [DONE] come with the written ones, not after a pause of their own.
    written: (event: any) =>
      Boolean(event?.choices?.[0]?.delta?.content || event?.choices?.[0]?.delta?.tool_calls),
    embeddings(body, model) {
      const inputs: string[] = Array.isArray(body.input) ? body.input : [body.input];
      const data = inputs.map((input, index) => {
        const vector = fakeEmbedding(String(input), body.dimensions ?? DEFAULT_DIMENSIONS, model);
        // Like the real API: base64 unless the client asks for floats.
        const embedding =
          body.encoding_format === 'float'
            ? vector
            : Buffer.from(new Float32Array(vector).buffer).toString('base64');
        return { object: 'embedding', index, embedding };
      });
      return {
        object: 'list',
        data,
        model,
        usage: { prompt_tokens: inputs.length, total_tokens: inputs.length },
      };
    },
    error: (error: ScriptedError) => ({
      error: {
        message: error.message ?? defaultErrorMessage(error.status),
        type:
          error.status === 429
            ? 'requests'
            : error.status >= 500
              ? 'server_error'
              : 'invalid_request_error',
        param: null,
        code: error.code ?? null,
      },
    }),
  };
}

/** What the real OpenAI API rejects that our code could get wrong. Returns its error message, or undefined. */
function rejection(body: any): string | undefined {
  const messages: any[] = body.messages;
  if (!Array.isArray(messages) || messages.length === 0)
    return "Invalid 'messages': empty array. Expected an array with minimum length 1.";
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i];
    if (!ROLES.includes(message.role)) {
      return `Invalid value: '${message.role}'. Supported values are: 'system', 'assistant', 'user', 'tool', 'function', and 'developer'.`;
    }
    if (
      message.role === 'assistant' &&
      Array.isArray(message.tool_calls) &&
      message.tool_calls.length
    ) {
      const malformed = malformedCall(message.tool_calls, i);
      if (malformed) return malformed;
      // Every call, whatever its type, must be answered by the tool messages right after it.
      const answered = new Set<string>();
      for (let j = i + 1; j < messages.length && messages[j].role === 'tool'; j++)
        answered.add(messages[j].tool_call_id);
      const missing = message.tool_calls
        .map((c: any) => c.id)
        .filter((id: string) => !answered.has(id));
      if (missing.length) {
        return `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${missing.join(', ')}`;
      }
    }
    if (message.role === 'tool') {
      let j = i - 1;
      while (j >= 0 && messages[j].role === 'tool') j--;
      const owner = messages[j];
      const ids = owner?.role === 'assistant' ? (owner.tool_calls ?? []).map((c: any) => c.id) : [];
      if (!ids.includes(message.tool_call_id)) {
        return "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.";
      }
    }
  }
  return undefined;
}

/** A tool call in the history that the API refuses to read: no id, an unknown type, a function without a name. */
function malformedCall(calls: any[], i: number): string | undefined {
  for (const [j, call] of calls.entries()) {
    const at = `messages[${i}].tool_calls[${j}]`;
    if (typeof call?.id !== 'string') return `Missing required parameter: '${at}.id'.`;
    if (call.type === 'custom') {
      if (typeof call.custom?.name !== 'string' || !call.custom.name)
        return `Missing required parameter: '${at}.custom.name'.`;
    } else if (call.type === 'function') {
      if (typeof call.function?.name !== 'string' || !call.function.name)
        return `Missing required parameter: '${at}.function.name'.`;
      if (typeof call.function.arguments !== 'string')
        return `Invalid type for '${at}.function.arguments': expected a string.`;
    } else {
      return `Invalid value: '${call.type}'. Supported values are: 'function' and 'custom'.`;
    }
  }
  return undefined;
}

function view(body: any) {
  const messages: ViewMessage[] = [];
  const names = new Map<string, string>();
  let system = '';
  for (const message of body.messages as any[]) {
    if (message.role === 'system' || message.role === 'developer')
      system += textOf(message.content);
    else if (message.role === 'user')
      messages.push({ role: 'user', text: textOf(message.content) });
    else if (message.role === 'assistant') {
      const calls = (message.tool_calls ?? []).map((c: any) => {
        // A 'custom' call carries free text as its input instead of JSON arguments.
        const name = c.type === 'custom' ? c.custom.name : c.function.name;
        names.set(c.id, name);
        return {
          id: c.id,
          name,
          arguments: c.type === 'custom' ? c.custom.input : parseMaybe(c.function.arguments),
        };
      });
      messages.push({
        role: 'assistant',
        text: textOf(message.content),
        ...(calls.length ? { tool_calls: calls } : {}),
      });
    } else if (message.role === 'tool') {
      messages.push({
        role: 'tool',
        tool_result: {
          id: message.tool_call_id,
          name: names.get(message.tool_call_id) ?? '',
          result: parseMaybe(message.content),
        },
      });
    }
  }
  const tools = (body.tools ?? []).map((t: any) => t.function?.name);
  return chatView('openai', system, messages, tools);
}

function renderReply(reply: ReplyToRender, model: string, counter: number) {
  const calls = (reply.tool_calls ?? []).map((call, i) => ({
    id: call.id ?? `call_${counter}_${i + 1}`,
    type: 'function',
    function: {
      name: call.name,
      arguments:
        typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {}),
    },
  }));
  const usage = reply.usage;
  return {
    id: `chatcmpl-${counter}`,
    object: 'chat.completion',
    created: 1767225600 + counter,
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: reply.text ?? null,
          refusal: null,
          ...(calls.length ? { tool_calls: calls } : {}),
        },
        logprobs: null,
        finish_reason: calls.length ? 'tool_calls' : 'stop',
      },
    ],
    ...(usage && {
      usage: {
        prompt_tokens: usage.input,
        completion_tokens: usage.output,
        total_tokens: usage.input + usage.output,
      },
    }),
  };
}

/**
 * The whole completion as `chat.completion.chunk` events: the role first, then the text in its scripted
 * chunks, then each tool call (its first fragment with id, type and name, the rest only arguments), the
 * finish chunk, the usage in a chunk with no choices (only when stream_options.include_usage asks for it),
 * and `[DONE]`.
 */
function chunks(whole: any, reply: ReplyToRender, body: any): unknown[] {
  const { choices, usage, id, created, model } = whole;
  const { message, finish_reason } = choices[0];
  const withUsage = body.stream_options?.include_usage === true;
  const quirks = new Set(reply.stream?.quirks);
  const chunk = (delta: object, finish: string | null = null) => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    // With include_usage, every chunk but the last says "no usage yet".
    ...(withUsage ? { usage: null } : {}),
  });
  const events: unknown[] = [
    chunk({ role: 'assistant', content: message.content === null ? null : '', refusal: null }),
  ];
  for (const text of reply.textChunks.filter(Boolean)) events.push(chunk({ content: text }));
  (message.tool_calls ?? []).forEach((call: any, i: number) => {
    const at = quirks.has('no-index') ? {} : { index: quirks.has('reused-index') ? 0 : i };
    const [first, ...rest] = split(call.function.arguments, reply.stream?.argumentChunks ?? 1);
    events.push(
      chunk({
        tool_calls: [
          {
            ...at,
            id: call.id,
            ...(quirks.has('no-type') ? {} : { type: 'function' }),
            function: { name: call.function.name, arguments: first },
          },
        ],
      }),
    );
    for (const piece of rest)
      events.push(chunk({ tool_calls: [{ ...at, function: { arguments: piece } }] }));
  });
  events.push(chunk({}, finish_reason));
  if (withUsage && usage)
    events.push({ id, object: 'chat.completion.chunk', created, model, choices: [], usage });
  events.push('[DONE]');
  return events;
}

/** `text` cut into `count` pieces of about the same length. */
function split(text: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) =>
    text.slice(Math.floor((i * text.length) / count), Math.floor(((i + 1) * text.length) / count)),
  );
}

/** Message content is a string or, in requests, a list of parts. */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((c: any) => c.text ?? '').join('');
  return '';
}

/** Tool results and arguments are JSON text; a test reads them as values when they parse. */
function parseMaybe(text: unknown): unknown {
  if (typeof text !== 'string') return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
