// A real 3-node MariaDB Galera cluster on 127.0.0.1, so learners, tests and the benchmark can see replication, crashes and rejoins.
import { execFile, spawn } from 'node:child_process';
import { randomInt, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import mysql from 'mysql2/promise';
import { ROOT_DIR } from '../../../shared/config.ts';

const run = promisify(execFile);

/** Something about the cluster went wrong; the message is a sentence for the learner (plus a log tail). */
export class ClusterError extends Error {
  override name = 'ClusterError';
}

export interface ClusterNode {
  /** 1 for the first node: the number people say ("node 1"), also used in its folder name. */
  node: number;
  sqlPort: number;
  /** Galera's group communication: the nodes talk to each other here. */
  gcommPort: number;
  /** Where this node receives an incremental state transfer (IST): the writes it missed. */
  istPort: number;
  /** Where this node's rsync daemon receives a full state transfer (SST): a copy of a whole datadir. */
  sstPort: number;
  datadir: string;
}

export interface ClusterInfo {
  dir: string;
  host: string;
  /** wsrep_cluster_name: unique per cluster, so two clusters on one machine can never merge. */
  clusterName: string;
  /** The system user the nodes run as: `mysql` when we are root, else undefined (ourselves). */
  runAs?: string;
  startedAt: string;
  nodes: ClusterNode[];
  /** startCluster found this cluster already running instead of starting one. */
  alreadyRunning: boolean;
}

export interface NodeStatus {
  node: number;
  sqlPort: number;
  /** The process using the node's datadir now, found in /proc; undefined when none is. */
  pid?: number;
  running: boolean;
  /** wsrep_local_state_comment: Synced, Joining, Donor/Desynced… Undefined if it did not answer. */
  state?: string;
  clusterSize?: number;
  /** Why the node did not answer, when it is running but could not be asked. */
  problem?: string;
}

export interface Rejoin {
  node: number;
  /** IST: it received only the writes it missed; SST: a full copy of a donor's datadir; none: nothing missed. */
  transfer: 'IST' | 'SST' | 'none';
  /** The position InnoDB recovered after the crash (cluster UUID:seqno), or undefined if it knew none. */
  recoveredPosition?: string;
  ms: number;
}

export interface StopReport {
  /** Nodes that were running: stopped with SIGTERM, or SIGKILL if they did not stop in time. */
  stopped: number[];
  killed: number[];
  /** The folder deleted, with its size; undefined when there was nothing to delete. */
  removed?: { dir: string; bytes: number };
}

const HOST = '127.0.0.1';
// Names the nodes, their ports and datadirs; written once by start, never a pid (see nodeProcesses).
const STATE_FILE = 'cluster.json';
const GALERA_LIBRARY = '/usr/lib/galera/libgalera_smm.so';
const INSTALL_HINT = 'apt-get install galera-4 rsync mariadb-server';
// A node usually syncs in seconds; these limits only matter when something is wrong (or CI is very slow).
const SYNC_LIMIT_MS = 120_000;
const STOP_LIMIT_MS = 30_000;
const RECOVER_LIMIT_MS = 60_000;

// ---------------------------------------------------------------------------------------------------
// What callers use
// ---------------------------------------------------------------------------------------------------

/**
 * Starts a cluster of `nodes` (3) nodes whose datadirs live in `dir`, and waits until every node is
 * Synced in a cluster of that size. A cluster already running from `dir` is returned as it is.
 */
export async function startCluster(
  dir: string,
  options: { nodes?: number; log?: (line: string) => void } = {},
): Promise<ClusterInfo> {
  const log = options.log ?? (() => {});
  const count = options.nodes ?? 3;
  if (!Number.isInteger(count) || count < 1 || count > 9)
    throw new ClusterError(`A local cluster has 1 to 9 nodes (asked for ${count}).`);
  dir = path.resolve(dir);
  const running = readCluster(dir);
  if (running && runningNodes(running).length) return { ...running, alreadyRunning: true };
  // A stopped cluster's folder is deleted below: not while another command is restarting a node.
  const release = running ? takeNodeLocks(running, running.nodes) : () => {};
  let programs: Programs;
  // mariadbd refuses to run as root, and rsync SST as root writes as `nobody`: as root, nodes run as mysql.
  const runAs = process.getuid?.() === 0 ? 'mysql' : undefined;
  try {
    programs = await checkPrerequisites();
    if (runAs) checkReachable(dir, runAs);
    prepareFolder(dir, running, log);
  } finally {
    release(); // when the folder was deleted, its lock files went with it
  }

  const started = Date.now();
  const info = await planCluster(dir, count, runAs);
  writeState(info); // written first, so `stop` (or the next start) can clean up after any failure
  log(`Initialising ${count} datadirs in ${dir}…`);
  await initialiseDatadirs(info, programs.installDb);
  log(`Starting ${count} nodes…`);
  for (const node of info.nodes) spawnNode(programs.mariadbd, info, node);
  try {
    await waitUntilSynced(info, info.nodes, () => count);
  } catch (error) {
    signalAll(info.nodes, 'SIGKILL'); // a half-started cluster is of no use
    throw error;
  }
  log(`All ${count} nodes Synced in ${((Date.now() - started) / 1000).toFixed(1)} s.`);
  return info;
}

/** Each node's port, process and Galera state; undefined when `dir` holds no cluster. */
export async function clusterStatus(dir: string): Promise<NodeStatus[] | undefined> {
  const info = readCluster(path.resolve(dir));
  if (!info) return undefined;
  return Promise.all(
    info.nodes.map(async (node) => {
      const pid = nodeProcesses(node)[0];
      const base = { node: node.node, sqlPort: node.sqlPort, pid };
      if (!pid) return { ...base, running: false };
      try {
        return { ...base, running: true, ...(await askWsrep(node.sqlPort)) };
      } catch (error) {
        return { ...base, running: true, problem: describe(error) };
      }
    }),
  );
}

/**
 * Stops every node (SIGTERM, then SIGKILL after 30 s) and deletes `dir` with all the cluster's data.
 * Nothing is deleted while any process still uses a datadir, or while another command is restarting
 * a node: the nodes are found in /proc, not in a list that may be out of date.
 */
export async function stopCluster(dir: string): Promise<StopReport> {
  dir = path.resolve(dir);
  const info = readCluster(dir);
  if (!info) {
    // An empty folder is safe to remove; one with other files in it is not ours to delete.
    if (fs.existsSync(dir) && fs.readdirSync(dir).length === 0) fs.rmdirSync(dir);
    return { stopped: [], killed: [] };
  }
  const release = takeNodeLocks(info, info.nodes);
  try {
    const running = runningNodes(info);
    const stubborn = await waitForExit(signalAll(running, 'SIGTERM'), STOP_LIMIT_MS);
    await waitForExit(signalAll(stubborn, 'SIGKILL'), 10_000);
    // Every node checked again, not only those seen at first: one started meanwhile keeps its data.
    const survivor = info.nodes.find((node) => nodeProcesses(node).length);
    if (survivor)
      throw new ClusterError(
        `Node ${survivor.node} (pid ${nodeProcesses(survivor)[0]}) would not stop; nothing was deleted.`,
      );
    const bytes = folderSize(dir);
    fs.rmSync(dir, { recursive: true, force: true });
    return {
      stopped: running.map((n) => n.node),
      killed: stubborn.map((n) => n.node),
      removed: { dir, bytes },
    };
  } finally {
    release(); // after a deletion, there is nothing left to release
  }
}

/** Kills node `node` (1 = the first) with SIGKILL, as a crash would: no clean shutdown, no goodbye. */
export async function killNode(dir: string, node: number): Promise<void> {
  const target = runningNode(dir, node);
  if ((await waitForExit(signalAll([target], 'SIGKILL'), 10_000)).length)
    throw new ClusterError(
      `Node ${node} (pid ${nodeProcesses(target)[0]}) is still running after SIGKILL.`,
    );
}

/**
 * Starts a stopped or crashed node again with its ports and datadir, and waits until it is Synced.
 * It first runs `mariadbd --wsrep-recover`: after a crash grastate.dat says seqno -1 (unknown), and
 * without the position InnoDB recovers the node would need a full copy (SST) instead of the writes it
 * missed (IST).
 */
export async function restartNode(dir: string, node: number): Promise<Rejoin> {
  return (await restartNodes(dir, [node]))[0];
}

/**
 * Restarts several stopped nodes together (see restartNode), and waits until all are Synced. Nodes
 * that went down together may have to come back together: a node left alone has lost its majority
 * (quorum) and takes no writes, so one node back with it may still be too few to decide anything.
 */
export async function restartNodes(dir: string, nodes: number[]): Promise<Rejoin[]> {
  const info = readClusterOrFail(dir);
  const targets = [...new Set(nodes)].map((node) => nodeOf(info, node));
  const release = takeNodeLocks(info, targets);
  try {
    for (const target of targets) {
      const pid = nodeProcesses(target)[0];
      if (pid) throw new ClusterError(`Node ${target.node} is already running (pid ${pid}).`);
    }
    const { mariadbd } = await checkPrerequisites();
    const started = Date.now();
    const positions = await Promise.all(
      targets.map((target) => recoverPosition(mariadbd, info, target)),
    );
    const logs = targets.map((target) => path.join(target.datadir, 'error.log'));
    const logStarts = logs.map((file) => (fs.existsSync(file) ? fs.statSync(file).size : 0));
    targets.forEach((target, i) => {
      const extra = positions[i] ? [`--wsrep_start_position=${positions[i]}`] : [];
      spawnNode(mariadbd, info, target, extra);
    });
    // The size wanted is that of every node running now, counted again at each look: another
    // command may be restarting a node at the same time, and this one waits for it too.
    await waitUntilSynced(info, targets, () => runningNodes(info).length).catch((error) => {
      const down = info.nodes.filter((node) => !isNodeRunning(node)).map((node) => node.node);
      if (error instanceof ClusterError && down.length)
        error.message += `\nNode${down.length === 1 ? '' : 's'} ${down.join(', ')} ${down.length === 1 ? 'is' : 'are'} down too: nodes that went down together may have to be restarted together, in one command.`;
      throw error;
    });
    return targets.map((target, i) => ({
      node: target.node,
      transfer: transferIn(fs.readFileSync(logs[i]).subarray(logStarts[i]).toString('utf8')),
      recoveredPosition: positions[i],
      ms: Date.now() - started,
    }));
  } finally {
    release();
  }
}

/** Where the cluster lives: CLUSTER_DIR (a relative path from the repository root), else .cluster there. */
export function clusterDirectory(env: Record<string, string | undefined>): string {
  return path.resolve(ROOT_DIR, env.CLUSTER_DIR?.trim() || '.cluster');
}

/**
 * Freezes node `node` (SIGSTOP), as a machine that stalls or a network that drops everything would:
 * it answers nothing and closes nothing. Returns what thaws it (SIGCONT).
 */
export function freezeNode(dir: string, node: number): () => void {
  const target = runningNode(dir, node);
  const frozen = signalAll([target], 'SIGSTOP');
  return () => {
    for (const pid of frozen.get(target)!) {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // it was stopped for good meanwhile
      }
    }
  };
}

