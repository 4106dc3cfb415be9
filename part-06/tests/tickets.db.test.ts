// create_support_ticket and list_customer_orders against a real database, always for the signed-in customer.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { query } from '../../shared/db.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../shared/testing/database.ts';
import { NO_PROVIDER } from '../../shared/testing/fake-provider.ts';
import { ensureDatabase } from '../setup-database.ts';
import { MAX_TICKETS_PER_TURN, runTool, TOOL_DEFINITIONS, type ToolContext } from '../tools.ts';
import { newConversation } from '../memory.ts';

const maya = { id: 1, name: 'Maya Patel', email: 'maya.patel@example.com' };
const sofia = { id: 3, name: 'Sofia García', email: 'sofia.garcia@example.com' };
const conversation = newConversation(maya.id);
let db: ScratchDatabase;
let context: ToolContext;
beforeAll(async () => {
  db = await createScratchDatabase();
  await ensureDatabase(() => {});
});
beforeEach(async () => {
  // Every test starts with no tickets, numbered from 5001 again: none depends on another's.
  await query('DELETE FROM tickets');
  await query('ALTER TABLE tickets AUTO_INCREMENT = 5001');
  context = {
    customer: maya,
    conversation,
    llm: NO_PROVIDER,
    ticketsOpened: 0,
  }; // a new question
});
afterAll(() => db.drop());

const run = (name: string, args: Record<string, unknown>) =>
  runTool({ id: 'c', name, arguments: args }, context);
const openTickets = async () =>
  (await query<Array<{ n: number }>>("SELECT COUNT(*) AS n FROM tickets WHERE status = 'open'"))[0]
    .n;

