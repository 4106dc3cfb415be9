// What the viewer reads about a conversation: whose it is, how many messages, when.
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

/** Conversations with whose they are and their number of messages. */
export const SUMMARIES = `SELECT c.id, c.customer_id, cu.email AS customer_email, cu.name AS customer_name,
         c.created_at, c.updated_at, (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id) AS messages
    FROM conversations c JOIN customers cu ON cu.id = c.customer_id`;

/** One conversation's summary, whoever it belongs to; undefined if there is none. */
export async function describeConversation(id: string): Promise<ConversationSummary | undefined> {
  const [row] = await query<ConversationSummary[]>(`${SUMMARIES} WHERE c.id = ?`, [id]);
  return row;
}
