// One question at a time per conversation, across windows, processes and database nodes, as a lease row every node sees.
//
// A turn is saved step by step, so two questions answered at once in one conversation would put their
// steps side by side. The lock makes the second wait for the first, and then it sees the first's whole
// turn in its history.
//
// Why a row (question-leases.sql) and not MySQL's named lock (GET_LOCK): a named lock belongs to one
// connection on one server. It holds a pool connection for the whole turn (with 8 connections, 8
// conversations at once leave none to save with), it vanishes when that connection drops, and each node
// of a cluster has its own, so two questions on two nodes both get in. A row is written in a transaction
// like any other: every node sees it, and two nodes taking it at once collide (one is retried, and sees
// the other's). It expires unless renewed, so a crashed process holds a conversation for
// LEASE_SECONDS at most; and every write of a question checks it is still ours (fencedTransaction below,
// for its saves and its tools alike), so a question whose lease was taken from it (an erasure, or its
// process frozen past the expiry) writes nothing more.
import { randomBytes } from 'node:crypto';
import type { ResultSetHeader, RowDataPacket } from 'mysql2';
import type { PoolConnection } from 'mysql2/promise';
import { CommitUnknown, DatabaseError, query, withTransaction } from '../../../shared/db.ts';
import type { AgentOptions } from '../../agent.ts';
import { erasureSafeTraces } from '../privacy/trace-files.ts';

/** How long a lease lasts unless renewed: a crashed process blocks its conversation this long at most. */
export const LEASE_SECONDS = 30;
/** How often a question renews its lease: well within LEASE_SECONDS, so a slow model call keeps it. */
const RENEW_MS = 10_000;
/** How long a question waits for another window's question in the same conversation. */
const CONVERSATION_WAIT_SECONDS = 30;
/** How often a waiting question looks again. */
const POLL_MS = 200;

/** What to tell the person whose question waits (onWait), so a pause is never silent. */
export const WAITING_FOR_OTHER_QUESTION = `(Waiting for the question another window is asking in this conversation to finish, up to ${CONVERSATION_WAIT_SECONDS} s…)`;

/** Said instead of "not saved" when an erasure (forget.ts, a reset) took the conversation mid-question. */
export const ERASED_WHILE_ANSWERING =
  'This conversation was erased while Nimbus was answering, so nothing of it is kept, this answer included.';

/** The wait for a conversation was stopped by Ctrl-C: nothing of the question was done. */
export class DatabaseCancelled extends Error {
  override name = 'DatabaseCancelled';
  constructor() {
    super('Cancelled: nothing was written.');
  }
}

/** Another process is answering in this conversation, and did not finish within the wait. */
export class ConversationBusy extends DatabaseError {
  override name = 'ConversationBusy';
  constructor(conversationId: string, seconds: number) {
    super(
      `Conversation ${conversationId} has been busy answering a question elsewhere for ${seconds} s; ask again when it has finished.`,
    );
  }
}

/**
 * This question's lease was taken from it (an erasure, a reset, or it was frozen past the expiry). It
 * names no conversation: after an erasure, its id is the customer's no more.
 */
export class LeaseLost extends DatabaseError {
  override name = 'LeaseLost';
  constructor() {
    super(
      'This conversation was deleted or taken over while Nimbus was answering, so nothing more of this question was saved in it.',
    );
  }
}

/** A conversation, as the lease knows it: an erasure of its customer must find it even before it has a row. */
export interface LeaseTarget {
  id: string;
  customerId: number;
}

export interface LeaseOptions {
  /** Ctrl-C while waiting: throws DatabaseCancelled, nothing of the question was done. */
  signal?: AbortSignal;
  /** Called once when the conversation is busy, before waiting: say what is being waited for. */
  onWait?: () => void;
  /** How long to wait (default CONVERSATION_WAIT_SECONDS; 0: do not wait). */
  waitSeconds?: number;
  /** After the wait, take the lease anyway (an erasure must not be stopped by a stuck process). */
  takeOver?: boolean;
  /** For an erasure of this customer (withErasureMarked): its own leases do not wait for it. */
  erasure?: boolean;
}

/**
 * The leases this process holds, by conversation id: the holder's token, which every fenced write
 * checks, and what this process last learnt of it (when it expires at the latest, by our clock, and
 * whether a renewal found it taken).
 */
const held = new Map<
  string,
  { holder: string; until: number; lost: boolean; whenLost: AbortController }
>();

/** This process's holder of a conversation's lease, if it holds one. */
export function leaseHolder(conversationId: string): string | undefined {
  return held.get(conversationId)?.holder;
}

/**
 * The full Nimbus's one write path for a question (the store's saves, the tools' writes): a transaction
 * that first renews the question's lease, so once an erasure or a reset took the lease, whatever was in
 * flight writes nothing (LeaseLost), checked by the database in the same transaction as the write (a
 * fencing token). Outside a lease (a test, a script) it is a plain transaction.
 */