describe('create_support_ticket', () => {
  it('opens a ticket for the signed-in customer, numbered from 5001, and links the order', async () => {
    const first = await run('create_support_ticket', {
      category: 'refund',
      summary: 'Refund for order 1042.',
      order_id: 1042,
    });
    expect(first).toEqual({ created: true, ticket_id: 5001, status: 'open' });
    const second = await run('create_support_ticket', {
      category: 'other',
      summary: 'Question about gift wrapping.',
    });
    expect(second).toEqual({ created: true, ticket_id: 5002, status: 'open' });
    const rows = await query<Array<Record<string, unknown>>>(
      'SELECT id, customer_id, category, summary, order_id, status FROM tickets ORDER BY id',
    );
    expect(rows).toEqual([
      {
        id: 5001,
        customer_id: 1,
        category: 'refund',
        summary: 'Refund for order 1042.',
        order_id: 1042,
        status: 'open',
      },
      {
        id: 5002,
        customer_id: 1,
        category: 'other',
        summary: 'Question about gift wrapping.',
        order_id: null,
        status: 'open',
      },
    ]);
  });

  it('returns the open ticket instead of opening the same one twice, and opens a new one once it is closed', async () => {
    await run('create_support_ticket', {
      category: 'refund',
      summary: 'Refund for order 1042.',
      order_id: 1042,
    });
    const again = await run('create_support_ticket', {
      category: 'refund',
      summary: 'Refund for 1042, asked again.',
      order_id: 1042,
    });
    expect(again).toEqual({ created: false, already_open: true, ticket_id: 5001, status: 'open' });
    await query("UPDATE tickets SET status = 'closed' WHERE id = 5001");
    expect(
      await run('create_support_ticket', {
        category: 'refund',
        summary: 'A new refund request.',
        order_id: 1042,
      }),
    ).toMatchObject({ created: true });
  });

  it('opens one ticket when the same request arrives from several processes at once', async () => {
    const before = await openTickets();
    const results = await Promise.all(
      Array.from({ length: 6 }, () =>
        runTool(
          {
            id: 'c',
            name: 'create_support_ticket',
            arguments: { category: 'warranty', summary: 'Broken.', order_id: 1043 },
          },
          {
            customer: maya,
            conversation,
            llm: NO_PROVIDER,
            ticketsOpened: 0,
          },
        ),
      ),
    );
    expect(results.filter((r) => r.created === true)).toHaveLength(1);
    expect(new Set(results.map((r) => r.ticket_id)).size).toBe(1);
    expect(await openTickets()).toBe(before + 1);
  });

  it(`opens at most ${MAX_TICKETS_PER_TURN} new tickets for one question`, async () => {
    const before = await openTickets();
    const categories = ['return', 'exchange', 'shipping', 'billing', 'account'];
    const results = [];
    for (const category of categories)
      results.push(await run('create_support_ticket', { category, summary: `About ${category}.` }));
    expect(results.filter((r) => r.created)).toHaveLength(MAX_TICKETS_PER_TURN);
    expect(results.at(-1)!.error).toMatch(
      /^No more than 2 new tickets can be opened for one question/,
    );
    expect(await openTickets()).toBe(before + MAX_TICKETS_PER_TURN);
  });

  it("treats another customer's order exactly like one that does not exist", async () => {
    expect(
      await run('create_support_ticket', {
        category: 'refund',
        summary: 'Refund please.',
        order_id: 1031,
      }),
    ).toEqual({ error: 'Order 1031 not found' });
    expect(
      await run('create_support_ticket', {
        category: 'refund',
        summary: 'Refund please.',
        order_id: 9999,
      }),
    ).toEqual({ error: 'Order 9999 not found' });
  });

  it('takes no customer from the model: there is no argument for one', () => {
    const definition = TOOL_DEFINITIONS.find((t) => t.name === 'create_support_ticket')!;
    expect(Object.keys(definition.parameters.properties).sort()).toEqual([
      'category',
      'order_id',
      'summary',
    ]);
  });

  it('stores quotes, emoji, non-Latin text and SQL fragments exactly as written', async () => {
    const summary = `Customer said: "it's broken" 😡🎧 — 返金をお願いします'); DROP TABLE tickets; -- \\ 100% done`;
    const result = await run('create_support_ticket', {
      category: 'damaged_item',
      summary,
      order_id: 1043,
    });
    const [row] = await query<Array<{ summary: string }>>(
      'SELECT summary FROM tickets WHERE id = ?',
      [result.ticket_id],
    );
    expect(row.summary).toBe(summary);
  });

  it.each([
    [{ category: 'complaint', summary: 'x' }, /^category must be one of refund, return/],
    [{ category: 'refund', summary: '   ' }, /^summary must be a non-empty text/],
    [{ category: 'refund', summary: 'x'.repeat(2001) }, /^summary must be at most 2000 characters/],
    [
      { category: 'refund', summary: 'x', order_id: 0 },
      /^order_id must be a positive whole number/,
    ],
    [{ category: 'refund', summary: 'x', order_id: 9999 }, /^Order 9999 not found$/],
  ])('refuses %j with an error the model can read, creating nothing', async (args, message) => {
    const [before] = await query<Array<{ n: number }>>('SELECT COUNT(*) AS n FROM tickets');
    expect((await run('create_support_ticket', args)).error).toMatch(message);
    const [after] = await query<Array<{ n: number }>>('SELECT COUNT(*) AS n FROM tickets');
    expect(after.n).toBe(before.n);
  });
});

describe('list_customer_orders', () => {
  it("lists the signed-in customer's orders, newest first, with exact totals", async () => {
    expect(await run('list_customer_orders', {})).toEqual({
      customer: 'Maya Patel',
      orders: [
        { order_id: 1042, status: 'shipped', placed_on: expect.any(String), total: 84.9 },
        { order_id: 1043, status: 'delivered', placed_on: expect.any(String), total: 129 },
      ],
    });
  });

  it("ignores an email the model puts in (it has no email argument), so it cannot list someone else's orders", async () => {
    expect(
      TOOL_DEFINITIONS.find((t) => t.name === 'list_customer_orders')!.parameters.properties,
    ).toEqual({});
    const result = await run('list_customer_orders', { email: 'SOFIA.GARCÍA@EXAMPLE.COM' });
    expect(result.customer).toBe('Maya Patel');
    context = {
      customer: sofia,
      conversation: newConversation(sofia.id),
      llm: NO_PROVIDER,
      ticketsOpened: 0,
    };
    expect(
      ((await run('list_customer_orders', {})).orders as Array<{ order_id: number }>).map(
        (o) => o.order_id,
      ),
    ).toEqual([1047, 1038, 1031]);
  });
});
