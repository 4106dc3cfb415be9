// The pool under faults (issue #30): broken connections cost nothing, transient refusals are tried again.
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closePool, connectionOptions, openConnections, query } from '../db.ts';
import { createScratchDatabase, type ScratchDatabase } from '../testing/database.ts';
import { waitUntil } from '../testing/wait-until.ts';

let db: ScratchDatabase;
let admin: mysql.Connection;

beforeAll(async () => {
  db = await createScratchDatabase();
  admin = await mysql.createConnection(connectionOptions());
});
afterAll(async () => {
  await admin.end();
  await db.drop();
});

describe('the pool', () => {
  it('opens DB_POOL_SIZE connections to a server at most, however many statements are waiting', async () => {
    process.env.DB_POOL_SIZE = '2';
    await closePool(); // the next statement opens a pool of the new size
    try {
      const asked = Array.from({ length: 10 }, () =>
        query<Array<{ id: number }>>('SELECT CONNECTION_ID() AS id'),
      );
      const ids = new Set((await Promise.all(asked)).map(([row]) => row.id));
      expect(ids.size).toBeLessThanOrEqual(2);
      expect(openConnections()).toBe(2);
    } finally {
      delete process.env.DB_POOL_SIZE;
      await closePool();
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
