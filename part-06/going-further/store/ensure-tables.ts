// The tables going further adds, created when missing after the chapter's own, like them never dropped.
import type mysql from 'mysql2/promise';
import type { ConfigError, LlmSettings } from '../../../shared/config.ts';
import { DatabaseError, databaseSettings } from '../../../shared/db.ts';
import { query } from '../../../shared/db.ts';
import { commandFor } from '../../../shared/hints.ts';
import { ensureDatabase, runSqlFile, TABLES, withSetupConnection } from '../../setup-database.ts';
import { indexStoredMessages } from './message-words.ts';

/** Going further's SQL files, and the tables each creates. */
const FILES: Array<[file: string, tables: string[]]> = [
  ['going-further/store/message-words.sql', ['message_words']],
  ['going-further/question/question-leases.sql', ['question_leases', 'customer_erasures']],
  ['going-further/notes/customer-memory.sql', ['customer_notes', 'customer_note_guards']],
];

/** Going further's own tables, in the order they are created. */
export const PRODUCT_TABLES = FILES.flatMap(([, tables]) => tables);

/**
 * For commands that only read (the viewer, export, forget): says which tables are missing and how to
 * create them, instead of creating them.
 */
export async function checkFullDatabase(): Promise<void> {
  const { database } = databaseSettings();
  const rows = await query<Array<{ name: string }>>(
    'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = ?',
    [database],
  );
  const existing = new Set(rows.map((row) => String(row.name)));
  const missing = [...TABLES, ...PRODUCT_TABLES].filter((table) => !existing.has(table));
  const chat = commandFor(new URL('../chat.ts', import.meta.url));
  if (missing.length)
    throw new DatabaseError(
      `Database "${database}" has no ${missing.join(' or ')} table yet: a first run of the chat creates ${missing.length === 1 ? 'it' : 'them'} (${chat}).`,
    );
  // The chapter's own reset creates messages without going further's column; an older full Nimbus
  // made customer_erasures without its count.
  for (const [table, column] of ADDED_COLUMNS) {
    const [found] = await query<unknown[]>(
      'SELECT 1 FROM information_schema.columns WHERE table_schema = ? AND table_name = ? AND column_name = ?',
      [database, table, column],
    );
    if (!found)
      throw new DatabaseError(
        `Database "${database}" has no ${table}.${column} column yet: a first run of the chat adds it (${chat}).`,
      );
  }
}

/** Columns added to tables that may exist without them: a first run adds them (setUp). */
const ADDED_COLUMNS = [
  ['messages', 'storage_note'],
  ['customer_erasures', 'erasures'],
] as const;

/**
 * Everything the full Nimbus needs: the chapter's tables (ensureDatabase), a messages table from an
 * earlier version of this chapter brought to today's shape, going further's own tables, and the
 * constraint that keeps one open ticket per request.
 *
 * On a cluster, first runs on two nodes at once each take a setup lock of their own node (GET_LOCK is
 * per node): one may find the other's function or row created a moment after it looked. Every step
 * creates only what is missing, so such a run simply starts again and finds it done.
 */
export async function ensureFullDatabase(
  log: (line: string) => void,
  llm?: LlmSettings | ConfigError,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await setUp(log, llm);
    } catch (error) {
      if (attempt >= FIRST_RUN_ATTEMPTS || !createdMeanwhile(error)) throw error;
      // Three nodes setting up at once collide again at once: a random pause apart, longer each time.
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 100 * attempt));
    }
  }
}

/** Tries of a first run that raced others: with three nodes at once, a run may lose a few times. */
const FIRST_RUN_ATTEMPTS = 8;

/** Errors of a first run that raced another one: what it was creating exists now, or collided. */
function createdMeanwhile(error: unknown): boolean {
  const cause = (error as { cause?: unknown }).cause ?? error;
  const { errno } = cause as { errno?: number };
  // 1304: function exists; 1050: table exists; 1060, 1061: column or key exists (an upgrade another
  // node made a moment ago); 1062: duplicate row; 1213: deadlock or certification conflict.
  return [1304, 1050, 1060, 1061, 1062, 1213].includes(errno ?? 0);
}

async function setUp(log: (line: string) => void, llm?: LlmSettings | ConfigError): Promise<void> {
  await ensureDatabase(log, llm);
  await withSetupConnection(async (db, database) => {
    await upgradeMessages(db, database, log);
    await addStorageNotes(db, database, log);
    await guardOpenTickets(db, database, log);
    const [rows] = await db.query<mysql.RowDataPacket[]>(
      'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = ?',
      [database],
    );
    const existing = new Set(rows.map((row) => String(row.name)));
    for (const [file, tables] of FILES) {
      const missing = tables.filter((table) => !existing.has(table));
      if (missing.length === 0) continue;
      log(`Database "${database}": creating ${missing.join(', ')}.`);
      await runSqlFile(db, file); // CREATE TABLE IF NOT EXISTS: the others are left alone
      if (missing.includes('message_words')) {
        const indexed = await indexStoredMessages(db);
        if (indexed)
          log(`Database "${database}": indexed the words of ${indexed} stored conversations.`);
      }
    }
    if (existing.has('customer_erasures')) await addErasureCount(db, database, log);
    if (existing.has('message_text')) {
      // A copy of every question and answer that search used before message_words: nothing reads it now.
      log(`Database "${database}": dropping message_text, the old copy of messages for searching.`);
      await db.query('DROP TABLE message_text');
    }
  });
}

