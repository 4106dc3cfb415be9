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

/** The rows there are now, as the reset's question lists them: "8 customers, 15 products, … and 1 support ticket". */
async function losses(): Promise<string> {
  const n = (value: number, noun: string) => `${value} ${noun}${value === 1 ? '' : 's'}`;
  const items = [
    n(await count('customers'), 'customer'),
    n(await count('products'), 'product'),
    `${n(await count('orders'), 'order')} (${n(await count('order_items'), 'order item')})`,
  ];
  const tickets = await count('tickets');
  if (tickets) items.push(n(tickets, 'support ticket'));
  return `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}

/** A ticket: what a customer asked for, which only an explicit reset may delete. */
async function somethingToLose(): Promise<void> {
  await query(
    "INSERT INTO tickets (customer_id, category, summary) VALUES (1, 'other', 'Keep me')",
  );
}

describe('a first run', () => {
  it('creates every table, the refund rule and the sample store, and says so', async () => {
    expect(await tables()).toEqual([...TABLES].sort());
    expect(log[0]).toBe(`Database "${db.name}": creating ${TABLES.join(', ')}.`);
    expect(log).toContain(`Database "${db.name}": defining the refund rule (functions.sql).`);
    expect(log).toContain(
      'Loaded the sample store into customers, products, orders, order_items (seed.sql).',
    );
  });

  it('changes nothing when everything is there: no message, no row touched', async () => {
    await somethingToLose();
    const before = [await snapshot(), await count('tickets')];
    const lines: string[] = [];
    await ensureDatabase((line) => lines.push(line));
    expect(lines).toEqual([]);
    expect([await snapshot(), await count('tickets')]).toEqual(before);
  });

  it('creates only what is missing, and keeps the rest', async () => {
    await somethingToLose();
    const tickets = await count('tickets');
    await query('DROP TABLE order_items');
    const lines: string[] = [];
    await ensureDatabase((line) => lines.push(line));
    expect(lines).toEqual([
      `Database "${db.name}": creating order_items.`,
      'Loaded the sample store into order_items (seed.sql).',
    ]);
    expect(await tables()).toEqual([...TABLES].sort());
    expect(await count('tickets')).toBe(tickets);
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
    await somethingToLose();
    const tickets = await count('tickets');
    const refused = await runScript(SETUP, [], { env: { DB_NAME: db.name } });
    expect(refused.code).toBe(2);
    expect(refused.stdout).toBe(`Resetting database "${db.name}" deletes ${await losses()}.\n`);
    expect(refused.stdout).toMatch(/ and \d+ support tickets?\.\n$/);
    expect(refused.stderr.split('\n')[0]).toBe(
      'Nothing was changed: to confirm, run npx tsx part-03/setup.ts --yes',
    );
    expect(await count('tickets')).toBe(tickets);
  });

  it('with --yes deletes the tickets and rebuilds the sample store', async () => {
    await somethingToLose();
    const result = await runInProcess(SETUP, ['--yes'], { env: { DB_NAME: db.name } });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(`Database "${db.name}": dropped ${TABLES.join(', ')}.`);
    expect(await count('tickets')).toBe(0);
    expect(await count('orders')).toBe(20);
  });

  it('asks just the same when only the store changed: no ticket, but a customer added', async () => {
    await query('DELETE FROM tickets');
    await query("INSERT INTO customers (name, email) VALUES ('Added', 'added@example.com')");
    try {
      const customers = await count('customers');
      const refused = await runInProcess(SETUP, [], { env: { DB_NAME: db.name } });
      expect(refused.code).toBe(2);
      expect(refused.stdout).toBe(`Resetting database "${db.name}" deletes ${await losses()}.\n`);
      expect(refused.stderr.split('\n')[0]).toBe(
        'Nothing was changed: to confirm, run npx tsx part-03/setup.ts --yes',
      );
      expect(await count('customers')).toBe(customers);
    } finally {
      await query("DELETE FROM customers WHERE email = 'added@example.com'");
    }
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
