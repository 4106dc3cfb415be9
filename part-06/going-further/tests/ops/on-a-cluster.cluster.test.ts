// Nimbus on a real 3-node Galera cluster: the chapter's conversation, two processes on two nodes in one conversation and on one ticket, first runs at once, the preferred node killed mid-question and rejoining by IST; nothing lost, mixed, doubled or stale.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query, withDatabase } from '../../../../shared/db.ts';
import { startFakeProvider, type FakeProvider } from '../../../../shared/testing/fake-provider.ts';
import { collect, startScript, waitForOutput } from '../../../../shared/testing/run-script.ts';
import {
  clusterHosts,
  clusterStatus,
  killNode,
  restartNode,
  startCluster,
  stopCluster,
  type ClusterInfo,
} from '../../ops/local-cluster.ts';
import { ClusterDatabase, clusterSettings } from '../../store/cluster-database.ts';

const ASK = fileURLToPath(new URL('../../ask.ts', import.meta.url));
const dir = path.join(os.tmpdir(), `nimbus-cluster-${randomBytes(4).toString('hex')}`);
let cluster: ClusterInfo;
let fake: FakeProvider;

beforeAll(async () => {
  [cluster, fake] = await Promise.all([startCluster(dir), startFakeProvider()]);
}, 240_000);
afterAll(async () => {
  await fake?.close();
  const stopped = await stopCluster(dir);
  expect(stopped.removed?.dir).toBe(dir); // stop deletes the cluster's data, every node's
  expect(existsSync(dir)).toBe(false);
}, 120_000);

/** The nodes' addresses with node `first` (1-based) preferred: what one app process would be given. */
function hostsPreferring(first: number): string {
  const all = clusterHosts(cluster).split(',');
  return [...all.slice(first - 1), ...all.slice(0, first - 1)].join(',');
}

/** A scratch database of this test's own, on the cluster (CREATE DATABASE replicates to every node). */
async function scratchDatabase(): Promise<string> {
  const name = `nimbus_cluster_${randomBytes(5).toString('hex')}`;
  const admin = await mysql.createConnection({
    host: '127.0.0.1',
    port: cluster.nodes[0].sqlPort,
    user: 'root',
  });
  await admin.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
  await admin.end();
  return name;
}

/** Reads on node `node` directly, waiting for every write the cluster committed first. */
async function onNode<T>(
  node: number,
  database: string,
  sql: string,
  params: unknown[] = [],
): Promise<T> {
  const connection = await mysql.createConnection({
    host: '127.0.0.1',
    port: cluster.nodes[node - 1].sqlPort,
    user: 'root',
    database,
  });
  try {
    await connection.query('SET SESSION wsrep_sync_wait = 1');
    const [rows] = await connection.query(sql, params);
    return rows as T;
  } finally {
    await connection.end();
  }
}

/** going-further/ask.ts as one app process preferring node `node`. */
function askOn(node: number, database: string, args: string[]) {
  const env = {
    ...fake.env('openai'),
    DB_NAME: database,
    DB_HOSTS: hostsPreferring(node),
    DB_TIMEOUT_SECONDS: '10',
  };
  return startScript(ASK, ['--quiet', ...args], { env });
}

/** Every message of a conversation, as (seq, role, text of the question or answer). */
async function messagesOf(database: string, conversationId: string, node = 1) {
  return onNode<Array<{ seq: number; role: string; content: string }>>(
    node,
    database,
    `SELECT seq, role, JSON_UNQUOTE(JSON_EXTRACT(data, '$.content')) AS content
       FROM messages WHERE conversation_id = ? ORDER BY seq`,
    [conversationId],
  );
}

/** Each turn's roles: a turn starts at a question and must end with an answer, nothing of another turn inside. */
function turnsOf(messages: Array<{ role: string; content: string }>): string[][] {
  const turns: string[][] = [];
  for (const m of messages) {
    if (m.role === 'user') turns.push([]);
    turns.at(-1)!.push(m.role);
  }
  return turns;
}

const conversationIn = (stderr: string) => /Conversation ([0-9a-f]{32})/.exec(stderr)?.[1] ?? '';