/** Node `node` of the cluster in `dir`; a ClusterError unless it is running. */
export function runningNode(dir: string, node: number): ClusterNode {
  const target = nodeOf(readClusterOrFail(dir), node);
  if (!isNodeRunning(target)) throw new ClusterError(`Node ${node} is not running.`);
  return target;
}

/** `127.0.0.1:port,127.0.0.1:port,…`, node 1 first: the value for DB_HOSTS. */
export function clusterHosts(info: ClusterInfo): string {
  return info.nodes.map((node) => `${info.host}:${node.sqlPort}`).join(',');
}

/** The cluster described by `dir`'s state file, running or not; undefined when there is none. */
function readCluster(dir: string): ClusterInfo | undefined {
  const file = path.join(path.resolve(dir), STATE_FILE);
  if (!fs.existsSync(file)) return undefined;
  const saved = JSON.parse(fs.readFileSync(file, 'utf8')) as Omit<ClusterInfo, 'alreadyRunning'>;
  return { ...saved, alreadyRunning: false };
}

// ---------------------------------------------------------------------------------------------------
// Preparing a cluster
// ---------------------------------------------------------------------------------------------------

interface Programs {
  mariadbd: string;
  installDb: string;
}

/** Fails with one sentence naming the Debian packages when a piece is missing. */
async function checkPrerequisites(): Promise<Programs> {
  const programs = {
    mariadbd: debianOrPath('/usr/sbin/mariadbd'),
    installDb: debianOrPath('/usr/bin/mariadb-install-db'),
  };
  const missing: string[] = [];
  if (!fs.existsSync(GALERA_LIBRARY)) missing.push(`the Galera library (${GALERA_LIBRARY})`);
  // Each program is run rather than looked up on PATH, so this module never reads the environment.
  // Not mariadb-install-db: it ignores --version and would initialise the system's datadir.
  for (const program of [programs.mariadbd, 'rsync']) {
    if (await isMissing(program)) missing.push(path.basename(program));
  }
  if (missing.length)
    throw new ClusterError(
      `A local Galera cluster needs ${missing.join(', ')}: install them with \`${INSTALL_HINT}\`.`,
    );
  return programs;
}

