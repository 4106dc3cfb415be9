// Damaged stored history (older code, hand edits, crashes elsewhere) never reaches a provider, for both providers, and the full viewer shows it in place.
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../../../shared/db.ts';
import {
  createScratchDatabase,
  type ScratchDatabase,
} from '../../../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../../../shared/testing/fake-provider.ts';
import { runScript } from '../../../../shared/testing/run-script.ts';
import { findConversation, newConversation } from '../../../memory.ts';
import { turnsView } from '../../store/message-rows.ts';
import { describeConversation } from '../../../stored-conversations.ts';
import { loadRows } from '../../store/message-rows.ts';
import { ensureFullDatabase } from '../../store/ensure-tables.ts';
import { describeDamage, shownMessages, type Damage } from '../../store/read-history.ts';
import { fullSession } from '../full-session.ts';

const maya = { id: 1, name: 'Maya Patel', email: 'maya.patel@example.com' };
const SHOW = fileURLToPath(new URL('../../show-conversation.ts', import.meta.url));
let fake: FakeProvider;
let db: ScratchDatabase;

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createScratchDatabase();
  await ensureFullDatabase(() => {});
  // Older versions of the schema kept messages as plain text, so invalid JSON could be stored.
  await query('ALTER TABLE messages MODIFY data LONGTEXT NOT NULL');
});
afterAll(async () => {
  await fake.close();
  await db.drop();
});

const call = (id: string) => ({
  role: 'assistant',
  content: '',
  tool_calls: [{ id, name: 'get_order_status', arguments: { order_id: 1042 } }],
});
const result = (id: string) => ({
  role: 'tool',
  tool_call_id: id,
  name: 'get_order_status',
  content: '{"status":"shipped"}',
});

/** Where a question's notices go (Watch.stderr), and the lines said there. */
function notices() {
  const lines: string[] = [];
  const stderr = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  return { stderr, said: () => lines };
}

/** Stores rows exactly as given (role column, raw data text), numbered on; returns their seqs. */
async function storeRaw(conversationId: string, rows: Array<[string, string]>): Promise<number[]> {
  const seqs: number[] = [];
  for (const [role, data] of rows) {
    const [{ next }] = await query<Array<{ next: number }>>(
      'SELECT COALESCE(MAX(seq), 0) + 1 AS next FROM messages WHERE conversation_id = ?',
      [conversationId],
    );
    await query('INSERT INTO messages (conversation_id, seq, role, data) VALUES (?, ?, ?, ?)', [
      conversationId,
      next,
      role,
      data,
    ]);
    seqs.push(next);
  }
  return seqs;
}

const cases: Array<{
  name: string;
  rows: Array<[string, string]>;
  damaged: number[];
  reason: string;
}> = [
  {
    name: 'a tool call without its result',
    rows: [
      ['user', JSON.stringify({ role: 'user', content: 'Where is 1042?' })],
      ['assistant', JSON.stringify(call('c1'))],
      ['assistant', JSON.stringify({ role: 'assistant', content: 'It shipped.' })],
    ],
    damaged: [1],
    reason: 'tool call without its result',
  },
  {
    name: 'a result without its call',
    rows: [
      ['user', JSON.stringify({ role: 'user', content: 'Where is 1042?' })],
      ['tool', JSON.stringify(result('c9'))],
      ['assistant', JSON.stringify({ role: 'assistant', content: 'It shipped.' })],
    ],
    damaged: [1],
    reason: 'tool result without its call',
  },
  {
    name: 'an unknown role',
    rows: [
      ['user', JSON.stringify({ role: 'user', content: 'Where is 1042?' })],
      ['tool', JSON.stringify({ role: 'function', name: 'x', content: '{}' })],
      ['assistant', JSON.stringify({ role: 'assistant', content: 'It shipped.' })],
    ],
    damaged: [1],
    reason: 'unknown role "function"',
  },
  {
    name: 'invalid JSON',
    rows: [
      ['user', JSON.stringify({ role: 'user', content: 'Where is 1042?' })],
      ['assistant', '{"role":"assistant","content":"It sh'],
      ['assistant', JSON.stringify({ role: 'assistant', content: 'It shipped.' })],
    ],
    damaged: [1],
    reason: 'invalid JSON',
  },
];

/**
 * Text MariaDB's JSON check accepts and JavaScript's JSON.parse refuses: an escape JSON does not
 * have, a number with nothing after its point. (MySQL's JSON type refuses them when stored.)
 */
