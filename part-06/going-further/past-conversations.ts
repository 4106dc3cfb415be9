// Going further: finds a customer's earlier conversations by their words, with MySQL's FULLTEXT search.
//
// FULLTEXT cannot index a JSON column, so the words of each question and answer are copied into
// message_text (customer-memory.sql) when a search needs them: messages never change once saved, so
// the copy never goes stale, and it is deleted with its message.
import { query } from '../../shared/db.ts';
import { oneLine, shorten } from '../../shared/text.ts';

/** Conversations returned, and matching lines of each: enough to recognise one, small enough to send. */
const MAX_CONVERSATIONS = 3;
const MAX_LINES = 3;
const MAX_LINE_CHARS = 200;

export interface PastConversation {
  conversation_id: string;
  /** When it started, YYYY-MM-DD. */
  date: string;
  lines: Array<{ said_by: 'customer' | 'nimbus'; text: string }>;
}

/** This customer's conversations that match `words`, best first, leaving out the one being had. */
export async function searchPastConversations(
  customerId: number,
  words: string,
  currentConversationId: string,
): Promise<PastConversation[]> {
  await copyNewMessages(customerId);
  // "Natural language mode" ranks by shared words, rare words counting more. The customer's own
  // conversations only: `c.customer_id = ?` is the session's boundary, as in every tool.
  const rows = await query<
    Array<{ conversation_id: string; date: string; role: string; text: string }>
  >(
    `SELECT t.conversation_id, DATE_FORMAT(c.created_at, '%Y-%m-%d') AS date, t.role, t.text
       FROM message_text t JOIN conversations c ON c.id = t.conversation_id
      WHERE c.customer_id = ? AND c.id <> ? AND MATCH(t.text) AGAINST (? IN NATURAL LANGUAGE MODE)
      ORDER BY MATCH(t.text) AGAINST (? IN NATURAL LANGUAGE MODE) DESC, t.conversation_id, t.seq
      LIMIT 50`,
    [customerId, currentConversationId, words, words],
  );
  const found = new Map<string, PastConversation>();
  for (const row of rows) {
    let conversation = found.get(row.conversation_id);
    if (!conversation) {
      if (found.size === MAX_CONVERSATIONS) continue;
      conversation = { conversation_id: row.conversation_id, date: row.date, lines: [] };
      found.set(row.conversation_id, conversation);
    }
    if (conversation.lines.length < MAX_LINES)
      conversation.lines.push({
        said_by: row.role === 'user' ? 'customer' : 'nimbus',
        text: shorten(oneLine(row.text), MAX_LINE_CHARS),
      });
  }
  return [...found.values()];
}

/**
 * Copies the text of this customer's questions and answers not copied yet. IGNORE: two searches at
 * once may copy the same message, and a message deleted meanwhile (forget.ts) has nothing to copy.
 * Tool calls have no text (content ''), and tool results are the store's data, fetched fresh: neither
 * is copied.
 */
async function copyNewMessages(customerId: number): Promise<void> {
  await query(
    `INSERT IGNORE INTO message_text (conversation_id, seq, role, text)
     SELECT conversation_id, seq, role, text
       FROM (SELECT m.conversation_id, m.seq, m.role,
                    JSON_UNQUOTE(JSON_EXTRACT(m.data, '$.content')) AS text
               FROM conversations c JOIN messages m ON m.conversation_id = c.id
              WHERE c.customer_id = ? AND m.role IN ('user', 'assistant')
                AND NOT EXISTS (SELECT 1 FROM message_text t
                                 WHERE t.conversation_id = m.conversation_id AND t.seq = m.seq)) copied
      WHERE text IS NOT NULL AND text <> ''`,
    [customerId],
  );
}
