// The store chat.ts and ask.ts use. The plain store's job (memory.ts), made to survive real use.
//
// - Bounded loading (load-context.ts): a question reads only the newest turns it needs.
// - Defensive reading (read-history.ts): a damaged row is left out and reported, never sent.
// - Storable messages (fit-message.ts): what MariaDB would refuse is changed as little as possible, and noted.
// - A deleted conversation (forget.ts, prune.ts) is never written again, nor one whose question lost its
//   lease: every save goes through the question's one fenced write path (fencedTransaction, question/lease.ts),
//   which checks the lease in the same transaction as the save.
// - A save whose COMMIT got no answer (a timeout, a dropped connection) may have landed: before it is
//   sent again, the store looks at the rows where it would be, and a COMMIT that lands even later (after
//   that look) is found by the messages' key (insertOnce), so a step is never stored twice or lost.
// - Its place in the conversation: each save continues at the seq this process last saw. If another
//   writer got there first (two windows, after the lock's connection dropped), the primary key
//   (conversation_id, seq) refuses the insert, and the rest of this turn is stored as a turn of its
//   own after the other's, its question repeated: turns never mix, and nothing a tool did is lost.
import { isDeepStrictEqual } from 'node:util';
import type { ResultSetHeader } from 'mysql2';
import type { PoolConnection } from 'mysql2/promise';
import { CommitUnknown, DatabaseError, query } from '../../../shared/db.ts';
import type { MemoryBudget } from '../../context.ts';
import {
  insertMessages,
  type Conversation,
  type ConversationStore,
  type MessageToSave,
  type StoredMessage,
} from '../../memory.ts';
import { fencedTransaction } from '../question/lease.ts';
import { loadContext, type LoadedContext } from './load-context.ts';
import { indexMessages } from '../notes/past-conversations.ts';
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
  loadContext(conversation: Conversation): Promise<LoadedContext>;
}

export interface HardenedStoreOptions {
  /** Told about rows left out as damaged: they stay in the database for a person to look at. */
  onDamaged?: (conversationId: string, damaged: Damage[]) => void;
  /** Told when another writer took this turn's place and its later steps became a turn of their own. */
  onMoved?: (conversationId: string) => void;
}

export function hardenedStore(
  budget: MemoryBudget,
  options: HardenedStoreOptions = {},
): HardenedStore {
  // Per conversation: the seq of its last message as this process knows it, the question of the turn
  // being saved (repeated if the turn has to continue as a turn of its own), and a save whose COMMIT
  // got no answer (the agent sends its messages again, first, with the next step).
  const places = new Map<string, Place>();

  return {
    async loadContext(conversation) {
      if (conversation.saved && !(await exists(conversation.id))) {
        throw new ConversationDeleted(conversation.id);
      }
      const context = await loadContext(conversation.id, budget);
      if (context.damaged.length) options.onDamaged?.(conversation.id, context.damaged);
      places.set(conversation.id, { lastSeq: context.lastSeq });
      return context;
    },

    async saveStep(conversation, step) {
      const place = places.get(conversation.id) ?? { lastSeq: 0 };
      places.set(conversation.id, place);
      const first = step[0]?.message;
      if (first?.role === 'user') place.question = first;
      if (place.unknown) {
        // The save whose answer never came: if it landed, its messages (sent again first) are stored.
        const count = place.unknown.length;
        if (await settled(conversation, place)) step = step.slice(count);
        if (step.length === 0) return;
      }
      try {
        if (await insertOrFind(conversation, place, step)) return;
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
 * Inserts the step at its place, once. If its COMMIT got no answer, looks whether it landed: true if
 * it did (the place is then past it); if not, inserts it again, once even if that COMMIT lands meanwhile.
 */
async function insertOrFind(
  conversation: Conversation,
  place: Place,
  step: MessageToSave[],
): Promise<boolean> {
  try {
    await insertOnce(conversation, place.lastSeq, step);
    return false;
  } catch (error) {
    if (!(error instanceof CommitUnknown)) throw error;
    if (await landedAfterAll(conversation, place, step)) return true;
    await insertOnce(conversation, place.lastSeq, step);
    return false;
  }
}

/**
 * A COMMIT got no answer: looks at once whether the step landed (on a cluster, through another node if
 * need be). If even that fails, the step is remembered, to be looked for before the next save.
 */
async function landedAfterAll(
  conversation: Conversation,
  place: Place,
  step: MessageToSave[],
): Promise<boolean> {
  place.unknown = asStored(step);
  try {
    return await settled(conversation, place);
  } catch (error) {
    const why = error instanceof Error ? ` (${error.message})` : '';
    throw new CommitUnknown(
      `MySQL never answered the COMMIT of this step, so it may have been saved or not, and asking again failed${why}. Nimbus looks before it saves again, so nothing is stored twice.`,
    );
  }
}

/**
 * Looks whether the save whose COMMIT got no answer landed, and settles the place either way: true if
 * it did (the conversation then has those messages), false if not (they can be saved again).
 */
async function settled(conversation: Conversation, place: Place): Promise<boolean> {
  const landed = await stored(conversation.id, place.lastSeq, place.unknown!);
  if (landed) {
    place.lastSeq += place.unknown!.length;
    conversation.saved = true;
  }
  place.unknown = undefined;
  return landed;
}

interface Place {
  lastSeq: number;
  question?: StoredMessage;
  /** The messages of a save whose COMMIT got no answer, as they would be stored. */
  unknown?: StoredMessage[];
}

/** Whether these messages are stored right after `lastSeq`: a save whose answer was lost, found. */
async function stored(
  conversationId: string,
  lastSeq: number,
  messages: StoredMessage[],
): Promise<boolean> {
  return (await storedAlready(conversationId, lastSeq, messages)) === messages.length;
}

/**
 * How many of these messages, from the first, are the rows stored right after `lastSeq`; -1 if those
 * rows are anything else (another writer's). A step is identified by its conversation, its place
 * (seq) and its own messages, compared whole (its tool calls' ids included).
 */
async function storedAlready(
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
async function insertOnce(
  conversation: Conversation,
  lastSeq: number,
  step: MessageToSave[],
): Promise<void> {
  try {
    await insertStep(conversation, lastSeq, step);
  } catch (error) {
    if (!isDuplicate(error)) throw error;
    const already = await storedAlready(conversation.id, lastSeq, asStored(step));
    if (already <= 0) throw error;
    conversation.saved = true; // the late COMMIT created its row
    if (already < step.length)
      await insertStep(conversation, lastSeq + already, step.slice(already));
  }
}

/** One step in one transaction, numbered from lastSeq + 1; a deleted conversation, or a lost lease, refuses it. */
async function insertStep(
  conversation: Conversation,
  lastSeq: number,
  step: MessageToSave[],
): Promise<void> {
  // Each message is made storable first; what had to change is kept in storage_note.
  const rows = step.map(({ message, cost }) => ({ ...storable(message), cost }));
  await fencedTransaction(conversation.id, async (db) => {
    if (conversation.saved) {
      const [update] = await db.query<ResultSetHeader>(
        'UPDATE conversations SET updated_at = NOW(3) WHERE id = ?',
        [conversation.id],
      );
      if (update.affectedRows === 0) throw new ConversationDeleted(conversation.id);
    } else {
      // Its row may be there already: this save's first try, whose COMMIT landed after the app gave up
      // on it. The messages' own key then says whether they are stored (insertOnce).
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
 * (database-setup.ts adds it), so the chapter's insert leaves it out and this fills it in, rarely.
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