const acceptedByMariaDbOnly = [
  '{"role":"assistant","content":"It is in C:\\xfer"}',
  '{"role":"assistant","content":"It shipped.","n":1.}',
];

/** A conversation holding `rows` as stored, then a healthy turn with a tool call to replay next to them. */
async function damagedConversation(
  rows: Array<[string, string]>,
): Promise<{ id: string; ids: number[] }> {
  const conversation = newConversation(1);
  await query('INSERT INTO conversations (id, customer_id) VALUES (?, 1)', [conversation.id]);
  const ids = await storeRaw(conversation.id, rows);
  await storeRaw(conversation.id, [
    ['user', JSON.stringify({ role: 'user', content: 'And order 1043?' })],
    ['assistant', JSON.stringify(call('c2'))],
    ['tool', JSON.stringify(result('c2'))],
    ['assistant', JSON.stringify({ role: 'assistant', content: 'Also shipped.' })],
  ]);
  return { id: conversation.id, ids };
}

describe.each(['gemini', 'openai'] as const)('%s', (provider) => {
  it.each(cases)(
    'leaves out $name, names it, and the provider accepts the rest',
    async ({ rows, damaged, reason }) => {
      const { id, ids } = await damagedConversation(rows);
      fake.reply({ text: 'Anything else?' });
      const conversation = await findConversation(id, 1);
      const session = fullSession(maya, fake.llm(provider), conversation!);
      const { stderr, said } = notices();
      const asked = await session.ask('Thanks!', { stderr });
      expect(asked.answer).toBe('Anything else?');
      // Named to whoever runs Nimbus, even quiet: which rows, and why.
      const left: Damage[] = damaged.map((i) => ({ seq: ids[i], reason }));
      expect(said()).toEqual([describeDamage(id, left)]);
      const request = fake.chats().at(-1)!;
      expect(request.status).toBe(200);
      expect(request.view!.messages.map((m) => m.role)).toEqual([
        'user',
        'assistant',
        'user',
        'assistant',
        'tool',
        'assistant',
        'user',
      ]);
    },
  );
});

/** What going-further/show-conversation.ts <id> prints, built in-process from the same functions it uses. */
async function shown(id: string): Promise<string> {
  const rows = await loadRows(id);
  return turnsView((await describeConversation(id))!, shownMessages(rows)).join('\n');
}

describe('show-conversation', () => {
  it.each(cases)('marks $name as left out, and why', async ({ rows, damaged, reason }) => {
    const { id, ids } = await damagedConversation(rows);
    const view = await shown(id);
    for (const bad of damaged.map((i) => ids[i]))
      expect(view).toMatch(new RegExp(`#${bad} \\[left out: ${reason.replace(/[()"]/g, '.')}\\]`));
  });

  it('prints the same from the command line, and exits 0', async () => {
    const { id } = await damagedConversation(cases[0].rows);
    const run = await runScript(SHOW, [id], { env: { DB_NAME: db.name } });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trimEnd()).toBe(await shown(id));
  });
});

describe('a row MariaDB accepts but JSON.parse refuses', () => {
  it.each(acceptedByMariaDbOnly)(
    'is left out like any damaged row, and the conversation stays usable: %s',
    async (text) => {
      const conversation = newConversation(1);
      await query('INSERT INTO conversations (id, customer_id) VALUES (?, 1)', [conversation.id]);
      const stored = await storeRaw(conversation.id, [
        ['user', JSON.stringify({ role: 'user', content: 'Where is 1042?' })],
        ['assistant', text],
      ]).catch((error: Error) => error);
      // MySQL refuses such a row when it is written, so it can never be read back; MariaDB stores it.
      if (stored instanceof Error) return expect(stored.message).toMatch(/Invalid JSON text/i);
      fake.reply({ text: 'Anything else?' });
      const session = fullSession(maya, fake.llm('gemini'), { ...conversation, saved: true });
      const { stderr, said } = notices();
      expect((await session.ask('Thanks!', { stderr })).answer).toBe('Anything else?');
      expect(said()).toEqual([
        describeDamage(conversation.id, [{ seq: stored[1], reason: 'invalid JSON' }]),
      ]);
      expect(await shown(conversation.id)).toContain(`#${stored[1]} [left out: invalid JSON]`);
    },
  );
});
