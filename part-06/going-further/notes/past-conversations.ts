// Finds a customer's earlier conversations by their words, through a word index of her own messages.
//
// Each word of a question or an answer is kept in message_words (store/message-words.sql) with the
// customer and the message, when the message is saved (store/message-words.ts) and deleted with it. A search reads only the searching customer's rows for its
// words: it costs what her own history costs, however much other customers have said, and copies
// nothing.
import { query } from '../../../shared/db.ts';
import { oneLine, shorten } from '../../../shared/text.ts';
import { indexWords } from '../store/message-words.ts';

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

/**
 * This customer's conversations that share words with `text`, best first, leaving out the one being
 * had, each with its best lines in the order they were said. A conversation scores by the words it
 * holds, a word counting more the fewer of her messages hold it: a rare word says which one she means.
 */
export async function searchPastConversations(
  customerId: number,
  text: string,
  currentConversationId: string,
): Promise<PastConversation[]> {
  const wanted = indexWords(text);
  if (wanted.length === 0) return [];
  const found = await bestConversations(customerId, wanted, currentConversationId);
  if (found.length === 0) return [];
  const lines = await matchingLines(
    customerId,
    wanted,
    found.map((c) => c.conversation_id),
  );
  return found.map(({ conversation_id, date }) => ({
    conversation_id,
    date,
    lines: lines
      .filter((line) => line.conversation_id === conversation_id)
      .sort((a, b) => b.shared - a.shared || a.seq - b.seq)
      .slice(0, MAX_LINES)
      .sort((a, b) => a.seq - b.seq)
      .map((line) => ({
        said_by: line.role === 'user' ? 'customer' : 'nimbus',
        text: shorten(oneLine(line.text), MAX_LINE_CHARS),
      })),
  }));
}

/**
 * The best MAX_CONVERSATIONS conversations for these words. It reads the customer's own index entries
 * for these words, and nothing else: `customer_id = ?` is the session's boundary, as in every tool,
 * and the first column of the index. The best are chosen before anything is joined to them, so only
 * they are looked up. (1e0: a floating-point division; 1 / n would be rounded to 4 decimals.)
 */
async function bestConversations(
  customerId: number,
  wanted: string[],
  currentConversationId: string,
): Promise<Array<{ conversation_id: string; date: string }>> {
  return query(
    `WITH counts AS (SELECT word, COUNT(*) AS n FROM message_words
                      WHERE customer_id = ? AND word IN (?) GROUP BY word),
          best AS (SELECT w.conversation_id, SUM(1e0 / counts.n) AS score
                     FROM message_words w JOIN counts ON counts.word = w.word
                    WHERE w.customer_id = ? AND w.word IN (?) AND w.conversation_id <> ?
                    GROUP BY w.conversation_id
                    ORDER BY score DESC, w.conversation_id
                    LIMIT ?)
     SELECT b.conversation_id, DATE_FORMAT(c.created_at, '%Y-%m-%d') AS date
       FROM best b JOIN conversations c ON c.id = b.conversation_id AND c.customer_id = ?
      ORDER BY b.score DESC, b.conversation_id`,
    [customerId, wanted, customerId, wanted, currentConversationId, MAX_CONVERSATIONS, customerId],
  );
}

/** The messages of these conversations that hold any of the words, with how many of them each holds. */
async function matchingLines(customerId: number, wanted: string[], conversationIds: string[]) {
  return query<
    Array<{ conversation_id: string; seq: number; shared: number; role: string; text: string }>
  >(
    `SELECT h.conversation_id, h.seq, h.shared, m.role,
            JSON_UNQUOTE(JSON_EXTRACT(m.data, '$.content')) AS text
       FROM (SELECT conversation_id, seq, COUNT(*) AS shared FROM message_words
              WHERE customer_id = ? AND word IN (?) AND conversation_id IN (?)
              GROUP BY conversation_id, seq) h
       JOIN messages m ON m.conversation_id = h.conversation_id AND m.seq = h.seq`,
    [customerId, wanted, conversationIds],
  );
}
