// Many customers at once through the full agent loop, against one server or a cluster: `npm run load`.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os, { constants as osConstants } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import mysql from 'mysql2/promise';
import {
  parseFlags,
  runMain,
  type ScriptIo,
  startedDirectly,
  type StopSignal,
  UsageError,
} from '../../../shared/cli.ts';
import { logDir as traceDir, type LlmSettings } from '../../../shared/config.ts';
import { closePool, connectionOptions, query, withDatabase } from '../../../shared/db.ts';
import { commandFor } from '../../../shared/hints.ts';
import { printable, printableJson } from '../../../shared/text.ts';
import type { AgentOptions } from '../../agent.ts';
import { DEFAULT_BUDGET } from '../../context.ts';
import { newConversation } from '../../memory.ts';
import { Nimbus, whatHappened, type Watch } from '../nimbus.ts';
import { DEFAULT_MAX_TOOL_CALLS } from '../question/call-limits.ts';
import { ensureFullDatabase } from '../store/ensure-tables.ts';
import { ClusterError, clusterDirectory, freezeNode, runningNode } from './local-cluster.ts';
import {
  ClusterDatabase,
  clusterSettings,
  openClusterDatabase,
} from '../store/cluster-database.ts';

type CallModel = NonNullable<AgentOptions['callModel']>;
const STOP_SIGNALS: StopSignal[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

export function usage(io: ScriptIo): string {
  return `Usage: ${commandFor(import.meta.url, '[--customers=1,8,32,128] [--turns=4] [--pace=300] [--spread] [--json]', io)}

Creates a scratch database on the server in .env (DB_HOST, or the cluster in DB_HOSTS), and for each
number of customers K answers K conversations at once, --turns questions each, through the full agent
loop (lease, hardened store, tools) with a fake model that takes --pace ms per call (a tool call, then
the answer). Prints turns per second, the median and 95th percentile of loading the context and of
saving a step, the questions that had to wait for a lease, and errors. --spread runs one process per
server in DB_HOSTS, each preferring its own node (writers spread), instead of one process for all.
--cut-connections=<ms> kills one of the run's database connections every <ms> ms (as a restart or a
network blip would); --freeze-node=<n> freezes node n of the local cluster (npm run cluster, in
CLUSTER_DIR) with SIGSTOP a second into each round, for --freeze-seconds (default 10). Either then
counts the turns answered, stored, lost and stored twice, and each process's memory before and after.
The scratch database is dropped at the end.`;
}

/** What one process measured: durations in milliseconds. */
interface Measured {
  /** From the first question to the last answer, without the process's start. */
  seconds: number;
  turns: number;
  loads: number[];
  saves: number[];
  leaseWaits: number;
  errors: string[];
  /** The worker's resident memory, MB, before the first question and after the last. */
  rss: [before: number, after: number];
  conversations: string[];
}

export async function main(io: ScriptIo): Promise<number | void> {
  const { values } = parseFlags({
    args: io.args,
    options: {
      customers: { type: 'string', default: '1,8,32,128' },
      turns: { type: 'string', default: '4' },
      pace: { type: 'string', default: '300' },
      spread: { type: 'boolean' },
      'cut-connections': { type: 'string' },
      'freeze-node': { type: 'string' },
      'freeze-seconds': { type: 'string', default: '10' },
      json: { type: 'boolean' },
      worker: { type: 'string' }, // internal: this process is one of --spread's
    },
  });
  const turns = whole(values.turns, '--turns');
  const pace = whole(values.pace, '--pace');
  if (values.worker !== undefined) {
    // Settings nothing reads: the paced model answers instead of a provider.
    const llm: LlmSettings = {
      provider: 'openai',
      apiKey: 'none',
      model: 'paced',
      timeoutMs: 60_000,
    };
    const nimbus = new Nimbus({
      llm,
      logDir: traceDir(io.env),
      budget: DEFAULT_BUDGET,
      notesMaxChars: 0,
      maxToolCalls: DEFAULT_MAX_TOOL_CALLS,
    });
    return worker(io, whole(values.worker, '--worker'), turns, nimbus, pacedModel(pace));
  }
  const sizes = values.customers.split(',').map((k) => whole(k, '--customers'));
  const cutEvery =
    values['cut-connections'] === undefined
      ? undefined
      : whole(values['cut-connections'], '--cut-connections');
  const freezing =
    values['freeze-node'] === undefined
      ? undefined
      : {
          node: whole(values['freeze-node'], '--freeze-node'),
          seconds: whole(values['freeze-seconds'], '--freeze-seconds'),
          dir: clusterDirectory(io.env),
        };
  if (freezing && cutEvery !== undefined)
    throw new UsageError('Give --cut-connections or --freeze-node, not both: one fault at a time.');
  if (freezing) {
    // Found now, not a second into the first round, when the run has begun.
    try {
      runningNode(freezing.dir, freezing.node);
    } catch (error) {
      if (!(error instanceof ClusterError)) throw error;
      io.error(`${printable(error.message)} (--freeze-node needs a running local cluster.)`);
      return 1;
    }
  }
  const settings = clusterSettings(io.env);
  const processes = values.spread ? settings.servers.length : 1;
  if (values.spread && processes < 2)
    throw new UsageError('--spread needs several servers in DB_HOSTS.');

  const database = `nimbus_load_${Date.now().toString(36)}`;
  const log = values.json ? () => {} : (line: string) => io.error(line);
  log(`Working in the scratch database ${database} (dropped at the end).`);
  // The traces of the run go to a folder of their own, deleted with the database.
  const logDir = mkdtempSync(path.join(os.tmpdir(), 'nimbus-load-'));
  const env = { ...io.env, DB_NAME: database, LOG_DIR: logDir };
  const scratch = new ClusterDatabase({ ...settings, database });
  const workers = new Set<ChildProcess>();
  let fault: Fault | undefined;
  // Through the full Nimbus's database too (a node in the primary component); a failure to drop it
  // is said, never put in the place of what the run itself said.
  const cleanUp = async () => {
    await withDatabase(scratch, () => query(`DROP DATABASE IF EXISTS \`${database}\``))
      .catch((error: unknown) =>
        io.error(
          `The scratch database ${database} could not be dropped (${printable((error as Error).message, { singleLine: true })}): drop it with DROP DATABASE.`,
        ),
      )
      .finally(() => scratch.close());
    rmSync(logDir, { recursive: true, force: true });
  };
  // Ctrl-C (or a kill) mid-run: a node left frozen would hold the whole cluster, so it is thawed
  // first; then the workers end, and what the run made goes.
  const stop = async (signal: StopSignal) => {
    await fault?.stop();
    for (const child of workers) child.kill('SIGTERM');
    await cleanUp();
    io.error(
      `Stopped${freezing ? `: node ${freezing.node} is thawed` : ''}; the scratch database ${database} is dropped.`,
    );
    process.exit(128 + osConstants.signals[signal]);
  };
  const onStop = (signal: StopSignal) => void stop(signal);
  for (const signal of STOP_SIGNALS) io.signals.on(signal, onStop);
  const results = [];
  try {
    await withDatabase(scratch, () => ensureFullDatabase(() => {}));
    for (const k of sizes) {
      log(
        `${k} customer${k === 1 ? '' : 's'} at once, ${processes} process${processes === 1 ? '' : 'es'}…`,
      );
      fault =
        cutEvery !== undefined
          ? cutConnections(database, cutEvery)
          : freezing && frozenFor(freezing, log);
      const parts = await Promise.all(
        Array.from({ length: processes }, (_, p) =>
          runWorker(
            share(k, processes, p),
            { turns, pace },
            rotated(settings.servers, p),
            env,
            workers,
          ),
        ),
      ).finally(() => fault?.stop());
      results.push({
        ...summary(k, parts),
        ...(fault && (await storedOnce(scratch, parts, await fault.stop()))),
      });
    }
  } finally {
    for (const signal of STOP_SIGNALS) io.signals.off(signal, onStop);
    await cleanUp();
  }
  if (values.json) return void io.log(printableJson({ pace_ms: pace, turns, processes, results }));
  const injected = freezing ? `node ${freezing.node} frozen (s)` : 'connections killed';
  printTable(io, results, {
    pace,
    turns,
    processes,
    servers: settings.servers.length,
    fault: injected,
  });
}

/**
 * The model, played by this script: each question gets a tool call, then an answer, each after `pace`
 * ms, as a real model takes. The agent is handed it as its model call, so no model server is involved
 * and what is measured is Nimbus's own work: the lease, the store, the tool.
 */
function pacedModel(pace: number): CallModel {
  return async (_llm, messages) => {
    await sleep(pace);
    const text = 'Here is what I found about your orders.';
    const calls =
      messages.at(-1)?.role === 'tool'
        ? []
        : [
            {
              id: `call_${randomBytes(6).toString('hex')}`,
              name: 'list_customer_orders',
              arguments: {},
            },
          ];
    const message = {
      role: 'assistant' as const,
      content: calls.length ? '' : text,
      tool_calls: calls,
    };
    return { text: message.content, tool_calls: calls, message };
  };
}

/** One process of the run (this script again, with --worker=K), preferring the servers in this order. */
function runWorker(
  customers: number,
  { turns, pace }: { turns: number; pace: number },
  servers: Array<{ host: string; port: number }>,
  env: Record<string, string | undefined>,
  running: Set<ChildProcess>,
): Promise<Measured> {
  if (customers === 0)
    return Promise.resolve({
      seconds: 0,
      turns: 0,
      loads: [],
      saves: [],
      leaseWaits: 0,
      errors: [],
      rss: [0, 0],
      conversations: [],
    });
  const script = fileURLToPath(import.meta.url);
  const hosts = servers.map((s) => `${s.host}:${s.port}`).join(',');
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', script, `--worker=${customers}`, `--turns=${turns}`, `--pace=${pace}`],
    {
      env: { ...env, DB_HOSTS: hosts },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  running.add(child);
  let out = '';
  child.stdout.on('data', (chunk) => (out += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      running.delete(child);
      if (code === 0) resolve(JSON.parse(out));
      else reject(new Error(`A load process ended with ${code}.`));
    });
  });
}

