// Waits for a condition that another process will make true (a query blocked on a lock, say), checking often.
import { setTimeout as sleep } from 'node:timers/promises';

/** Polls `check` until it returns true; fails with `what` if that never happens within `limitMs`. */
export async function waitUntil(
  what: string,
  check: () => boolean | Promise<boolean>,
  limitMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting until ${what}`);
    await sleep(25);
  }
}