async function isMissing(program: string): Promise<boolean> {
  try {
    await run(program, ['--version'], { timeout: 10_000 });
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT'; // any other failure: it is there
  }
}

/** Debian's path if the file is there, else the bare name, which spawn looks up on PATH. */
function debianOrPath(debianPath: string): string {
  return fs.existsSync(debianPath) ? debianPath : path.basename(debianPath);
}

/** Makes `dir` ready for a new cluster: created if missing, a stopped cluster's leftovers removed. */
function prepareFolder(dir: string, stopped: ClusterInfo | undefined, log: (line: string) => void) {
  if (stopped) {
    // Its nodes are gone (a reboot, a kill): their data cannot be trusted to rejoin, so start afresh.
    log(`Removing the stopped cluster left in ${dir}.`);
    fs.rmSync(dir, { recursive: true, force: true });
  } else if (fs.existsSync(dir) && fs.readdirSync(dir).length > 0) {
    throw new ClusterError(`${dir} already holds other files; give the cluster an empty folder.`);
  }
  fs.mkdirSync(dir, { recursive: true });
  fs.chmodSync(dir, 0o755); // the nodes run as `mysql` when we are root: it must be able to go in
}

/**
 * Can `user` (mysql) reach `dir`? Every folder above it must let others in (o+x): a cluster under
 * /root would fail with "Permission denied" deep inside mariadb-install-db.
 */
