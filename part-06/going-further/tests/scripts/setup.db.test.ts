// The database is created on a first run, gains what is missing later, and is reset only when asked, saying what goes (going further's tables too).
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../../../shared/db.ts';
import {
  createScratchDatabase,
  useScratchDatabase,
  type ScratchDatabase,
} from '../../../../shared/testing/database.ts';
import { runScript } from '../../../../shared/testing/run-script.ts';
import { newConversation, saveMessages } from '../../../memory.ts';
import { ensureDatabase, planReset, TABLES } from '../../../setup-database.ts';
import { conversationTraceFile } from '../../../trace.ts';
import { checkFullDatabase, ensureFullDatabase } from '../../store/ensure-tables.ts';

const SETUP = fileURLToPath(new URL('../../../setup.ts', import.meta.url));
let db: ScratchDatabase;
const log: string[] = [];
/** This file's own trace folder: the reset deletes trace files, and no other test's. */
let logs: string;

beforeAll(async () => {
  db = await createScratchDatabase();
  await ensureDatabase((line) => log.push(line));
  logs = mkdtempSync(path.join(os.tmpdir(), 'nimbus-setup-logs-'));
});
afterAll(async () => {
  rmSync(logs, { recursive: true, force: true });
  await db.drop();
});

const tables = async () =>
  (
    await query<Array<{ name: string }>>(
      'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE()',
    )
  )
    .map((r) => r.name)
    .sort();
const count = async (table: string) =>
  (await query<Array<{ n: number }>>(`SELECT COUNT(*) AS n FROM ${table}`))[0].n;

/** A conversation with one saved turn and a ticket: what people wrote, which only an explicit reset may delete. */
async function somethingToLose(): Promise<string> {
  const conversation = newConversation(1);
  await saveMessages(conversation, [
    { message: { role: 'user', content: 'Hi' } },
    { message: { role: 'assistant', content: 'Hello!' } },
  ]);
  // One open ticket per request (going further keeps it so): an earlier test's is closed first.
  await query("UPDATE tickets SET status = 'closed'");
  await query(
    "INSERT INTO tickets (customer_id, category, summary) VALUES (1, 'other', 'Keep me')",
  );
  return conversation.id;
}

/** Runs `fn` on a scratch database of its own, then points this process back at the file's. */
async function onItsOwnDatabase(fn: (name: string) => Promise<void>): Promise<void> {
  const scratch = await createScratchDatabase();
  try {
    await fn(scratch.name);
  } finally {
    await scratch.drop();
    await useScratchDatabase(db.name);
  }
}

describe("going further's first run", () => {
  it('adds its own tables to the chapter’s and changes nothing the second time', async () => {
    await onItsOwnDatabase(async (name) => {
      await ensureDatabase(() => {});
      const lines: string[] = [];
      await ensureFullDatabase((line) => lines.push(line));
      expect(lines.length).toBeGreaterThan(0);
      expect(lines.every((line) => line.startsWith(`Database "${name}": `))).toBe(true);
      expect(await tables()).toEqual(expect.arrayContaining([...TABLES, 'customer_notes']));
      const again: string[] = [];
      await ensureFullDatabase((line) => again.push(line));
      expect(again).toEqual([]);
    });
  });

  it('brings an older memory up to date: messages numbered by seq, conversations kept', async () => {
    await onItsOwnDatabase(async (name) => {
      await ensureDatabase(() => {});
      const id = await somethingToLose();
      // An earlier version of this chapter: messages ordered by an AUTO_INCREMENT id.
      await query('DROP TABLE messages');
      await query(
        `CREATE TABLE messages (
           id INT UNSIGNED NOT NULL AUTO_INCREMENT, conversation_id CHAR(32) CHARACTER SET ascii NOT NULL,
           role ENUM('user', 'assistant', 'tool') NOT NULL, data JSON NOT NULL,
           input_tokens INT UNSIGNED NULL, output_tokens INT UNSIGNED NULL, request_chars INT UNSIGNED NULL,
           storage_note VARCHAR(255) NULL, created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
           PRIMARY KEY (id), KEY idx_messages_conversation (conversation_id, id)
         ) DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci`,
      );
      await query(
        `INSERT INTO messages (conversation_id, role, data) VALUES
           (?, 'user', '{"role":"user","content":"Hi"}'), (?, 'assistant', '{"role":"assistant","content":"Hello!"}')`,
        [id, id],
      );
      const lines: string[] = [];
      await ensureFullDatabase((line) => lines.push(line));
      expect(lines).toContain(
        `Database "${name}": numbering the stored messages of each conversation (seq).`,
      );
      expect(
        await query('SELECT seq, role FROM messages WHERE conversation_id = ? ORDER BY seq', [id]),
      ).toEqual([
        { seq: 1, role: 'user' },
        { seq: 2, role: 'assistant' },
      ]);
    });
  });
});

