// Creates what this part needs in MySQL, never dropping anything on its own; resetting is a separate, explicit step.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import mysql from 'mysql2/promise';
import {
  connectToServer,
  DatabaseError,
  databaseSettings,
  explainDatabaseError,
} from '../shared/db.ts';
import { plural } from '../shared/text.ts';
import { splitSqlStatements } from './split-sql.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** This part's tables, in the order schema.sql creates them: each after the tables it points at. */
export const TABLES = ['customers', 'products', 'orders', 'order_items'];

/**
 * Makes sure the database has everything this part needs: the database itself, any missing table,
 * and the sample data in tables that are still empty. It never drops or changes what is
 * there, so every command can call it on start, and a database from an earlier chapter simply gains
 * this chapter's tables.
 */
export async function ensureDatabase(log: (line: string) => void = console.error): Promise<void> {
  await withSetupConnection(async (db, database) => {
    const missing = await missingTables(db, database);
    if (missing.length) {
      log(`Database "${database}": creating ${missing.join(', ')}.`);
      await runSqlFile(db, 'schema.sql'); // CREATE TABLE IF NOT EXISTS: existing tables are left alone
    }
    await seedEmptyTables(db, log);
  });
}

/**
 * How the reset's question names each table's rows: "8 customers", with a table's parts in brackets
 * after it, "20 orders (25 order items)".
 */
const ROW_NAMES: Array<[table: string, noun: string, parts?: [table: string, noun: string]]> = [
  ['customers', 'customer'],
  ['products', 'product'],
  ['orders', 'order', ['order_items', 'order item']],
];

export interface ResetPlan {
  database: string;
  /** What a reset would delete, in words, e.g. ["8 customers", "20 orders (25 order items)"]; empty when there are no rows. */
  losses: string[];
}

/** What resetDatabase would delete, counted before anything is touched. */
export async function planReset(): Promise<ResetPlan> {
  const { database } = databaseSettings();
  const db = await connectToServer();
  try {
    const plan: ResetPlan = { database, losses: [] };
    const [schemas] = await db.query<mysql.RowDataPacket[]>(
      'SELECT 1 FROM information_schema.schemata WHERE schema_name = ?',
      [database],
    );
    if (schemas.length === 0) return plan;
    const missing = await missingTables(db, database);
    const rowsIn = async (table: string): Promise<number> => {
      if (missing.includes(table)) return 0;
      const [[row]] = await db.query<mysql.RowDataPacket[]>(
        `SELECT COUNT(*) AS n FROM \`${database}\`.\`${table}\``,
      );
      return row.n;
    };
    for (const [table, noun, parts] of ROW_NAMES) {
      const rows = await rowsIn(table);
      const partRows = parts ? await rowsIn(parts[0]) : 0;
      const inBrackets = parts && partRows ? ` (${plural(partRows, parts[1])})` : '';
      if (rows || partRows) plan.losses.push(plural(rows, noun) + inBrackets);
    }
    return plan;
  } finally {
    await db.end();
  }
}

/** Drops this part's tables, then creates them again with the sample data. Only setup.ts calls this. */
export async function resetDatabase(log: (line: string) => void = console.log): Promise<void> {
  await withSetupConnection(async (db, database) => {
    // Other chapters' tables in the same database may point at these; the checks are off for this connection only.
    await db.query('SET FOREIGN_KEY_CHECKS = 0');
    const [found] = await db.query<mysql.RowDataPacket[]>(
      'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = ? AND table_name IN (?)',
      [database, TABLES],
    );
    const existing = TABLES.filter((table) => found.some((row) => row.name === table));
    for (const table of [...existing].reverse())
      await db.query(`DROP TABLE IF EXISTS \`${table}\``);
    await db.query('SET FOREIGN_KEY_CHECKS = 1');
    // Only what was there is said to be dropped: a reset of an empty database drops nothing.
    if (existing.length) log(`Database "${database}": dropped ${existing.join(', ')}.`);
  });
  await ensureDatabase(log);
}

/**
 * Runs fn on a connection to DB_NAME (created if needed) while holding a lock named after it, so first
 * runs started at the same moment take turns instead of racing to create the same tables.
 */
async function withSetupConnection(
  fn: (db: mysql.Connection, database: string) => Promise<void>,
): Promise<void> {
  const { database } = databaseSettings();
  const db = await connectToServer();
  try {
    const [[lock]] = await db.query<mysql.RowDataPacket[]>('SELECT GET_LOCK(?, 60) AS got', [
      `nimbus-setup:${database}`.slice(0, 64),
    ]);
    if (lock.got !== 1)
      throw new DatabaseError(
        `Another setup of database "${database}" has been running for a minute; try again when it has finished.`,
      );
    // DB_NAME is checked to be letters, digits and underscores, so it is safe inside backticks.
    await db.query(
      `CREATE DATABASE IF NOT EXISTS \`${database}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`,
    );
    await db.query(`USE \`${database}\``);
    await fn(db, database);
  } catch (error) {
    throw explainDatabaseError(error);
  } finally {
    await db.end().catch(() => {}); // closing the connection releases the lock
  }
}

async function missingTables(db: mysql.Connection, database: string): Promise<string[]> {
  const [rows] = await db.query<mysql.RowDataPacket[]>(
    'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = ?',
    [database],
  );
  const existing = new Set(rows.map((row) => String(row.name)));
  return TABLES.filter((table) => !existing.has(table));
}

async function runSqlFile(db: mysql.Connection, file: string): Promise<void> {
  for (const statement of splitSqlStatements(await readFile(path.join(HERE, file), 'utf8')))
    await db.query(statement);
}

/** Runs each `INSERT INTO <table>` of seed.sql only if that table has no rows: sample data never overwrites real data. */
async function seedEmptyTables(db: mysql.Connection, log: (line: string) => void): Promise<void> {
  const seeded: string[] = [];
  for (const statement of splitSqlStatements(await readFile(path.join(HERE, 'seed.sql'), 'utf8'))) {
    const table = /^INSERT INTO (\w+)/i.exec(statement)?.[1];
    if (!table)
      throw new Error(
        `seed.sql may only contain INSERT INTO statements (found: ${statement.slice(0, 40)}…).`,
      );
    const [rows] = await db.query<mysql.RowDataPacket[]>(`SELECT 1 FROM \`${table}\` LIMIT 1`);
    if (rows.length > 0 && !seeded.includes(table)) continue;
    await db.query(statement);
    if (!seeded.includes(table)) seeded.push(table);
  }
  if (seeded.length) log(`Loaded the sample store into ${seeded.join(', ')} (seed.sql).`);
}
