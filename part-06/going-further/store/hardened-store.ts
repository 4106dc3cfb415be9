// The store the full Nimbus uses: the chapter's plain store (memory.ts), made to survive real use.
//
// Loading: only the newest turns the question needs (load-context.ts), a damaged row left out and said
// (read-history.ts). Saving a step is the chapter's saveMessages — the conversation's row, then the
// messages numbered after the last one, in one transaction — plus what real use adds:
// - every message made storable first (fit-message.ts), and its words indexed in the same transaction
//   (message-words.ts), for search_past_conversations;
// - a conversation deleted meanwhile (forget.ts, prune.ts) is never written again;
// - a COMMIT whose answer never came (a timeout, a dropped connection) may have landed: before the step
//   is sent again, the rows where it would be are read, and a COMMIT that lands even later is found by
//   the messages' key (conversation_id, seq): a step is stored once, never twice, never lost;
// - the place to write is the one this question last saw, not MAX(seq): if another writer got there
//   first (the chapter's chat in the same conversation), the key refuses the insert, and the rest of
//   this turn is stored as a turn of its own after the other's, its question repeated, so turns never mix.
// The question's lease is checked by every one of its transactions (store/fence.ts, nimbus.ts).
import { isDeepStrictEqual } from 'node:util';
import type { ResultSetHeader } from 'mysql2';
import type { PoolConnection } from 'mysql2/promise';
import { CommitUnknown, DatabaseError, query, withTransaction } from '../../../shared/db.ts';
import type { MemoryBudget } from '../../context.ts';
import {
  insertMessages,
  type Conversation,
  type ConversationStore,
  type MessageToSave,
  type StoredMessage,
} from '../../memory.ts';
import { loadContext, type LoadedContext } from './load-context.ts';
import { indexMessages } from './message-words.ts';
import { storable } from './fit-message.ts';
import type { Damage } from './read-history.ts';

/** The conversation was deleted (forget.ts, prune.ts) while a chat still had it open. */
export class ConversationDeleted extends DatabaseError {
  override name = 'ConversationDeleted';
  // Its id is not said: it names nothing of the customer's any more.
  constructor(readonly conversationId: string) {
    super('This conversation was deleted, so nothing more is saved in it.');
  }
}

export interface HardenedStore extends ConversationStore {
  loadContext(conversation: Conversation, question?: string): Promise<LoadedContext>;
  /**
   * The conversation's rows were erased by this very question (forget_everything): what it saves from
   * now on starts the conversation over, as its first turn, the question repeated.
   */
  startOver(conversation: Conversation): void;
}

export interface HardenedStoreOptions {
  /** Told about rows left out as damaged: they stay in the database for a person to look at. */
  onDamaged?: (conversationId: string, damaged: Damage[]) => void;
  /** Told when older turns were not read at all: past the budget, every one of them is dropped. */
  onOlderUnread?: (conversationId: string) => void;
  /** Told when another writer took this turn's place and its later steps became a turn of their own. */
  onMoved?: (conversationId: string) => void;
}

/** Where this question writes next in its conversation (one store per question: nimbus.ts makes it). */
interface Place {
  /** The seq of the conversation's last message, as this question knows it. */
  lastSeq: number;
  /** The question of the turn being saved: repeated if the turn has to continue as a turn of its own. */
  question?: StoredMessage;
  /** A save whose COMMIT got no answer: its messages as they would be stored, looked for before the next. */
  unanswered?: StoredMessage[];
}