/** In a worker: `customers` conversations at once, `turns` questions each, through the full Nimbus, timing the store. */
async function worker(
  io: ScriptIo,
  customers: number,
  turns: number,
  nimbus: Nimbus,
  callModel: CallModel,
): Promise<void> {
  const measured: Measured = {
    seconds: 0,
    turns: 0,
    loads: [],
    saves: [],
    leaseWaits: 0,
    errors: [],
    rss: [megabytes(process.memoryUsage().rss), 0],
    conversations: [],
  };
  const watch: Watch = {
    callModel,
    quiet: true,
    onWait: () => measured.leaseWaits++,
    onStoreTime: (what, ms) => (what === 'load' ? measured.loads : measured.saves).push(ms),
  };
  const started = performance.now();
  await Promise.all(
    Array.from({ length: customers }, async (_, i) => {
      // The sample store's customers, in turn: several conversations of one customer are fine.
      const customer = { id: (i % 8) + 1, name: `Customer ${(i % 8) + 1}`, email: '' };
      let conversation = newConversation(customer.id);
      measured.conversations.push(conversation.id);
      for (let t = 0; t < turns; t++) {
        try {
          const question = `Question ${t}: where are my orders?`;
          const asked = await nimbus.ask(customer, conversation, question, watch);
          conversation = asked.conversation;
          const problem = whatHappened(asked) ?? asked.result?.saveError;
          if (problem) measured.errors.push(problem);
          else measured.turns++;
        } catch (error) {
          measured.errors.push(error instanceof Error ? error.message : String(error));
        }
      }
    }),
  );
  measured.seconds = (performance.now() - started) / 1000;
  measured.rss[1] = megabytes(process.memoryUsage().rss);
  await closePool();
  io.log(JSON.stringify(measured));
}

