// A real 3-node MariaDB Galera cluster on this machine, `npx tsx cluster.ts start|stop|status|restart <node>`.
import {
  dim,
  parseFlags,
  runMain,
  type ScriptIo,
  startedDirectly,
  UsageError,
} from '../../../shared/cli.ts';
import { commandFor, displayPath } from '../../../shared/hints.ts';
import { printable } from '../../../shared/text.ts';
import {
  ClusterError,
  clusterDirectory,
  clusterHosts,
  clusterStatus,
  restartNodes,
  startCluster,
  stopCluster,
  type Rejoin,
} from './local-cluster.ts';
import { openClusterDatabase } from '../store/cluster-database.ts';

export function usage(io: ScriptIo): string {
  return `Usage: ${commandFor(import.meta.url, 'start|stop|status|restart <node>…', io)}

Runs a real 3-node MariaDB Galera cluster on 127.0.0.1, from Debian's galera-4, rsync and
mariadb-server packages (apt-get install galera-4 rsync mariadb-server):
  start   creates and starts the nodes, then prints the DB_HOSTS line to put in .env
  status  shows each node's port, process and Galera state
  restart starts stopped nodes again (restart 2, or restart 1 2 for two that went down together)
          and waits until each has caught up with the others
  stop    stops every node and deletes the cluster's folder with all its data
The cluster lives in CLUSTER_DIR (default: .cluster in the repository root).`;
}

const COMMANDS = ['start', 'stop', 'status', 'restart'];

/** How a restarted node caught up, from its error log. */
const HOW: Record<Rejoin['transfer'], string> = {
  IST: 'received the writes it missed (IST)',
  SST: 'received a full copy of the data (SST)',
  none: 'had missed nothing',
};

export async function main(io: ScriptIo): Promise<number | void> {
  const { positionals } = parseFlags({ args: io.args, options: {}, allowPositionals: true });
  const [command, ...nodes] = positionals;
  if (command === undefined)
    throw new UsageError('Give one command: start, stop, status or restart <node>.');
  if (!COMMANDS.includes(command))
    throw new UsageError(
      `Unknown command "${printable(command, { singleLine: true })}": use start, stop, status or restart <node>.`,
    );
  if (command === 'restart' && !nodes.length)
    throw new UsageError('Say which node to restart: restart 2, or restart 1 2 for two at once.');
  if (command !== 'restart' && nodes.length)
    throw new UsageError(`${command} takes no node: it acts on the whole cluster.`);
  const bad = nodes.find((node) => !/^[1-9]\d*$/.test(node));
  if (bad !== undefined)
    throw new UsageError(
      `A node is given by its number, like 2 (got "${printable(bad, { singleLine: true })}").`,
    );
  // CLUSTER_DIR: where the nodes' datadirs live; a relative path is taken from the repository root.
  const dir = clusterDirectory(io.env);
  try {
    if (command === 'start') await start(io, dir);
    else if (command === 'stop') await stop(io, dir);
    else if (command === 'restart') await restart(io, dir, nodes.map(Number));
    else await status(io, dir);
  } catch (error) {
    if (!(error instanceof ClusterError)) throw error;
    io.error(printable(error.message));
    return 1;
  }
}

async function start(io: ScriptIo, dir: string): Promise<void> {
  const info = await startCluster(dir, { log: (line) => io.log(dim(line, io.stdout)) });
  if (info.alreadyRunning)
    io.log(`A cluster is already running in ${displayPath(dir, io)} (since ${info.startedAt}).`);
  await status(io, dir);
  io.log(`\nTo use it, put this line in .env:\nDB_HOSTS=${clusterHosts(info)}`);
  io.log(`\nStop it, deleting its data, with: ${commandFor(import.meta.url, 'stop', io)}`);
}

async function status(io: ScriptIo, dir: string): Promise<void> {
  const nodes = await clusterStatus(dir);
  if (!nodes) {
    io.log(
      `No cluster in ${displayPath(dir, io)}. Start one with ${commandFor(import.meta.url, 'start', io)}.`,
    );
    return;
  }
  io.log(`Cluster in ${displayPath(dir, io)}:`);
  for (const node of nodes) {
    const state = !node.running
      ? 'not running'
      : node.state
        ? `${node.state}, cluster size ${node.clusterSize}`
        : `running but not answering (${node.problem})`;
    const pid = node.pid ? `pid ${node.pid}  ` : '';
    io.log(`  node ${node.node}  127.0.0.1:${node.sqlPort}  ${pid}${state}`);
  }
}

async function restart(io: ScriptIo, dir: string, nodes: number[]): Promise<void> {
  const rejoins = await restartNodes(dir, nodes);
  for (const r of rejoins)
    io.log(
      `Node ${r.node} is Synced again after ${(r.ms / 1000).toFixed(1)} s: it ${HOW[r.transfer]}.`,
    );
  await status(io, dir);
}

async function stop(io: ScriptIo, dir: string): Promise<void> {
  const report = await stopCluster(dir);
  if (!report.removed) {
    io.log(`No cluster in ${displayPath(dir, io)}; nothing to stop.`);
    return;
  }
  const stopped = report.stopped.length
    ? `Stopped node${report.stopped.length === 1 ? '' : 's'} ${report.stopped.join(', ')}`
    : 'No node was running';
  const killed = report.killed.length
    ? ` (${report.killed.join(', ')} did not stop within 30 s and had to be killed)`
    : '';
  const megabytes = Math.round(report.removed.bytes / 1e6);
  io.log(
    `${stopped}${killed}; deleted ${displayPath(report.removed.dir, io)} and its ${megabytes} MB of data.`,
  );
}

export const openDatabase = openClusterDatabase;
if (startedDirectly(import.meta.url)) await runMain(main, usage, { openDatabase });