function checkReachable(dir: string, user: string): void {
  for (let folder = path.dirname(dir); ; folder = path.dirname(folder)) {
    if (fs.existsSync(folder) && (fs.statSync(folder).mode & 0o001) === 0)
      throw new ClusterError(
        `The nodes run as ${user}, which cannot enter ${folder}: put the cluster in a folder it can reach, e.g. under /tmp.`,
      );
    if (folder === path.dirname(folder)) return;
  }
}

/** Names, ports and folders for every node; nothing is started yet. */
async function planCluster(dir: string, count: number, runAs?: string): Promise<ClusterInfo> {
  const ports = await freePorts(count * 4);
  const nodes = Array.from({ length: count }, (_, i) => ({
    node: i + 1,
    sqlPort: ports[i * 4],
    gcommPort: ports[i * 4 + 1],
    istPort: ports[i * 4 + 2],
    sstPort: ports[i * 4 + 3],
    datadir: path.join(dir, `node${i + 1}`),
  }));
  const clusterName = `nimbus-${randomUUID().slice(0, 8)}`;
  return {
    dir,
    host: HOST,
    clusterName,
    runAs,
    startedAt: new Date().toISOString(),
    nodes,
    alreadyRunning: false,
  };
}

/**
 * `count` ports nobody listens on. They are drawn below Linux's ephemeral range (32768+), so that
 * outgoing connections never take one while a crashed node is away and wants its ports back.
 */
async function freePorts(count: number): Promise<number[]> {
  const held: net.Server[] = [];
  try {
    for (let tries = 0; held.length < count; tries++) {
      if (tries > 500) throw new ClusterError('Could not find free ports on 127.0.0.1.');
      const server = await listenOn(randomInt(20_000, 32_000));
      if (server) held.push(server); // kept open until all are chosen, so none is picked twice
    }
    return held.map((server) => (server.address() as net.AddressInfo).port);
  } finally {
    await Promise.all(held.map((server) => new Promise((done) => server.close(done))));
  }
}

function listenOn(port: number): Promise<net.Server | undefined> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(undefined));
    server.listen({ host: HOST, port, exclusive: true }, () => resolve(server));
  });
}

