// The full Nimbus's database on several servers: a stalled node costs the failover time, a transaction is tried again as a cluster needs, and every script of the full Nimbus (only those) uses DB_HOSTS.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbSettings } from '../../../../shared/config.ts';
import { query, withDatabase, withTransaction } from '../../../../shared/db.ts';
import {
  createScratchDatabase,
  type ScratchDatabase,
} from '../../../../shared/testing/database.ts';
import { startPausableProxy } from '../../../../shared/testing/pausable-proxy.ts';
import { runInProcess } from '../../../../shared/testing/run-in-process.ts';
import { ensureFullDatabase } from '../../store/ensure-tables.ts';
import { ClusterDatabase, clusterSettings } from '../../store/cluster-database.ts';

let db: ScratchDatabase;
const server = dbSettings(process.env);

beforeAll(async () => {
  db = await createScratchDatabase();
  await ensureFullDatabase(() => {});
  await query('CREATE TABLE counters (id INT PRIMARY KEY, n INT NOT NULL)');
  await query('INSERT INTO counters VALUES (1, 0)');
});
afterAll(async () => {
  await db.drop();
});

/** The test counter, whatever the tests before this one added to it. */
const counter = async () =>
  (await query<Array<{ n: number }>>('SELECT n FROM counters WHERE id = 1'))[0].n;

/** The full Nimbus's database on these servers (DB_HOSTS), in this file's scratch database (read once used). */
function onServers(hosts: string, env: Record<string, string> = {}): ClusterDatabase {
  return new ClusterDatabase(() => clusterSettings({ ...process.env, DB_HOSTS: hosts, ...env }));
}

describe('a cluster node that stalls', () => {
  it('costs the failover time, not DB_TIMEOUT_SECONDS: a pooled connection to it is checked before it is used', async () => {
    const [first, second] = await Promise.all(
      [1, 2].map(() => startPausableProxy(server.host, server.port)),
    );
    const cluster = onServers(`127.0.0.1:${first.port},127.0.0.1:${second.port}`, {
      DB_TIMEOUT_SECONDS: '30',
    });
    try {
      await withDatabase(cluster, async () => {
        await query('SELECT 1'); // a connection to the first node waits in the pool
        const before = await counter();
        first.freeze();
        // Sent to the first node, it would wait 30 s and fail; checked, it goes to the second.
        await query('UPDATE counters SET n = n + 100 WHERE id = 1');
        expect(await counter()).toBe(before + 100);
      });
    } finally {
      await cluster.close();
      first.thaw();
      await Promise.all([first.close(), second.close()]);
    }
  });
});

describe('transactions on a cluster', () => {
  const cluster = onServers(`${server.host}:${server.port}`);
  afterAll(() => cluster.close());

  it('are tried again, a random pause apart, until one commits, even after many collisions', async () => {
    let tries = 0;
    const collision = Object.assign(new Error('Deadlock found'), {
      errno: 1213,
      code: 'ER_LOCK_DEADLOCK',
    });
    await withDatabase(cluster, () =>
      withTransaction(async (connection) => {
        tries++;
        if (tries <= 7) throw collision; // as a cluster's certification conflict, seven times in a row
        await connection.query('UPDATE counters SET n = n + 10 WHERE id = 1');
      }),
    );
    expect(tries).toBe(8);
  });

  it.each([
    ['a node not ready (1047), which refused it', { errno: 1047 }],
    [
      "Galera's refused streaming replication fragment, which rolled it back",
      {
        errno: 1105,
        message: 'Error while appending streaming replication fragment(provider status: 5)',
      },
    ],
  ])('are tried again after %s', async (_, fields) => {
    const before = await counter();
    let tries = 0;
    await withDatabase(cluster, () =>
      withTransaction(async (connection) => {
        tries++;
        await connection.query('UPDATE counters SET n = n + 1 WHERE id = 1');
        if (tries === 1) throw Object.assign(new Error('refused'), fields);
      }),
    );
    expect(tries).toBe(2);
    expect(await counter()).toBe(before + 1); // the first try rolled back
  });
});

describe('DB_HOSTS', () => {
  // The first server listed refuses every connection; the second is this file's MySQL.
  const env = () => ({
    DB_NAME: db.name,
    DB_HOSTS: `127.0.0.1:9,${server.host}:${server.port}`,
    DB_HOST: '127.0.0.1',
    DB_PORT: '9',
  });
  const id = '0'.repeat(32);

  it("is used by the full Nimbus's scripts, which go on to the next server", async () => {
    const run = await runInProcess('part-06/going-further/show-conversation.ts', [id], {
      env: env(),
    });
    expect(run.stderr).toBe(`Conversation ${id} was not found.\n`); // it looked
  });

  it("is ignored by the chapters' scripts, which use DB_HOST and DB_PORT", async () => {
    const run = await runInProcess('part-06/show-conversation.ts', [id], { env: env() });
    expect(run.stderr).toMatch(/^Cannot reach MySQL at 127\.0\.0\.1:9 \(ECONNREFUSED\)/);
  });
});
