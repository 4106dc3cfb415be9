// The database, for every part: a connection pool per server (one, or the nodes of a cluster), statements and transactions with every wait bounded and failures said in one sentence.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Socket } from 'node:net';
import mysql, { type Pool, type PoolConnection } from 'mysql2/promise';
import type { DbServer, DbSettings } from './config.ts';
import {
  DatabaseError,
  explainDatabaseError as explainWith,
  isRetryable,
  notAnswered as notAnsweredBy,
} from './db-errors.ts';
import { besideScript, commandFor, type TypedAt } from './hints.ts';

export { DatabaseError } from './db-errors.ts';

/** One server Nimbus may use, with its pool (opened on first use) and how long to skip it after a failure. */
interface Server extends DbServer {
  pool?: Pool;
  skipUntil: number;
  /** Until then, a server that left a statement unanswered for DB_TIMEOUT_SECONDS is not waited for again. */
  silentUntil: number;
}

/**
 * One database Nimbus uses: the settings an entry script read for it, read once and only when first
 * needed (a script that never queries never reads them), and a pool per server — one server, or the
 * nodes of a cluster — opened on first use.
 */
export class Database {
  readonly #read: () => DbSettings;
  /** Where the script using it was typed: the commands its errors name work there (see hints.ts). */
  readonly typedAt?: TypedAt;
  #settings?: DbSettings;
  #servers?: Server[];
  /** Every connection of the pools still open, so closing can end them even when a server does not answer. */
  readonly opened = new Set<{ destroy(): void }>();

  constructor(settings: DbSettings | (() => DbSettings), typedAt?: TypedAt) {
    this.#read = typeof settings === 'function' ? settings : () => settings;
    this.typedAt = typedAt;
  }

  get settings(): DbSettings {
    return (this.#settings ??= this.#read());
  }

  get servers(): Server[] {
    return (this.#servers ??= this.settings.servers.map((server) => ({
      ...server,
      skipUntil: 0,
      silentUntil: 0,
    })));
  }

  /**
   * Closes the pools so the process can end (the next statement opens them again). A server that does
   * not answer (frozen, or the network gone) never says goodbye: after CLOSE_WAIT_MS the connections
   * are dropped without it.
   */
  async close(): Promise<void> {
    const closing = this.#servers?.flatMap((server) => (server.pool ? [server.pool] : [])) ?? [];
    this.#servers = undefined;
    const ended = Promise.all(closing.map((pool) => pool.end().catch(() => {})));
    const late = new Promise((resolve) => setTimeout(resolve, CLOSE_WAIT_MS).unref());
    await Promise.race([ended, late]);
    for (const connection of this.opened) destroy(connection);
    this.opened.clear();
  }
}

// The database a script's code uses is the one its entry script handed down (withDatabase), found
// from wherever that code runs: two scripts in one process, each with its own, never mix them.
const handedDown = new AsyncLocalStorage<Database>();
/** The database of code that runs outside any script: a test's scratch database (useDatabase). */
let outside: Database | undefined;

/** Runs fn with `database` as the one its queries, transactions and setup use: how an entry script hands it down. */
export function withDatabase<T>(database: Database, fn: () => Promise<T>): Promise<T> {
  return handedDown.run(database, fn);
}

function current(): Database {
  const database = handedDown.getStore() ?? outside;
  if (!database)
    throw new Error('No database was handed in: run this code inside withDatabase (runMain does).');
  return database;
}

/** The settings of the database in use. */
export function databaseSettings(): DbSettings {
  return current().settings;
}

/**
 * Points code that runs outside any script at a database: how a test moves between its scratch
 * databases. The pools of the one before are closed. Returns its settings, to go back to.
 */
export async function useDatabase(
  settings: DbSettings | (() => DbSettings) | undefined,
): Promise<(() => DbSettings) | undefined> {
  const previous = outside;
  outside = settings && new Database(settings); // at once: code running meanwhile uses the new one
  await previous?.close();
  return previous && (() => previous.settings);
}

/** The driver's error as one sentence naming the server and the settings to check (other errors pass). */
export function explainDatabaseError(error: unknown): unknown {
  const database = current();
  return explainWith(error, database.settings, database.typedAt);
}

function notAnswered(what: string, database: Database): DatabaseError {
  return notAnsweredBy(what, database.settings);
}

