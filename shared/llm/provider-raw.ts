// Decides when a provider's own message (provider_raw) may be replayed: only when it says what the neutral fields say.
//
// A raw that disagrees would send the provider something the rest of the project never saw: a tool call
// the agent did not run (an OpenAI 'custom' call, a call without a name) that the provider then expects
// a result for, on every later request. Such a raw is ignored and the message rebuilt from its neutral
// fields, as for a message another provider wrote. No SDK is imported here, so loading history stays cheap.
import { isPlainObject, type AssistantMessage, type ToolCall } from './messages.ts';

/**
 * True when `message.provider_raw` may be replayed instead of the neutral fields, because reading it
 * gives exactly those fields:
 *
 * - Gemini (`message` is the candidate's content): the text parts that are not thoughts, joined, equal
 *   `content`, and the functionCall parts equal `tool_calls` in count, order, name and arguments.
 * - OpenAI (`message` is the choice's message): its `content` is the same string (null counts as ''),
 *   every tool call has type 'function', and their ids, names and parsed arguments (a JSON string, read
 *   as openai.ts reads it) equal `tool_calls`.
 *
 * False when there is no provider_raw. Never throws: a stored row may hold anything.
 */
export function providerRawAgrees(message: AssistantMessage): boolean {
  const raw = message.provider_raw;
  if (!raw || !isPlainObject(raw.message)) return false;
  const calls = message.tool_calls ?? [];
  if (raw.provider === 'gemini') return geminiAgrees(raw.message, message.content, calls);
  if (raw.provider === 'openai') return openaiAgrees(raw.message, message.content, calls);
  return false;
}

/**
 * An OpenAI tool call's arguments, a JSON string the model wrote and can get wrong, as an object. A bad
 * string is reported in `arguments_error`, not thrown. openai.ts reads replies with it, so "agrees" means
 * "reading the raw again gives the same arguments".
 */
export function parseOpenAIArguments(
  text: unknown,
): Pick<ToolCall, 'arguments' | 'arguments_error'> {
  if (typeof text === 'string') {
    try {
      const value: unknown = JSON.parse(text || '{}');
      if (isPlainObject(value)) return { arguments: value };
    } catch {
      // reported below
    }
  }
  const shown = typeof text === 'string' ? text.slice(0, 200) : JSON.stringify(text);
  return { arguments: {}, arguments_error: `The arguments were not a valid JSON object: ${shown}` };
}

function geminiAgrees(content: Record<string, unknown>, text: string, calls: ToolCall[]): boolean {
  const parts = content.parts;
  if (!Array.isArray(parts) || !parts.every(isPlainObject)) return false;
  const rawText = parts
    .filter((part) => typeof part.text === 'string' && !part.thought)
    .map((part) => part.text)
    .join('');
  const rawCalls = parts
    .filter((part) => part.functionCall !== undefined)
    .map((part) => part.functionCall);
  return (
    rawText === text &&
    rawCalls.length === calls.length &&
    rawCalls.every(
      (call, i) =>
        isPlainObject(call) &&
        call.name === calls[i].name &&
        sameJson(call.args ?? {}, calls[i].arguments),
    )
  );
}

function openaiAgrees(raw: Record<string, unknown>, text: string, calls: ToolCall[]): boolean {
  const rawText = raw.content ?? '';
  const rawCalls = raw.tool_calls ?? [];
  if (rawText !== text || !Array.isArray(rawCalls) || rawCalls.length !== calls.length)
    return false;
  return rawCalls.every(
    (call, i) =>
      isPlainObject(call) &&
      call.type === 'function' &&
      call.id === calls[i].id &&
      isPlainObject(call.function) &&
      call.function.name === calls[i].name &&
      // A string, as the API requires when the raw is sent back; then the same object once read.
      typeof call.function.arguments === 'string' &&
      sameJson(parseOpenAIArguments(call.function.arguments).arguments, calls[i].arguments),
  );
}

/** Deep equality of JSON values. Key order does not count: a database may give the keys back in another order. */
function sameJson(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) || Array.isArray(b)) {
    return (
      Array.isArray(a) &&
      Array.isArray(b) &&
      a.length === b.length &&
      a.every((item, i) => sameJson(item, b[i]))
    );
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = Object.keys(a);
    return (
      keys.length === Object.keys(b).length &&
      keys.every((key) => Object.hasOwn(b, key) && sameJson(a[key], b[key]))
    );
  }
  return a === b;
}
