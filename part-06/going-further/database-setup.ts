// Going further: the tables going further adds, created when missing after the chapter's own, like them never dropped.
import type mysql from 'mysql2/promise';
import type { ConfigError, LlmSettings } from '../../shared/config.ts';
import { ensureDatabase, runSqlFile, withSetupConnection } from '../setup-database.ts';

/** What going-further/customer-memory.sql creates. */
const TABLES = ['customer_notes', 'message_text'];

/**
 * Everything the full Nimbus needs: the chapter's tables (ensureDatabase), a messages table from an
 * earlier version of this chapter brought to today's shape, and going further's own tables.
 */
export async function ensureFullDatabase(
  log: (line: string) => void,
  llm?: LlmSettings | ConfigError,
): Promise<void> {
  await ensureDatabase(log, llm);
  await withSetupConnection(async (db, database) => {
    await upgradeMessages(db, database, log);
    const [rows] = await db.query<mysql.RowDataPacket[]>(
      'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = ? AND table_name IN (?)',
      [database, TABLES],
    );
    if (rows.length === TABLES.length) return;
    const missing = TABLES.filter((table) => !rows.some((row) => row.name === table));
    log(`Database "${database}": creating ${missing.join(', ')}.`);
    await runSqlFile(db, 'going-further/customer-memory.sql');
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
