// search_past_conversations reads the searching customer's own word index: no copy per search, nothing of another customer's history, and the tool's contract kept.
import { randomBytes } from 'node:crypto';
import type { ResultSetHeader } from 'mysql2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closePool, query } from '../../../../shared/db.ts';
import {
  createScratchDatabase,
  type ScratchDatabase,
} from '../../../../shared/testing/database.ts';
import { NO_PROVIDER } from '../../../../shared/testing/fake-provider.ts';
import { DEFAULT_BUDGET } from '../../../context.ts';
import { newConversation, type Conversation } from '../../../memory.ts';
import type { Customer } from '../../../session.ts';
import { runTool } from '../../../tools.ts';
import { ensureFullDatabase } from '../../store/ensure-tables.ts';
import { hardenedStore } from '../../store/hardened-store.ts';
import { customerMemoryTools } from '../../notes/notes-tools.ts';
import type { PastConversation } from '../../notes/past-conversations.ts';

let db: ScratchDatabase;
const store = hardenedStore(DEFAULT_BUDGET);
const tools = customerMemoryTools();

beforeAll(async () => {
  db = await createScratchDatabase();
  await ensureFullDatabase(() => {});
});
afterAll(async () => {
  await db.drop();
});

async function newCustomer(): Promise<Customer> {
  const email = `search-${randomBytes(4).toString('hex')}@example.com`;
  const inserted = await query<ResultSetHeader>(
    "INSERT INTO customers (name, email) VALUES ('Test Customer', ?)",
    [email],
  );
  return { id: inserted.insertId, name: 'Test Customer', email };
}

/** A conversation of the customer, saved as the chat saves it: each turn a question, a tool call and its result, an answer. */
async function converse(customer: Customer, turns: Array<[string, string]>): Promise<Conversation> {
  const conversation = newConversation(customer.id);
  for (const [question, answer] of turns)
    await store.saveStep(conversation, [
      { message: { role: 'user', content: question } },
      {
        message: {
          role: 'assistant',
          content: '',
          tool_calls: [{ id: 'c1', name: 'get_order_status', arguments: { order_id: 1042 } }],
        },
      },
      {
        message: {
          role: 'tool',
          tool_call_id: 'c1',
          name: 'get_order_status',
          content: '{"status":"shipped","note":"turquoise"}',
        },
      },
      { message: { role: 'assistant', content: answer } },
    ]);
  return conversation;
}

function search(customer: Customer, words: string, conversation = newConversation(customer.id)) {
  return runTool(
    { id: 's', name: 'search_past_conversations', arguments: { query: words } },
    { customer, conversation, llm: NO_PROVIDER, ticketsOpened: 0 },
    tools,
  );
}

/** The rows of every table: what a search must leave as it found it. */
async function rowCounts(): Promise<Record<string, number>> {
  const tables = await query<Array<{ name: string }>>(
    'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = ? ORDER BY 1',
    [db.name],
  );
  const counts: Record<string, number> = {};
  for (const { name } of tables)
    counts[name] = (
      await query<Array<{ n: number }>>(`SELECT COUNT(*) AS n FROM \`${name}\``)
    )[0].n;
  return counts;
}

/**
 * The rows the database read to answer a search, from its own counters. A fresh pool answers one
 * statement at a time on one connection, so the counters of that connection are the search's.
 */
async function rowsReadBy(work: () => Promise<unknown>): Promise<number> {
  await closePool();
  const read = async () =>
    (
      await query<Array<{ Value: string }>>(
        "SHOW SESSION STATUS WHERE Variable_name IN ('Handler_read_first', 'Handler_read_key', 'Handler_read_next', 'Handler_read_prev', 'Handler_read_rnd', 'Handler_read_rnd_next')",
      )
    ).reduce((sum, row) => sum + Number(row.Value), 0);
  const [before, id] = [await read(), await query('SELECT CONNECTION_ID() AS id')];
  await work();
  const after = await read();
  expect(await query('SELECT CONNECTION_ID() AS id')).toEqual(id);
  return after - before;
}

