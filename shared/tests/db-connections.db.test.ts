// The pool of one server under faults (issue #30): broken connections cost nothing, transient refusals are tried again.
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runWith, scriptIo, type ScriptIo } from '../cli.ts';
import { dbSettings } from '../config.ts';
import {
  closePool,
  connectionOptions,
  Database,
  openConnections,
  query,
  withDatabase,
  withTransaction,
} from '../db.ts';
import { createScratchDatabase, type ScratchDatabase } from '../testing/database.ts';
import { waitUntil } from '../testing/wait-until.ts';

let db: ScratchDatabase;
let admin: mysql.Connection;

beforeAll(async () => {
  db = await createScratchDatabase();
  admin = await mysql.createConnection(connectionOptions());
  await query('CREATE TABLE counters (id INT PRIMARY KEY, n INT NOT NULL)');
  await query('INSERT INTO counters VALUES (1, 0)');
});
afterAll(async () => {
  await admin.end();
  await db.drop();
});

describe('the pool', () => {
  it('opens DB_POOL_SIZE connections to a server at most, however many statements are waiting', async () => {
    const database = new Database(dbSettings({ ...process.env, DB_POOL_SIZE: '2' }));
    try {
      await withDatabase(database, async () => {
        const asked = Array.from({ length: 10 }, () =>
          query<Array<{ id: number }>>('SELECT CONNECTION_ID() AS id'),
        );
        const ids = new Set((await Promise.all(asked)).map(([row]) => row.id));
        expect(ids.size).toBeLessThanOrEqual(2);
        expect(openConnections()).toBe(2);
      });
    } finally {
      await database.close();
    }
  });
});

describe('two scripts in one process', () => {
  it('each use the database their own settings name, even while both are working', async () => {
    const other = await createScratchDatabase({ use: false });
    const io = (name: string) =>
      scriptIo({
        args: [],
        env: { ...process.env, DB_NAME: name },
        cwd: process.cwd(),
        entry: '',
        stdin: process.stdin,
        stdout: process.stdout,
        stderr: process.stderr,
      });
    // Each reads its database's name, then again after the other has started: never the other's.
    let bothStarted!: () => void;
    const started = new Promise<void>((resolve) => (bothStarted = resolve));
    let running = 0;
    const seen: Record<string, string[]> = {};
    const main = async (script: ScriptIo) => {
      const name = script.env.DB_NAME!;
      const read = async () =>
        (await query<Array<{ name: string }>>('SELECT DATABASE() AS name'))[0].name;
      seen[name] = [await read()];
      if (++running === 2) bothStarted();
      await started;
      seen[name].push(await read());
    };
    try {
      const codes = await Promise.all(
        [db.name, other.name].map((name) => runWith(main, '', io(name))),
      );
      expect(codes).toEqual([0, 0]);
      expect(seen).toEqual({
        [db.name]: [db.name, db.name],
        [other.name]: [other.name, other.name],
      });
    } finally {
      await other.drop();
    }
  });
});

describe('broken connections', () => {
  it('are forgotten: after 100 killed from the server, the pool keeps only the one it uses', async () => {
    for (let i = 0; i < 100; i++) {
      const [{ id }] = await query<Array<{ id: number }>>('SELECT CONNECTION_ID() AS id');
      await admin.query('KILL ?', [id]);
      // The next read finds its connection killed and is read again on a fresh one.
      expect(await query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
    }
    await waitUntil('the last killed connection has closed', () => openConnections() === 1);
    expect(openConnections()).toBe(1);
    await closePool();
    expect(openConnections()).toBe(0);
  });
});

/** The test counter, whatever the tests before this one added to it. */
const counter = async () =>
  (await query<Array<{ n: number }>>('SELECT n FROM counters WHERE id = 1'))[0].n;

describe('transactions that collide', () => {
  it('are tried again after a lock wait timeout (1205)', async () => {
    const holder = await mysql.createConnection({ ...connectionOptions(), database: db.name });
    const before = await counter();
    try {
      await holder.query('START TRANSACTION');
      await holder.query('SELECT n FROM counters WHERE id = 1 FOR UPDATE'); // past the lock wait
      let tries = 0;
      await withTransaction(async (connection) => {
        tries++;
        if (tries === 2) await holder.query('ROLLBACK'); // the other session is done by now
        await connection.query('UPDATE counters SET n = n + 1 WHERE id = 1'); // first: 1205
      });
      expect(tries).toBe(2);
      expect(await counter()).toBe(before + 1);
    } finally {
      await holder.end();
    }
  });

  it('are tried again as a whole, a random pause apart, up to 3 tries, then said in one sentence', async () => {
    const deadlock = Object.assign(new Error('Deadlock found'), {
      errno: 1213,
      code: 'ER_LOCK_DEADLOCK',
    });
    let tries = 0;
    await withTransaction(async (connection) => {
      tries++;
      if (tries <= 2) throw deadlock; // the loser of a deadlock, twice in a row
      await connection.query('UPDATE counters SET n = n + 10 WHERE id = 1');
    });
    expect(tries).toBe(3);
    tries = 0;
    const given = withTransaction(async () => {
      tries++;
      throw deadlock;
    });
    await expect(given).rejects.toThrow(
      /kept refusing a change because another one changed the same rows/,
    );
    expect(tries).toBe(3);
  });
});
