// Every SQL statement on customer notes, what a customer asked Nimbus to keep across conversations.
//
// Every function takes the customer from its caller, who has it from the session: another customer's
// note is never read, changed or deleted here, and looks exactly like one that does not exist.
import type { ResultSetHeader, RowDataPacket } from 'mysql2';
import { query, withTransaction } from '../../../shared/db.ts';
import { LeaseLost } from '../store/fence.ts';

/** The longest note: a sentence or two. Anything longer is not a note. */
export const MAX_NOTE_CHARS = 300;
/** Notes one customer may keep (expired ones aside): past it, they choose one to forget first. */
export const MAX_NOTES_PER_CUSTOMER = 20;

export interface CustomerNote {
  id: number;
  text: string;
  /** The conversation it was said in; null once that conversation was pruned. */
  conversation_id: string | null;
  created_at: Date;
  /** The day it was written, YYYY-MM-DD, in the database's calendar. */
  written: string;
  recalled_at: Date | null;
  /** The last day it applies, YYYY-MM-DD; null: until the customer asks to forget it. */
  expires_on: string | null;
}

const COLUMNS = `id, text, conversation_id, created_at, DATE_FORMAT(created_at, '%Y-%m-%d') AS written,
                 recalled_at, DATE_FORMAT(expires_on, '%Y-%m-%d') AS expires_on`;
/** Still applies: no expiry, or not past it. Dates are the database's, one clock for everyone. */
const LIVE = '(expires_on IS NULL OR expires_on >= CURRENT_DATE)';
/** What prune.ts deletes: past its expiry, or not sent with any question for `?` days. */
const STALE = `(expires_on < CURRENT_DATE OR COALESCE(recalled_at, created_at) < NOW(3) - INTERVAL ? DAY)`;

/** Today in the database's calendar, YYYY-MM-DD: what "expires" is measured against. */
export async function today(): Promise<string> {
  const [row] = await query<Array<{ today: string }>>(
    "SELECT DATE_FORMAT(CURRENT_DATE, '%Y-%m-%d') AS today",
  );
  return row.today;
}

/** The customer's notes that still apply, newest first: what recall chooses from. */
export async function liveNotes(customerId: number): Promise<CustomerNote[]> {
  return query<CustomerNote[]>(
    `SELECT ${COLUMNS} FROM customer_notes WHERE customer_id = ? AND ${LIVE}
      ORDER BY created_at DESC, id DESC`,
    [customerId],
  );
}

/** Every note of the customer, expired ones too, oldest first: for the operator and the export. */
export async function allNotes(customerId: number): Promise<CustomerNote[]> {
  return query<CustomerNote[]>(
    `SELECT ${COLUMNS} FROM customer_notes WHERE customer_id = ? ORDER BY created_at, id`,
    [customerId],
  );
}

export type SaveOutcome =
  | { outcome: 'saved' | 'repeated' | 'revived'; id: number }
  | { outcome: 'full' | 'past'; today: string }
  | { outcome: 'erased' };

/**
 * Keeps a note, once. The same words again (in any case) are the same note: its expiry becomes the
 * one said last, and an expired one is revived, said again today in this conversation. A new or
 * revived note counts against MAX_NOTES_PER_CUSTOMER: past it, nothing is kept ('full'). An expiry
 * before today is refused, with today's date for the model to ask the customer again. 'erased': the
 * conversation was erased while the question was answered (its lease was taken), so nothing is kept.
 */
export async function saveNote(
  customerId: number,
  conversationId: string,
  text: string,
  expiresOn: string | null,
): Promise<SaveOutcome> {
  return withTransaction(async (db): Promise<SaveOutcome> => {
    // First a write to the customer's guard row (customer-memory.sql says why a write and not a lock).
    // Written before anything is read, so the reads below see every save committed before this one.
    await db.query(
      `INSERT INTO customer_note_guards (customer_id, changes) VALUES (?, 1)
       ON DUPLICATE KEY UPDATE changes = changes + 1`,
      [customerId],
    );
    const [[state]] = await db.query<Array<NoteState & RowDataPacket>>(
      `SELECT DATE_FORMAT(CURRENT_DATE, '%Y-%m-%d') AS today,
              (SELECT COUNT(*) FROM customer_notes WHERE customer_id = ? AND ${LIVE}) AS live,
              (SELECT id FROM customer_notes WHERE customer_id = ? AND text = ?) AS same,
              (SELECT ${LIVE} FROM customer_notes WHERE customer_id = ? AND text = ?) AS same_live`,
      [customerId, customerId, text, customerId, text],
    );
    if (expiresOn !== null && expiresOn < state.today)
      return { outcome: 'past', today: state.today };
    if (state.same !== null && state.same_live) {
      await db.query('UPDATE customer_notes SET expires_on = ? WHERE id = ?', [
        expiresOn,
        state.same,
      ]);
      return { outcome: 'repeated', id: state.same };
    }
    // A new note, or an expired one coming back: either way one more that applies.
    if (state.live >= MAX_NOTES_PER_CUSTOMER) return { outcome: 'full', today: state.today };
    if (state.same !== null) {
      await db.query(
        `UPDATE customer_notes SET conversation_id = ?, created_at = NOW(3), recalled_at = NULL,
                expires_on = ? WHERE id = ?`,
        [conversationId, expiresOn, state.same],
      );
      return { outcome: 'revived', id: state.same };
    }
    const [inserted] = await db.query<ResultSetHeader>(
      `INSERT INTO customer_notes (customer_id, text, conversation_id, expires_on)
       VALUES (?, ?, ?, ?)`,
      [customerId, text, conversationId, expiresOn],
    );
    return { outcome: 'saved', id: inserted.insertId };
  }).catch((error: unknown) => {
    if (error instanceof LeaseLost) return { outcome: 'erased' as const };
    throw error;
  });
}

