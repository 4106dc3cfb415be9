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
// LEASE_SECONDS at most; and every write of a question checks it is still the question's (the fence,
// store/fence.ts, for its saves and its tools alike), so a question whose lease was taken from it (an
// erasure, or its process frozen past the expiry) writes nothing more.
import { randomBytes } from 'node:crypto';
import type { ResultSetHeader, RowDataPacket } from 'mysql2';
import type { PoolConnection } from 'mysql2/promise';
import { CommitUnknown, DatabaseError, query, withTransaction } from '../../../shared/db.ts';
import { LEASE_SECONDS, renewLease, type Fence } from '../store/fence.ts';

/** How often a question renews its lease: well within LEASE_SECONDS, so a slow model call keeps it. */
const RENEW_MS = 10_000;
/** How long a question waits for another window's question in the same conversation. */
const CONVERSATION_WAIT_SECONDS = 30;
/** How often a waiting question looks again. */
const POLL_MS = 200;

/** What to tell the person whose question waits (onWait), so a pause is never silent. */
export const WAITING_FOR_OTHER_QUESTION = `(Waiting for the question another window is asking in this conversation to finish, up to ${CONVERSATION_WAIT_SECONDS} s…)`;
/** The same, when an erasure of the customer's data is what runs. */
export const WAITING_FOR_ERASURE = `(Waiting for the erasure of your data that is running to finish, up to ${CONVERSATION_WAIT_SECONDS} s…)`;

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

/** An erasure of the customer's data kept running through the whole wait (or keeps being started again). */
export class ErasureRunning extends DatabaseError {
  override name = 'ErasureRunning';
  constructor(seconds: number) {
    super(
      `An erasure of this customer's data has been running for ${seconds} s; ask again when it has finished.`,
    );
  }
}

/** What a question waits for: another question in its conversation, or an erasure of its customer. */
export type WaitingFor = 'question' | 'erasure';

/** A conversation, as the lease knows it: an erasure of its customer must find it even before it has a row. */
export interface LeaseTarget {
  id: string;
  customerId: number;
}

export interface LeaseOptions {
  /** Ctrl-C while waiting: throws DatabaseCancelled, nothing of the question was done. */
  signal?: AbortSignal;
  /** Called once when the conversation is busy, before waiting: say what is being waited for. */
  onWait?: (waitingFor: WaitingFor) => void;
  /** How long to wait (default CONVERSATION_WAIT_SECONDS; 0: do not wait). */
  waitSeconds?: number;
  /** After the wait, take the lease anyway (an erasure must not be stopped by a stuck process). */
  takeOver?: boolean;
  /**
   * For an erasure or a reset (privacy/, setup.ts): its leases say so (their holder starts with
   * ERASURE), so a question that loses one knows its conversation is being erased; and the mark an
   * erasure set on the customer does not make them wait.
   */
  erasure?: boolean;
}

/** A question's lease on its conversation: the fence its writes check, and a signal for when it is lost. */
export interface Lease {
  fence: Fence;
  /** Aborts once a renewal or a fenced write finds the lease taken: the question stops there. */
  lost: AbortSignal;
  /** Lets the lease go (renewals stop); if the database does not answer, the lease simply expires. */
  release(): Promise<void>;
}

/**
 * Takes the lease of a conversation for one question, waiting while another question holds it, and
 * renews it every RENEW_MS until released. Throws ConversationBusy when the wait runs out,
 * DatabaseCancelled on Ctrl-C while waiting.
 */
export async function takeLease(target: LeaseTarget, options: LeaseOptions = {}): Promise<Lease> {
  const holder = randomBytes(16).toString('hex');
  await takeOne(target, holder, options);
  const whenLost = new AbortController();
  const fence: Fence = { conversationId: target.id, holder, lost: () => whenLost.abort() };
  const renewing = setInterval(() => void renewLease(fence).catch(() => {}), RENEW_MS);
  renewing.unref();
  return {
    fence,
    lost: whenLost.signal,
    async release() {
      clearInterval(renewing);
      await letGo([target.id], holder);
    },
  };
}

