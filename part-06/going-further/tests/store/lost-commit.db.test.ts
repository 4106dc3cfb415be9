// A COMMIT whose answer never came, and connections cut mid-question: what happened is looked up, never guessed; nothing is stored twice or lost, and the question goes on.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { dbSettings } from '../../../../shared/config.ts';
import { query, useDatabase } from '../../../../shared/db.ts';
import {
  createScratchDatabase,
  type ScratchDatabase,
} from '../../../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../../../shared/testing/fake-provider.ts';
import { whereIs } from '../../../../shared/testing/where-is.ts';
import {
  startPausableProxy,
  type PausableProxy,
} from '../../../../shared/testing/pausable-proxy.ts';
import { newConversation, type Conversation } from '../../../memory.ts';
import { Nimbus } from '../../nimbus.ts';
import { ClusterDatabase } from '../../store/cluster-database.ts';
import { ensureFullDatabase } from '../../store/ensure-tables.ts';
import { testSettings } from '../full-session.ts';

const maya = { id: 1, name: 'Maya Patel', email: 'maya.patel@example.com' };
let fake: FakeProvider;
let db: ScratchDatabase;
let proxy: PausableProxy;

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createScratchDatabase();
  await ensureFullDatabase(() => {});
  proxy = await startPausableProxy(dbSettings(process.env).host, dbSettings(process.env).port);
  // From here on this file's statements go through the proxy, to the full Nimbus's database.
  const settings = dbSettings({ ...process.env, DB_PORT: String(proxy.port) });
  await useDatabase(new ClusterDatabase({ ...settings, servers: [settings] }));
});
afterAll(async () => {
  await useDatabase(dbSettings(process.env));
  await proxy.close();
  await fake.close();
  await db.drop();
});
beforeEach(() => {
  fake.requests.length = 0;
});

/** The conversation's rows: role and the id of the tool call each is about, in seq order. */
async function rowsOf(conversation: Conversation) {
  return query<Array<{ seq: number; role: string; input_tokens: number | null }>>(
    'SELECT seq, role, input_tokens FROM messages WHERE conversation_id = ? ORDER BY seq',
    [conversation.id],
  );
}

const lookUp = { tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1042 } }] };

describe.each(['gemini', 'openai'] as const)('a COMMIT whose answer is lost, %s', (provider) => {
  /** One question as every entry asks it (Nimbus.ask: its lease, every write fenced); it must start. */
  const ask = async (conversation: Conversation, question: string) => {
    const nimbus = new Nimbus(testSettings(fake.llm(provider)));
    const asked = await nimbus.ask(maya, conversation, question, { quiet: true });
    expect(asked.lost).toBeUndefined();
    return asked.result!;
  };

  it("on a new conversation's first save: found saved, stored once, and the conversation stays saveable", async () => {
    const conversation = newConversation(maya.id);
    fake.reply(lookUp, { text: 'Order 1042 has shipped.' });
    proxy.loseNextCommitAnswer(/INSERT INTO messages/); // the first save's COMMIT, after the lease's
    const result = await ask(conversation, 'Where is order 1042?');
    expect(result.saveError).toBeUndefined();
    expect(conversation.saved).toBe(true);
    expect((await rowsOf(conversation)).map((row) => row.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
    // A later question in the same conversation saves after them, with no duplicate key.
    fake.reply({ text: 'You are welcome.' });
    expect((await ask(conversation, 'Thanks!')).saveError).toBeUndefined();
    expect((await rowsOf(conversation)).map((row) => row.seq)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('on a later step: the step is not stored twice, and its tokens count once', async () => {
    const conversation = newConversation(maya.id);
    fake.reply({ text: 'Hello!' });
    await ask(conversation, 'Hi');
    fake.reply(lookUp, { text: 'Order 1042 has shipped.' });
    proxy.loseNextCommitAnswer(/INSERT INTO messages/); // the step's save, not the lease's
    const result = await ask(conversation, 'Where is order 1042?');
    expect(result.saveError).toBeUndefined();
    const rows = await rowsOf(conversation);
    expect(rows.map((row) => row.role)).toEqual([
      'user',
      'assistant',
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
    const tokens = rows.reduce((sum, row) => sum + (row.input_tokens ?? 0), 0);
    const requests = fake.chats().length;
    expect(rows.filter((row) => row.input_tokens !== null)).toHaveLength(requests);
    expect(tokens).toBeGreaterThan(0);
  });

  it("on a lease's own COMMIT: the lease is found to be ours, and the question runs", async () => {
    const conversation = newConversation(maya.id);
    fake.reply({ text: 'Hello!' });
    proxy.loseNextCommitAnswer(/INSERT INTO question_leases/); // the lease's COMMIT
    const result = await ask(conversation, 'Hi');
    expect(result.outcome).toBe('answered');
    expect(result.saveError).toBeUndefined();
    expect(
      await query('SELECT * FROM question_leases WHERE conversation_id = ?', [conversation.id]),
    ).toEqual([]);
  });
});

describe('connections cut mid-question', () => {
  it('cost no statement that can be tried again: the history is read again and the question answered', async () => {
    const conversation = newConversation(maya.id);
    const nimbus = new Nimbus(testSettings(fake.llm('openai')));
    fake.reply({ text: 'Hello!' });
    await nimbus.ask(maya, conversation, 'Hi', { quiet: true });
    proxy.cutAll(); // every pooled connection is now dead, and the pool does not know yet
    fake.reply(lookUp, { text: 'Order 1042 has shipped.' });
    const asked = await nimbus.ask(maya, conversation, 'Where is order 1042?', { quiet: true });
    expect(asked.lost).toBeUndefined();
    const result = asked.result!;
    expect(result.outcome).toBe('answered');
    expect(result.saveError).toBeUndefined();
    expect((await rowsOf(conversation)).map((row) => row.role)).toEqual([
      'user',
      'assistant',
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
  });
});

describe("forget_notes whose DELETE's COMMIT answer is lost", () => {
  it('says the notes were forgotten and deletes their trace lines: found gone, not "0 forgotten"', async () => {
    const logs = mkdtempSync(path.join(os.tmpdir(), 'nimbus-lost-commit-'));
    try {
      const nimbus = new Nimbus(testSettings(fake.llm('gemini'), { logDir: logs }));
      const secret = `gate${randomBytes(3).toString('hex')}`;
      const told = newConversation(maya.id);
      fake.reply(
        {
          tool_calls: [
            { name: 'remember_note', arguments: { text: `My gate code is ${secret}.` } },
          ],
        },
        { text: 'Noted.' },
      );
      await nimbus.ask(maya, told, `Remember my gate code ${secret}.`, { quiet: true });
      expect(await whereIs(db.name, logs, secret)).toContain(`file conversations/${told.id}.jsonl`);

      // The DELETE commits, its answer never comes: the transaction runs again and finds no note left.
      proxy.loseNextCommitAnswer(/DELETE FROM customer_notes/);
      let said: unknown;
      fake.reply({ tool_calls: [{ name: 'forget_notes', arguments: { all: true } }] }, (view) => {
        said = view.toolResults[0].result;
        return { text: 'Forgotten.' };
      });
      const asked = await nimbus.ask(maya, newConversation(maya.id), 'Forget my notes.', {
        quiet: true,
      });
      expect(asked.lost).toBeUndefined();
      expect(said).toMatchObject({ forgotten: 1 });
      // Gone everywhere but the conversation it was said in, which forget_notes keeps.
      expect(await whereIs(db.name, logs, secret)).toEqual([
        'table message_words',
        'table messages',
      ]);
    } finally {
      rmSync(logs, { recursive: true, force: true });
    }
  });
});
