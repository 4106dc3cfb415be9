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
  // Two erasures of one customer may overlap (forget.ts and her own forget_everything): each counts
  // itself in, so the first to end does not free her questions while the other still deletes. A
  // count whose mark expired belonged to erasures that died: it starts again at this one.
  await query(
    `INSERT INTO customer_erasures (customer_id, erasing_until, erasures)
     VALUES (?, NOW(3) + INTERVAL ? SECOND, 1)
     ON DUPLICATE KEY UPDATE
       erasures = IF(erasing_until IS NULL OR erasing_until < NOW(3), 1, erasures + 1),
       erasing_until = VALUES(erasing_until)`,
    [customerId, ERASURE_MARK_SECONDS],
  );
  const renew = () =>
    query(
      'UPDATE customer_erasures SET erasing_until = NOW(3) + INTERVAL ? SECOND WHERE customer_id = ?',
      [ERASURE_MARK_SECONDS, customerId],
    );
  const renewing = setInterval(() => void renew().catch(() => {}), RENEW_MS);
  renewing.unref();
  try {
    return await fn();
  } finally {
    clearInterval(renewing);
    // Each assignment reads the count as it was (MySQL and MariaDB agree when it is assigned last).
    // If the database does not answer, the mark simply expires.
    await query(
      `UPDATE customer_erasures
       SET erasing_until = IF(erasures <= 1, NULL, erasing_until),
           erasures = IF(erasures <= 1, 0, erasures - 1)
       WHERE customer_id = ?`,
      [customerId],
    ).catch(() => {});
  }
}