function summary(customers: number, parts: Measured[]) {
  const seconds = Math.max(...parts.map((m) => m.seconds));
  const all = (pick: (m: Measured) => number[]) => parts.flatMap(pick).sort((a, b) => a - b);
  const loads = all((m) => m.loads);
  const saves = all((m) => m.saves);
  const turns = parts.reduce((sum, m) => sum + m.turns, 0);
  const errors = parts.flatMap((m) => m.errors);
  return {
    customers,
    turns,
    turns_per_second: round(turns / seconds),
    load_ms_p50: round(percentile(loads, 50)),
    load_ms_p95: round(percentile(loads, 95)),
    save_ms_p50: round(percentile(saves, 50)),
    save_ms_p95: round(percentile(saves, 95)),
    lease_waits: parts.reduce((sum, m) => sum + m.leaseWaits, 0),
    errors: errors.length,
    first_error: errors[0],
  };
}

function printTable(
  io: ScriptIo,
  results: Array<ReturnType<typeof summary> & Partial<Awaited<ReturnType<typeof storedOnce>>>>,
  run: { pace: number; turns: number; processes: number; servers: number; fault: string },
): void {
  const where = run.servers > 1 ? `a cluster of ${run.servers}` : 'one server';
  io.log(
    `Against ${where}, ${run.processes} process${run.processes === 1 ? '' : 'es'}; the model takes ${run.pace} ms per call, 2 calls per question, ${run.turns} questions per customer.\n`,
  );
  io.log(
    '| customers | turns/s | load p50 | load p95 | save p50 | save p95 | lease waits | errors |',
  );
  io.log(
    '| --------: | ------: | -------: | -------: | -------: | -------: | ---------: | -----: |',
  );
  for (const r of results)
    io.log(
      `| ${r.customers} | ${r.turns_per_second} | ${r.load_ms_p50} ms | ${r.load_ms_p95} ms | ${r.save_ms_p50} ms | ${r.save_ms_p95} ms | ${r.lease_waits} | ${r.errors} |`,
    );
  const cut = results.filter((r) => 'killed' in r) as Array<
    Awaited<ReturnType<typeof storedOnce>> & { customers: number }
  >;
  if (cut.length) {
    io.log(
      `\n| customers | ${run.fault} | answered | stored | lost | stored twice | memory (MB) before → after |`,
    );
    io.log(
      `| --------: | ${'-'.repeat(run.fault.length - 1)}: | -------: | -----: | ---: | -----------: | -------------------------- |`,
    );
    for (const r of cut)
      io.log(
        `| ${r.customers} | ${r.killed} | ${r.answered} | ${r.stored} | ${r.lost} | ${r.doubled} | ${r.rss_mb} |`,
      );
  }
  const failed = results.find((r) => r.first_error);
  if (failed)
    io.log(`\nFirst error (${failed.customers} customers): ${printable(failed.first_error!)}`);
}

