// Reads stored messages back defensively, so a damaged row can never become a request the provider rejects.
//
// Our own saves are all-or-nothing (memory.ts), but rows can also come from older code, a hand edit or a
// crash in another program. Any of these may leave a tool call without its result, a result without its
// call, an unknown role or invalid JSON, and one such row would make every later request fail.
//
// Damaged pieces are left out, not repaired. A made-up "interrupted" result would tell the model a tool
// finished (or failed) when we do not know which: whether a ticket was created, say. Leaving the pieces
// out keeps only what we know happened; the customer's question and the final answer stay.
import type { AssistantMessage, Message, ToolMessage } from '../shared/llm/index.ts';

export interface StoredRow {
  id: number;
  role: string;
  /** The JSON column: mysql2 parses it on MySQL (and on MariaDB since 3.23); older drivers give a string. */
  data: unknown;
}

export interface Damage {
  id: number;
  reason: string;
}

export interface History {
  messages: Message[];
  /** The row id of each message in `messages`. */
  ids: number[];
  damaged: Damage[];
}

export function readHistory(rows: StoredRow[]): History {
  // 1. Each row on its own: valid JSON, a known role, the fields that role needs.
  const parsed: Array<{ id: number; message: Message }> = [];
  const damaged: Damage[] = [];
  for (const row of rows) {
    const message = parseRow(row);
    if (typeof message === 'string') damaged.push({ id: row.id, reason: message });
    else parsed.push({ id: row.id, message });
  }

  // 2. Calls and results in pairs: an assistant message's calls are answered by the tool messages right after it.
  const kept: typeof parsed = [];
  let i = 0;
  while (i < parsed.length) {
    const current = parsed[i];
    const message = current.message;
    if (message.role === 'tool') {
      damaged.push({ id: current.id, reason: 'tool result without its call' });
      i++;
      continue;
    }
    if (message.role !== 'assistant' || !message.tool_calls?.length) {
      kept.push(current);
      i++;
      continue;
    }
    const callIds = new Set(message.tool_calls.map((call) => call.id));
    const results: typeof parsed = [];
    for (i++; i < parsed.length && parsed[i].message.role === 'tool'; i++) {
      const result = parsed[i];
      const callId = (result.message as ToolMessage).tool_call_id;
      if (callIds.has(callId) && !results.some((r) => (r.message as ToolMessage).tool_call_id === callId)) results.push(result);
      else damaged.push({ id: result.id, reason: 'tool result without its call' });
    }
    if (results.length === callIds.size) {
      kept.push(current, ...results);
    } else {
      damaged.push({ id: current.id, reason: 'tool call without its result' });
      for (const result of results) damaged.push({ id: result.id, reason: 'result of a tool call left out' });
    }
  }

  damaged.sort((a, b) => a.id - b.id);
  return { messages: kept.map((k) => k.message), ids: kept.map((k) => k.id), damaged };
}

/** The message, or why it cannot be used. */
function parseRow(row: StoredRow): Message | string {
  let data = row.data;
  if (typeof data === 'string') {
    try {
      data = JSON.parse(data);
    } catch {
      return 'invalid JSON';
    }
  }
  if (!isObject(data)) return 'not a message object';
  if (data.role !== 'user' && data.role !== 'assistant' && data.role !== 'tool') return `unknown role ${JSON.stringify(data.role)}`;
  if (data.role !== row.role) return `role column "${row.role}" does not match the message's role "${data.role}"`;

  if (data.role === 'user') return typeof data.content === 'string' ? (data as unknown as Message) : 'user message without text';
  if (data.role === 'tool') {
    const valid = typeof data.tool_call_id === 'string' && typeof data.name === 'string' && typeof data.content === 'string';
    return valid ? (data as unknown as ToolMessage) : 'malformed tool result';
  }
  const calls = data.tool_calls;
  const validCalls =
    calls === undefined ||
    (Array.isArray(calls) &&
      calls.every((c) => isObject(c) && typeof c.id === 'string' && typeof c.name === 'string' && isObject(c.arguments)));
  const raw = data.provider_raw;
  const validRaw = raw === undefined || (isObject(raw) && (raw.provider === 'gemini' || raw.provider === 'openai') && isObject(raw.message));
  if (typeof data.content !== 'string' || !validCalls || !validRaw) return 'malformed assistant message';
  return data as unknown as AssistantMessage;
}

function isObject(value: unknown): value is Record<string, any> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
