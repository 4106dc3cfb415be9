// The local Galera cluster tool: three nodes replicate, a crashed node rejoins by IST, and stop deletes everything.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitUntil } from '../../shared/testing/wait-until.ts';
import {
  clusterStatus,
  killNode,
  restartNode,
  startCluster,
  stopCluster,
  type ClusterInfo,
} from '../going-further/local-cluster.ts';

// A folder of its own, never the learner's .cluster: this file starts and deletes a whole cluster.
const dir = path.join(os.tmpdir(), `nimbus-cluster-${randomBytes(4).toString('hex')}`);
let cluster: ClusterInfo;

beforeAll(async () => {
  cluster = await startCluster(dir);
}, 180_000);
afterAll(async () => {
  await stopCluster(dir); // nothing left to do when the last test has already stopped it
}, 60_000);

/** Runs statements on node `node` (1 = the first) as root with the empty password. */
async function onNode<T = mysql.RowDataPacket[]>(node: number, ...statements: string[]) {
  const connection = await mysql.createConnection({
    host: '127.0.0.1',
    port: cluster.nodes[node - 1].sqlPort,
    user: 'root',
    password: '',
  });
  try {
    let result: unknown;
    for (const sql of statements) [result] = await connection.query(sql);
    return result as T;
  } finally {
    await connection.end();
  }
}

/** A read that first waits until this node has applied every write the cluster committed before it. */
const readAfterSync = (node: number, sql: string) =>
  onNode(node, 'SET SESSION wsrep_sync_wait = 1', sql);

describe('a local 3-node Galera cluster', () => {
  it('starts with every node Synced in a cluster of 3', async () => {
    const nodes = await clusterStatus(dir);
    expect(
      nodes?.map(({ running, state, clusterSize }) => ({ running, state, clusterSize })),
    ).toEqual(Array(3).fill({ running: true, state: 'Synced', clusterSize: 3 }));
  });

  it('replicates a row written on node 1 to node 3', async () => {
    await onNode(
      1,
      'CREATE DATABASE cluster_test',
      'CREATE TABLE cluster_test.notes (id INT PRIMARY KEY, text VARCHAR(100) NOT NULL)',
      "INSERT INTO cluster_test.notes VALUES (1, 'written on node 1')",
    );
    const rows = await readAfterSync(3, 'SELECT text FROM cluster_test.notes WHERE id = 1');
    expect(rows).toEqual([{ text: 'written on node 1' }]);
  });

  it('restarts a crashed node 1, which gets the write it missed by IST', async () => {
    await killNode(dir, 1);
    // Node 2 notices the crash within seconds (evs.suspect_timeout); the write below is then made
    // by a cluster of 2, without node 1.
    await waitUntil(
      'node 2 sees node 1 gone',
      async () => (await clusterStatus(dir))?.[1].clusterSize === 2,
      30_000,
    );
    await onNode(2, "INSERT INTO cluster_test.notes VALUES (2, 'written while node 1 was down')");

    const rejoin = await restartNode(dir, 1);
    expect(rejoin.transfer).toBe('IST');
    const rows = await readAfterSync(1, 'SELECT text FROM cluster_test.notes ORDER BY id');
    expect(rows).toEqual([
      { text: 'written on node 1' },
      { text: 'written while node 1 was down' },
    ]);
    expect((await clusterStatus(dir))?.map((node) => node.state)).toEqual(Array(3).fill('Synced'));
  }, 150_000);

  it('stops every node and deletes the folder', async () => {
    const report = await stopCluster(dir);
    expect(report.stopped).toEqual([1, 2, 3]);
    expect(report.removed?.dir).toBe(dir);
    expect(existsSync(dir)).toBe(false);
  }, 60_000);
});
