// Gives each test file its own scratch database, so tests never touch DB_NAME and can run in parallel.
import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import { dbSettings } from '../config.ts';
import { connectionOptions, closePool, useDatabase } from '../db.ts';

export interface ScratchDatabase {
  name: string;
  drop(): Promise<void>;
}

/**
 * Creates an empty database with a unique name and points this process at it (DB_NAME), so the part's
 * own code — setup, tools, memory — runs against it unchanged; scripts get it in their env. With
 * `use: false` it only creates it: for tests that run side by side, each naming its own in a script's env.
 */
export async function createScratchDatabase({ use = true } = {}): Promise<ScratchDatabase> {
  // TEST_DB_PREFIX: on a shared server, a prefix of your own keeps the tests' databases apart.
  const name = `${process.env.TEST_DB_PREFIX || 'nimbus_test_'}${randomBytes(5).toString('hex')}`;
  const admin = await mysql.createConnection(connectionOptions(dbSettings(process.env)));
  try {
    await admin.query(
      `CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`,
    );
  } finally {
    await admin.end();
  }
  if (use) await useScratchDatabase(name);
  return {
    name,
    async drop() {
      if (use) await closePool();
      const connection = await mysql.createConnection(connectionOptions(dbSettings(process.env)));
      try {
        await connection.query(`DROP DATABASE IF EXISTS \`${name}\``);
      } finally {
        await connection.end();
      }
    },
  };
}

/**
 * Points this process at the database `name` (its own queries, and DB_NAME for the scripts it starts):
 * how a test moves between its scratch databases.
 */
export async function useScratchDatabase(name: string): Promise<void> {
  process.env.DB_NAME = name;
  await useDatabase(() => dbSettings(process.env));
}

/** Can we reach the MySQL server from DB_* settings? Returns undefined when yes, else the reason. */
export async function databaseProblem(): Promise<string | undefined> {
  try {
    const connection = await mysql.createConnection({
      ...connectionOptions(dbSettings(process.env)),
      connectTimeout: 3000,
    });
    await connection.end();
    return undefined;
  } catch (error) {
    const e = error as { code?: string; message?: string };
    return e.code ?? e.message ?? String(error);
  }
}
