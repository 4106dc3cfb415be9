// A step is stored once whatever its COMMIT's fate, even a COMMIT that lands after the app gave up on it and looked, and the chat goes on saving; a ticket whose COMMIT answer was lost is found, not apologised for.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbSettings } from '../../../../shared/config.ts';
import { query, useDatabase } from '../../../../shared/db.ts';
import {
  createScratchDatabase,
  type ScratchDatabase,
} from '../../../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../../../shared/testing/fake-provider.ts';
import {
  startPausableProxy,
  type PausableProxy,
} from '../../../../shared/testing/pausable-proxy.ts';
import type { Conversation } from '../../../memory.ts';
import { fullSession } from '../full-session.ts';
import { ClusterDatabase } from '../../store/cluster-database.ts';
import { ensureFullDatabase } from '../../store/ensure-tables.ts';

const maya = { id: 1, name: 'Maya Patel', email: 'maya.patel@example.com' };
let fake: FakeProvider;
let db: ScratchDatabase;
let proxy: PausableProxy;

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createScratchDatabase();
  await ensureFullDatabase(() => {});
  proxy = await startPausableProxy(dbSettings(process.env).host, dbSettings(process.env).port);
  // From here on this file's statements go through the proxy to the full Nimbus's database (every
  // write of a question fenced), and a COMMIT held there is given up on after 4 s (handed in as an
  // entry script would).
  const settings = dbSettings({
    ...process.env,
    DB_PORT: String(proxy.port),
    DB_TIMEOUT_SECONDS: '4',
  });
  await useDatabase(new ClusterDatabase({ ...settings, servers: [settings] }));
});
afterAll(async () => {
  await useDatabase(dbSettings(process.env));
  await proxy.close();
  await fake.close();
  await db.drop();
});

async function rolesOf(conversation: Conversation) {
  const rows = await query<Array<{ seq: number; role: string }>>(
    'SELECT seq, role FROM messages WHERE conversation_id = ? ORDER BY seq',
    [conversation.id],
  );
  return rows.map((row) => `${row.seq} ${row.role}`);
}

const lookUp = { tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1042 } }] };

describe('a COMMIT that lands late (the app gave up, its KILL was lost, then it committed)', () => {
  it("on a new conversation's first save: found stored, and every later save goes on", async () => {
    const session = fullSession(maya, fake.llm('gemini'));
    fake.reply(lookUp, { text: 'Order 1042 has shipped.' });
    const landed = proxy.commitLate(/INSERT INTO messages/);
    const result = await session.ask('Where is order 1042?');
    await landed; // it did commit, after the app had looked and found nothing
    expect(result.saveError).toBeUndefined();
    expect(session.conversation.saved).toBe(true); // so the chat offers to resume it
    fake.reply({ text: 'You are welcome.' });
    expect((await session.ask('Thanks!')).saveError).toBeUndefined();
    expect(await rolesOf(session.conversation)).toEqual([
      '1 user',
      '2 assistant',
      '3 tool',
      '4 assistant',
      '5 user',
      '6 assistant',
    ]);
  });

  it('on a later step: the ticket step is stored once, and the ticket opened once', async () => {
    const session = fullSession(maya, fake.llm('openai'));
    fake.reply({ text: 'Hello!' });
    await session.ask('Hi');
    const summary = 'The charger stopped working (stored once).';
    fake.reply(
      {
        tool_calls: [
          { name: 'create_support_ticket', arguments: { category: 'warranty', summary } },
        ],
      },
      { text: 'Ticket opened.' },
    );
    const landed = proxy.commitLate(/INSERT INTO messages/);
    const result = await session.ask('Please open a ticket.');
    await landed;
    expect(result.saveError).toBeUndefined();
    expect(await rolesOf(session.conversation)).toEqual([
      '1 user',
      '2 assistant',
      '3 user',
      '4 assistant',
      '5 tool',
      '6 assistant',
    ]);
    expect(await query('SELECT id FROM tickets WHERE summary = ?', [summary])).toHaveLength(1);
  });
});

describe('a lost answer to the ticket insert', () => {
  it('is resolved by looking before the customer hears anything: the model is told the ticket, opened once', async () => {
    const session = fullSession(maya, fake.llm('gemini'));
    const summary = 'The screen arrived cracked (the answer to its COMMIT was lost).';
    fake.reply(
      {
        tool_calls: [
          { name: 'create_support_ticket', arguments: { category: 'damaged_item', summary } },
        ],
      },
      { text: 'Ticket opened.' },
    );
    proxy.loseNextCommitAnswer(/INSERT INTO tickets/);
    const result = await session.ask('My screen arrived cracked: a ticket, please.');
    expect(result.saveError).toBeUndefined();
    const tickets = await query<Array<{ id: number }>>('SELECT id FROM tickets WHERE summary = ?', [
      summary,
    ]);
    expect(tickets).toHaveLength(1);
    // What the model was told, and so the customer: the ticket, with its number, open.
    const [told] = await query<Array<{ data: unknown }>>(
      "SELECT data FROM messages WHERE conversation_id = ? AND role = 'tool'",
      [session.conversation.id],
    );
    const message = typeof told.data === 'string' ? JSON.parse(told.data) : told.data;
    expect(JSON.parse(message.content)).toMatchObject({ ticket_id: tickets[0].id, status: 'open' });
  });
});