/**
 * Initialises node 1's datadir once and copies it to the others: they start identical, which is what
 * lets them form the cluster without any state transfer (see seedGaleraState).
 */
async function initialiseDatadirs(info: ClusterInfo, installDb: string): Promise<void> {
  const [first, ...others] = info.nodes;
  await run(
    installDb,
    [
      '--no-defaults',
      `--datadir=${first.datadir}`,
      ...(info.runAs ? [`--user=${info.runAs}`] : []),
      // root@localhost and root@127.0.0.1 with an empty password, like the tutorial's main server.
      '--auth-root-authentication-method=normal',
      '--skip-test-db',
      '--skip-name-resolve',
      ...innodbArgs(),
    ],
    { timeout: 120_000 },
  ).catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT')
      throw new ClusterError(`mariadb-install-db is missing: install it with \`${INSTALL_HINT}\`.`);
    throw new ClusterError(`mariadb-install-db failed: ${describe(error)}`);
  });
  for (const node of others) fs.cpSync(first.datadir, node.datadir, { recursive: true });
  const stateUuid = randomUUID(); // names this cluster's data: the same on every node
  const nodeUuids = info.nodes.map(() => randomUUID());
  for (const node of info.nodes) seedGaleraState(node, nodeUuids, stateUuid);
  if (info.runAs) await run('chown', ['-R', `${info.runAs}:${info.runAs}`, info.dir]);
}

/**
 * The usual start is: node 1 with --wsrep-new-cluster, then each other node joins and gets a state
 * transfer from a donor — one joiner at a time, about 6 s each with rsync. Instead we write the two
 * files in which Galera keeps its state after a full shutdown: grastate.dat (which data this is: the
 * same cluster UUID and seqno 0 on every node, true since the datadirs are copies) and gvwstate.dat
 * (the last primary component: all N nodes). Started together, the nodes restore that component as
 * after a power cut, all at the same position, so nobody needs a state transfer.
 */
function seedGaleraState(node: ClusterNode, nodeUuids: string[], stateUuid: string): void {
  const grastate = [
    '# GALERA saved state',
    'version: 2.1',
    `uuid:    ${stateUuid}`,
    'seqno:   0',
    'safe_to_bootstrap: 0',
  ];
  const gvwstate = [
    `my_uuid: ${nodeUuids[node.node - 1]}`,
    '#vwbeg',
    `view_id: 3 ${nodeUuids[0]} 1`, // 3 = a primary view
    'bootstrap: 0',
    ...nodeUuids.map((uuid) => `member: ${uuid} 0`),
    '#vwend',
  ];
  fs.writeFileSync(path.join(node.datadir, 'grastate.dat'), grastate.join('\n') + '\n');
  fs.writeFileSync(path.join(node.datadir, 'gvwstate.dat'), gvwstate.join('\n') + '\n');
}

// ---------------------------------------------------------------------------------------------------
// Running nodes
// ---------------------------------------------------------------------------------------------------

/** Small and quick to start on a 2-core machine; the same for mariadb-install-db and every start. */
function innodbArgs(): string[] {
  return ['--innodb_buffer_pool_size=32M', '--innodb_log_file_size=16M'];
}