/** How long a statement waits for a row or table another session holds, before it fails (MySQL's default is 50 s, or a year for tables). */
const LOCK_WAIT_SECONDS = 5;
/** How long telling a server to end an abandoned session may take to connect, and then to answer. */
const KILL_WAIT_MS = 2000;
/** How long closing the pools waits for the servers' goodbye before it drops the connections. */
const CLOSE_WAIT_MS = 1000;
/** How long a server that failed is passed over, when there are others to try. */
const SKIP_MS = 5000;
/** With other servers to try, how long to wait for a connection from one before moving on. */
const SERVER_WAIT_MS = 5000;
/**
 * Tries of one statement or transaction when a failure proves nothing was done (see isRetryable),
 * within DB_TIMEOUT_SECONDS. Sized for a cluster: writers on several nodes changing the same rows
 * collide at COMMIT, and with 100 of them at once some lose several times in a row.
 */
const ATTEMPTS = 10;
/** The longest pause between two tries of a transaction that collided with another writer. */
const BACKOFF_CAP_MS = 200;

/** Connection options shared by the pools and by setup's server-level connection. */
export function connectionOptions(
  settings: DbSettings = databaseSettings(),
  server: DbServer = settings.servers[0],
) {
  return {
    host: server.host,
    port: server.port,
    user: settings.user,
    password: settings.password,
    charset: 'utf8mb4', // emoji need 4-byte UTF-8; MySQL's old "utf8" stops at 3 bytes
    decimalNumbers: true, // DECIMAL prices come back as numbers, not strings
    // A server that does not answer at all (frozen, or the network gone) fails to connect this soon.
    connectTimeout: Math.min(5000, settings.timeoutMs),
  };
}

/**
 * What every new connection runs first: lock waits bounded, and on a cluster, reads that wait for
 * every write the cluster already committed (wsrep_sync_wait), so a conversation's own last save is
 * seen whichever node answers. A server that is not a Galera node ignores the second part.
 */
function sessionSetup(settings: DbSettings): string[] {
  const bounded = `SET SESSION innodb_lock_wait_timeout = ${LOCK_WAIT_SECONDS}, SESSION lock_wait_timeout = ${LOCK_WAIT_SECONDS}`;
  return settings.servers.length > 1 ? [bounded, 'SET SESSION wsrep_sync_wait = 1'] : [bounded];
}

function poolOf(database: Database, server: Server): Pool {
  if (!server.pool) {
    const { settings, opened } = database;
    server.pool = mysql.createPool({
      ...connectionOptions(settings, server),
      database: settings.database,
      connectionLimit: settings.poolSize,
    });
    // Runs before any other statement on the connection: the driver queues commands in order.
    server.pool.on('connection', (connection) => {
      opened.add(connection);
      // Forgotten once its socket closes (ended, killed, dropped): a broken connection keeps nothing.
      const { stream } = connection as unknown as { stream: Socket };
      stream.once('close', () => opened.delete(connection));
      // The driver hands over its own connection here, with the callback API.
      const raw = connection as unknown as { query(sql: string, done: () => void): void };
      for (const sql of sessionSetup(settings)) raw.query(sql, () => {}); // see sessionSetup
    });
  }
  return server.pool;
}

/**
 * One connection to a server, not to a database (setup creates the database), the first that answers.
 * Its statements, and its end, are bounded by our own clock as the pool's are (see bounded).
 */
export async function connectToServer(): Promise<mysql.Connection> {
  const settings = databaseSettings();
  let failure: unknown;
  for (const server of settings.servers) {
    try {
      const connection = await mysql.createConnection(connectionOptions(settings, server));
      for (const sql of sessionSetup(settings)) await connection.query(sql).catch(() => {});
      return bounded(connection, settings);
    } catch (error) {
      failure = error;
    }
  }
  throw explainDatabaseError(failure);
}

/**
 * The connection, with each statement given up after DB_TIMEOUT_SECONDS (a frozen server never
 * answers, and setup runs at every start) and its end after CLOSE_WAIT_MS. A statement that waits on
 * purpose, GET_LOCK(?, seconds), gets its own wait on top.
 */
