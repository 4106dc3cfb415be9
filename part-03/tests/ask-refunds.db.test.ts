// Part 3 end to end: several tool calls in one reply are all run, and their results go back together.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../shared/db.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../shared/testing/fake-provider.ts';
import { runInProcess } from '../../shared/testing/run-in-process.ts';
import { ensureDatabase } from '../setup-database.ts';

const SCRIPT = fileURLToPath(new URL('../ask.ts', import.meta.url));
let fake: FakeProvider;
let db: ScratchDatabase;

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createScratchDatabase();
  await ensureDatabase(() => {});
});
afterAll(async () => {
  await fake.close();
  await db.drop();
});

describe.each(['gemini', 'openai'] as const)('ask.ts with %s', (provider) => {
  it('checks two orders in one step and answers from both results', async () => {
    fake.reply(
      {
        tool_calls: [
          { name: 'check_refund_eligibility', arguments: { order_id: 1043 } },
          { name: 'check_refund_eligibility', arguments: { order_id: 1042 } },
        ],
      },
      (view) => ({
        text: view.toolResults
          .map((r) => `${(r.result as any).order_id}: ${(r.result as any).reason}`)
          .join('\n'),
      }),
    );
    const result = await runInProcess(SCRIPT, ['Can I get refunds for orders 1043 and 1042?'], {
      env: { ...fake.env(provider), DB_NAME: db.name },
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(
      '1043: Paid 20 days ago, outside the 14-day refund window.\n1042: Paid and within the refund window (11 days left).\n',
    );
    expect(result.stderr.match(/→ check_refund_eligibility/g)).toHaveLength(2);
    const answerRequest = fake.chats().at(-1)!;
    expect(answerRequest.status).toBe(200);
    expect(answerRequest.view?.toolResults.map((r) => r.name)).toEqual([
      'check_refund_eligibility',
      'check_refund_eligibility',
    ]);
  });

  it('opens a ticket when asked and reports its number', async () => {
    await query("UPDATE tickets SET status = 'closed'"); // one per provider
    fake.reply(
      {
        tool_calls: [
          {
            name: 'create_support_ticket',
            arguments: {
              category: 'refund',
              summary: `Refund for 1042 (${provider}).`,
              order_id: 1042,
            },
          },
        ],
      },
      (view) => ({ text: `Done: ticket #${(view.toolResults[0].result as any).ticket_id}.` }),
    );
    const result = await runInProcess(SCRIPT, ['Please open a refund request for order 1042.'], {
      env: { ...fake.env(provider), DB_NAME: db.name },
    });
    expect(result.code).toBe(0);
    const [ticket] = await query<Array<{ id: number }>>(
      'SELECT id FROM tickets WHERE summary = ?',
      [`Refund for 1042 (${provider}).`],
    );
    expect(result.stdout).toBe(`Done: ticket #${ticket.id}.\n`);
  });
});