/** Everything mariadbd needs to be one node of this cluster, with no option file involved. */
function nodeArgs(info: ClusterInfo, node: ClusterNode): string[] {
  const d = node.datadir;
  const provider = [
    `gmcast.listen_addr=tcp://${HOST}:${node.gcommPort}`,
    `ist.recv_addr=${HOST}:${node.istPort}`,
    // The writes kept for IST (Galera's default, said here because IST depends on it): at 1 MB/s of
    // writes, a node away for two minutes still rejoins by IST rather than by a full copy.
    'gcache.size=128M',
    // Restores the primary component from gvwstate.dat: the fast start relies on it. Each node then
    // waits for all the others; 60 s (not 30) leaves time for a slow machine to start the last one.
    'pc.recovery=TRUE',
    'pc.wait_prim_timeout=PT60S',
    // A crashed node is declared gone after 3 s instead of 5 s: writes elsewhere wait less for it.
    'evs.suspect_timeout=PT3S',
    'evs.inactive_timeout=PT6S',
    // Membership messages are resent every 0.3 s instead of 1 s: on loopback the nodes agree on a
    // new view (at start, or when one rejoins) about 2 s sooner.
    'evs.join_retrans_period=PT0.3S',
  ];
  return [
    '--no-defaults',
    ...(info.runAs ? [`--user=${info.runAs}`] : []),
    `--datadir=${d}`,
    `--port=${node.sqlPort}`,
    `--bind-address=${HOST}`,
    `--socket=${path.join(d, 'mysqld.sock')}`,
    `--pid-file=${path.join(d, 'mariadbd.pid')}`,
    `--log-error=${path.join(d, 'error.log')}`,
    '--skip-name-resolve', // no DNS look-up per connection; root@127.0.0.1 exists
    '--wsrep_on=ON',
    `--wsrep_provider=${GALERA_LIBRARY}`,
    `--wsrep_cluster_name=${info.clusterName}`,
    `--wsrep_cluster_address=gcomm://${info.nodes.map((n) => `${HOST}:${n.gcommPort}`).join(',')}`,
    `--wsrep_node_name=node${node.node}`,
    `--wsrep_node_address=${HOST}:${node.gcommPort}`,
    `--wsrep_provider_options=${provider.join(';')}`,
    `--wsrep_sst_receive_address=${HOST}:${node.sstPort}`,
    '--wsrep_sst_method=rsync',
    '--binlog_format=ROW',
    '--default_storage_engine=InnoDB',
    '--innodb_autoinc_lock_mode=2',
    // Galera keeps the data on the other nodes: a commit need not wait for this node's disk.
    '--innodb_flush_log_at_trx_commit=2',
    ...innodbArgs(),
  ];
}

/**
 * Starts mariadbd detached (its own process group, output to a file, not waited for), so the node
 * lives on after the command that started it exits. Its pid is not written down: nodeProcesses finds it.
 */
function spawnNode(mariadbd: string, info: ClusterInfo, node: ClusterNode, extra: string[] = []) {
  const output = fs.openSync(path.join(info.dir, `node${node.node}.out`), 'a');
  const child = spawn(mariadbd, [...nodeArgs(info, node), ...extra], {
    detached: true,
    stdio: ['ignore', output, output],
  });
  fs.closeSync(output);
  child.on('error', () => {}); // a failed start is seen below, or when the node never answers
  child.unref();
  if (child.pid === undefined) throw new ClusterError(`Could not start ${mariadbd}.`);
}

/** Runs `mariadbd --wsrep-recover`: InnoDB recovers and prints the last committed position. */
async function recoverPosition(
  mariadbd: string,
  info: ClusterInfo,
  node: ClusterNode,
): Promise<string | undefined> {
  const logFile = path.join(node.datadir, 'recover.log');
  fs.rmSync(logFile, { force: true });
  const args = [...nodeArgs(info, node), '--wsrep-recover', `--log-error=${logFile}`];
  for (let attempt = 1; ; attempt++) {
    try {
      await run(mariadbd, args, { timeout: RECOVER_LIMIT_MS });
      break;
    } catch (error) {
      // A recovery run that crashed is run once more: it changed nothing that a second run cannot
      // redo from the same checkpoint. Seen once in about a hundred restarts, on a busy CI machine
      // just after a SIGKILL; the log keeps both runs (mariadbd appends to it).
      if (attempt === 1 && crashIn(logFile) >= 0) continue;
      throw new ClusterError(
        `mariadbd --wsrep-recover failed for node ${node.node}: ${describe(error)}${whyIn(logFile)}`,
      );
    }
  }
  const text = fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8') : '';
  const positions = [...text.matchAll(/Recovered position:\s*([0-9a-f-]{36}:-?\d+)/g)];
  const position = positions.at(-1)?.[1];
  return position && !position.endsWith(':-1') ? position : undefined;
}

/** Which state transfer the node's error log shows since its restart. */
function transferIn(log: string): Rejoin['transfer'] {
  // With rsync, an IST also runs the SST script (which then says "rsync IST completed").
  if (/rsync SST completed on joiner/.test(log)) return 'SST';
  if (/IST received|Receiving IST/.test(log)) return 'IST';
  return 'none';
}