function bounded(connection: mysql.Connection, settings: DbSettings): mysql.Connection {
  const query = connection.query.bind(connection) as (...args: unknown[]) => Promise<unknown>;
  const end = connection.end.bind(connection);
  const stop = () => destroy(connection);
  const boundedQuery = (...args: unknown[]) => {
    const sql = typeof args[0] === 'string' ? args[0] : String((args[0] as { sql?: string }).sql);
    const waits = Number(/\bGET_LOCK\(\?, (\d+)\)/.exec(sql)?.[1] ?? 0) * 1000;
    return unlessStopped(query(...args), { timeoutMs: settings.timeoutMs + waits }, stop).catch(
      (error: Error) => {
        throw error.message === 'stopped'
          ? notAnsweredBy('so the statement was given up', settings)
          : error;
      },
    );
  };
  const boundedEnd = () => unlessStopped(end(), { timeoutMs: CLOSE_WAIT_MS }, stop).catch(() => {});
  return Object.assign(connection, { query: boundedQuery, end: boundedEnd }) as mysql.Connection;
}

/**
 * Runs one parameterised statement. Placeholders (?) keep customer text out of the SQL itself. A
 * failure that proves the statement did nothing (a node not ready, a connection that dropped before it
 * was sent) is tried again, on the next server if there is one; any other is said in one sentence.
 */
export async function query<T = any>(sql: string, params: unknown[] = []): Promise<T> {
  const database = current();
  const { timeoutMs } = database.settings;
  const giveUpAt = Date.now() + timeoutMs;
  for (let attempt = 1; ; attempt++) {
    const { connection, server } = await getConnection(database);
    let abandoned = false;
    try {
      // Our own clock, not the driver's `timeout`: that one starts only when the statement is sent,
      // so a statement queued behind one a frozen server never answered would wait for ever.
      const [rows] = await unlessStopped(connection.query(sql, params), { timeoutMs }, () => {
        abandoned = true;
        stopOnServer(database, connection, server); // never back to the pool with its statement still pending
      });
      connection.release();
      return rows as T;
    } catch (error) {
      if (abandoned) throw notAnswered('so the statement was given up', database);
      drop(database, connection, server, error);
      // A read that lost its connection did nothing either: it is read again.
      const readOnly = /^\s*SELECT\b/i.test(sql);
      if (tryAgain(attempt, giveUpAt) && isRetryable(error, { readOnly })) {
        await backOff(attempt);
        continue;
      }
      throw explainDatabaseError(error);
    }
  }
}

/**
 * The server may have committed, but its answer never came (a timeout, a dropped connection, a frozen
 * server): "nothing was written" would be a guess. The caller looks before it tries again.
 */
export class CommitUnknown extends DatabaseError {
  override name = 'CommitUnknown';
}

/**
 * What a failed save tells the customer: "Not saved", unless a COMMIT's answer never came, so it may
 * have been saved; then the command of the viewer beside the running script, to look.
 */
export function saveFailure(error: unknown, conversationId: string): string {
  const message = error instanceof Error ? error.message : String(error);
  if (!(error instanceof CommitUnknown)) return `Not saved: ${message}`;
  const typedAt = (handedDown.getStore() ?? outside)?.typedAt;
  const viewer = besideScript('show-conversation.ts', typedAt);
  return viewer
    ? `${message} See what was saved with ${commandFor(viewer, conversationId, typedAt)}.`
    : message;
}

/**
 * Runs fn inside one transaction: everything it wrote is committed together, or nothing is. A
 * transaction another writer got in the way of (a deadlock, or on a cluster a certification conflict
 * with another node), or whose server turned out not to be ready, is run again as a whole, fn
 * included, so what fn read is read again. A transaction running past DB_TIMEOUT_SECONDS abandons its
 * connection, which makes the server roll back; if that happens after COMMIT was sent, the outcome is
 * unknown and said so (CommitUnknown).
 */
export async function withTransaction<T>(
  fn: (connection: PoolConnection) => Promise<T>,
): Promise<T> {
  const database = current();
  const giveUpAt = Date.now() + database.settings.timeoutMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await transaction(database, fn);
    } catch (error) {
      if (!tryAgain(attempt, giveUpAt) || !isRetryable(error, { readOnly: true }))
        throw explain(error);
      await backOff(attempt);
    }
  }
}

/** Another try is allowed: tries left, and DB_TIMEOUT_SECONDS not yet spent on this one. */
function tryAgain(attempt: number, giveUpAt: number): boolean {
  return attempt < ATTEMPTS && Date.now() < giveUpAt;
}

