// create_support_ticket and list_customer_orders against a real database.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../shared/db.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../shared/testing/database.ts';
import { setupDatabase } from '../setup-database.ts';
import { runTool } from '../tools.ts';

let db: ScratchDatabase;
beforeAll(async () => {
  db = await createScratchDatabase();
  await setupDatabase(() => {});
});
afterAll(() => db.drop());

const run = (name: string, args: Record<string, unknown>) => runTool({ id: 'c', name, arguments: args });

describe('create_support_ticket', () => {
  it('creates an open ticket numbered from 5001 and links the order', async () => {
    const first = await run('create_support_ticket', { category: 'refund', summary: 'Refund for order 1042.', order_id: 1042 });
    expect(first).toEqual({ created: true, ticket_id: 5001, status: 'open' });
    const second = await run('create_support_ticket', { category: 'other', summary: 'Question about gift wrapping.' });
    expect(second).toEqual({ created: true, ticket_id: 5002, status: 'open' });
    const rows = await query<Array<Record<string, unknown>>>('SELECT id, category, summary, order_id, status FROM tickets ORDER BY id');
    expect(rows).toEqual([
      { id: 5001, category: 'refund', summary: 'Refund for order 1042.', order_id: 1042, status: 'open' },
      { id: 5002, category: 'other', summary: 'Question about gift wrapping.', order_id: null, status: 'open' },
    ]);
  });

  it('stores quotes, emoji, non-Latin text and SQL fragments exactly as written', async () => {
    const summary = `Customer said: "it's broken" 😡🎧 — 返金をお願いします'); DROP TABLE tickets; -- \\ 100% done`;
    const result = await run('create_support_ticket', { category: 'damaged_item', summary, order_id: 1043 });
    const [row] = await query<Array<{ summary: string }>>('SELECT summary FROM tickets WHERE id = ?', [result.ticket_id]);
    expect(row.summary).toBe(summary);
  });

  it.each([
    [{ category: 'complaint', summary: 'x' }, /^category must be one of refund, return/],
    [{ category: 'refund', summary: '   ' }, /^summary must be a non-empty text/],
    [{ category: 'refund', summary: 'x'.repeat(2001) }, /^summary must be at most 2000 characters/],
    [{ category: 'refund', summary: 'x', order_id: 0 }, /^order_id must be a positive whole number/],
    [{ category: 'refund', summary: 'x', order_id: 9999 }, /^Order 9999 not found$/],
  ])('refuses %j with an error the model can read, creating nothing', async (args, message) => {
    const [before] = await query<Array<{ n: number }>>('SELECT COUNT(*) AS n FROM tickets');
    expect((await run('create_support_ticket', args)).error).toMatch(message);
    const [after] = await query<Array<{ n: number }>>('SELECT COUNT(*) AS n FROM tickets');
    expect(after.n).toBe(before.n);
  });
});

describe('list_customer_orders', () => {
  it("lists a customer's orders newest first, whatever the email's case", async () => {
    expect(await run('list_customer_orders', { email: ' Maya.Patel@Example.com ' })).toEqual({
      customer: 'Maya Patel',
      orders: [
        { order_id: 1042, status: 'shipped', placed_on: expect.any(String), total: 84.9 },
        { order_id: 1043, status: 'delivered', placed_on: expect.any(String), total: 129 },
      ],
    });
  });

  it('reports an unknown customer and a malformed email as results', async () => {
    expect(await run('list_customer_orders', { email: 'nobody@example.com' })).toEqual({ error: 'No customer with the email nobody@example.com' });
    expect((await run('list_customer_orders', { email: "x' OR '1'='1" })).error).toMatch(/^email must be an email address/);
  });
});