export function hardenedStore(
  budget: MemoryBudget,
  options: HardenedStoreOptions = {},
): HardenedStore {
  const places = new Map<string, Place>();
  const placeOf = (conversation: Conversation) => {
    const place = places.get(conversation.id) ?? { lastSeq: 0 };
    places.set(conversation.id, place);
    return place;
  };

  return {
    async loadContext(conversation) {
      if (conversation.saved && !(await exists(conversation.id))) {
        throw new ConversationDeleted(conversation.id);
      }
      const context = await loadContext(conversation.id, budget);
      if (context.damaged.length) options.onDamaged?.(conversation.id, context.damaged);
      if (!context.readAll) options.onOlderUnread?.(conversation.id);
      placeOf(conversation).lastSeq = context.lastSeq;
      return context;
    },

    startOver(conversation) {
      const place = placeOf(conversation);
      places.set(conversation.id, { lastSeq: 0, question: place.question });
      conversation.saved = false; // its row is gone: the next save creates it again
    },

    async saveStep(conversation, step) {
      const place = placeOf(conversation);
      const first = step[0]?.message;
      if (first?.role === 'user') place.question = first;
      // Every save of a turn that starts over (or moved) begins with its question.
      if (place.lastSeq === 0 && first?.role !== 'user' && place.question)
        step = [{ message: place.question }, ...step];
      if (place.unanswered) {
        // The save whose answer never came: if it landed, its messages (sent again first) are stored.
        const count = place.unanswered.length;
        if (await landedLate(conversation, place)) step = step.slice(count);
        if (step.length === 0) return;
      }
      try {
        if (await saveOnce(conversation, place, step)) return;
      } catch (error) {
        if (!isDuplicate(error) || !place.question) throw error;
        // Another writer took our place: continue after its messages, as a turn of our own.
        place.lastSeq = await lastSeq(conversation.id);
        step = first?.role === 'user' ? step : [{ message: place.question }, ...step];
        await insertStep(conversation, place.lastSeq, step);
        options.onMoved?.(conversation.id);
      }
      place.lastSeq += step.length;
      conversation.saved = true;
    },
  };
}

/**
 * Inserts the step at its place, once. If its COMMIT got no answer, looks whether it landed: true if it
 * did (the place is then past it); if not, inserts it again, once even if that COMMIT lands meanwhile.
 */
async function saveOnce(
  conversation: Conversation,
  place: Place,
  step: MessageToSave[],
): Promise<boolean> {
  try {
    await insertUnlessLanded(conversation, place.lastSeq, step);
    return false;
  } catch (error) {
    if (!(error instanceof CommitUnknown)) throw error;
    place.unanswered = asStored(step);
    try {
      if (await landedLate(conversation, place)) return true;
    } catch (lookFailed) {
      // Not even the look got an answer: the step stays in `unanswered`, looked for before the next save.
      const why = lookFailed instanceof Error ? ` (${lookFailed.message})` : '';
      throw new CommitUnknown(
        `MySQL never answered the COMMIT of this step, so it may have been saved or not, and asking again failed${why}. Nimbus looks before it saves again, so nothing is stored twice.`,
      );
    }
    await insertUnlessLanded(conversation, place.lastSeq, step);
    return false;
  }
}

/**
 * Whether the save whose COMMIT got no answer landed after all: the place moves past it if it did;
 * either way the question is settled, and `unanswered` cleared.
 */
async function landedLate(conversation: Conversation, place: Place): Promise<boolean> {
  const messages = place.unanswered!;
  const landed =
    (await countStoredAt(conversation.id, place.lastSeq, messages)) === messages.length;
  if (landed) {
    place.lastSeq += messages.length;
    conversation.saved = true;
  }
  place.unanswered = undefined;
  return landed;
}

/**
 * How many of these messages, from the first, are the rows stored right after `lastSeq`; -1 if those
 * rows are anything else (another writer's). A step is identified by its conversation, its place
 * (seq) and its own messages, compared whole (its tool calls' ids included).
 */
