// MEMORY_MAX_CHARS has a floor that keeps tool results readable (issue 42, item 10): below 1000 it is refused in one sentence, and at the floor a step's many results each keep at least 200 characters.
import type { ResultSetHeader } from 'mysql2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../../../shared/db.ts';
import type { ScratchDatabase } from '../../../../shared/testing/database.ts';
import { type FakeProvider } from '../../../../shared/testing/fake-provider.ts';
import { runInProcess } from '../../../../shared/testing/run-in-process.ts';
import { MIN_BUDGET_CHARS } from '../../../context.ts';
import { newCustomer } from '../new-customer.ts';
import { closeTestBed, openTestBed } from '../test-bed.ts';

const ASK = 'part-06/going-further/ask.ts';
let fake: FakeProvider;
let db: ScratchDatabase;
let logs: string;

beforeAll(async () => ({ fake, db, logs } = await openTestBed('budget-floor')));
afterAll(() => closeTestBed({ fake, db, logs }));

const env = (maxChars: string) => ({
  ...fake.env('openai'),
  DB_NAME: db.name,
  LOG_DIR: logs,
  MEMORY_MAX_CHARS: maxChars,
});

describe('MEMORY_MAX_CHARS', () => {
  it.each(['1', '999'])(
    '%s is refused in one sentence, before anything is asked (exit 1)',
    async (value) => {
      const before = fake.requests.length;
      const result = await runInProcess(ASK, ['-q', 'Where is my order 1042?'], {
        env: env(value),
      });
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        `MEMORY_MAX_CHARS must be a whole number of at least ${MIN_BUDGET_CHARS} (it is "${value}"). Fix it in .env.\n`,
      );
      expect(result.stdout).toBe('');
      expect(fake.requests.length).toBe(before);
    },
  );

  it('at its floor, 16 results of one step are each sent with at least 200 characters, saying they were cut', async () => {
    // A customer with 16 orders of three items each: each order's status is a result of ~400 characters.
    const customer = await newCustomer('budget-floor');
    const orders: number[] = [];
    for (let i = 0; i < 16; i++) {
      const order = await query<ResultSetHeader>(
        "INSERT INTO orders (customer_id, status, created_at, paid_at) VALUES (?, 'paid', NOW(), NOW())",
        [customer.id],
      );
      orders.push(order.insertId);
      await query(
        'INSERT INTO order_items (order_id, product_id, quantity, unit_price) VALUES (?, 1, 1, 129.00), (?, 2, 2, 39.90), (?, 3, 1, 49.00)',
        [order.insertId, order.insertId, order.insertId],
      );
    }
    fake.reply(
      {
        tool_calls: orders.map((id) => ({ name: 'get_order_status', arguments: { order_id: id } })),
      },
      { text: 'All sixteen are paid.' },
    );
    const before = fake.chats().length;
    const result = await runInProcess(
      ASK,
      ['-q', `--customer=${customer.email}`, 'Where are all my orders?'],
      { env: env(String(MIN_BUDGET_CHARS)) },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe('All sixteen are paid.\n');
    const sent = fake
      .chats()
      [before + 1].body.messages.filter((m: { role: string }) => m.role === 'tool') as Array<{
      content: string;
    }>;
    expect(sent).toHaveLength(16);
    for (const { content } of sent) {
      expect(content.length).toBeGreaterThanOrEqual(200);
      expect(content).toMatch(/^\{"order_id":\d+,"status":"paid",/); // still readable
      expect(content).toMatch(/ …\(cut to fit the request: 200 of \d+ characters\)$/);
    }
  });
});
