// Forget.ts and prune.ts delete a conversation everywhere: no table row and no log line keeps its id or words.
import { existsSync, mkdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../../../shared/db.ts';
import type { ScratchDatabase } from '../../../../shared/testing/database.ts';
import { type FakeProvider } from '../../../../shared/testing/fake-provider.ts';
import { runInProcess } from '../../../../shared/testing/run-in-process.ts';
import { runScript } from '../../../../shared/testing/run-script.ts';
import { whereIs as findText } from '../../../../shared/testing/where-is.ts';
import { saveNote } from '../../notes/notes-queries.ts';
import { fullSession } from '../full-session.ts';
import { closeTestBed, openTestBed } from '../test-bed.ts';

const maya = { id: 1, name: 'Maya Patel', email: 'maya.patel@example.com' };

const FORGET = fileURLToPath(new URL('../../forget.ts', import.meta.url));
const PRUNE = fileURLToPath(new URL('../../prune.ts', import.meta.url));
let fake: FakeProvider;
let db: ScratchDatabase;
let logs: string;
let env: Record<string, string>;

beforeAll(async () => {
  ({ fake, db, logs } = await openTestBed('logs'));
  env = { ...fake.env('gemini'), DB_NAME: db.name, LOG_DIR: logs };
});
afterAll(() => closeTestBed({ fake, db, logs }));

/** A conversation whose messages and trace contain `phrase`, with a tool call (answered in this process). Returns its id. */
async function chatAbout(phrase: string): Promise<string> {
  fake.reply(
    { tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1042 } }] },
    (view) => ({ text: `About "${view.lastUserText}": it shipped.` }),
  );
  const session = fullSession(maya, fake.llm('gemini'), undefined, { logDir: logs });
  await session.ask(`My secret word is ${phrase}. Where is order 1042?`);
  return session.conversation.id;
}

/** Every place the text could hide in this file's database and log folder. */
const whereIs = (text: string) => findText(db.name, logs, text);

describe('forget.ts', () => {
  it('deletes the conversation, its messages and its traces, and nothing else', async () => {
    const gone = await chatAbout('periwinkle-7731');
    const kept = await chatAbout('marigold-2208');
    expect(await whereIs('periwinkle-7731')).toEqual([
      `file conversations/${gone}.jsonl`,
      'table messages',
    ]);
    // The id is in its rows, the words index search_past_conversations reads, and the trace file.
    expect((await whereIs(gone)).sort()).toEqual(
      [
        'table conversations',
        'table message_words',
        'table messages',
        `file conversations/${gone}.jsonl`,
      ].sort(),
    );

    const result = await runScript(FORGET, [gone], { env });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(
      // The logs are outside the repository (a temporary folder): their path is printed in full.
      `Deleted conversation ${gone}: 4 messages and its trace file ${path.join(logs, 'conversations', `${gone}.jsonl`)}.\n`,
    );
    expect(await whereIs('periwinkle-7731')).toEqual([]);
    expect(await whereIs(gone)).toEqual([]);
    expect(await whereIs(kept)).toHaveLength(4); // the other conversation is untouched
    expect(await whereIs('marigold-2208')).toHaveLength(2);

    const again = await runInProcess(FORGET, [gone], { env });
    expect(again.stdout).toBe(`Conversation ${gone} was not found; nothing to delete.\n`);
  });

  it('refuses a malformed id with exit code 2', async () => {
    const result = await runInProcess(FORGET, ['not-an-id'], { env });
    expect(result.code).toBe(2);
    expect(result.stderr.split('\n')[0]).toBe(
      'forget needs a conversation id: 32 lowercase hex characters (got "not-an-id").',
    );
  });
});