/**
 * Two writers that collided would collide again at once: a random pause apart, up to twice as long
 * after each try (10, 20, 40 … ms, at most BACKOFF_CAP_MS), so a crowd spreads out ("full jitter").
 */
function backOff(attempt: number): Promise<void> {
  const ms = Math.random() * Math.min(BACKOFF_CAP_MS, 5 * 2 ** attempt);
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** One try of a transaction. Errors before COMMIT mean nothing was written; errors after it are CommitUnknown. */
async function transaction<T>(
  database: Database,
  fn: (connection: PoolConnection) => Promise<T>,
): Promise<T> {
  const { timeoutMs } = database.settings;
  const { connection, server } = await getConnection(database);
  const state = { phase: 'work' as 'work' | 'commit' };
  let abandoned = false;
  const abandon = () => {
    abandoned = true;
    stopOnServer(database, connection, server);
  };
  const work = async () => {
    await connection.beginTransaction();
    const result = await fn(connection);
    state.phase = 'commit';
    await connection.commit();
    return result;
  };
  try {
    const result = await unlessStopped(work(), { timeoutMs }, abandon);
    connection.release();
    return result;
  } catch (error) {
    if (abandoned && state.phase === 'work') throw notAnswered('so nothing was written', database);
    if (abandoned || (state.phase === 'commit' && lostConnection(error))) {
      throw new CommitUnknown(
        `The answer to a COMMIT never came from MySQL at ${server.host}:${server.port}: it may have been saved or not.`,
      );
    }
    if (!lostConnection(error)) await connection.rollback().catch(() => {});
    drop(database, connection, server, error);
    throw error;
  }
}

/**
 * Ends a connection now, its socket included. The driver's destroy() only half-closes the socket:
 * it sends its end and waits for the server's, which a frozen server never sends, and a socket still
 * open keeps the process alive after everything else is done.
 */
export function destroy(connection: { destroy(): void }): void {
  connection.destroy();
  // The promise API's connection wraps the driver's own, which holds the socket.
  type Driver = { stream?: Socket; connection?: { stream?: Socket } };
  const { stream, connection: inner } = connection as Driver;
  (stream ?? inner?.stream)?.destroy();
}

/** A DatabaseError stays as it is; anything else the driver said becomes one sentence (or a bug passes). */
function explain(error: unknown): unknown {
  return error instanceof DatabaseError ? error : explainDatabaseError(error);
}

/** The connection is gone (dropped, killed, never reached): its statement's outcome is not known. */
function lostConnection(error: unknown): boolean {
  return Boolean((error as { fatal?: boolean }).fatal);
}

/**
 * Settles as `work` does, or rejects once `timeoutMs` has passed or `signal` aborts, after calling
 * onStop. Needed because the driver never settles a query whose connection was destroyed under it.
 * (A plain timer, not AbortSignal.timeout: that one may be collected, and then it never fires.)
 */
function unlessStopped<T>(
  work: Promise<T>,
  { timeoutMs, signal }: { timeoutMs: number; signal?: AbortSignal },
  onStop: () => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const stop = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', stop);
      onStop();
      reject(new Error('stopped'));
    };
    const timer = setTimeout(stop, timeoutMs);
    if (signal?.aborted) return stop();
    signal?.addEventListener('abort', stop, { once: true });
    work.then(resolve, reject).finally(() => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', stop);
    });
  });
}

/**
 * Abandons a connection now. Closing our end is not enough: a statement waiting for a lock keeps
 * waiting on the server until the lock wait ends, so the server is told to end that session too
 * (as the mysql client does on Ctrl-C), which rolls back whatever it had not committed.
 */
function stopOnServer(database: Database, connection: PoolConnection, server: Server): void {
  const threadId = connection.threadId;
  destroy(connection);
  void killOnServer(threadId, database, server);
}

/**
 * KILL, on a connection of its own, given KILL_WAIT_MS to connect and as long to answer. Not on one of
 * the pool's: a frozen server leaves that connection stuck on the KILL, and the next statement handed
 * it would wait behind the KILL for as long as the server stays frozen.
 */
