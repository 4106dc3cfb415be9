// setup builds the same store every time, and the chapters' facts hold on it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../shared/db.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../shared/testing/database.ts';
import { setupDatabase, SQL_FILES } from '../setup-database.ts';

let db: ScratchDatabase;
const log: string[] = [];

beforeAll(async () => {
  db = await createScratchDatabase();
  await setupDatabase((line) => log.push(line));
});
afterAll(() => db.drop());

/** Every row of the store, with dates as "days ago" so two runs seconds apart compare equal. */
async function snapshot() {
  const tables = { customers: 'id', products: 'id', orders: 'id', order_items: 'order_id, product_id' };
  const result: Record<string, unknown[]> = {};
  for (const [table, key] of Object.entries(tables)) {
    const rows = await query<Record<string, unknown>[]>(`SELECT * FROM ${table} ORDER BY ${key}`);
    result[table] = rows.map((row) =>
      Object.fromEntries(
        Object.entries(row).map(([k, v]) => [k, v instanceof Date ? Math.round((Date.now() - v.getTime()) / 86_400_000) : v]),
      ),
    );
  }
  return result;
}

describe('setup', () => {
  it('says what it did', () => {
    expect(log.slice(0, 1 + SQL_FILES.length)).toEqual([
      `Database "${db.name}" is ready.`,
      ...SQL_FILES.map((file) => expect.stringMatching(new RegExp(`^Applied ${file} \\(\\d+ statements\\)\\.$`))),
    ]);
  });

  it('gives the same state when run twice, removing anything added in between', async () => {
    const before = await snapshot();
    await query("INSERT INTO customers (name, email) VALUES ('Extra', 'extra@example.com')");
    await query("UPDATE orders SET status = 'cancelled' WHERE id = 1042");
    await setupDatabase(() => {});
    expect(await snapshot()).toEqual(before);
  });

  it('holds the chapters\' facts: 1043 paid 20 days ago, 1042 paid 3 days ago, same customer', async () => {
    const rows = await query<Array<{ id: number; customer_id: number; status: string; days: number }>>(
      'SELECT id, customer_id, status, DATEDIFF(NOW(), paid_at) AS days FROM orders WHERE id IN (1042, 1043) ORDER BY id',
    );
    expect(rows).toEqual([
      { id: 1042, customer_id: rows[1].customer_id, status: 'shipped', days: 3 },
      { id: 1043, customer_id: rows[0].customer_id, status: 'delivered', days: 20 },
    ]);
  });

  it('has a believable store: every status, about 8 customers, 15 products, 20 orders', async () => {
    const statuses = await query<Array<{ status: string }>>('SELECT DISTINCT status FROM orders ORDER BY status');
    expect(statuses.map((r) => r.status).sort()).toEqual(['cancelled', 'delivered', 'paid', 'pending', 'refunded', 'shipped']);
    const [counts] = await query<Array<Record<string, number>>>(
      `SELECT (SELECT COUNT(*) FROM customers) AS customers, (SELECT COUNT(*) FROM products) AS products,
              (SELECT COUNT(*) FROM orders) AS orders,
              (SELECT COUNT(*) FROM orders o WHERE NOT EXISTS (SELECT 1 FROM order_items i WHERE i.order_id = o.id)) AS empty_orders`,
    );
    expect(counts).toEqual({ customers: 8, products: 15, orders: 20, empty_orders: 0 });
  });

  it('keeps unicode and apostrophes in names', async () => {
    const names = await query<Array<{ name: string }>>('SELECT name FROM customers WHERE id IN (2, 3) ORDER BY id');
    expect(names.map((r) => r.name)).toEqual(["Liam O'Brien", 'Sofia García']);
  });
});