async function countStoredAt(
  conversationId: string,
  lastSeq: number,
  messages: StoredMessage[],
): Promise<number> {
  const rows = await query<Array<{ data: string }>>(
    `SELECT CAST(data AS CHAR) AS data FROM messages
      WHERE conversation_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
    [conversationId, lastSeq, messages.length],
  );
  // Compared as values: MySQL 8 stores JSON with its keys reordered.
  const same = rows.every((row, i) => isDeepStrictEqual(JSON.parse(row.data), messages[i]));
  return same ? rows.length : -1;
}

/** The step's messages as their rows read back: storable, and through JSON (no undefined fields). */
function asStored(step: MessageToSave[]): StoredMessage[] {
  return step.map(({ message }) => JSON.parse(JSON.stringify(storable(message).message)));
}

/**
 * Inserts the step at its place, once whatever became of an earlier COMMIT of it: if its place is
 * taken by this very step (that COMMIT landed late, after the app gave up on it), or by its first
 * messages, it is "already stored", checked, not assumed, and only the rest is inserted. Rows of
 * another writer there are the caller's to handle (ER_DUP_ENTRY).
 */
async function insertUnlessLanded(
  conversation: Conversation,
  lastSeq: number,
  step: MessageToSave[],
): Promise<void> {
  try {
    await insertStep(conversation, lastSeq, step);
  } catch (error) {
    if (!isDuplicate(error)) throw error;
    const already = await countStoredAt(conversation.id, lastSeq, asStored(step));
    if (already <= 0) throw error;
    conversation.saved = true; // the late COMMIT created its row
    if (already < step.length)
      await insertStep(conversation, lastSeq + already, step.slice(already));
  }
}

/** One step in one transaction, numbered from lastSeq + 1; a deleted conversation refuses it. */
async function insertStep(
  conversation: Conversation,
  lastSeq: number,
  step: MessageToSave[],
): Promise<void> {
  // Each message is made storable first; what had to change is kept in storage_note.
  const rows = step.map(({ message, cost }) => ({ ...storable(message), cost }));
  await withTransaction(async (db) => {
    if (conversation.saved) {
      const [update] = await db.query<ResultSetHeader>(
        'UPDATE conversations SET updated_at = NOW(3) WHERE id = ?',
        [conversation.id],
      );
      if (update.affectedRows === 0) throw new ConversationDeleted(conversation.id);
    } else {
      // Its row may be there already: this save's first try, whose COMMIT landed after the app gave up
      // on it. The messages' own key then says whether they are stored (insertUnlessLanded).
      await db.query(
        'INSERT INTO conversations (id, customer_id) VALUES (?, ?) ON DUPLICATE KEY UPDATE updated_at = NOW(3)',
        [conversation.id, conversation.customerId],
      );
    }
    await insertMessages(db, conversation.id, lastSeq + 1, rows);
    await noteChanges(db, conversation.id, lastSeq + 1, rows);
    // Their words, for search_past_conversations: stored with the messages, or not at all.
    const messages = rows.map((row) => row.message);
    await indexMessages(db, conversation.customerId, conversation.id, lastSeq + 1, messages);
  });
}

/**
 * What storable() had to change, beside the message it changed: storage_note is going further's column
 * (ensure-tables.ts adds it), so the chapter's insert leaves it out and this fills it in, rarely.
 */
async function noteChanges(
  db: PoolConnection,
  conversationId: string,
  firstSeq: number,
  rows: Array<{ note?: string }>,
): Promise<void> {
  for (const [i, { note }] of rows.entries()) {
    if (!note) continue;
    await db.query('UPDATE messages SET storage_note = ? WHERE conversation_id = ? AND seq = ?', [
      note,
      conversationId,
      firstSeq + i,
    ]);
  }
}

async function exists(conversationId: string): Promise<boolean> {
  const rows = await query<unknown[]>('SELECT 1 FROM conversations WHERE id = ?', [conversationId]);
  return rows.length > 0;
}

async function lastSeq(conversationId: string): Promise<number> {
  const [row] = await query<Array<{ last: number }>>(
    'SELECT COALESCE(MAX(seq), 0) AS last FROM messages WHERE conversation_id = ?',
    [conversationId],
  );
  return row.last;
}

/** MySQL's "Duplicate entry" for a key: here, a seq another writer already used. */
function isDuplicate(error: unknown): boolean {
  return (error as { code?: string }).code === 'ER_DUP_ENTRY';
}