/**
 * The processes using this node's datadir (its mariadbd, or a --wsrep-recover run), looked up in /proc
 * each time rather than remembered: a pid written down goes stale when the node dies or another
 * command restarts it, and after a reboot it may belong to another program, which we must never
 * signal. A dying process's command line is empty, so it is no longer found here: waitForExit
 * follows it until its last thread has ended.
 */
function nodeProcesses(node: ClusterNode): number[] {
  const wanted = `--datadir=${node.datadir}`;
  return fs
    .readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => commandLine(Number(pid)).includes(wanted))
    .map(Number);
}

function commandLine(pid: number): string[] {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return []; // it exited meanwhile
  }
}

function isNodeRunning(node: ClusterNode): boolean {
  return nodeProcesses(node).length > 0;
}

/** Sends `name` to every process using each node's datadir (one may just have exited); returns their pids. */
function signalAll(nodes: ClusterNode[], name: NodeJS.Signals): Map<ClusterNode, number[]> {
  const signalled = new Map<ClusterNode, number[]>();
  for (const node of nodes) {
    const pids = nodeProcesses(node);
    for (const pid of pids) {
      try {
        process.kill(pid, name);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
      }
    }
    signalled.set(node, pids);
  }
  return signalled;
}

function runningNodes(info: ClusterInfo): ClusterNode[] {
  return info.nodes.filter(isNodeRunning);
}

/**
 * Marks these nodes as being changed by this command (a restart, a stop), one file per node holding
 * our pid, so that two commands never restart one node twice, nor stop the cluster under a restart.
 * A file left by a command that died is taken over. Returns the function that removes them.
 */
function takeNodeLocks(info: ClusterInfo, nodes: ClusterNode[]): () => void {
  const taken: string[] = [];
  const release = () => taken.forEach((file) => fs.rmSync(file, { force: true }));
  try {
    for (const node of nodes) {
      const file = path.join(info.dir, `node${node.node}.lock`);
      while (!tryCreate(file, String(process.pid))) {
        const holder = readIfThere(file);
        if (holder === undefined) continue; // its command just finished: try again
        // Empty: its command is writing its pid this instant.
        if (holder === '' || isAlive(Number(holder)))
          throw new ClusterError(
            `Node ${node.node} is being changed by another command (pid ${holder || 'unknown'}): wait for it to finish, or delete ${file} if no such command runs.`,
          );
        fs.rmSync(file, { force: true });
      }
      taken.push(file);
    }
  } catch (error) {
    release();
    throw error;
  }
  return release;
}

function tryCreate(file: string, text: string): boolean {
  try {
    fs.writeFileSync(file, text, { flag: 'wx' });
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

function readIfThere(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0); // no signal sent: only asks whether the process exists
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Waits until every signalled node has exited; returns those still running after `limitMs`. A
 * killed node's command line empties as soon as its main thread lets go of its memory, while its
 * other threads may still hold the datadir's files and locks (a recovery started then cannot lock
 * ibdata1): so each pid signalled is followed until it has no thread left.
 */
async function waitForExit(
  signalled: Map<ClusterNode, number[]>,
  limitMs: number,
): Promise<ClusterNode[]> {
  const deadline = Date.now() + limitMs;
  const stillRunning = (node: ClusterNode) =>
    isNodeRunning(node) || signalled.get(node)!.some((pid) => !hasExited(pid));
  let alive = [...signalled.keys()].filter(stillRunning);
  while (alive.length && Date.now() < deadline) {
    await sleep(100);
    alive = alive.filter(stillRunning);
  }
  return alive;
}

/** Gone from /proc, or a zombie whose every thread has ended (its files closed, its locks let go). */
function hasExited(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2)[0];
    return state === 'Z' && fs.readdirSync(`/proc/${pid}/task`).length <= 1;
  } catch {
    return true; // reaped meanwhile
  }
}

// ---------------------------------------------------------------------------------------------------
// Waiting for Synced
// ---------------------------------------------------------------------------------------------------

/**
 * Polls `nodes` until each is Synced in a cluster of `size()` nodes. Fails at once if a node's
 * process dies, and after SYNC_LIMIT_MS otherwise, saying which node and showing its error log.
 */
