// The local cluster's bookkeeping, without a cluster: a node is whatever process uses its datadir (never a pid written down), stop deletes no datadir in use, and two commands never change one node at once.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ClusterError,
  clusterStatus,
  restartNode,
  startCluster,
  stopCluster,
} from '../../ops/local-cluster.ts';

let dir: string;
const standIns: ChildProcess[] = [];

/**
 * A cluster.json as the races of issue #30.11 left it: node 2 restarted by one command, then its pid
 * overwritten by another command's stale copy, so the file names a dead pid for a node that runs.
 */
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'nimbus-cluster-state-'));
  const nodes = [1, 2, 3].map((node) => ({
    node,
    sqlPort: 1, // nothing listens on port 1: a running stand-in "is not answering"
    gcommPort: 2,
    istPort: 3,
    sstPort: 4,
    datadir: path.join(dir, `node${node}`),
    pid: 99_999_999, // no such process
  }));
  for (const node of nodes) mkdirSync(node.datadir);
  const state = { dir, host: '127.0.0.1', clusterName: 'nimbus-test', startedAt: '', nodes };
  writeFileSync(path.join(dir, 'cluster.json'), JSON.stringify(state));
});
afterEach(() => {
  for (const child of standIns.splice(0)) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/** A process using node `node`'s datadir as a mariadbd would (by its command line); resolves once it runs. */
function standIn(node: number): Promise<ChildProcess> {
  return startProcess(`--datadir=${path.join(dir, `node${node}`)}`);
}

async function startProcess(argument: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1e6)', '--', argument]);
  standIns.push(child);
  await new Promise((resolve) => child.once('spawn', resolve));
  return child;
}

const exited = (child: ChildProcess) =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise((resolve) => child.once('exit', resolve));

describe('the local cluster, whatever its state file says', () => {
  it('status names the process that runs a node, and no pid for a node that does not run', async () => {
    const two = await standIn(2);
    const nodes = await clusterStatus(dir);
    expect(nodes!.map(({ node, pid, running }) => ({ node, pid, running }))).toEqual([
      { node: 1, pid: undefined, running: false },
      { node: 2, pid: two.pid, running: true },
      { node: 3, pid: undefined, running: false },
    ]);
  });

  it('stop stops a running node the file does not know of before it deletes anything', async () => {
    const two = await standIn(2);
    const report = await stopCluster(dir);
    expect(report.stopped).toEqual([2]);
    await exited(two); // it was signalled, not left running on a deleted datadir
    expect(two.signalCode).toBe('SIGTERM');
    expect(existsSync(dir)).toBe(false);
  });

  it('restart refuses a node whose datadir a process uses', async () => {
    const two = await standIn(2);
    await expect(restartNode(dir, 2)).rejects.toThrow(
      new ClusterError(`Node 2 is already running (pid ${two.pid}).`),
    );
  });

  it('stop, restart and start refuse a node another command is changing, and delete nothing', async () => {
    const other = await startProcess('--restarting'); // the live command holding node 2's lock
    const lock = path.join(dir, 'node2.lock');
    writeFileSync(lock, String(other.pid));
    const busy = `Node 2 is being changed by another command (pid ${other.pid}): wait for it to finish, or delete ${lock} if no such command runs.`;
    await expect(stopCluster(dir)).rejects.toThrow(new ClusterError(busy));
    expect(existsSync(path.join(dir, 'node1.lock'))).toBe(false); // what it took, it gave back
    await expect(restartNode(dir, 2)).rejects.toThrow(new ClusterError(busy));
    // Nor does start delete this stopped cluster to make room for a new one.
    await expect(startCluster(dir)).rejects.toThrow(new ClusterError(busy));
    expect(existsSync(path.join(dir, 'node2'))).toBe(true);
    expect(readFileSync(lock, 'utf8')).toBe(String(other.pid));
  });

  it('takes over a lock whose command died', async () => {
    writeFileSync(path.join(dir, 'node2.lock'), '99999999');
    expect((await stopCluster(dir)).removed?.dir).toBe(dir);
  });
});
