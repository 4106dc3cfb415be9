// Creates the database, loads this part's SQL files and the help center; also sets it up on a first run.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import mysql from 'mysql2/promise';
import { ConfigError, dbSettings } from '../shared/config.ts';
import { connectionOptions, explainDatabaseError } from '../shared/db.ts';
import { embeddingModel, ProviderError } from '../shared/llm/index.ts';
import { buildIndex } from './embedding-index.ts';
import { describeIngest, ingestArticles } from './ingest-articles.ts';
import { splitSqlStatements } from './split-sql.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** Applied in this order. Each file can also be run with the mysql client. */
export const SQL_FILES = ['schema.sql', 'functions.sql', 'seed.sql'];
/** If any of these is missing, the database is not ready for this part. */
export const REQUIRED_TABLES = [
  'customers',
  'products',
  'orders',
  'order_items',
  'tickets',
  'help_articles',
  'help_chunks',
  'conversations',
  'messages',
];

/** Creates DB_NAME if needed, (re)applies every SQL file, loads and indexes the help center. */
export async function setupDatabase(log: (line: string) => void = console.log): Promise<void> {
  const { database } = dbSettings();
  const connection = await mysql.createConnection(connectionOptions()).catch((error) => {
    throw explainDatabaseError(error);
  });
  try {
    // DB_NAME is checked to be letters, digits and underscores, so it is safe inside backticks.
    await connection.query(`CREATE DATABASE IF NOT EXISTS \`${database}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
    await connection.query(`USE \`${database}\``);
    log(`Database "${database}" is ready.`);
    for (const file of SQL_FILES) {
      const statements = splitSqlStatements(await readFile(path.join(HERE, file), 'utf8'));
      for (const statement of statements) await connection.query(statement);
      log(`Applied ${file} (${statements.length} statements).`);
    }
  } finally {
    await connection.end();
  }
  for (const line of describeIngest(await ingestArticles())) log(line);
  await indexHelpCenter(log);
}

/** Embeds the help center if an embedding API is configured; without one, search falls back to keywords. */
async function indexHelpCenter(log: (line: string) => void): Promise<void> {
  const skipped = (reason: string) => {
    log(`Skipped the search index: ${reason}`);
    log('  Search uses MySQL FULLTEXT until you run: npx tsx build-index.ts');
  };
  try {
    const model = embeddingModel();
    if (!model) return skipped('no embedding model is configured.');
    const { done } = await buildIndex();
    log(`Embedded ${done} help-center chunks with ${model}.`);
  } catch (error) {
    if (error instanceof ConfigError || error instanceof ProviderError) return skipped(error.message);
    throw error;
  }
}

/** Sets the database up when this part's tables are missing (a first run), saying so. */
export async function ensureDatabase(log: (line: string) => void = console.error): Promise<void> {
  const { database } = dbSettings();
  const connection = await mysql.createConnection(connectionOptions()).catch((error) => {
    throw explainDatabaseError(error);
  });
  let missing: string[];
  try {
    const [rows] = await connection.query('SELECT table_name AS name FROM information_schema.tables WHERE table_schema = ?', [database]);
    const existing = new Set((rows as Array<{ name: string }>).map((row) => row.name));
    missing = REQUIRED_TABLES.filter((table) => !existing.has(table));
  } finally {
    await connection.end();
  }
  if (missing.length === 0) return;
  log(`First run: setting up database "${database}" (missing: ${missing.join(', ')}). Reset it any time with: npm run setup`);
  await setupDatabase(log);
}
