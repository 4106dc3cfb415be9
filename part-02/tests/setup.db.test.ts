// The database is created on a first run, gains what is missing later, and is reset only when asked, saying what goes.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../shared/db.ts';
import {
  createScratchDatabase,
  useScratchDatabase,
  type ScratchDatabase,
} from '../../shared/testing/database.ts';
import { runInProcess } from '../../shared/testing/run-in-process.ts';
import { runScript } from '../../shared/testing/run-script.ts';
import { ensureDatabase, planReset, resetDatabase, TABLES } from '../setup-database.ts';

const SETUP = fileURLToPath(new URL('../setup.ts', import.meta.url));
let db: ScratchDatabase;
const log: string[] = [];

beforeAll(async () => {
  db = await createScratchDatabase();
  await ensureDatabase((line) => log.push(line));
});
afterAll(() => db.drop());

const tables = async () =>
  (
    await query<Array<{ name: string }>>(
      'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE()',
    )
  )
    .map((r) => r.name)
    .sort();
const count = async (table: string) =>
  (await query<Array<{ n: number }>>(`SELECT COUNT(*) AS n FROM ${table}`))[0].n;
const status = async (order: number) =>
  (await query<Array<{ status: string }>>('SELECT status FROM orders WHERE id = ?', [order]))[0]
    .status;

/** Every row of the store, with dates as "days ago" so two runs seconds apart compare equal. */
async function snapshot() {
  const keys = {
    customers: 'id',
    products: 'id',
    orders: 'id',
    order_items: 'order_id, product_id',
  };
  const result: Record<string, unknown[]> = {};
  for (const [table, key] of Object.entries(keys)) {
    const rows = await query<Record<string, unknown>[]>(`SELECT * FROM ${table} ORDER BY ${key}`);
    result[table] = rows.map((row) =>
      Object.fromEntries(
        Object.entries(row).map(([k, v]) => [
          k,
          v instanceof Date ? Math.round((Date.now() - v.getTime()) / 86_400_000) : v,
        ]),
      ),
    );
  }
  return result;
}

describe('a first run', () => {
  it('creates every table and the sample store, and says so', async () => {
    expect(await tables()).toEqual([...TABLES].sort());
    expect(log[0]).toBe(`Database "${db.name}": creating ${TABLES.join(', ')}.`);
    expect(log).toContain(
      'Loaded the sample store into customers, products, orders, order_items (seed.sql).',
    );
  });

  it('changes nothing when everything is there: no message, no row touched', async () => {
    await query("UPDATE orders SET status = 'cancelled' WHERE id = 1044");
    const before = await snapshot();
    const lines: string[] = [];
    await ensureDatabase((line) => lines.push(line));
    expect(lines).toEqual([]);
    expect(await snapshot()).toEqual(before);
  });

  it('creates only what is missing, and keeps the rest', async () => {
    await query('DROP TABLE order_items');
    const lines: string[] = [];
    await ensureDatabase((line) => lines.push(line));
    expect(lines).toEqual([
      `Database "${db.name}": creating order_items.`,
      'Loaded the sample store into order_items (seed.sql).',
    ]);
    expect(await tables()).toEqual([...TABLES].sort());
    expect(await count('orders')).toBe(20);
  });
});

describe('first runs started at the same moment', () => {
  it('take turns and all succeed, creating everything once', async () => {
    const scratch = await createScratchDatabase();
    try {
      const results = await Promise.allSettled(
        Array.from({ length: 5 }, () => ensureDatabase(() => {})),
      );
      expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
      expect(await count('customers')).toBe(8);
    } finally {
      await scratch.drop();
      await useScratchDatabase(db.name);
    }
  });
});

