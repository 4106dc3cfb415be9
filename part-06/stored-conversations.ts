// What the operator's tools read: recent conversations, one conversation's summary, and its rows exactly as stored.
import { query } from '../shared/db.ts';

/** The number of messages of conversation `c`, as a subquery. */
const MESSAGE_COUNT = '(SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id)';

export interface ConversationSummary {
  id: string;
  customer_id: number;
  customer_email: string;
  customer_name: string;
  created_at: Date;
  updated_at: Date;
  messages: number;
}

/** A stored message row, with what the table keeps beside the message. */
export interface StoredMessageRow {
  seq: number;
  role: string;
  /** The JSON column as text, exactly as stored: read with CAST, so a row the driver could not parse still shows. */
  data: string;
  created_at: Date;
  input_tokens: number | null;
  output_tokens: number | null;
  storage_note: string | null;
}

/** The most recently used conversations of every customer, with each one's first question. */
export async function listConversations(
  limit = 20,
): Promise<Array<ConversationSummary & { first_question: string | null }>> {
  return query(
    `SELECT c.id, c.customer_id, cu.email AS customer_email, cu.name AS customer_name, c.created_at, c.updated_at,
            ${MESSAGE_COUNT} AS messages,
            (SELECT JSON_UNQUOTE(JSON_EXTRACT(m.data, '$.content')) FROM messages m
              WHERE m.conversation_id = c.id AND m.role = 'user' ORDER BY m.seq LIMIT 1) AS first_question
       FROM conversations c JOIN customers cu ON cu.id = c.customer_id
      ORDER BY c.updated_at DESC, c.id LIMIT ?`,
    [limit],
  );
}

/** One conversation's summary, whoever it belongs to; undefined if there is none. */
export async function describeConversation(id: string): Promise<ConversationSummary | undefined> {
  const [row] = await query<ConversationSummary[]>(
    `SELECT c.id, c.customer_id, cu.email AS customer_email, cu.name AS customer_name, c.created_at, c.updated_at,
            ${MESSAGE_COUNT} AS messages
       FROM conversations c JOIN customers cu ON cu.id = c.customer_id WHERE c.id = ?`,
    [id],
  );
  return row;
}

/** Every row of the conversation, in order, exactly as stored. */
export async function loadRows(conversationId: string): Promise<StoredMessageRow[]> {
  return query<StoredMessageRow[]>(
    `SELECT seq, role, CAST(data AS CHAR) AS data, created_at, input_tokens, output_tokens,
            storage_note
       FROM messages WHERE conversation_id = ? ORDER BY seq`,
    [conversationId],
  );
}
