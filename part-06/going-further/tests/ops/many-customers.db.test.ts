// Many customers answered at once by one process: more questions in flight than the pool has connections, all answered, none mixed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../../../shared/db.ts';
import type { ScratchDatabase } from '../../../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../../../shared/testing/fake-provider.ts';
import { newConversation } from '../../../memory.ts';
import { Nimbus } from '../../nimbus.ts';
import { ensureFullDatabase } from '../../store/ensure-tables.ts';
import { testSettings } from '../full-session.ts';
import { createProductDatabase } from '../product-database.ts';

/** More than the pool's 8 connections per server: a lease holding a connection would starve them all. */
const CUSTOMERS = 24;
let fake: FakeProvider;
let db: ScratchDatabase;
let release!: () => void;
const allArrived = new Promise<void>((resolve) => (release = resolve));

beforeAll(async () => {
  // Every question's first model call waits until all of them are in flight at once.
  fake = await startFakeProvider({
    fallback: (view) =>
      view.messages.at(-1)?.role === 'tool'
        ? { text: 'Here are your orders.' }
        : { tool_calls: [{ name: 'list_customer_orders', arguments: {} }], gate: allArrived },
  });
  // The product's database, as the load test uses it: every question's writes check its lease.
  db = await createProductDatabase();
  await ensureFullDatabase(() => {});
});
afterAll(async () => {
  await fake.close();
  await db.drop();
});

describe('one process answering many customers at once', () => {
  it(`answers ${CUSTOMERS} questions in ${CUSTOMERS} conversations at once, each saved whole`, async () => {
    // One Nimbus for the process, as the load test makes it; each question asked the one way.
    const nimbus = new Nimbus(testSettings(fake.llm('openai')));
    const asking = Array.from({ length: CUSTOMERS }, async (_, i) => {
      const customer = { id: (i % 8) + 1, name: `Customer ${(i % 8) + 1}`, email: '' };
      const conversation = newConversation(customer.id);
      const question = `Question ${i}: what are my orders?`;
      const asked = await nimbus.ask(customer, conversation, question, { quiet: true });
      return { asked, conversation };
    });
    await fake.waitForChat(CUSTOMERS); // every question holds its lease and waits at the model
    release();
    const done = await Promise.all(asking);
    expect(
      done.map(({ asked }) => [asked.result?.outcome, asked.result?.saveError, asked.lost]),
    ).toEqual(Array(CUSTOMERS).fill(['answered', undefined, undefined]));
    for (const { conversation } of done) {
      const rows = await query<Array<{ role: string }>>(
        'SELECT role FROM messages WHERE conversation_id = ? ORDER BY seq',
        [conversation.id],
      );
      expect(rows.map((row) => row.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    }
  });
});