export function fencedTransaction<T>(
  conversationId: string,
  work: (db: PoolConnection) => Promise<T>,
): Promise<T> {
  return withTransaction(async (db) => {
    if (!(await renew(conversationId, db))) throw new LeaseLost();
    return work(db);
  });
}

/** What the agent is given (agent.ts's `write` and `appendLines`): its tools' writes and its trace, fenced. */
export const leaseFence: Required<Pick<AgentOptions, 'write' | 'appendLines'>> = {
  // An acting tool looks before it writes (a ticket already open is returned, not opened again), so a
  // write whose COMMIT answer was lost is run once more: it finds what the first did, and the customer
  // hears that (the ticket's number), not "a technical problem", before the model says anything.
  write: (conversationId) => async (work) => {
    try {
      return await fencedTransaction(conversationId, work);
    } catch (error) {
      if (!(error instanceof CommitUnknown)) throw error;
      return fencedTransaction(conversationId, work);
    }
  },
  // Trace lines are files, which cannot join the transaction: they are written only while this process
  // last knew the lease to be ours and unexpired. What remains is the window between a takeover and
  // this process's next renewal or fenced write (RENEW_MS at most). An erasure deletes the trace file
  // after it took the lease, and the trace never creates a deleted file again (privacy/trace-files.ts), so lines in
  // that window are deleted with the file or not written; after a takeover by another question of the
  // same conversation (this process frozen past the expiry), they may sit beside that question's.
  appendLines: erasureSafeTraces((conversationId) => {
    const lease = held.get(conversationId);
    return !lease || (!lease.lost && Date.now() < lease.until);
  }),
};

/**
 * Runs fn while no other question is answered in this conversation, renewing the lease meanwhile.
 * fn is handed a signal that aborts once the lease is found lost (a renewal or a fenced write saw
 * it taken): the question then stops, as on Ctrl-C, instead of paying for model calls and tools
 * whose results could not be kept. Throws ConversationBusy when the wait runs out,
 * DatabaseCancelled on Ctrl-C while waiting.
 */
export async function withConversationLock<T>(
  conversation: LeaseTarget,
  fn: (leaseLost: AbortSignal) => Promise<T>,
  options: LeaseOptions = {},
): Promise<T> {
  const release = await takeLeases([conversation], options);
  const renewing = setInterval(() => void renew(conversation.id).catch(() => {}), RENEW_MS);
  renewing.unref();
  try {
    return await fn(held.get(conversation.id)!.whenLost.signal);
  } finally {
    clearInterval(renewing);
    await release();
  }
}

/**
 * Takes the leases of every one of these conversations, waiting for questions being answered; returns
 * the function that lets them go. An erasure holds them while it deletes, so no question writes after.
 */
export async function takeLeases(
  targets: LeaseTarget[],
  options: LeaseOptions = {},
): Promise<() => Promise<void>> {
  const holder = randomBytes(16).toString('hex');
  const taken: string[] = [];
  const release = async () => {
    for (const id of taken) held.delete(id);
    if (taken.length === 0) return;
    // If the database does not answer, the leases simply expire.
    await query('DELETE FROM question_leases WHERE conversation_id IN (?) AND holder = ?', [
      taken,
      holder,
    ]).catch(() => {});
  };
  try {
    for (const target of targets) {
      const asked = Date.now(); // the lease runs from the server's clock, a little after this
      await takeOne(target, holder, options);
      taken.push(target.id);
      const until = asked + LEASE_SECONDS * 1000;
      held.set(target.id, { holder, until, lost: false, whenLost: new AbortController() });
    }
  } catch (error) {
    await release();
    throw error;
  }
  return release;
}

async function takeOne(target: LeaseTarget, holder: string, options: LeaseOptions): Promise<void> {
  const waitSeconds = options.waitSeconds ?? CONVERSATION_WAIT_SECONDS;
  const deadline = Date.now() + waitSeconds * 1000;
  let told = false;
  const erasure = options.erasure ?? false;
  while (!(await tryToTake(target, holder, { force: false, erasure }))) {
    if (Date.now() >= deadline) {
      if (options.takeOver && (await tryToTake(target, holder, { force: true, erasure }))) return;
      throw new ConversationBusy(target.id, waitSeconds);
    }
    if (!told) options.onWait?.();
    told = true;
    await pause(Math.min(POLL_MS, deadline - Date.now()), options.signal);
  }
}

/**
 * One try, in one transaction: the row is ours if there was none, if it had expired, or with
 * `force`. Two processes (or two cluster nodes) trying at once collide, and the loser's retry reads
 * the winner's row.
 */
async function tryToTake(target: LeaseTarget, holder: string, how: TakeHow): Promise<boolean> {
  try {
    return await takeOrRead(target, holder, how);
  } catch (error) {
    if (!(error instanceof CommitUnknown)) throw error;
    // Taking it again is harmless: if the first try landed, the row is ours already.
    return takeOrRead(target, holder, how);
  }
}

/** `force`: take it even from a live holder; `erasure`: an erasure's own, which its mark does not stop. */
interface TakeHow {
  force: boolean;
  erasure: boolean;
}

