// Going further: finds a customer's earlier conversations by their words, through a word index of her own messages.
//
// Each word of a question or an answer is kept in message_words (customer-memory.sql) with the
// customer and the message, when the message is saved (hardened-store.ts calls indexMessages in the
// same transaction) and deleted with it. A search reads only the searching customer's rows for its
// words: it costs what her own history costs, however much other customers have said, and copies
// nothing.
import type { Connection, RowDataPacket } from 'mysql2/promise';
import { query } from '../../shared/db.ts';
import { oneLine, shorten } from '../../shared/text.ts';
import type { StoredMessage } from '../memory.ts';
import { words } from './recall.ts';

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
 * had. A message scores by the words it shares, a word counting more the fewer of her messages hold
 * it; a conversation ranks by its best message and shows its best lines, in the order they were said.
 */
export async function searchPastConversations(
  customerId: number,
  text: string,
  currentConversationId: string,
): Promise<PastConversation[]> {
  const wanted = indexWords(text);
  if (wanted.length === 0) return [];
  // `customer_id = ?` is the session's boundary, as in every tool, and the index's first column.
  // 1e0: a floating-point division (1 / n would be rounded to 4 decimals).
  const rows = await query<
    Array<{ conversation_id: string; date: string; role: string; text: string }>
  >(
    `WITH counts AS (SELECT word, COUNT(*) AS n FROM message_words
                      WHERE customer_id = ? AND word IN (?) GROUP BY word),
          hits AS (SELECT w.conversation_id, w.seq, SUM(1e0 / counts.n) AS score
                     FROM message_words w JOIN counts ON counts.word = w.word
                    WHERE w.customer_id = ? AND w.conversation_id <> ?
                    GROUP BY w.conversation_id, w.seq),
          ranked AS (SELECT conversation_id, seq,
                            MAX(score) OVER (PARTITION BY conversation_id) AS best,
                            ROW_NUMBER() OVER (PARTITION BY conversation_id ORDER BY score DESC, seq) AS line
                       FROM hits)
     SELECT r.conversation_id, DATE_FORMAT(c.created_at, '%Y-%m-%d') AS date, m.role,
            JSON_UNQUOTE(JSON_EXTRACT(m.data, '$.content')) AS text
       FROM ranked r
       JOIN conversations c ON c.id = r.conversation_id AND c.customer_id = ?
       JOIN messages m ON m.conversation_id = r.conversation_id AND m.seq = r.seq
      WHERE r.line <= ?
      ORDER BY r.best DESC, c.created_at DESC, r.conversation_id, r.seq
      LIMIT ?`,
    [
      customerId,
      wanted,
      customerId,
      currentConversationId,
      customerId,
      MAX_LINES,
      MAX_CONVERSATIONS * MAX_LINES,
    ],
  );
  const found = new Map<string, PastConversation>();
  for (const row of rows) {
    const conversation = found.get(row.conversation_id) ?? {
      conversation_id: row.conversation_id,
      date: row.date,
      lines: [],
    };
    found.set(row.conversation_id, conversation);
    conversation.lines.push({
      said_by: row.role === 'user' ? 'customer' : 'nimbus',
      text: shorten(oneLine(row.text), MAX_LINE_CHARS),
    });
  }
  return [...found.values()];
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