describe('setup.ts resets, and only when told to', () => {
  it('says what it would delete and changes nothing without a terminal to ask on or --yes', async () => {
    // Only the store changed: a customer added and an order cancelled, which a reset would lose.
    await query("INSERT INTO customers (name, email) VALUES ('Added', 'added@example.com')");
    await query("UPDATE orders SET status = 'cancelled' WHERE id = 1042");
    try {
      const n = (value: number, noun: string) => `${value} ${noun}${value === 1 ? '' : 's'}`;
      const customers = await count('customers');
      const refused = await runScript(SETUP, [], { env: { DB_NAME: db.name } });
      expect(refused.code).toBe(2);
      expect(refused.stdout).toBe(
        `Resetting database "${db.name}" deletes ${n(customers, 'customer')}, ${n(await count('products'), 'product')} and ${n(await count('orders'), 'order')} (${n(await count('order_items'), 'order item')}).\n`,
      );
      expect(refused.stderr.split('\n')[0]).toBe(
        'Nothing was changed: to confirm, run npx tsx part-02/setup.ts --yes',
      );
      expect(await count('customers')).toBe(customers);
      expect(await status(1042)).toBe('cancelled');
    } finally {
      await query("DELETE FROM customers WHERE email = 'added@example.com'");
      await query("UPDATE orders SET status = 'shipped' WHERE id = 1042");
    }
  });

  it('with --yes resets the sample store, saying what it dropped', async () => {
    await query("UPDATE orders SET status = 'cancelled' WHERE id = 1042");
    const result = await runInProcess(SETUP, ['--yes'], { env: { DB_NAME: db.name } });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^Resetting database ".*" deletes \d+ customers, /);
    expect(result.stdout).toContain(`Database "${db.name}": dropped ${TABLES.join(', ')}.`);
    expect(await status(1042)).toBe('shipped');
  });

  it('asks nothing when nothing would be lost: no database yet, or only empty tables', async () => {
    const scratch = await createScratchDatabase();
    try {
      await useScratchDatabase(`${scratch.name}_never_created`);
      expect((await planReset()).losses).toEqual([]);
      await useScratchDatabase(scratch.name);
      await ensureDatabase(() => {});
      for (const table of [...TABLES].reverse()) await query(`DELETE FROM ${table}`);
      expect((await planReset()).losses).toEqual([]);
    } finally {
      await scratch.drop();
      await useScratchDatabase(db.name);
    }
  });

  it('names only the tables it dropped: a reset of an empty database says it dropped nothing', async () => {
    const scratch = await createScratchDatabase();
    try {
      const lines: string[] = [];
      await resetDatabase((line) => lines.push(line));
      expect(lines.filter((line) => line.includes('dropped'))).toEqual([]);
      expect(await tables()).toEqual(expect.arrayContaining([...TABLES]));
    } finally {
      await scratch.drop();
      await useScratchDatabase(db.name);
    }
  });

  it('resetDatabase gives the same store every time, removing anything added in between', async () => {
    await resetDatabase(() => {});
    const before = await snapshot();
    await query("INSERT INTO customers (name, email) VALUES ('Extra', 'extra@example.com')");
    await query("UPDATE orders SET status = 'cancelled' WHERE id = 1042");
    await resetDatabase(() => {});
    expect(await snapshot()).toEqual(before);
  });
});

describe('the sample store', () => {
  it("holds the chapters' facts: 1043 paid 20 days ago, 1042 paid 3 days ago, same customer", async () => {
    const rows = await query<
      Array<{ id: number; customer_id: number; status: string; days: number }>
    >(
      'SELECT id, customer_id, status, DATEDIFF(NOW(), paid_at) AS days FROM orders WHERE id IN (1042, 1043) ORDER BY id',
    );
    expect(rows).toEqual([
      { id: 1042, customer_id: 1, status: 'shipped', days: 3 },
      { id: 1043, customer_id: 1, status: 'delivered', days: 20 },
    ]);
  });

  it('has a believable store: every status, about 8 customers, 15 products, 20 orders', async () => {
    const statuses = await query<Array<{ status: string }>>(
      'SELECT DISTINCT status FROM orders ORDER BY status',
    );
    expect(statuses.map((r) => r.status).sort()).toEqual([
      'cancelled',
      'delivered',
      'paid',
      'pending',
      'refunded',
      'shipped',
    ]);
    const [counts] = await query<Array<Record<string, number>>>(
      `SELECT (SELECT COUNT(*) FROM customers) AS customers, (SELECT COUNT(*) FROM products) AS products,
              (SELECT COUNT(*) FROM orders) AS orders,
              (SELECT COUNT(*) FROM orders o WHERE NOT EXISTS (SELECT 1 FROM order_items i WHERE i.order_id = o.id)) AS empty_orders`,
    );
    expect(counts).toEqual({ customers: 8, products: 15, orders: 20, empty_orders: 0 });
  });

  it('keeps unicode and apostrophes in names', async () => {
    const names = await query<Array<{ name: string }>>(
      'SELECT name FROM customers WHERE id IN (2, 3) ORDER BY id',
    );
    expect(names.map((r) => r.name)).toEqual(["Liam O'Brien", 'Sofia García']);
  });
});
