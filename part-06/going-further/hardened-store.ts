// Going further: the store chat.ts and ask.ts use. The plain store's job (memory.ts), made to survive real use.
//
// - Bounded loading (load-context.ts): a question reads only the newest turns it needs.
// - Defensive reading (stored-history.ts): a damaged row is left out and reported, never sent.
// - Storable messages (storable.ts): what MariaDB would refuse is changed as little as possible, and noted.
// - A deleted conversation (forget.ts, prune.ts) is never written again.
// - Its place in the conversation: each save continues at the seq this process last saw. If another
//   writer got there first (two windows, after the lock's connection dropped), the primary key
//   (conversation_id, seq) refuses the insert, and the rest of this turn is stored as a turn of its
//   own after the other's, its question repeated: turns never mix, and nothing a tool did is lost.
import type { ResultSetHeader } from 'mysql2';
import { DatabaseError, query, withTransaction } from '../../shared/db.ts';
import type { MemoryBudget } from '../context.ts';
import {
  insertMessages,
  type Conversation,
  type ConversationStore,
  type MessageToSave,
  type StoredMessage,
} from '../memory.ts';
import { loadContext, type LoadedContext } from './load-context.ts';
import { storable } from './storable.ts';
import type { Damage } from './stored-history.ts';

/** The conversation was deleted (forget.ts, prune.ts) while a chat still had it open. */
export class ConversationDeleted extends DatabaseError {
  override name = 'ConversationDeleted';
  constructor(readonly conversationId: string) {
    super(`Conversation ${conversationId} was deleted, so nothing more is saved in it.`);
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
  // Per conversation: the seq of its last message as this process knows it, and the question of the
  // turn being saved (repeated if the turn has to continue as a turn of its own).
  const places = new Map<string, { lastSeq: number; question?: StoredMessage }>();

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
      try {
        await insertStep(conversation, place.lastSeq, step);
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
      await db.query('INSERT INTO conversations (id, customer_id) VALUES (?, ?)', [
        conversation.id,
        conversation.customerId,
      ]);
    }
    await insertMessages(db, conversation.id, lastSeq + 1, rows);
  });
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