describe('prune.ts', () => {
  it('deletes conversations unused for N days with their traces, and old traces of no conversation', async () => {
    const old = await chatAbout('tangerine-5150');
    const recent = await chatAbout('cobalt-9090');
    // Customer notes have a clock of their own: one past its expiry, one not recalled for 40 days.
    const expired = await saveNote(maya.id, recent, 'Away until last week.', null);
    const unused = await saveNote(maya.id, recent, 'Nobody asked about this lately.', null);
    const kept = await saveNote(maya.id, old, 'Still in use.', null);
    const [expiredId, unusedId, keptId] = [expired, unused, kept].map((s) =>
      s.outcome === 'saved' ? s.id : 0,
    );
    await query(
      'UPDATE customer_notes SET expires_on = CURRENT_DATE - INTERVAL 1 DAY WHERE id = ?',
      [expiredId],
    );
    await query('UPDATE customer_notes SET created_at = NOW(3) - INTERVAL 40 DAY WHERE id = ?', [
      unusedId,
    ]);
    await query('UPDATE conversations SET updated_at = NOW(3) - INTERVAL 40 DAY WHERE id = ?', [
      old,
    ]);
    // Traces that belong to no conversation: one from Part 4/5's ask-agent, one left by a deleted conversation.
    const monthAgo = new Date(Date.now() - 40 * 86_400_000);
    mkdirSync(path.join(logs, 'traces'), { recursive: true });
    const oldQuestion = path.join(logs, 'traces', '2026-10-01T10-00-00-000Z_abc.jsonl');
    const newQuestion = path.join(logs, 'traces', '2026-11-30T10-00-00-000Z_def.jsonl');
    const orphan = path.join(logs, 'conversations', `${'f'.repeat(32)}.jsonl`);
    for (const file of [oldQuestion, newQuestion, orphan])
      writeFileSync(file, '{"type":"start","question":"ultramarine-1234"}\n');
    utimesSync(oldQuestion, monthAgo, monthAgo);
    utimesSync(orphan, monthAgo, monthAgo);

    const dry = await runInProcess(PRUNE, ['--days=30', '--dry-run'], { env });
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain(`Would delete conversation ${old} (4 messages) and its traces`);
    expect(dry.stdout).toContain(
      'Would delete 1 conversation and 2 other trace files older than 30 days.',
    );
    expect(dry.stdout).toContain(
      `Would delete note ${expiredId} of maya.patel@example.com (expired)`,
    );
    expect(dry.stdout).toContain(
      `Would delete note ${unusedId} of maya.patel@example.com (not recalled for 30 days)`,
    );
    expect(dry.stdout).toContain(
      'Would delete 2 customer notes, expired or not recalled for 30 days.',
    );
    expect(await whereIs('tangerine-5150')).toHaveLength(2);
    expect(existsSync(oldQuestion)).toBe(true);

    const real = await runInProcess(PRUNE, ['--days=30'], { env });
    expect(real.code).toBe(0);
    expect(real.stdout).toContain(`Deleted conversation ${old} (4 messages) and its traces`);
    expect(real.stdout).toContain(
      'Deleted 1 conversation and 2 other trace files older than 30 days.',
    );
    expect(real.stdout).toContain('Deleted 2 customer notes, expired or not recalled for 30 days.');
    // The note said in the pruned conversation is still in use: it stays, without its source.
    expect(await query('SELECT id, conversation_id FROM customer_notes')).toEqual([
      { id: keptId, conversation_id: null },
    ]);
    expect(await whereIs('tangerine-5150')).toEqual([]);
    expect(await whereIs(old)).toEqual([]);
    expect(existsSync(oldQuestion) || existsSync(orphan)).toBe(false);
    expect(existsSync(newQuestion)).toBe(true);
    expect(await whereIs('cobalt-9090')).toHaveLength(2);
    expect(statSync(path.join(logs, 'conversations', `${recent}.jsonl`)).isFile()).toBe(true);
  });

  it.each([
    [[], 'nothing'],
    [['--days=0'], '"0"'],
    [['--days=\x1b[2J\u200b'], '"\\x1b[2J\\u200b"'],
    [['--days=-3'], '"-3"'],
    [['--days=1.5'], '"1.5"'],
  ])('refuses %j with exit code 2, quoting it escaped', async (args, got) => {
    const result = await runInProcess(PRUNE, args, { env });
    expect(result.code).toBe(2);
    expect(result.stderr.split('\n')[0]).toBe(
      `--days must be a positive whole number of days (got ${got}).`,
    );
  });
});
