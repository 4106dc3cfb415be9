// Many customers answered at once by one process: more questions in flight than the pool has connections, all answered, none mixed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../../../shared/db.ts';
import {
  createScratchDatabase,
  type ScratchDatabase,
} from '../../../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../../../shared/testing/fake-provider.ts';
import { runAgent } from '../../../agent.ts';
import { DEFAULT_BUDGET } from '../../../context.ts';
import { newConversation } from '../../../memory.ts';
import { withConversationLock } from '../../question/lease.ts';
import { ensureFullDatabase } from '../../store/ensure-tables.ts';
import { hardenedStore } from '../../store/hardened-store.ts';

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
  db = await createScratchDatabase();
  await ensureFullDatabase(() => {});
});
afterAll(async () => {
  await fake.close();
  await db.drop();
});

describe('one process answering many customers at once', () => {
  it(`answers ${CUSTOMERS} questions in ${CUSTOMERS} conversations at once, each saved whole`, async () => {
    const store = hardenedStore(DEFAULT_BUDGET);
    const options = { llm: fake.llm('openai'), store, logDir: process.env.LOG_DIR!, quiet: true };
    const asking = Array.from({ length: CUSTOMERS }, async (_, i) => {
      const customer = { id: (i % 8) + 1, name: `Customer ${(i % 8) + 1}`, email: '' };
      const conversation = newConversation(customer.id);
      const question = `Question ${i}: what are my orders?`;
      const result = await withConversationLock(conversation, () =>
        runAgent(question, customer, conversation, options),
      );
      return { result, conversation };
    });
    await fake.waitForChat(CUSTOMERS); // every question holds its lease and waits at the model
    release();
    const done = await Promise.all(asking);
    expect(done.map(({ result }) => [result.outcome, result.saveError])).toEqual(
      Array(CUSTOMERS).fill(['answered', undefined]),
    );
    for (const { conversation } of done) {
      const rows = await query<Array<{ role: string }>>(
        'SELECT role FROM messages WHERE conversation_id = ? ORDER BY seq',
        [conversation.id],
      );
      expect(rows.map((row) => row.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    }
  });
});
