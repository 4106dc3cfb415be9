// What the viewer reads: one conversation's summary, and its rows exactly as stored.
import { query } from '../shared/db.ts';

export interface ConversationSummary {
  id: string;
  customer_id: number;
  customer_email: string;
  customer_name: string;
  created_at: Date;
  updated_at: Date;
  messages: number;
}

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

/** Conversations with whose they are and their number of messages. */
export const SUMMARIES = `SELECT c.id, c.customer_id, cu.email AS customer_email, cu.name AS customer_name,
         c.created_at, c.updated_at, (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id) AS messages
    FROM conversations c JOIN customers cu ON cu.id = c.customer_id`;

/** One conversation's summary, whoever it belongs to; undefined if there is none. */
export async function describeConversation(id: string): Promise<ConversationSummary | undefined> {
  const [row] = await query<ConversationSummary[]>(`${SUMMARIES} WHERE c.id = ?`, [id]);
  return row;
}

/** Every row of the conversation, in order, exactly as stored. */
export async function loadRows(conversationId: string): Promise<StoredMessageRow[]> {
  return query<StoredMessageRow[]>(
    `SELECT seq, role, CAST(data AS CHAR) AS data, created_at, input_tokens, output_tokens, storage_note
       FROM messages WHERE conversation_id = ? ORDER BY seq`,
    [conversationId],
  );
}