describe('search_past_conversations', () => {
  it('finds her conversations by their words, at most 3, with 3 lines each in the order said; never the current one, never another customer’s', async () => {
    const maya = await newCustomer();
    const other = await newCustomer();
    const said = (n: number): Array<[string, string]> => [
      [`Hello, my parcel ${n} is late.`, `Parcel ${n} left the depot.`],
      [`Thanks. What about the locker?`, `The parcel locker is at the station.`],
      [`And the parcel after that?`, `That parcel ships tomorrow.`],
      [`One more parcel question.`, `Ask away about the parcel.`],
    ];
    const conversations = [];
    for (let n = 1; n <= 4; n++) conversations.push(await converse(maya, said(n)));
    const best = await converse(maya, [
      ['My parcel locker code changed.', 'Noted for the parcel locker.'],
    ]);
    await converse(other, [['My parcel locker is broken.', 'Sorry about the parcel locker.']]);

    // "code" was said in one conversation only: the rarest word weighs most.
    const found = (await search(maya, 'parcel locker code', conversations[3])) as {
      conversations: PastConversation[];
    };
    expect(found.conversations).toHaveLength(3);
    expect(found.conversations[0]).toEqual({
      conversation_id: best.id,
      date: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
      lines: [
        { said_by: 'customer', text: 'My parcel locker code changed.' },
        { said_by: 'nimbus', text: 'Noted for the parcel locker.' },
      ],
    });
    for (const conversation of found.conversations.slice(1)) {
      expect([conversations[0].id, conversations[1].id, conversations[2].id]).toContain(
        conversation.conversation_id,
      );
      // Its three lines holding most of the words (then the first said), in the order said.
      expect(conversation.lines.map((line) => line.text)).toEqual([
        expect.stringMatching(/^Hello, my parcel \d is late\.$/),
        expect.stringMatching(/^Parcel \d left the depot\.$/),
        'The parcel locker is at the station.',
      ]);
    }
    // Words only in a tool result (the store's data) are not hers to search.
    expect(await search(maya, 'turquoise')).toEqual({
      conversations: [],
      note: 'No earlier conversation of this customer matches.',
    });
  });

  it('copies nothing and writes nothing: every table holds what it held', async () => {
    const maya = await newCustomer();
    await converse(maya, [['Where is my parcel?', 'Your parcel shipped yesterday.']]);
    const before = await rowCounts();
    expect((await search(maya, 'parcel')).conversations).toHaveLength(1);
    expect(await rowCounts()).toEqual(before);
  });

  it("reads the same rows whatever another customer has said: her cost is her own history's", async () => {
    const maya = await newCustomer();
    const other = await newCustomer();
    await converse(maya, [
      ['Is my kettle covered by the warranty?', 'Yes, the warranty covers it.'],
    ]);
    await converse(other, [['Warranty question.', 'Warranty answer.']]);
    await search(other, 'kettle warranty'); // whatever a search of hers prepares, it has done
    const quiet = await rowsReadBy(() => search(maya, 'kettle warranty'));

    const turns = Array.from({ length: 50 }, (_, i): [string, string] => [
      `Kettle ${i}: does the warranty cover it?`,
      `Kettle ${i} is under warranty.`,
    ]);
    for (let i = 0; i < 10; i++) await converse(other, turns);
    await search(other, 'kettle warranty');
    const crowded = await rowsReadBy(() => search(maya, 'kettle warranty'));

    // Not one more row: reading hers through another's thousand messages would add hundreds. (Fewer
    // can happen: the server may pick another plan once the tables have grown, whatever ran before.)
    expect(crowded).toBeLessThanOrEqual(quiet);
  });

  it('indexes the conversations already stored when its table is first created', async () => {
    const maya = await newCustomer();
    const earlier = await converse(maya, [['My bike is periwinkle.', 'A fine colour.']]);
    await query('DROP TABLE message_words');
    const said: string[] = [];
    await ensureFullDatabase((line) => said.push(line));
    expect(said).toContain(`Database "${db.name}": creating message_words.`);
    expect(said.at(-1)).toMatch(
      /^Database "\w+": indexed the words of \d+ stored conversations\.$/,
    );
    expect((await search(maya, 'periwinkle')).conversations).toMatchObject([
      { conversation_id: earlier.id },
    ]);
  });
});