/** Customers of process `p` of `n`: K split as evenly as it goes. */
function share(k: number, n: number, p: number): number {
  return Math.floor(k / n) + (p < k % n ? 1 : 0);
}

/** The servers with process p's preferred one first. */
function rotated<T>(servers: T[], p: number): T[] {
  return [...servers.slice(p % servers.length), ...servers.slice(0, p % servers.length)];
}

function whole(value: string, flag: string): number {
  if (/^\d{1,6}$/.test(value.trim())) return Number(value);
  throw new UsageError(
    `${flag} takes whole numbers (got "${printable(value, { singleLine: true })}").`,
  );
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

function megabytes(bytes: number): number {
  return Math.round(bytes / 1e5) / 10;
}

/** A fault injected during a round; stop() ends it and says how much of it there was. */
interface Fault {
  stop(): Promise<number>;
}

/**
 * Kills one of the run's connections to `database` every `ms` ms (KILL, as a restart or a network blip
 * ends a session), from a connection of its own; stop() ends it and says how many it killed.
 */
function cutConnections(database: string, ms: number): Fault {
  let killed = 0;
  let stopped = false;
  const admin = mysql.createConnection(connectionOptions());
  admin.catch(() => {}); // a server that cannot be reached: each tick finds it so, and kills nothing
  const cutOne = async () => {
    const db = await admin;
    const [rows] = await db.query<mysql.RowDataPacket[]>(
      'SELECT id FROM information_schema.processlist WHERE db = ? AND id <> CONNECTION_ID()',
      [database],
    );
    const victim = rows[Math.floor(Math.random() * rows.length)];
    if (!victim || stopped) return;
    await db.query('KILL ?', [victim.id]);
    killed++;
  };
  // A connection that ended before its KILL, or a tick that failed: nothing killed, and the table says so.
  const timer = setInterval(() => void cutOne().catch(() => {}), ms);
  return {
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await admin.then((db) => db.end()).catch(() => {});
      return killed;
    },
  };
}

