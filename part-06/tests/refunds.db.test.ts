// The refund rule in functions.sql: the 14-day window at its edges, for every order status.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../shared/db.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../shared/testing/database.ts';
import { NO_PROVIDER } from '../../shared/testing/fake-provider.ts';
import { ensureDatabase } from '../setup-database.ts';
import { runTool } from '../tools.ts';
import { newConversation } from '../memory.ts';

let db: ScratchDatabase;
beforeAll(async () => {
  db = await createScratchDatabase();
  await ensureDatabase(() => {});
});
afterAll(() => db.drop());

async function rule(status: string, daysAgo: number | null) {
  const [row] = await query<Array<{ days: number | null; eligible: number; reason: string }>>(
    `SELECT days_since_purchase(paid_at) AS days, is_refund_eligible(?, paid_at) AS eligible, refund_reason(?, paid_at) AS reason
       FROM (SELECT IF(? IS NULL, NULL, NOW() - INTERVAL ? DAY) AS paid_at) AS t`,
    [status, status, daysAgo, daysAgo],
  );
  return { days: row.days, eligible: row.eligible === 1, reason: row.reason };
}

describe('the refund window', () => {
  it.each(['paid', 'shipped', 'delivered'])(
    '%s: eligible on days 13 and 14, not on day 15',
    async (status) => {
      expect(await rule(status, 13)).toEqual({
        days: 13,
        eligible: true,
        reason: 'Paid and within the refund window (1 day left).',
      });
      expect(await rule(status, 14)).toEqual({
        days: 14,
        eligible: true,
        reason: 'Paid and within the refund window: today is the last day.',
      });
      expect(await rule(status, 15)).toEqual({
        days: 15,
        eligible: false,
        reason: 'Paid 15 days ago, outside the 14-day refund window.',
      });
    },
  );

  it.each([
    [
      'pending',
      'Not paid yet, so there is nothing to refund; a pending order can be cancelled instead.',
    ],
    ['cancelled', 'The order was cancelled, so there is nothing to refund.'],
    ['refunded', 'The order has already been refunded.'],
  ])('%s: never eligible, whatever the day', async (status, reason) => {
    for (const days of [13, 14, 15])
      expect(await rule(status, days)).toEqual({ days, eligible: false, reason });
  });

  it('counts days from payment, and an unpaid order has none', async () => {
    expect(await rule('paid', 0)).toEqual({
      days: 0,
      eligible: true,
      reason: 'Paid and within the refund window (14 days left).',
    });
    expect(await rule('pending', null)).toMatchObject({ days: null, eligible: false });
  });
});

describe('check_refund_eligibility', () => {
  const maya = { id: 1, name: 'Maya Patel', email: 'maya.patel@example.com' };
  const check = (args: Record<string, unknown>) =>
    runTool(
      { id: 'c', name: 'check_refund_eligibility', arguments: args },
      {
        customer: maya,
        conversation: newConversation(maya.id),
        llm: NO_PROVIDER,
        ticketsOpened: 0,
      },
    );

  it("holds the chapter's facts: 1043 is outside the window, 1042 has 11 days left", async () => {
    expect(await check({ order_id: 1043 })).toEqual({
      order_id: 1043,
      status: 'delivered',
      days_since_purchase: 20,
      eligible: false,
      reason: 'Paid 20 days ago, outside the 14-day refund window.',
    });
    expect(await check({ order_id: 1042 })).toEqual({
      order_id: 1042,
      status: 'shipped',
      days_since_purchase: 3,
      eligible: true,
      reason: 'Paid and within the refund window (11 days left).',
    });
  });

  it('reports unknown orders and bad arguments as results', async () => {
    expect(await check({ order_id: 9999 })).toEqual({ error: 'Order 9999 not found' });
    expect(await check({ order_id: 1030 })).toEqual({ error: 'Order 1030 not found' }); // another customer's
    expect((await check({ order_id: 'soon' })).error).toMatch(
      /^order_id must be a positive whole number/,
    );
  });
});