async function killOnServer(
  threadId: number | null,
  database: Database,
  server: Server,
): Promise<void> {
  const options = {
    ...connectionOptions(database.settings, server),
    connectTimeout: KILL_WAIT_MS,
  };
  let killer: mysql.Connection;
  try {
    killer = await mysql.createConnection(options);
  } catch (error) {
    // Not even a new connection is greeted: the server is frozen (or the network gone), so a
    // question's next statements (its next tool, its save, giving its lease back) fail at once for a
    // while, instead of each waiting DB_TIMEOUT_SECONDS again.
    if ((error as { code?: string }).code === 'ETIMEDOUT')
      server.silentUntil = Date.now() + database.settings.timeoutMs;
    return;
  }
  const kill = killer.query('KILL ?', [threadId]);
  await unlessStopped(kill, { timeoutMs: KILL_WAIT_MS }, () => {})
    // Already gone, not ours to kill, or no answer: the lock wait timeout still ends that session.
    .catch(() => {})
    .finally(() => destroy(killer));
}

/** A connection whose statement failed: back to its pool if it still works; if not, destroyed, and a server that is not ready is passed over for a while. */
function drop(database: Database, connection: PoolConnection, server: Server, error: unknown) {
  if (lostConnection(error) || notReady(error)) destroy(connection);
  else connection.release();
  if (notReady(error) || lostConnection(error)) skip(database, server);
}

/** A cluster node that is not part of the primary component (or not synced yet) answers 1047. */
function notReady(error: unknown): boolean {
  return (error as { errno?: number }).errno === 1047;
}

function skip(database: Database, server: Server): void {
  if (database.servers.length > 1) server.skipUntil = Date.now() + SKIP_MS;
}

/**
 * A connection from the first server that gives one within DB_TIMEOUT_SECONDS: the preferred one, or
 * the next that answers while it is down. The wait is bounded by our own clock: when every connection
 * is stuck on a server that stopped answering, a pool would queue us forever.
 */
async function getConnection(
  database: Database,
): Promise<{ connection: PoolConnection; server: Server }> {
  const deadline = Date.now() + database.settings.timeoutMs;
  const all = database.servers;
  if (all.every((server) => server.silentUntil > Date.now()))
    throw notAnswered('so nothing was written', database);
  // Servers that failed a moment ago go last, not out: if all of them failed, all are tried again.
  const order = [...all].sort(
    (a, b) => Number(a.skipUntil > Date.now()) - Number(b.skipUntil > Date.now()),
  );
  let failure: unknown;
  for (const server of order) {
    const left = deadline - Date.now();
    if (left <= 0) break;
    const wait = order.length > 1 ? Math.min(left, SERVER_WAIT_MS) : left;
    const pending = poolOf(database, server).getConnection();
    const giveUp = () => {
      pending.then((late) => late.release()).catch(() => {}); // back to the pool if it comes after all
    };
    try {
      const connection = await unlessStopped(pending, { timeoutMs: wait }, giveUp);
      if (order.length > 1) await checked(database, connection, server, wait);
      return { connection, server };
    } catch (error) {
      failure = error;
      skip(database, server);
    }
  }
  // Our own clock ran out ("stopped"): every server was frozen or every connection busy.
  if (failure === undefined || (failure as Error).message === 'stopped')
    throw notAnswered(
      'so no connection to it was free (all DB_POOL_SIZE of them busy, or the server not answering)',
      database,
    );
  throw explainDatabaseError(failure);
}

/** How many connections the pools of the database in use hold open: never more than their size, however many broke. */
export function openConnections(): number {
  return current().opened.size;
}

/**
 * On a cluster, a connection the pool kept may lead to a node that stalled since it was last used:
 * a ping first, given the failover time, so such a node costs SERVER_WAIT_MS before the next one is
 * tried, not DB_TIMEOUT_SECONDS for every statement sent to it.
 */
async function checked(
  database: Database,
  connection: PoolConnection,
  server: Server,
  waitMs: number,
): Promise<void> {
  try {
    await unlessStopped(connection.ping(), { timeoutMs: waitMs }, () =>
      stopOnServer(database, connection, server),
    );
  } catch (error) {
    destroy(connection);
    throw error;
  }
}

/** Closes the pools of the database in use (see Database.close), if there is one. */
export async function closePool(): Promise<void> {
  await (handedDown.getStore() ?? outside)?.close();
}
