// A conversation's rows exactly as stored, for the operator: each message with its seq and tokens, damaged rows in place.
import { dim } from '../../../shared/cli.ts';
import { query } from '../../../shared/db.ts';
import type { Message } from '../../../shared/llm/index.ts';
import { minute, plural, safeLine, shorten, thousands } from '../../../shared/text.ts';
import { describeMessage, TAG_LEGEND } from '../../conversation-view.ts';
import type { ConversationSummary } from '../../stored-conversations.ts';

/** A stored message row; `data` is the JSON column as text, exactly as stored (read with CAST). */
export interface StoredMessageRow {
  seq: number;
  role: string;
  data: string;
  created_at: Date;
  input_tokens: number | null;
  output_tokens: number | null;
  storage_note: string | null;
}

const COLUMNS = `seq, role, CAST(data AS CHAR) AS data, created_at, input_tokens, output_tokens, storage_note`;

/** Every row of the conversation, in order, exactly as stored. */
export async function loadRows(conversationId: string): Promise<StoredMessageRow[]> {
  return query<StoredMessageRow[]>(
    `SELECT ${COLUMNS} FROM messages WHERE conversation_id = ? ORDER BY seq`,
    [conversationId],
  );
}

/** Up to `limit` rows after `afterSeq`, in order: a long conversation read a batch at a time. */
export async function rowsAfter(
  conversationId: string,
  afterSeq: number,
  limit: number,
): Promise<StoredMessageRow[]> {
  return query<StoredMessageRow[]>(
    `SELECT ${COLUMNS} FROM messages WHERE conversation_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
    [conversationId, afterSeq, limit],
  );
}

/** A line of the turn-by-turn view: a row and its message; a defensive reader may mark one left out. */
export interface ShownMessage {
  row?: StoredMessageRow;
  message?: Message;
  leftOut?: string;
}

/** Every stored message in order, grouped into turns, each model call with its tokens. */
export function turnsView(conversation: ConversationSummary, shown: ShownMessage[]): string[] {
  const { id, customer_name: name, customer_email: email } = conversation;
  const lines = [
    `Conversation ${id} of ${safeLine(name)} (${safeLine(email)}): ${plural(conversation.messages, 'message')}, ` +
      `started ${minute(conversation.created_at)}, last updated ${minute(conversation.updated_at)}`,
  ];
  let turn = 0;
  for (const { row, message, leftOut } of shown) {
    if (message?.role === 'user' || turn === 0) lines.push(`Turn ${++turn}`);
    const text = message
      ? describeMessage(message)
      : `${safeLine(row!.role)}: ${safeLine(shorten(row!.data, 120))}`;
    const cost =
      row?.input_tokens == null
        ? ''
        : ` (${thousands(row.input_tokens)} + ${thousands(row.output_tokens ?? 0)} tokens)`;
    const where = row ? `#${row.seq}` : '(not stored)';
    lines.push(`  ${where}${leftOut ? ` [${safeLine(leftOut)}]` : ''} ${text}${dim(cost)}`);
  }
  return [...lines, dim(TAG_LEGEND)];
}