/** Runs fn while it holds the conversation's lease (prune, tests): see takeLease. */
export async function withLease<T>(
  target: LeaseTarget,
  fn: (lease: Lease) => Promise<T>,
  options: LeaseOptions = {},
): Promise<T> {
  const lease = await takeLease(target, options);
  try {
    return await fn(lease);
  } finally {
    await lease.release();
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
  const holder = options.erasure
    ? `${ERASURE}${randomBytes(12).toString('hex')}`
    : randomBytes(16).toString('hex');
  const taken: string[] = [];
  // Those taken are held while the others are waited for and while the erasure deletes: renewed, or
  // one taken first would expire during a wait as long as LEASE_SECONDS.
  const renewing = setInterval(() => void renewAll(taken, holder).catch(() => {}), RENEW_MS);
  renewing.unref();
  const release = async () => {
    clearInterval(renewing);
    await letGo(taken, holder);
  };
  // One wait for them all: conversations busy one after another do not add up their waits.
  const deadline = Date.now() + (options.waitSeconds ?? CONVERSATION_WAIT_SECONDS) * 1000;
  try {
    for (const target of targets) {
      await takeOne(target, holder, options, deadline);
      taken.push(target.id);
    }
  } catch (error) {
    await release();
    throw error;
  }
  return release;
}

/** Renews these lease rows if they are still this holder's. */
async function renewAll(conversationIds: string[], holder: string): Promise<void> {
  if (conversationIds.length === 0) return;
  await query(
    `UPDATE question_leases SET expires_at = NOW(3) + INTERVAL ? SECOND
      WHERE conversation_id IN (?) AND holder = ?`,
    [LEASE_SECONDS, conversationIds, holder],
  );
}

/** Deletes these lease rows if they are still this holder's; if the database does not answer, they expire. */
async function letGo(conversationIds: string[], holder: string): Promise<void> {
  if (conversationIds.length === 0) return;
  await query('DELETE FROM question_leases WHERE conversation_id IN (?) AND holder = ?', [
    conversationIds,
    holder,
  ]).catch(() => {});
}

async function takeOne(
  target: LeaseTarget,
  holder: string,
  options: LeaseOptions,
  deadline = Date.now() + (options.waitSeconds ?? CONVERSATION_WAIT_SECONDS) * 1000,
): Promise<void> {
  const waitSeconds = options.waitSeconds ?? CONVERSATION_WAIT_SECONDS;
  let told = false;
  const erasure = options.erasure ?? false;
  for (;;) {
    const waitingFor = await tryToTake(target, holder, { force: false, erasure });
    if (!waitingFor) return;
    if (Date.now() >= deadline) {
      if (options.takeOver && !(await tryToTake(target, holder, { force: true, erasure }))) return;
      if (waitingFor === 'erasure') throw new ErasureRunning(waitSeconds);
      throw new ConversationBusy(target.id, waitSeconds);
    }
    if (!told) options.onWait?.(waitingFor);
    told = true;
    await pause(Math.max(0, Math.min(POLL_MS, deadline - Date.now())), options.signal);
  }
}

/**
 * One try, in one transaction: the row is ours if there was none, if it had expired, or with
 * `force`. Two processes (or two cluster nodes) trying at once collide, and the loser's retry reads
 * the winner's row. Undefined when taken; otherwise what holds it.
 */
async function tryToTake(
  target: LeaseTarget,
  holder: string,
  how: TakeHow,
): Promise<WaitingFor | undefined> {
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
): Promise<WaitingFor | undefined> {
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
    if (mark.erasing && !erasure) return 'erasure'; // wait, as for another question (erasure-mark.ts)
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
    return rows[0]?.holder === holder ? undefined : 'question';
  });
}

/** How the holder of an erasure's (or a reset's) lease begins: a question's holder is all hex. */
const ERASURE = 'erasure:';

/**
 * Whether an erasure or a reset holds the conversation's lease now: a question that lost its lease
 * asks, since the erasure may not have deleted the conversation yet.
 */
export async function heldByErasure(conversationId: string): Promise<boolean> {
  const rows = await query<Array<{ holder: string }>>(
    'SELECT holder FROM question_leases WHERE conversation_id = ?',
    [conversationId],
  ).catch(() => []); // a reset dropped the table: the caller looks at the conversation itself
  return rows[0]?.holder.startsWith(ERASURE) ?? false;
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