describe('commands that only read', () => {
  it("never create tables: going further's (checkFullDatabase) name the missing ones and the chat that creates them", async () => {
    await onItsOwnDatabase(async (name) => {
      await ensureDatabase(() => {});
      const error = await checkFullDatabase().catch((e: Error) => e);
      expect(error).toBeInstanceOf(Error);
      expect((error as Error).message).toMatch(
        new RegExp(
          `^Database "${name}" has no \\w+( or \\w+)* table yet: a first run of the chat creates (it|them) \\(npx tsx part-06/going-further/chat\\.ts\\)\\.$`,
        ),
      );
      expect((error as Error).message).toContain('customer_notes');
      expect(await tables()).toEqual([...TABLES].sort());
      await ensureFullDatabase(() => {});
      await expect(checkFullDatabase()).resolves.toBeUndefined();
    });
  });

  it("going further's column is its own: the chapter's messages table has no storage_note, going further's setup adds it and its read-only commands say so", async () => {
    await onItsOwnDatabase(async (name) => {
      const columns = () =>
        query<Array<{ name: string }>>(
          "SELECT column_name AS name FROM information_schema.columns WHERE table_schema = ? AND table_name = 'messages'",
          [name],
        ).then((rows) => rows.map((row) => row.name));
      await ensureDatabase(() => {});
      expect(await columns()).not.toContain('storage_note');
      const lines: string[] = [];
      await ensureFullDatabase((line) => lines.push(line));
      expect(lines).toContain(
        `Database "${name}": adding messages.storage_note, what a message lost to be stored.`,
      );
      expect(await columns()).toContain('storage_note');
      await query('ALTER TABLE messages DROP COLUMN storage_note');
      await expect(checkFullDatabase()).rejects.toThrow(
        `Database "${name}" has no messages.storage_note column yet: a first run of the chat adds it (npx tsx part-06/going-further/chat.ts).`,
      );
      // An older full Nimbus made customer_erasures without its count of erasures at once.
      await ensureFullDatabase(() => {});
      await query('ALTER TABLE customer_erasures DROP COLUMN erasures');
      await expect(checkFullDatabase()).rejects.toThrow(
        `Database "${name}" has no customer_erasures.erasures column yet: a first run of the chat adds it (npx tsx part-06/going-further/chat.ts).`,
      );
      lines.length = 0;
      await ensureFullDatabase((line) => lines.push(line));
      expect(lines).toEqual([
        `Database "${name}": adding customer_erasures.erasures, how many erasures run at once.`,
      ]);
      await expect(checkFullDatabase()).resolves.toBeUndefined();
    });
  });
});

describe('setup.ts resets, and only when told to', () => {
  it('with --yes deletes every copy — rows, trace files and tables pointing at its own (going further’s) — and rebuilds the sample store', async () => {
    const id = await somethingToLose();
    const trace = conversationTraceFile(logs, id);
    mkdirSync(path.dirname(trace), { recursive: true });
    writeFileSync(trace, '{"type":"start","question":"Hi"}\n');
    // Going further's tables point at the chapter's: the reset drops them too, and names their rows first.
    await ensureFullDatabase(() => {});
    await query(
      'INSERT INTO customer_notes (customer_id, text, conversation_id) VALUES (1, ?, ?)',
      ['Keep me too.', id],
    );
    expect((await planReset()).losses).toContain('1 row of customer_notes');
    const theirs = (await tables()).filter((table) => !TABLES.includes(table));
    expect(theirs).toContain('customer_notes');
    const result = await runScript(SETUP, ['--yes'], { env: { DB_NAME: db.name, LOG_DIR: logs } });
    expect(result.code, result.stderr).toBe(0);
    // The whole database goes, going further's tables with the chapter's, and the chapter's come back.
    expect(result.stdout).toContain(`Database "${db.name}": dropped, with every table in it.\n`);
    expect(await tables()).toEqual([...TABLES].sort());
    expect(result.stdout).toMatch(/Deleted \d+ trace files?\./);
    expect(result.stdout).toContain('Skipped the search index: GEMINI_API_KEY is not set.');
    expect(result.stdout).toContain(
      'Search uses keywords until you build it: npx tsx part-06/build-index.ts',
    );
    expect(existsSync(trace)).toBe(false);
    expect([await count('conversations'), await count('messages'), await count('tickets')]).toEqual(
      [0, 0, 0],
    );
    expect(await count('orders')).toBe(20);
  });
});