async function waitUntilSynced(info: ClusterInfo, nodes: ClusterNode[], size: () => number) {
  const deadline = Date.now() + SYNC_LIMIT_MS;
  for (;;) {
    const states = await Promise.all(nodes.map((node) => askWsrep(node.sqlPort).catch(() => null)));
    const waiting = nodes.filter((_, i) => {
      const state = states[i];
      return !state || state.state !== 'Synced' || state.clusterSize !== size();
    });
    if (!waiting.length) return;
    const dead = waiting.find((node) => !isNodeRunning(node));
    if (dead)
      throw new ClusterError(`Node ${dead.node} stopped while starting.${nodeLog(info, dead)}`);
    if (Date.now() > deadline) {
      const late = waiting[0];
      const state = states[nodes.indexOf(late)];
      const seen = state ? `${state.state}, cluster size ${state.clusterSize}` : 'not answering';
      throw new ClusterError(
        `Node ${late.node} was not Synced in a cluster of ${size()} after ${SYNC_LIMIT_MS / 1000} s (${seen}).${nodeLog(info, late)}`,
      );
    }
    await sleep(200);
  }
}

/** The node's own view of the cluster, asked over SQL as root with the empty password. */
async function askWsrep(port: number): Promise<{ state: string; clusterSize: number }> {
  const connection = await mysql.createConnection({
    host: HOST,
    port,
    user: 'root',
    password: '',
    connectTimeout: 2000,
  });
  try {
    const [rows] = await connection.query<mysql.RowDataPacket[]>({
      sql: "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_local_state_comment', 'wsrep_cluster_size')",
      timeout: 2000,
    });
    const value = (name: string) => rows.find((row) => row.Variable_name === name)?.Value;
    return {
      state: String(value('wsrep_local_state_comment') ?? 'unknown'),
      clusterSize: Number(value('wsrep_cluster_size') ?? 0),
    };
  } finally {
    await connection.end().catch(() => connection.destroy());
  }
}

// ---------------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------------

function writeState(info: ClusterInfo): void {
  const { alreadyRunning: _, ...saved } = info;
  fs.writeFileSync(path.join(info.dir, STATE_FILE), JSON.stringify(saved, null, 2) + '\n');
}

function readClusterOrFail(dir: string): ClusterInfo {
  const info = readCluster(dir);
  if (!info) throw new ClusterError(`There is no cluster in ${path.resolve(dir)}.`);
  return info;
}

function nodeOf(info: ClusterInfo, node: number): ClusterNode {
  const found = info.nodes.find((n) => n.node === node);
  if (!found)
    throw new ClusterError(`There is no node ${node}: nodes are 1 to ${info.nodes.length}.`);
  return found;
}

/** The end of a node's error log (or of its console output if it died before opening the log). */
function nodeLog(info: ClusterInfo, node: ClusterNode): string {
  const errorLog = path.join(node.datadir, 'error.log');
  const hasLog = fs.existsSync(errorLog) && fs.statSync(errorLog).size > 0;
  return tailOf(hasLog ? errorLog : path.join(info.dir, `node${node.node}.out`));
}

function tailOf(file: string, lines = 15): string {
  if (!fs.existsSync(file)) return '';
  const tail = fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines);
  return `\nLast lines of ${file}:\n${tail.join('\n')}`;
}

/** Where the last crash report starts in mariadbd's log ("… got signal 11 ;"), or -1. */
function crashIn(file: string): number {
  if (!fs.existsSync(file)) return -1;
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .findLastIndex((line) => / got signal \d+/.test(line));
}

/**
 * Why a run of mariadbd failed, from its log. A crash report ends in a page of limits and versions:
 * what says why is the lines just before it and its stack, so those are shown instead of the tail.
 */
function whyIn(file: string): string {
  const crash = crashIn(file);
  if (crash < 0) return tailOf(file);
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const stack = lines.slice(crash).filter((line) => /\+0x[0-9a-f]+\)/.test(line));
  const shown = [...lines.slice(Math.max(0, crash - 8), crash + 1), ...stack.slice(0, 12)];
  return `\nFrom ${file}:\n${shown.join('\n')}`;
}

function folderSize(dir: string): number {
  let bytes = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) bytes += fs.statSync(path.join(entry.parentPath, entry.name)).size;
  }
  return bytes;
}

function describe(error: unknown): string {
  const e = error as { code?: string; stderr?: string; message?: string };
  return (e.stderr?.trim().split('\n').pop() || e.message || e.code || String(error)).trim();
}
