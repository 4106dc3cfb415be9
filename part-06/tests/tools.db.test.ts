// get_order_status against a real database: happy path, not found, bad arguments, hostile input.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../shared/db.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../shared/testing/database.ts';
import { NO_PROVIDER } from '../../shared/testing/fake-provider.ts';
import { ensureDatabase } from '../setup-database.ts';
import { runTool, TOOL_DEFINITIONS } from '../tools.ts';
import { newConversation } from '../memory.ts';

let db: ScratchDatabase;
beforeAll(async () => {
  db = await createScratchDatabase();
  await ensureDatabase(() => {});
});
afterAll(() => db.drop());

const maya = { id: 1, name: 'Maya Patel', email: 'maya.patel@example.com' };
const ravi = { id: 8, name: 'Ravi Shah', email: 'ravi.shah@example.com' };
const call = (
  name: string,
  args: Record<string, unknown>,
  argumentsError?: string,
  customer = maya,
) =>
  runTool(
    {
      id: 'call_test',
      name,
      arguments: args,
      ...(argumentsError ? { arguments_error: argumentsError } : {}),
    },
    {
      customer,
      conversation: newConversation(customer.id),
      llm: NO_PROVIDER,
      ticketsOpened: 0,
    },
  );

describe('get_order_status', () => {
  it('is offered to the model with a JSON Schema for its argument', () => {
    expect(TOOL_DEFINITIONS.map((t) => t.name)).toContain('get_order_status');
    const definition = TOOL_DEFINITIONS.find((t) => t.name === 'get_order_status')!;
    expect(definition.parameters.required).toEqual(['order_id']);
  });

  it('returns status, dates, items and total for an order', async () => {
    const result = await call('get_order_status', { order_id: 1042 });
    expect(result).toMatchObject({
      order_id: 1042,
      status: 'shipped',
      delivered_on: null,
      items: [
        { product: '65W USB-C Charger', quantity: 1, unit_price: 39.9 },
        { product: 'Power Bank 20,000 mAh', quantity: 1, unit_price: 45 },
      ],
      shipping: 0,
      total: 84.9,
      currency: 'USD',
    });
    expect(result.paid_on).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });

  it('adds shipping to the total for small orders', async () => {
    expect(await call('get_order_status', { order_id: 1036 }, undefined, ravi)).toMatchObject({
      shipping: 4.99,
      total: 49.99,
    });
  });

  it('reports an unknown order as a result, not an exception', async () => {
    expect(await call('get_order_status', { order_id: 9999 })).toEqual({
      error: 'Order 9999 not found',
    });
  });

  it("answers another customer's order exactly like one that does not exist", async () => {
    expect(await call('get_order_status', { order_id: 1036 })).toEqual({
      error: 'Order 1036 not found',
    });
  });

  it('accepts a number written as a string', async () => {
    expect(await call('get_order_status', { order_id: '1043' })).toMatchObject({
      order_id: 1043,
      status: 'delivered',
    });
  });

  it.each([
    [{ order_id: 'abc' }],
    [{ order_id: -5 }],
    [{ order_id: 10.5 }],
    [{}],
    [{ order_id: '1043; DROP TABLE orders' }],
  ])('refuses bad arguments %j with an error the model can read', async (args) => {
    const result = await call('get_order_status', args);
    expect(result.error).toMatch(
      /^order_id must be a positive whole number, e\.g\. 1043 \(got .*\)\.$/,
    );
  });

  it('stores SQL in a text argument as text, and runs none of it', async () => {
    // The summary reaches the INSERT as it was written: only a placeholder keeps it out of the SQL.
    const summary = "Broken'); DROP TABLE orders; -- \\' OR '1'='1";
    const result = await call('create_support_ticket', { category: 'other', summary });
    const [ticket] = await query<Array<{ summary: string }>>(
      'SELECT summary FROM tickets WHERE id = ?',
      [result.ticket_id],
    );
    expect(ticket.summary).toBe(summary);
    const [row] = await query<Array<{ n: number }>>('SELECT COUNT(*) AS n FROM orders');
    expect(row.n).toBe(20);
  });

  it('reports unknown tools and malformed arguments as results', async () => {
    expect((await call('delete_everything', {})).error).toMatch(
      /^Unknown tool "delete_everything"\. Available: get_order_status/,
    );
    expect(
      await call(
        'get_order_status',
        {},
        'The arguments were not a valid JSON object: {"order_id": 10',
      ),
    ).toEqual({
      error: 'The arguments were not a valid JSON object: {"order_id": 10',
    });
  });
});