/** What saveNote reads once its guard row is written. */
interface NoteState {
  today: string;
  /** Notes of the customer that still apply. */
  live: number;
  /** The note with the same words, if there is one, and whether it still applies. */
  same: number | null;
  same_live: number | null;
}

/** A deleted note: where it was said, so the trace lines of that question can go too. */
export interface DeletedNote {
  id: number;
  conversation_id: string | null;
}

/**
 * Deletes notes of this customer: the listed ids, or all of them; with `staleDays`, only those still
 * stale at this moment (one may have been recalled since prune listed it). Returns what went.
 */
export async function deleteNotes(
  customerId: number,
  which: number[] | 'all',
  { staleDays }: { staleDays?: number } = {},
): Promise<DeletedNote[]> {
  if (which !== 'all' && which.length === 0) return [];
  const where = [
    'customer_id = ?',
    ...(which === 'all' ? [] : ['id IN (?)']),
    ...(staleDays === undefined ? [] : [STALE]),
  ].join(' AND ');
  const params = [
    customerId,
    ...(which === 'all' ? [] : [which]),
    ...(staleDays === undefined ? [] : [staleDays]),
  ];
  // Read first (a read needs no lease): if the DELETE's COMMIT gets no answer, the transaction runs
  // again and finds nothing left, yet the notes were deleted, and their trace lines must go too.
  const before = await query<DeletedNote[]>(
    `SELECT id, conversation_id FROM customer_notes WHERE ${where} ORDER BY id`,
    params,
  );
  const deleted = await withTransaction(async (db) => {
    const [notes] = await db.query<Array<DeletedNote & RowDataPacket>>(
      `SELECT id, conversation_id FROM customer_notes WHERE ${where} ORDER BY id FOR UPDATE`,
      params,
    );
    if (notes.length)
      await db.query('DELETE FROM customer_notes WHERE id IN (?)', [notes.map((n) => n.id)]);
    return notes.map(({ id, conversation_id }) => ({ id, conversation_id }));
  });
  const found = new Set(deleted.map((note) => note.id));
  const unsure = before.filter((note) => !found.has(note.id));
  if (unsure.length === 0) return deleted;
  const left = new Set(
    (
      await query<Array<{ id: number }>>('SELECT id FROM customer_notes WHERE id IN (?)', [
        unsure.map((note) => note.id),
      ])
    ).map((row) => row.id),
  );
  // Gone, by the first try or by another erasure at the same moment: either way, deleted.
  const gone = unsure
    .filter((note) => !left.has(note.id))
    .map(({ id, conversation_id }) => ({ id, conversation_id }));
  return [...deleted, ...gone].sort((a, b) => a.id - b.id);
}

/** The notes learned in one conversation, with whose they are (a conversation's notes are its customer's). */
export async function notesFromConversation(
  conversationId: string,
): Promise<{ customerId: number; ids: number[] } | undefined> {
  const rows = await query<Array<{ id: number; customer_id: number }>>(
    'SELECT id, customer_id FROM customer_notes WHERE conversation_id = ? ORDER BY id',
    [conversationId],
  );
  return rows.length
    ? { customerId: rows[0].customer_id, ids: rows.map((row) => row.id) }
    : undefined;
}

/** A note prune.ts would delete, with whose it is and why. */
export interface StaleNote {
  id: number;
  customer_id: number;
  customer_email: string;
  /** Past its expiry, or not sent with any question for the days given. */
  reason: 'expired' | 'unused';
}

/** Every customer's notes past their expiry or not recalled for `days` days. */
export async function staleNotes(days: number): Promise<StaleNote[]> {
  const rows = await query<Array<Omit<StaleNote, 'reason'> & { expired: number }>>(
    `SELECT n.id, n.customer_id, cu.email AS customer_email, n.expired
       FROM (SELECT id, customer_id, COALESCE(expires_on < CURRENT_DATE, 0) AS expired
               FROM customer_notes WHERE ${STALE}) n
       JOIN customers cu ON cu.id = n.customer_id
      ORDER BY n.id`,
    [days],
  );
  return rows.map(({ expired, ...note }) => ({ ...note, reason: expired ? 'expired' : 'unused' }));
}

/** These notes were just sent with a question: prune.ts measures "not recalled for N days" from here. */
export async function markRecalled(ids: number[]): Promise<void> {
  if (ids.length === 0) return;
  await query('UPDATE customer_notes SET recalled_at = NOW(3) WHERE id IN (?)', [ids]);
}

/** The conversation a note was said in was pruned: the note stays (it is still in use), its source goes. */
export async function forgetSource(conversationId: string): Promise<void> {
  await query('UPDATE customer_notes SET conversation_id = NULL WHERE conversation_id = ?', [
    conversationId,
  ]);
}