/**
 * Brings a messages table from an earlier version of this chapter (ordered by an AUTO_INCREMENT id) to
 * today's: each conversation's messages numbered 1, 2, 3… in seq, in the order they were saved.
 */
async function upgradeMessages(
  db: mysql.Connection,
  database: string,
  log: (line: string) => void,
): Promise<void> {
  const [columns] = await db.query<mysql.RowDataPacket[]>(
    "SELECT 1 FROM information_schema.columns WHERE table_schema = ? AND table_name = 'messages' AND column_name = 'seq'",
    [database],
  );
  if (columns.length) return;
  log(`Database "${database}": numbering the stored messages of each conversation (seq).`);
  await db.query('ALTER TABLE messages ADD COLUMN seq INT UNSIGNED NULL AFTER conversation_id');
  await db.query(
    `UPDATE messages m JOIN (SELECT id, ROW_NUMBER() OVER (PARTITION BY conversation_id ORDER BY id) AS n
                               FROM messages) numbered ON numbered.id = m.id
        SET m.seq = numbered.n`,
  );
  await db.query(
    'ALTER TABLE messages MODIFY seq INT UNSIGNED NOT NULL, DROP PRIMARY KEY, ADD PRIMARY KEY (conversation_id, seq), DROP COLUMN id',
  );
  await db.query('ALTER TABLE messages DROP INDEX idx_messages_conversation');
}

/** messages.storage_note: what had to change for a message to be stored (fit-message.ts), if anything. */
async function addStorageNotes(
  db: mysql.Connection,
  database: string,
  log: (line: string) => void,
): Promise<void> {
  if (await hasColumn(db, database, 'messages', 'storage_note')) return;
  log(`Database "${database}": adding messages.storage_note, what a message lost to be stored.`);
  await db.query(
    'ALTER TABLE messages ADD COLUMN storage_note VARCHAR(255) NULL AFTER output_tokens',
  );
}

async function addErasureCount(
  db: mysql.Connection,
  database: string,
  log: (line: string) => void,
): Promise<void> {
  if (await hasColumn(db, database, 'customer_erasures', 'erasures')) return;
  log(`Database "${database}": adding customer_erasures.erasures, how many erasures run at once.`);
  await db.query(
    'ALTER TABLE customer_erasures ADD COLUMN erasures INT UNSIGNED NOT NULL DEFAULT 0 AFTER erasing_until',
  );
}

async function hasColumn(db: mysql.Connection, database: string, table: string, column: string) {
  const [columns] = await db.query<mysql.RowDataPacket[]>(
    'SELECT 1 FROM information_schema.columns WHERE table_schema = ? AND table_name = ? AND column_name = ?',
    [database, table, column],
  );
  return columns.length > 0;
}

/**
 * One open ticket per request (customer, category, order), enforced by the database: tools.ts checks
 * before it inserts, under a row lock, but on a cluster a row lock holds only on its own node, so two
 * "yes please" on two nodes at once would both pass the check. A unique key on a column that is set
 * only while a ticket is not closed makes the second insert collide with the first (a certification
 * conflict at COMMIT), and its transaction, run again, finds the first ticket open.
 */
async function guardOpenTickets(
  db: mysql.Connection,
  database: string,
  log: (line: string) => void,
): Promise<void> {
  const [columns] = await db.query<mysql.RowDataPacket[]>(
    "SELECT 1 FROM information_schema.columns WHERE table_schema = ? AND table_name = 'tickets' AND column_name = 'open_request'",
    [database],
  );
  if (columns.length) return;
  log(
    `Database "${database}": one open ticket per request, as a unique key (tickets.open_request).`,
  );
  try {
    await db.query(
      `ALTER TABLE tickets
         ADD COLUMN open_request VARCHAR(64) CHARACTER SET ascii
           AS (IF(status = 'closed', NULL, CONCAT(customer_id, ':', category, ':', IFNULL(order_id, 0)))) STORED,
         ADD UNIQUE KEY uq_tickets_open_request (open_request)`,
    );
  } catch (error) {
    if ((error as { errno?: number }).errno !== 1062) throw error;
    // Not a race: tickets made before the key exist twice. A person decides which to close.
    throw new DatabaseError(
      `Database "${database}" has two open tickets for the same request (${(error as Error).message}); close one of them, then start Nimbus again.`,
    );
  }
}
