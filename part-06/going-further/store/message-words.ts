// The word index of customers' own messages (message_words): written with the messages, read by search_past_conversations.
//
// Each word of a question or an answer is kept with the customer and the message when the message is
// saved (hardened-store.ts calls indexMessages in the same transaction) and deleted with it; the
// notes' search (notes/past-conversations.ts) and recall (notes/recall-notes.ts) read words the same way.
import type { Connection, RowDataPacket } from 'mysql2/promise';
import type { StoredMessage } from '../../memory.ts';

/** Longer words are kept (and looked for) cut to this length: the column's. */
const MAX_WORD_CHARS = 40;

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
export function indexWords(text: string): string[] {
  return [...new Set([...words(text)].map((word) => [...word].slice(0, MAX_WORD_CHARS).join('')))];
}

/** Words that say nothing about what a message or a note is about. */
const COMMON = new Set(
  (
    'the and for you your are was were with that this have has had not but can could will would should ' +
    'please about from they them their our what when where which who why how all any been into than then ' +
    'also just its there here some more very want like know need get got don won didn doesn'
  ).split(' '),
);

/** The words of a text that can tell messages and notes apart: lower case, three letters or more, a plural "s" dropped. */
export function words(text: string): Set<string> {
  const found = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  return new Set(
    found
      .filter((w) => w.length >= 3 && !COMMON.has(w))
      .map((w) => w.replace(/ies$/, 'y').replace(/([^s])s$/, '$1')),
  );
}