/**
 * Freezes a node of the local cluster a second from now for `seconds` (thawed at stop() at the
 * latest); stop() says how many seconds it stayed frozen.
 */
function frozenFor(
  { node, seconds, dir }: { node: number; seconds: number; dir: string },
  log: (line: string) => void,
): Fault {
  let thaw: (() => void) | undefined;
  let frozenAt = 0;
  let frozenMs = 0;
  const unfreeze = () => {
    if (!thaw) return;
    thaw();
    thaw = undefined;
    frozenMs = Date.now() - frozenAt;
    log(`Node ${node} thawed after ${(frozenMs / 1000).toFixed(1)} s.`);
  };
  const start = setTimeout(() => {
    try {
      thaw = freezeNode(dir, node);
    } catch (error) {
      // Stopped since the run began: the round goes on unfrozen, and the table shows 0 s.
      log(`Node ${node} could not be frozen: ${printable((error as Error).message)}`);
      return;
    }
    frozenAt = Date.now();
    log(`Node ${node} frozen (SIGSTOP).`);
  }, 1000);
  const end = setTimeout(unfreeze, 1000 + seconds * 1000);
  return {
    stop: async () => {
      clearTimeout(start);
      clearTimeout(end);
      unfreeze();
      return Math.round(frozenMs / 1000);
    },
  };
}

/** What the database holds after a run with a fault: each question is stored once, or is lost. */
/**
 * What the database holds of the run, read through the full Nimbus's database: on a cluster, from a
 * node in the primary component, after every write the cluster committed (a node just thawed may have
 * been left out of it, and would answer with what it had before its freeze).
 */
async function storedOnce(scratch: ClusterDatabase, parts: Measured[], killed: number) {
  const rows = await withDatabase(scratch, () =>
    query<Array<{ questions: number; distinct_questions: number }>>(
      `SELECT COUNT(*) AS questions, COUNT(DISTINCT conversation_id, CAST(data AS CHAR)) AS distinct_questions
         FROM messages WHERE role = 'user' AND conversation_id IN (?)`,
      [parts.flatMap((m) => m.conversations)],
    ),
  );
  const answered = parts.reduce((sum, m) => sum + m.turns, 0);
  const stored = Number(rows[0].distinct_questions);
  return {
    killed,
    answered,
    stored,
    lost: Math.max(0, answered - stored),
    doubled: Number(rows[0].questions) - stored,
    rss_mb: parts.map((m) => `${m.rss[0]} → ${m.rss[1]}`).join(', '),
  };
}

export const openDatabase = openClusterDatabase;
if (startedDirectly(import.meta.url)) await runMain(main, usage, { openDatabase });