async function takeOrRead(
  target: LeaseTarget,
  holder: string,
  { force, erasure }: TakeHow,
): Promise<boolean> {
  return withTransaction(async (db: PoolConnection) => {
    // Written, not only read: see customer_erasures in question-leases.sql.
    await db.query(
      `INSERT INTO customer_erasures (customer_id, questions) VALUES (?, 1)
       ON DUPLICATE KEY UPDATE questions = questions + 1`,
      [target.customerId],
    );
    const [[mark]] = await db.query<Array<{ erasing: number } & RowDataPacket>>(
      'SELECT COALESCE(erasing_until > NOW(3), 0) AS erasing FROM customer_erasures WHERE customer_id = ?',
      [target.customerId],
    );
    if (mark.erasing && !erasure) return false; // wait, as for another question
    // MySQL applies the assignments in order: the second sees the holder the first chose.
    await db.query<ResultSetHeader>(
      `INSERT INTO question_leases (conversation_id, customer_id, holder, expires_at)
       VALUES (?, ?, ?, NOW(3) + INTERVAL ? SECOND)
       ON DUPLICATE KEY UPDATE holder = IF(? OR expires_at < NOW(3), VALUES(holder), holder),
                               expires_at = IF(holder = VALUES(holder), VALUES(expires_at), expires_at)`,
      [target.id, target.customerId, holder, LEASE_SECONDS, force],
    );
    const [rows] = await db.query<Array<{ holder: string } & RowDataPacket>>(
      'SELECT holder FROM question_leases WHERE conversation_id = ?',
      [target.id],
    );
    return rows[0]?.holder === holder;
  });
}

/** How long an erasure's mark holds a customer's new questions at most, if its process dies. */
const ERASURE_SECONDS = 120;

/**
 * Runs an erasure of this customer (fn) with the customer marked: a question of theirs that starts
 * meanwhile waits until it is over (see customer_erasures). fn takes its leases with `erasure: true`.
 */
export async function withErasureMarked<T>(customerId: number, fn: () => Promise<T>): Promise<T> {
  await query(
    `INSERT INTO customer_erasures (customer_id, erasing_until) VALUES (?, NOW(3) + INTERVAL ? SECOND)
     ON DUPLICATE KEY UPDATE erasing_until = VALUES(erasing_until)`,
    [customerId, ERASURE_SECONDS],
  );
  try {
    return await fn();
  } finally {
    // If the database does not answer, the mark simply expires.
    await query('UPDATE customer_erasures SET erasing_until = NULL WHERE customer_id = ?', [
      customerId,
    ]).catch(() => {});
  }
}

/** Pushes this process's lease on a conversation further out; false if it is no longer ours, or expired. */
export async function renew(conversationId: string, db?: PoolConnection): Promise<boolean> {
  const lease = held.get(conversationId);
  if (!lease) return true; // not answering under a lease (a test, a tool): nothing to check
  const { holder } = lease;
  const asked = Date.now();
  // An expired lease is lost even if nobody took it yet: a process frozen past the expiry cannot tell.
  const sql = `UPDATE question_leases SET expires_at = NOW(3) + INTERVAL ? SECOND
                WHERE conversation_id = ? AND holder = ? AND expires_at >= NOW(3)`;
  const params = [LEASE_SECONDS, conversationId, holder];
  const renewed = await (
    db
      ? db.query<ResultSetHeader>(sql, params).then(([result]) => result.affectedRows > 0)
      : query<ResultSetHeader>(sql, params).then((result) => result.affectedRows > 0)
  ).catch((error: unknown) => {
    // A reset dropped the table with every lease in it: this one is no longer ours either.
    if (tableMissing(error)) return false;
    throw error;
  });
  if (!renewed) {
    lease.lost = true;
    lease.whenLost.abort();
  } else lease.until = asked + LEASE_SECONDS * 1000;
  return !lease.lost;
}

/** MySQL's "no such table", from the driver or as explained by db.ts (the driver's error as its cause). */
function tableMissing(error: unknown): boolean {
  const code = (e: unknown) => (e as { code?: string } | undefined)?.code;
  return code(error) === 'ER_NO_SUCH_TABLE' || code((error as Error).cause) === 'ER_NO_SUCH_TABLE';
}

/** The customer's conversations with a question in flight, new ones (no row yet) included. */
export async function leasedConversations(customerId?: number): Promise<LeaseTarget[]> {
  const rows = await query<Array<{ id: string; customer_id: number }>>(
    `SELECT conversation_id AS id, customer_id FROM question_leases
      WHERE expires_at >= NOW(3) ${customerId === undefined ? '' : 'AND customer_id = ?'}`,
    customerId === undefined ? [] : [customerId],
  );
  return rows.map((row) => ({ id: row.id, customerId: row.customer_id }));
}

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new DatabaseCancelled());
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', stop);
      resolve();
    }, ms);
    const stop = () => {
      clearTimeout(timer);
      reject(new DatabaseCancelled());
    };
    signal?.addEventListener('abort', stop, { once: true });
  });
}
