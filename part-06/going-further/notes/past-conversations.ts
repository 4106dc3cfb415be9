// Finds a customer's earlier conversations by their words, through a word index of her own messages.
//
// Each word of a question or an answer is kept in message_words (customer-memory.sql) with the
// customer and the message, when the message is saved (hardened-store.ts calls indexMessages in the
// same transaction) and deleted with it. A search reads only the searching customer's rows for its
// words: it costs what her own history costs, however much other customers have said, and copies
// nothing.
import type { Connection, RowDataPacket } from 'mysql2/promise';
import { query } from '../../../shared/db.ts';
import { oneLine, shorten } from '../../../shared/text.ts';
import type { StoredMessage } from '../../memory.ts';
import { words } from './recall-notes.ts';

/** Conversations returned, and matching lines of each: enough to recognise one, small enough to send. */
const MAX_CONVERSATIONS = 3;
const MAX_LINES = 3;
const MAX_LINE_CHARS = 200;
/** Longer words are kept (and looked for) cut to this length: the column's. */
const MAX_WORD_CHARS = 40;

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

/**
 * Adds the words of these messages, just inserted from `firstSeq` on, to the customer's index, in the
 * saving transaction: a message and its words are stored together or not at all. Only questions and
 * answers have words to find: a tool call has no text, and a tool result is the store's data, which the
 * other tools fetch fresh.
 */
export async function indexMessages(
  db: Connection,
  customerId: number,
  conversationId: string,
  firstSeq: number,
  messages: StoredMessage[],
): Promise<void> {
  const rows = messages.flatMap((message, i) =>
    message.role === 'user' || message.role === 'assistant'
      ? indexWords(typeof message.content === 'string' ? message.content : '').map((word) => [
          customerId,
          word,
          conversationId,
          firstSeq + i,
        ])
      : [],
  );
  if (rows.length)
    await db.query('INSERT INTO message_words (customer_id, word, conversation_id, seq) VALUES ?', [
      rows,
    ]);
}

/**
 * Indexes every question and answer already stored: run once, when message_words is created on a
 * database that has conversations. IGNORE: a message a chat saved meanwhile was indexed by its own save.
 */
export async function indexStoredMessages(db: Connection): Promise<number> {
  const [conversations] = await db.query<
    Array<{ id: string; customer_id: number } & RowDataPacket>
  >('SELECT id, customer_id FROM conversations');
  for (const conversation of conversations) {
    const [messages] = await db.query<Array<{ seq: number; text: string } & RowDataPacket>>(
      `SELECT seq, JSON_UNQUOTE(JSON_EXTRACT(data, '$.content')) AS text FROM messages
        WHERE conversation_id = ? AND role IN ('user', 'assistant')
          AND JSON_TYPE(JSON_EXTRACT(data, '$.content')) = 'STRING'`,
      [conversation.id],
    );
    const rows = messages.flatMap((message) =>
      indexWords(message.text).map((word) => [
        conversation.customer_id,
        word,
        conversation.id,
        message.seq,
      ]),
    );
    for (let i = 0; i < rows.length; i += 5000)
      await db.query(
        'INSERT IGNORE INTO message_words (customer_id, word, conversation_id, seq) VALUES ?',
        [rows.slice(i, i + 5000)],
      );
  }
  return conversations.length;
}

/** The words of a text as the index keeps them: recall's words (so "Lockers" finds "locker"), cut to the column's length. */
function indexWords(text: string): string[] {
  return [...new Set([...words(text)].map((word) => [...word].slice(0, MAX_WORD_CHARS).join('')))];
}
