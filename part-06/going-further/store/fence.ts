// The write fence: every write of a question checks, in its own transaction, that the question still holds its lease.
//
// A lease (question/lease.ts) only protects the writes that check it, in the same transaction as the
// write: the fencing-token pattern. Each question holds a random token (`holder`); each of its
// transactions first renews the lease row with that token, and finds nothing to renew once an erasure,
// a reset or another question took the lease (or it expired while this process was frozen). The write
// is then refused (LeaseLost), so nothing lands after the erasure that took the conversation.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { ResultSetHeader } from 'mysql2';
import type { PoolConnection } from 'mysql2/promise';
import { DatabaseError, query } from '../../../shared/db.ts';

/** How long a lease lasts unless renewed: a crashed process blocks its conversation this long at most. */
export const LEASE_SECONDS = 30;

/** A question's right to write in one conversation: its token, and what to do once it is found lost. */
export interface Fence {
  conversationId: string;
  holder: string;
  /** Called when a renewal finds the lease gone: the question stops (question/lease.ts). */
  lost(): void;
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

/**
 * Pushes the lease further out, on `db` inside a transaction (a write's own) or on its own: false if it
 * is no longer the question's, or expired — a process frozen past the expiry cannot tell, so an expired
 * lease is lost even if nobody took it yet. A reset that dropped the table took every lease with it.
 */
export async function renewLease(fence: Fence, db?: PoolConnection): Promise<boolean> {
  const sql = `UPDATE question_leases SET expires_at = NOW(3) + INTERVAL ? SECOND
                WHERE conversation_id = ? AND holder = ? AND expires_at >= NOW(3)`;
  const params = [LEASE_SECONDS, fence.conversationId, fence.holder];
  let renewed: boolean;
  try {
    renewed = db
      ? (await db.query<ResultSetHeader>(sql, params))[0].affectedRows > 0
      : (await query<ResultSetHeader>(sql, params)).affectedRows > 0;
  } catch (error) {
    if (!tableMissing(error)) throw error;
    renewed = false;
  }
  if (!renewed) fence.lost();
  return renewed;
}

/** MySQL's "no such table", from the driver or as explained by db.ts (the driver's error as its cause). */
function tableMissing(error: unknown): boolean {
  const code = (e: unknown) => (e as { code?: string } | undefined)?.code;
  return code(error) === 'ER_NO_SUCH_TABLE' || code((error as Error).cause) === 'ER_NO_SUCH_TABLE';
}

/** What a write runs first, in its transaction: the question's lease renewed, or LeaseLost. */
export async function checkFence(fence: Fence, db: PoolConnection): Promise<void> {
  if (!(await renewLease(fence, db))) throw new LeaseLost();
}

/** The fence of the question whose code is running, found from wherever that code runs (withFence). */
const current = new AsyncLocalStorage<Fence>();

/**
 * Runs a question's work (its agent loop, its tools, its store) behind its fence: every transaction it
 * starts, and every statement that writes, first checks the lease (see the product's database).
 */
export function withFence<T>(fence: Fence, work: () => Promise<T>): Promise<T> {
  return current.run(fence, work);
}

/** The fence of the question running here, if any. */
export function currentFence(): Fence | undefined {
  return current.getStore();
}
