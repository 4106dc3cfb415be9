// Reads stored messages back defensively, so a damaged row can never become a request the provider rejects.
//
// Our own saves are all-or-nothing (memory.ts), but rows can also come from older code, a hand edit or a
// crash in another program. Any of these may leave a tool call without its result, a result without its
// call, an unknown role or text that is not JSON (MariaDB's JSON check accepts `{"a":1.}`, which
// JSON.parse refuses), and one such row would make every later request fail.
//
// Damaged pieces are left out, not repaired. A made-up "interrupted" result would tell the model a tool
// finished (or failed) when we do not know which: whether a ticket was created, say. Leaving the pieces
// out keeps only what we know happened; the customer's question and the final answer stay.
//
// One thing is added: a turn that stops after its tool results (the process was killed between a saved
// step and the answer) is closed with the note a cancelled turn is saved with (interruptedAnswer), so the
// next request is valid for every provider and the model sees what the steps above it did.
import {
  isPlainObject,
  type AssistantMessage,
  type Message,
  type ToolMessage,
} from '../../../shared/llm/index.ts';
import { providerRawAgrees } from '../../../shared/llm/provider-raw.ts';
import { printable } from '../../../shared/text.ts';
import { interruptedAnswer } from '../../context.ts';
import type { ShownMessage, StoredMessageRow } from './message-rows.ts';

export interface StoredRow {
  /** The message's number in its conversation. */
  seq: number;
  role: string;
  /** The JSON column as text, exactly as stored: read with CAST, so the driver never parses it. */
  data: string;
}

export interface Damage {
  seq: number;
  reason: string;
}

export interface History {
  messages: Message[];
  /** The seq of each message in `messages`; undefined for a closing note added on loading. */
  seqs: Array<number | undefined>;
  damaged: Damage[];
}

/** "warning: conversation … left out damaged messages #3 (invalid JSON)": they stay in the database to inspect. */
export function describeDamage(conversationId: string, damaged: Damage[]): string {
  const list = damaged.map((d) => `#${d.seq} (${d.reason})`).join(', ');
  return `warning: conversation ${conversationId}: left out damaged messages ${printable(list, { singleLine: true })}`;
}

export function readHistory(rows: StoredRow[]): History {
  // 1. Each row on its own: valid JSON, a known role, the fields that role needs.
  const parsed: Array<{ seq: number; message: Message }> = [];
  const damaged: Damage[] = [];
  for (const row of rows) {
    const message = parseRow(row);
    if (typeof message === 'string') damaged.push({ seq: row.seq, reason: message });
    else parsed.push({ seq: row.seq, message });
  }

  // 2. Calls and results in pairs: an assistant message's calls are answered by the tool messages right after it.
  const kept: typeof parsed = [];
  let i = 0;
  while (i < parsed.length) {
    const current = parsed[i];
    const message = current.message;
    if (message.role === 'tool') {
      damaged.push({ seq: current.seq, reason: 'tool result without its call' });
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
      if (
        callIds.has(callId) &&
        !results.some((r) => (r.message as ToolMessage).tool_call_id === callId)
      )
        results.push(result);
      else damaged.push({ seq: result.seq, reason: 'tool result without its call' });
    }
    if (results.length === callIds.size) {
      kept.push(current, ...results);
    } else {
      damaged.push({ seq: current.seq, reason: 'tool call without its result' });
      for (const result of results)
        damaged.push({ seq: result.seq, reason: 'result of a tool call left out' });
    }
  }

  damaged.sort((a, b) => a.seq - b.seq);
  const closed = closeInterruptedTurns(kept);
  return { messages: closed.map((k) => k.message), seqs: closed.map((k) => k.seq), damaged };
}

/** 3. Every turn ends with an answer: one that stops after a tool step (or at its question) gets a closing note. */
function closeInterruptedTurns(
  kept: Array<{ seq: number; message: Message }>,
): Array<{ seq?: number; message: Message }> {
  const result: Array<{ seq?: number; message: Message }> = [];
  let turnStart = 0;
  const close = () => {
    const last = result.at(-1)?.message;
    const answered = last?.role === 'assistant' && !last.tool_calls?.length;
    if (!last || answered) return;
    const turn = result.slice(turnStart).map((entry) => entry.message);
    result.push({ message: { role: 'assistant', content: interruptedAnswer(turn) } });
  };
  for (const entry of kept) {
    if (entry.message.role === 'user') {
      close();
      turnStart = result.length;
    }
    result.push(entry);
  }
  close();
  return result;
}

/** The message, or why it cannot be used. */
function parseRow(row: StoredRow): Message | string {
  let data: unknown;
  try {
    data = JSON.parse(row.data);
  } catch {
    return 'invalid JSON';
  }
  if (!isPlainObject(data)) return 'not a message object';
  if (data.role !== 'user' && data.role !== 'assistant' && data.role !== 'tool')
    return `unknown role ${JSON.stringify(data.role)}`;
  if (data.role !== row.role)
    return `role column "${row.role}" does not match the message's role "${data.role}"`;

  if (data.role === 'user')
    return typeof data.content === 'string'
      ? (data as unknown as Message)
      : 'user message without text';
  if (data.role === 'tool') {
    const valid =
      typeof data.tool_call_id === 'string' &&
      typeof data.name === 'string' &&
      typeof data.content === 'string';
    return valid ? (data as unknown as ToolMessage) : 'malformed tool result';
  }
  const calls = data.tool_calls;
  const validCalls =
    calls === undefined ||
    (Array.isArray(calls) &&
      calls.every(
        (c) =>
          isPlainObject(c) &&
          typeof c.id === 'string' &&
          typeof c.name === 'string' &&
          isPlainObject(c.arguments),
      ));
  if (typeof data.content !== 'string' || !validCalls) return 'malformed assistant message';
  // provider_raw is replayed verbatim: one that no longer matches the message (edited, damaged, or
  // holding something the neutral fields leave out) is dropped, and the message is rebuilt from them.
  const { provider_raw: raw, ...message } = data as unknown as AssistantMessage;
  return raw !== undefined && providerRawAgrees({ ...message, provider_raw: raw })
    ? { ...message, provider_raw: raw }
    : message;
}

/**
 * The rows as the viewer shows them (conversation-view.ts): each kept message with its row, each damaged
 * row in its place with why it is left out, and each closing note added on loading, which has no row.
 */
export function shownMessages(rows: StoredMessageRow[]): ShownMessage[] {
  const history = readHistory(rows);
  const damaged = new Map(history.damaged.map((d) => [d.seq, d.reason]));
  const bySeq = new Map(rows.map((row) => [row.seq, row]));
  const shown: ShownMessage[] = [];
  let next = 0; // rows are in seq order, and so are the kept messages: one cursor walks the rows
  const rowsBefore = (seq: number) => {
    for (; next < rows.length && rows[next].seq < seq; next++) {
      const reason = damaged.get(rows[next].seq);
      if (reason) shown.push({ row: rows[next], leftOut: `left out: ${reason}` });
    }
  };
  history.messages.forEach((message, i) => {
    const seq = history.seqs[i];
    if (seq === undefined)
      return void shown.push({ message, leftOut: 'added when sent: the answer never came' });
    rowsBefore(seq);
    const row = bySeq.get(seq)!;
    const note = row.storage_note ? `stored with changes: ${row.storage_note}` : undefined;
    shown.push({ row, message, leftOut: note });
  });
  rowsBefore(Number.MAX_SAFE_INTEGER);
  return shown;
}
