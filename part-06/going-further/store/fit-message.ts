// Makes a message fit the messages table before it is stored: what a model or a customer writes is not always storable.
//
// MariaDB checks JSON columns: it rejects a lone UTF-16 surrogate (half an emoji) and 32 or more levels of
// nesting. Every server refuses a statement larger than max_allowed_packet (16 MB by default on MariaDB),
// and a huge answer counts twice, in `content` and in `provider_raw`. Rather than lose the whole turn,
// the message is changed as little as possible, and the change is recorded in `storage_note`. The
// provider layer already bounds what a model writes (shared/llm/reply-limits.ts); this is the last line,
// for any message: whatever its parts, it ends up within MAX_STORED_CHARS.
import { isPlainObject, type AssistantMessage, type Message } from '../../../shared/llm/index.ts';
import { shorten, wellFormed } from '../../../shared/text.ts';

/** The most JSON characters one stored message may take: well inside any packet limit, even as 4-byte UTF-8. */
export const MAX_STORED_CHARS = 100_000;
/** The deepest JSON MariaDB accepts, counting every object and array from the top (32 levels are refused). */
const MAX_JSON_DEPTH = 31;

export interface Storable<T extends Message> {
  message: T;
  /** What was changed and why; undefined when the message is stored exactly as it was. */
  note?: string;
}

export function storable<T extends Message>(original: T): Storable<T> {
  const notes: string[] = [];
  let message = mapStrings(original, wellFormed) as T;
  if (JSON.stringify(message) !== JSON.stringify(original))
    notes.push('broken characters replaced');

  // provider_raw is a copy of what the neutral fields say; dropping it only means the message is
  // rebuilt from those fields when replayed (Gemini then gets the documented dummy signature).
  if (
    message.role === 'assistant' &&
    message.provider_raw &&
    (depth(message) > MAX_JSON_DEPTH || size(message) > MAX_STORED_CHARS)
  ) {
    const { provider_raw: _, ...rest } = message;
    message = rest as T;
    notes.push('provider_raw left out (too large or too deeply nested)');
  }
  if (depth(message) > MAX_JSON_DEPTH) {
    message = cutDeepValues(message, MAX_JSON_DEPTH) as T;
    notes.push(`values nested deeper than ${MAX_JSON_DEPTH} levels replaced`);
  }
  if (size(message) > MAX_STORED_CHARS && message.role === 'assistant' && message.tool_calls) {
    const { message: smaller, count } = withoutLargestArguments(message);
    message = smaller as T;
    if (count) notes.push(`arguments of ${count} tool call${count === 1 ? '' : 's'} left out`);
  }
  if (size(message) > MAX_STORED_CHARS && 'content' in message) {
    const over = size(message) - MAX_STORED_CHARS;
    const before = message.content.length;
    message = {
      ...message,
      content: shorten(message.content, Math.max(0, message.content.length - over - 100)),
    };
    notes.push(`content shortened from ${before} to ${message.content.length} characters`);
  }
  return notes.length ? { message, note: notes.join('; ') } : { message };
}

/**
 * The calls' arguments left out, the largest first, until the message fits: the calls ran (or were
 * refused) already, so what is stored is a record, and each call keeps its id and name for its result.
 */
function withoutLargestArguments(message: AssistantMessage): {
  message: AssistantMessage;
  count: number;
} {
  const calls = [...(message.tool_calls ?? [])];
  const bySize = calls
    .map((call, i) => ({ i, chars: size(call.arguments) }))
    .sort((a, b) => b.chars - a.chars);
  let over = size(message) - MAX_STORED_CHARS;
  let count = 0;
  for (const { i, chars } of bySize) {
    if (over <= 0 || chars <= 2) break;
    calls[i] = { ...calls[i], arguments: {} };
    over -= chars - 2;
    count++;
  }
  return { message: { ...message, tool_calls: calls }, count };
}

function size(value: unknown): number {
  return JSON.stringify(value).length;
}

/** Levels of objects and arrays: {} is 1, {"a":[1]} is 2. */
function depth(value: unknown): number {
  const children = Array.isArray(value)
    ? value
    : isPlainObject(value)
      ? Object.values(value)
      : undefined;
  return children
    ? 1 + children.reduce((deepest: number, child) => Math.max(deepest, depth(child)), 0)
    : 0;
}

function cutDeepValues(value: unknown, levelsLeft: number): unknown {
  if (!Array.isArray(value) && !isPlainObject(value)) return value;
  if (levelsLeft <= 0) return '(nested too deeply to store)';
  if (Array.isArray(value)) return value.map((item) => cutDeepValues(item, levelsLeft - 1));
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => [key, cutDeepValues(item, levelsLeft - 1)]),
  );
}

function mapStrings(value: unknown, fn: (text: string) => string): unknown {
  if (typeof value === 'string') return fn(value);
  if (Array.isArray(value)) return value.map((item) => mapStrings(item, fn));
  if (isPlainObject(value))
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [fn(key), mapStrings(item, fn)]),
    );
  return value;
}
