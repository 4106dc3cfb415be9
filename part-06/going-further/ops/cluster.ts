// Going further: a real 3-node MariaDB Galera cluster on this machine, `npx tsx cluster.ts start|stop|status|restart <node>`.
import path from 'node:path';
import { dim, parseFlags, runMain, UsageError } from '../../../shared/cli.ts';
import { ROOT_DIR } from '../../../shared/config.ts';
import { commandFor, displayPath } from '../../../shared/hints.ts';
import { printable } from '../../../shared/text.ts';
import {
  ClusterError,
  clusterHosts,
  clusterStatus,
  restartNodes,
  startCluster,
  stopCluster,
  type Rejoin,
} from './local-cluster.ts';

const USAGE = `Usage: ${commandFor(import.meta.url, 'start|stop|status|restart <node>…')}

Runs a real 3-node MariaDB Galera cluster on 127.0.0.1, from Debian's galera-4, rsync and
mariadb-server packages (apt-get install galera-4 rsync mariadb-server):
  start   creates and starts the nodes, then prints the DB_HOSTS line to put in .env
  status  shows each node's port, process and Galera state
  restart starts stopped nodes again (restart 2, or restart 1 2 for two that went down together)
          and waits until each has caught up with the others
  stop    stops every node and deletes the cluster's folder with all its data
The cluster lives in CLUSTER_DIR (default: .cluster in the repository root).`;

const COMMANDS = ['start', 'stop', 'status', 'restart'];

/** How a restarted node caught up, from its error log. */
const HOW: Record<Rejoin['transfer'], string> = {
  IST: 'received the writes it missed (IST)',
  SST: 'received a full copy of the data (SST)',
  none: 'had missed nothing',
};

await runMain(async () => {
  const { positionals } = parseFlags({ options: {}, allowPositionals: true });
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
  const dir = path.resolve(ROOT_DIR, process.env.CLUSTER_DIR?.trim() || '.cluster');
  try {
    if (command === 'start') await start(dir);
    else if (command === 'stop') await stop(dir);
    else if (command === 'restart') await restart(dir, nodes.map(Number));
    else await status(dir);
  } catch (error) {
    if (!(error instanceof ClusterError)) throw error;
    console.error(printable(error.message));
    return 1;
  }
}, USAGE);

async function start(dir: string): Promise<void> {
  const info = await startCluster(dir, { log: (line) => console.log(dim(line)) });
  if (info.alreadyRunning)
    console.log(`A cluster is already running in ${displayPath(dir)} (since ${info.startedAt}).`);
  await status(dir);
  console.log(`\nTo use it, put this line in .env:\nDB_HOSTS=${clusterHosts(info)}`);
  console.log(`\nStop it, deleting its data, with: ${commandFor(import.meta.url, 'stop')}`);
}

async function status(dir: string): Promise<void> {
  const nodes = await clusterStatus(dir);
  if (!nodes) {
    console.log(
      `No cluster in ${displayPath(dir)}. Start one with ${commandFor(import.meta.url, 'start')}.`,
    );
    return;
  }
  console.log(`Cluster in ${displayPath(dir)}:`);
  for (const node of nodes) {
    const state = !node.running
      ? 'not running'
      : node.state
        ? `${node.state}, cluster size ${node.clusterSize}`
        : `running but not answering (${node.problem})`;
    const pid = node.pid ? `pid ${node.pid}  ` : '';
    console.log(`  node ${node.node}  127.0.0.1:${node.sqlPort}  ${pid}${state}`);
  }
}

async function restart(dir: string, nodes: number[]): Promise<void> {
  const rejoins = await restartNodes(dir, nodes);
  for (const r of rejoins)
    console.log(
      `Node ${r.node} is Synced again after ${(r.ms / 1000).toFixed(1)} s: it ${HOW[r.transfer]}.`,
    );
  await status(dir);
}

async function stop(dir: string): Promise<void> {
  const report = await stopCluster(dir);
  if (!report.removed) {
    console.log(`No cluster in ${displayPath(dir)}; nothing to stop.`);
    return;
  }
  const stopped = report.stopped.length
    ? `Stopped node${report.stopped.length === 1 ? '' : 's'} ${report.stopped.join(', ')}`
    : 'No node was running';
  const killed = report.killed.length
    ? ` (${report.killed.join(', ')} did not stop within 30 s and had to be killed)`
    : '';
  const megabytes = Math.round(report.removed.bytes / 1e6);
  console.log(
    `${stopped}${killed}; deleted ${displayPath(report.removed.dir)} and its ${megabytes} MB of data.`,
  );
}
