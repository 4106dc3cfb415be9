// Everything Nimbus holds about one customer, as one object: the answer to "what do you hold about me?".
import { existsSync } from 'node:fs';
import { query } from '../../../shared/db.ts';
import { displayPath } from '../../../shared/hints.ts';
import { printableJson } from '../../../shared/text.ts';
import type { Customer } from '../../session.ts';
import { describeConversation, type ConversationSummary } from '../../stored-conversations.ts';
import { rowsAfter, type StoredMessageRow } from '../store/message-rows.ts';
import { conversationTraceFile } from '../../trace.ts';
import { allNotes } from '../notes/notes-queries.ts';
import { readHistory, type History } from '../store/read-history.ts';

/** Messages read (and written) at a time: an export's memory stays the same at a million messages. */
const BATCH_ROWS = 500;

/**
 * Writes, as one JSON object, the customer's record, orders, support tickets, notes, and every
 * conversation with its messages (as show-conversation --json exports one) and the path of its trace
 * file, a copy kept under logs/. The messages are read and written a batch at a time, each write
 * awaited (`write` waits while the reader is behind), so neither memory nor a string grows with them.
 */
export async function exportCustomer(
  logDir: string,
  customer: Customer,
  write: (text: string) => Promise<void>,
): Promise<void> {
  const [record] = await query<Array<Record<string, unknown>>>(
    'SELECT id, name, email, created_at FROM customers WHERE id = ?',
    [customer.id],
  );
  const orders = await query<Array<Record<string, unknown> & { id: number }>>(
    `SELECT id, status, created_at, paid_at, shipped_at, delivered_at, shipping_cost
       FROM orders WHERE customer_id = ? ORDER BY created_at, id`,
    [customer.id],
  );
  for (const order of orders)
    order.items = await query(
      `SELECT p.name AS product, i.quantity, i.unit_price
         FROM order_items i JOIN products p ON p.id = i.product_id WHERE i.order_id = ? ORDER BY p.name`,
      [order.id],
    );
  const tickets = await query(
    `SELECT id, category, summary, order_id, status, created_at
       FROM tickets WHERE customer_id = ? ORDER BY id`,
    [customer.id],
  );
  const notes = await allNotes(customer.id);
  const head = printableJson({ customer: record, orders, tickets, notes }, 2);
  await write(`${head.slice(0, -2)},\n  "conversations": [`);
  const ids = await query<Array<{ id: string }>>(
    'SELECT id FROM conversations WHERE customer_id = ? ORDER BY created_at, id',
    [customer.id],
  );
  let first = true;
  for (const { id } of ids) {
    const summary = await describeConversation(id);
    if (!summary) continue; // deleted since it was listed
    const traceFile = conversationTraceFile(logDir, id);
    const { messages: _, ...about } = exportConversation(summary, [], readHistory([]));
    const fields = { ...about, trace_file: existsSync(traceFile) ? displayPath(traceFile) : null };
    const opened = printableJson(fields, 2).slice(0, -2).replaceAll('\n', '\n    ');
    await write(`${first ? '' : ','}\n    ${opened},\n      "messages": [`);
    first = false;
    let written = 0;
    for await (const rows of batches(id)) {
      const shown = exportConversation(summary, rows, readHistory(rows)).messages;
      const text = shown.map((m) => printableJson(m, 2).replaceAll('\n', '\n        '));
      await write(`${written ? ',' : ''}\n        ${text.join(',\n        ')}`);
      written += rows.length;
    }
    await write(`${written ? '\n      ' : ''}]\n    }`);
  }
  await write(`${first ? '' : '\n  '}]\n}\n`);
}

/**
 * A conversation's rows, BATCH_ROWS at a time, each batch ending where a turn ends (the defensive
 * reader pairs a turn's calls with its results, so a turn is never split between two batches).
 */
async function* batches(conversationId: string): AsyncGenerator<StoredMessageRow[]> {
  let held: StoredMessageRow[] = [];
  let afterSeq = 0;
  for (;;) {
    const rows = await rowsAfter(conversationId, afterSeq, BATCH_ROWS);
    if (rows.length === 0) break;
    afterSeq = rows.at(-1)!.seq;
    const all = [...held, ...rows];
    if (rows.length < BATCH_ROWS) {
      held = [];
      yield all; // the last rows: every turn in them is whole
      break;
    }
    // Up to the last turn's question; a turn longer than a batch is held until it is whole.
    const cut = Math.max(
      0,
      all.findLastIndex((row) => row.role === 'user'),
    );
    held = all.slice(cut);
    if (cut > 0) yield all.slice(0, cut);
  }
  if (held.length) yield held;
}
/** The whole stored conversation as one object: for a customer's data request or a bug report. */
export function exportConversation(
  conversation: ConversationSummary,
  rows: StoredMessageRow[],
  history: History,
) {
  const damaged = new Map(history.damaged.map((d) => [d.seq, d.reason]));
  return {
    id: conversation.id,
    customer: { name: conversation.customer_name, email: conversation.customer_email },
    created_at: conversation.created_at,
    updated_at: conversation.updated_at,
    messages: rows.map((row) => ({
      seq: row.seq,
      role: row.role,
      created_at: row.created_at,
      data: parseIfText(row.data),
      input_tokens: row.input_tokens,
      output_tokens: row.output_tokens,
      storage_note: row.storage_note,
      ...(damaged.has(row.seq) ? { damaged: damaged.get(row.seq) } : {}),
    })),
  };
}

/** The stored text, parsed when it is JSON that JavaScript reads; as text otherwise (a damaged row). */
function parseIfText(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    return data;
  }
}