describe('Nimbus on a 3-node Galera cluster', () => {
  it('is a cluster: three nodes, each Synced in a cluster of three', async () => {
    const status = await clusterStatus(dir);
    expect(status?.map((node) => [node.running, node.state, node.clusterSize])).toEqual([
      [true, 'Synced', 3],
      [true, 'Synced', 3],
      [true, 'Synced', 3],
    ]);
  });

  it("runs the chapter's conversation through the cluster, each question on another node", async () => {
    const database = await scratchDatabase();
    fake.reply(
      { tool_calls: [{ name: 'check_refund_eligibility', arguments: { order_id: 1043 } }] },
      { text: "I'm sorry, order 1043 can't be refunded." },
    );
    const first = await collect(askOn(1, database, ['Can I get a refund for order 1043?']));
    expect(first.code, first.stderr).toBe(0);
    const id = conversationIn(first.stderr);
    fake.reply(
      { tool_calls: [{ name: 'check_refund_eligibility', arguments: { order_id: 1042 } }] },
      { text: 'Good news: order 1042 is eligible. Shall I open a refund ticket?' },
    );
    const second = await collect(
      askOn(2, database, [`--conversation=${id}`, 'What about my other order, 1042?']),
    );
    expect(second.code, second.stderr).toBe(0);
    fake.reply(
      (view) => ({
        // "Yes please." carries no number: it can only come from the history node 3 read.
        tool_calls: view.messages.some((m) => JSON.stringify(m).includes('1042'))
          ? [
              {
                name: 'create_support_ticket',
                arguments: { category: 'refund', summary: 'Refund for 1042.', order_id: 1042 },
              },
            ]
          : [],
        text: 'Which order?',
      }),
      { text: 'Done! Your ticket is open.' },
    );
    const third = await collect(askOn(3, database, [`--conversation=${id}`, 'Yes please.']));
    expect(third.code, third.stderr).toBe(0);
    expect(turnsOf(await messagesOf(database, id, 3))).toEqual([
      ['user', 'assistant', 'tool', 'assistant'],
      ['user', 'assistant', 'tool', 'assistant'],
      ['user', 'assistant', 'tool', 'assistant'],
    ]);
    const tickets = await onNode<unknown[]>(
      1,
      database,
      "SELECT id FROM tickets WHERE order_id = 1042 AND status = 'open'",
    );
    expect(tickets).toHaveLength(1);
  });

  it('lets one question at a time into a conversation, whichever nodes the two processes write to', async () => {
    const database = await scratchDatabase();
    fake.reply({ text: 'Hello!' });
    const start = await collect(askOn(1, database, ['Hi']));
    const id = conversationIn(start.stderr);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const asked = fake.chats().length;
    fake.reply({ text: 'First answer.', gate }, { text: 'Second answer.' });
    const a = askOn(1, database, [`--conversation=${id}`, 'First question']);
    const b = askOn(2, database, [`--conversation=${id}`, 'Second question']);
    // The one that waits says so; the other never does (its promise then simply never settles).
    const waits = [a, b].map((child) =>
      waitForOutput(child, /Waiting for the question/).catch(() => new Promise(() => {})),
    );
    const [doneA, doneB] = [collect(a), collect(b)];
    await fake.waitForChat(asked + 1); // one of them is at the model…
    await Promise.race(waits); // …and the other waits for it, on the other node
    expect(fake.chats()).toHaveLength(asked + 1);
    release();
    const [resultA, resultB] = await Promise.all([doneA, doneB]);
    expect([resultA.code, resultB.code]).toEqual([0, 0]);
    const messages = await messagesOf(database, id, 3);
    expect(turnsOf(messages)).toEqual([
      ['user', 'assistant'],
      ['user', 'assistant'],
      ['user', 'assistant'],
    ]);
    expect(messages.map((m) => m.seq)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('opens one ticket when "yes please" comes at the same moment on two nodes', async () => {
    const database = await scratchDatabase();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const ticketCall = {
      tool_calls: [
        {
          name: 'create_support_ticket',
          arguments: { category: 'refund', summary: 'Refund for order 1042.', order_id: 1042 },
        },
      ],
      gate,
    };
    const answer = (view: { toolResults: Array<{ result: unknown }> }) => ({
      text: `Your ticket is #${(view.toolResults.at(-1)?.result as { ticket_id?: number })?.ticket_id}.`,
    });
    const asked = fake.chats().length;
    fake.reply(ticketCall, ticketCall, answer, answer);
    // Two windows, two conversations (no lease between them), two nodes: only the database can stop a double.
    const a = collect(askOn(1, database, ['Yes please, open the refund ticket for 1042.']));
    const b = collect(askOn(2, database, ['Yes please, open the refund ticket for 1042.']));
    await fake.waitForChat(asked + 2); // both are at the model: their tools will run at the same moment
    release();
    const [resultA, resultB] = await Promise.all([a, b]);
    expect([resultA.code, resultB.code]).toEqual([0, 0]);
    const open = await onNode<Array<{ id: number }>>(
      2,
      database,
      "SELECT id FROM tickets WHERE order_id = 1042 AND status <> 'closed'",
    );
    expect(open).toHaveLength(1);
    // Both answers name that one ticket: the second found it open.
    expect(resultA.stdout).toContain(`#${open[0].id}`);
    expect(resultB.stdout).toContain(`#${open[0].id}`);
  });

  it('creates everything on first runs started at once on every node', async () => {
    const database = `nimbus_cluster_${randomBytes(5).toString('hex')}`; // not even the database exists
    const runs = [1, 2, 3].map((node) => {
      fake.reply({ text: `Hello from node ${node}.` });
      return collect(askOn(node, database, ['Hi']));
    });
    const results = await Promise.all(runs);
    for (const result of results) expect(result.code, result.stderr).toBe(0);
    const tables = await onNode<unknown[]>(3, database, 'SHOW TABLES');
    expect(tables.length).toBeGreaterThanOrEqual(12);
    const customers = await onNode<Array<{ n: number }>>(
      2,
      database,
      'SELECT COUNT(*) AS n FROM customers',
    );
    expect(customers[0].n).toBe(8); // the sample store, loaded once
  });

  it('reads its own writes on another node: none of 200 reads right after a write is stale', async () => {
    const database = await scratchDatabase();
    const writer = await mysql.createConnection({
      host: '127.0.0.1',
      port: cluster.nodes[0].sqlPort,
      user: 'root',
      database,
    });
    await writer.query('CREATE TABLE probe (id INT PRIMARY KEY, n INT NOT NULL)');
    await writer.query('INSERT INTO probe VALUES (1, 0)');
    // This process reads through the full Nimbus's database, preferring node 2.
    const nodes = new ClusterDatabase(
      clusterSettings({ ...process.env, DB_HOSTS: hostsPreferring(2), DB_NAME: database }),
    );
    let stale = 0;
    await withDatabase(nodes, async () => {
      for (let n = 1; n <= 200; n++) {
        await writer.query('UPDATE probe SET n = ? WHERE id = 1', [n]);
        const [row] = await query<Array<{ n: number }>>('SELECT n FROM probe WHERE id = 1');
        if (row.n !== n) stale++;
      }
    }).finally(() => nodes.close());
    await writer.end();
    expect(stale).toBe(0);
  });

  it('takes back two nodes that died together, restarted at once by two callers', async () => {
    await Promise.all([killNode(dir, 1), killNode(dir, 2)]);
    // Node 3 alone has lost its majority: each restart must wait for the other's node too.
    const rejoins = await Promise.all([restartNode(dir, 1), restartNode(dir, 2)]);
    expect(rejoins.map((r) => r.node)).toEqual([1, 2]);
    const nodes = await clusterStatus(dir);
    expect(nodes!.map(({ state, clusterSize }) => ({ state, clusterSize }))).toEqual(
      Array(3).fill({ state: 'Synced', clusterSize: 3 }),
    );
    // Each pid shown is the process really running that node.
    for (const node of nodes!)
      expect(readFileSync(`/proc/${node.pid}/cmdline`, 'utf8')).toContain(
        `--datadir=${cluster.nodes[node.node - 1].datadir}`,
      );
  }, 200_000); // a failure is a node not Synced after 120 s

  it('goes on through the next node when the preferred one dies mid-question; the node rejoins by IST and is not stale', async () => {
    const database = await scratchDatabase();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const asked = fake.chats().length;
    fake.reply(
      {
        tool_calls: [
          {
            name: 'create_support_ticket',
            arguments: { category: 'refund', summary: 'Refund for 1042.', order_id: 1042 },
          },
        ],
        gate,
      },
      { text: 'Done! Your ticket is open.' },
    );
    const child = askOn(1, database, ['Please open a refund ticket for order 1042.']);
    const done = collect(child);
    await fake.waitForChat(asked + 1); // the question is at the model, its lease and history on node 1
    await killNode(dir, 1);
    release();
    const result = await done;
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).not.toMatch(/Not saved|Unexpected/);
    const id = conversationIn(result.stderr);
    expect(turnsOf(await messagesOf(database, id, 2))).toEqual([
      ['user', 'assistant', 'tool', 'assistant'],
    ]);
    const rejoin = await restartNode(dir, 1);
    expect(rejoin.transfer).not.toBe('SST'); // recovered its position, so only the missed writes came
    expect(turnsOf(await messagesOf(database, id, 1))).toEqual([
      ['user', 'assistant', 'tool', 'assistant'],
    ]);
    const tickets = await onNode<unknown[]>(
      1,
      database,
      "SELECT id FROM tickets WHERE order_id = 1042 AND status = 'open'",
    );
    expect(tickets).toHaveLength(1);
  });
});
