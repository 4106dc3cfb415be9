// The mark of an erasure in progress: while it is set, a question of that customer that starts waits (lease.ts).
import { query } from '../../../shared/db.ts';

/**
 * How long a mark holds a customer's new questions unless renewed. An erasure renews it while it
 * runs; one whose process died holds the customer this long at most, not for the whole wait.
 */
export const ERASURE_MARK_SECONDS = 20;
const RENEW_MS = 5_000;

/**
 * Runs an erasure of this customer (fn) with the customer marked: a question of theirs that starts
 * meanwhile waits until it is over (see customer_erasures). fn takes its leases with `erasure: true`.
 */
export async function withErasureMarked<T>(customerId: number, fn: () => Promise<T>): Promise<T> {
  const mark = () =>
    query(
      `INSERT INTO customer_erasures (customer_id, erasing_until) VALUES (?, NOW(3) + INTERVAL ? SECOND)
       ON DUPLICATE KEY UPDATE erasing_until = VALUES(erasing_until)`,
      [customerId, ERASURE_MARK_SECONDS],
    );
  await mark();
  const renewing = setInterval(() => void mark().catch(() => {}), RENEW_MS);
  renewing.unref();
  try {
    return await fn();
  } finally {
    clearInterval(renewing);
    // If the database does not answer, the mark simply expires.
    await query('UPDATE customer_erasures SET erasing_until = NULL WHERE customer_id = ?', [
      customerId,
    ]).catch(() => {});
  }
}
