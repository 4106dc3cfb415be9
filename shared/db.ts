// The database, for every part from Part 2 on: a pool of connections to one server, statements and transactions with every wait bounded and failures said in one sentence.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Socket } from 'node:net';
import mysql, { type Pool, type PoolConnection } from 'mysql2/promise';
import type { DbSettings } from './config.ts';
import {
  DatabaseError,
  explainDatabaseError as explainWith,
  isRetryable,
  notAnswered,
  type Where,
} from './db-errors.ts';
import type { TypedAt } from './hints.ts';

export { DatabaseError } from './db-errors.ts';

/**
 * Runs one parameterised statement on the database in use and returns what MySQL answered: the rows
 * of a SELECT (T says what they hold), or what a write did. Placeholders (?) keep customer text out of
 * the SQL itself.
 */
export function query<T = unknown>(sql: string, params: unknown[] = []): Promise<T> {
  return current().query<T>(sql, params);
}

/**
 * Runs fn inside one transaction on the database in use: everything it wrote is committed together,
 * or nothing is.
 */
export function withTransaction<T>(fn: (connection: PoolConnection) => Promise<T>): Promise<T> {
  return current().transaction(fn);
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
 * Points code that runs outside any script at a database (its settings, or a Database to use as it
 * is): how a test moves between its scratch databases. The pool of the one before is closed. Returns
 * its settings, to go back to.
 */
export async function useDatabase(
  settings: DbSettings | (() => DbSettings) | Database | undefined,
): Promise<(() => DbSettings) | undefined> {
  const previous = outside;
  // At once: code running meanwhile uses the new one. A Database of its own kind (the full Nimbus's) as it is.
  outside = settings instanceof Database ? settings : settings && new Database(settings);
  await previous?.close();
  return previous && (() => previous.settings);
}

/** The driver's error as one sentence naming the server and the settings to check (other errors pass). */
export function explainDatabaseError(error: unknown): unknown {
  return current().explain(error);
}

/** One connection to the server, not to a database (setup creates the database); see Database.connectToServer. */
export function connectToServer(): Promise<mysql.Connection> {
  return current().connectToServer();
}

/** How many connections the pool of the database in use holds open: never more than its size, however many broke. */
export function openConnections(): number {
  return current().opened.size;
}

/** Closes the pool of the database in use (see Database.close), if there is one. */
export async function closePool(): Promise<void> {
  await (handedDown.getStore() ?? outside)?.close();
}

/** How long a statement waits for a row or table another session holds, before it fails (MySQL's default is 50 s, or a year for tables). */
const LOCK_WAIT_SECONDS = 5;
/** How long telling a server to end an abandoned session may take to connect, and then to answer. */
const KILL_WAIT_MS = 2000;
/** How long closing the pool waits for the server's goodbye before it drops the connections. */
const CLOSE_WAIT_MS = 1000;
/** The longest pause between two tries of a transaction that collided with another writer. */
const BACKOFF_CAP_MS = 200;

/** Connection options shared by the pool and by setup's server-level connection. */
export function connectionOptions(
  settings: DbSettings = databaseSettings(),
  server: { host: string; port: number } = settings,
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

/** A server the database uses: where it is, and whether it went silent lately. */
export interface Server {
  host: string;
  port: number;
  /** Until then, a server that left a statement unanswered for DB_TIMEOUT_SECONDS is not waited for again. */
  silentUntil: number;
}

/** A connection taken from a server's pool for one statement or one transaction. */
export interface Borrowed {
  connection: PoolConnection;
  server: Server;
}

/**
 * One database Nimbus uses: the settings an entry script read for it, read once and only when first
 * needed (a script that never queries never reads them), and a pool of connections to its server,
 * opened on first use. Every wait is bounded by DB_TIMEOUT_SECONDS on our own clock. `S`: its
 * settings (a database that serves several servers has more of them).
 */
export class Database<S extends DbSettings = DbSettings> {
  readonly #read: () => S;
  /** Where the script using it was typed: the commands its errors name work there (see hints.ts). */
  readonly typedAt?: TypedAt;
  #settings?: S;
  #server?: Server;
  /** Each server's pool, opened on first use. */
  readonly #pools = new Map<Server, Pool>();
  /** Every connection of the pools still open, so closing can end them even when a server does not answer. */
  readonly opened = new Set<{ destroy(): void }>();

  constructor(settings: S | (() => S), typedAt?: TypedAt) {
    this.#read = typeof settings === 'function' ? settings : () => settings;
    this.typedAt = typedAt;
  }

  get settings(): S {
    return (this.#settings ??= this.#read());
  }

  /** How messages name the server, and the settings that say where it is. */
  get where(): Where {
    const { host, port } = this.settings;
    return { server: `MySQL at ${host}:${port}`, settings: 'DB_HOST and DB_PORT' };
  }

  /**
   * Runs one statement (see query). A failure that proves it did nothing (a deadlock, a connection
   * that dropped before it was sent) is tried again; any other is said in one sentence.
   */
  async query<T>(sql: string, params: unknown[]): Promise<T> {
    const { timeoutMs } = this.settings;
    // A read that lost its connection did nothing either: it is read again.
    const readOnly = /^\s*SELECT\b/i.test(sql);
    return this.#tried(readOnly, async () => {
      const borrowed = await this.connect();
      const { connection } = borrowed;
      let abandoned = false;
      const abandon = () => {
        abandoned = true;
        this.abandon(borrowed); // never back to the pool with its statement still pending
      };
      try {
        // Our own clock, not the driver's `timeout`: that one starts only when the statement is sent,
        // so a statement queued behind one a frozen server never answered would wait for ever.
        const [rows] = await unlessStopped(connection.query(sql, params), timeoutMs, abandon);
        connection.release();
        return rows as T;
      } catch (error) {
        if (abandoned) throw this.notAnswered('so the statement was given up');
        this.dropped(borrowed, error);
        throw error;
      }
    });
  }

  /**
   * Runs fn inside one transaction (see withTransaction). A transaction another writer got in the way
   * of (a deadlock) is run again as a whole, fn included, so what fn read is read again. A transaction
   * running past DB_TIMEOUT_SECONDS abandons its connection, which makes the server roll back; if that
   * happens after COMMIT was sent, the outcome is unknown and said so (CommitUnknown).
   */
  transaction<T>(fn: (connection: PoolConnection) => Promise<T>): Promise<T> {
    // A transaction that lost its connection before COMMIT wrote nothing: it may run again.
    return this.#tried(true, () => this.#transactionOnce(fn));
  }

  /** One try of a transaction. Errors before COMMIT mean nothing was written; errors after it are CommitUnknown. */
  async #transactionOnce<T>(fn: (connection: PoolConnection) => Promise<T>): Promise<T> {
    const borrowed = await this.connect();
    const { connection, server } = borrowed;
    let phase = 'work' as 'work' | 'commit';
    let abandoned = false;
    const work = async () => {
      await connection.beginTransaction();
      const result = await fn(connection);
      phase = 'commit';
      await connection.commit();
      return result;
    };
    try {
      const abandon = () => {
        abandoned = true;
        this.abandon(borrowed);
      };
      const result = await unlessStopped(work(), this.settings.timeoutMs, abandon);
      connection.release();
      return result;
    } catch (error) {
      if (abandoned && phase === 'work') throw this.notAnswered('so nothing was written');
      if (abandoned || (phase === 'commit' && lostConnection(error))) {
        throw new CommitUnknown(
          `The answer to a COMMIT never came from MySQL at ${server.host}:${server.port}: it may have been saved or not.`,
        );
      }
      if (!lostConnection(error)) await connection.rollback().catch(() => {});
      this.dropped(borrowed, error);
      throw error;
    }
  }

  /**
   * Runs `once` until it succeeds, or fails in a way that does not prove nothing was done, or
   * `attempts` tries or DB_TIMEOUT_SECONDS are spent; its last failure said in one sentence.
   */
  async #tried<T>(readOnly: boolean, once: () => Promise<T>): Promise<T> {
    const giveUpAt = Date.now() + this.settings.timeoutMs;
    for (let attempt = 1; ; attempt++) {
      try {
        return await once();
      } catch (error) {
        const again = attempt < this.attempts && Date.now() < giveUpAt;
        if (!again || !this.isRetryable(error, { readOnly })) throw this.explain(error);
        await backOff(attempt);
      }
    }
  }

  /**
   * One connection to a server, not to a database (setup creates the database). Its statements, and
   * its end, are bounded by our own clock as the pool's are (see bounded).
   */
  async connectToServer(): Promise<mysql.Connection> {
    try {
      return await this.connectTo(this.#oneServer());
    } catch (error) {
      throw this.explain(error);
    }
  }

  /** The driver's error as one sentence naming the server and the settings to check; a DatabaseError, or a bug, as it is. */
  explain(error: unknown): unknown {
    return explainWith(error, this);
  }

  /**
   * Closes the pools so the process can end (the next statement opens them again; what was learnt of
   * a server, that it went silent, stays). A server that does not answer (frozen, or the network gone)
   * never says goodbye: after CLOSE_WAIT_MS the connections are dropped without it.
   */
  async close(): Promise<void> {
    const closing = [...this.#pools.values()];
    this.#pools.clear();
    const ended = Promise.all(closing.map((pool) => pool.end().catch(() => {})));
    const late = new Promise((resolve) => setTimeout(resolve, CLOSE_WAIT_MS).unref());
    await Promise.race([ended, late]);
    for (const connection of this.opened) destroy(connection);
    this.opened.clear();
  }

  // What a database serving several servers changes (the full Nimbus's, in
  // part-06/going-further/store/cluster-database.ts): which connection to use, what a new connection
  // runs first, what is tried again and how often.

  /**
   * Tries of one statement or transaction when a failure proves nothing was done, within
   * DB_TIMEOUT_SECONDS: on one server the loser of a deadlock nearly always wins its second try.
   */
  protected readonly attempts: number = 3;

  /** Whether a failure proves nothing was done, so trying again is safe (see db-errors.ts). */
  protected isRetryable(error: unknown, options: { readOnly: boolean }): boolean {
    return isRetryable(error, options);
  }

  /** What every new connection runs first: lock waits bounded. */
  protected sessionSetup(): string[] {
    return [
      `SET SESSION innodb_lock_wait_timeout = ${LOCK_WAIT_SECONDS}, SESSION lock_wait_timeout = ${LOCK_WAIT_SECONDS}`,
    ];
  }

  /**
   * A connection from the pool within DB_TIMEOUT_SECONDS. The wait is bounded by our own clock: when
   * every connection is stuck on a server that stopped answering, the pool would queue us forever.
   */
  protected async connect(): Promise<Borrowed> {
    const server = this.#oneServer();
    if (server.silentUntil > Date.now()) throw this.notAnswered('so nothing was written');
    try {
      return { connection: await this.fromPool(server, this.settings.timeoutMs), server };
    } catch (error) {
      throw this.noConnection(error);
    }
  }

  /** A connection whose statement failed: back to its pool if it still works, else destroyed. */
  protected dropped({ connection }: Borrowed, error: unknown): void {
    if (lostConnection(error)) destroy(connection);
    else connection.release();
  }

  // What both kinds of database build those from.

  /** The server DB_HOST and DB_PORT name. */
  #oneServer(): Server {
    const { host, port } = this.settings;
    return (this.#server ??= { host, port, silentUntil: 0 });
  }

  /** A connection from `server`'s pool, given up (Stopped) after `waitMs`. */
  protected fromPool(server: Server, waitMs: number): Promise<PoolConnection> {
    const pending = this.#poolOf(server).getConnection();
    const giveUp = () => {
      pending.then((late) => late.release()).catch(() => {}); // back to the pool if it comes after all
    };
    return unlessStopped(pending, waitMs, giveUp);
  }

  /** Why no connection came: our own clock ran out (`failure` Stopped or none), or what the driver said. */
  protected noConnection(failure?: unknown): unknown {
    if (failure === undefined || failure instanceof Stopped)
      return this.notAnswered(
        'so no connection to it was free (all DB_POOL_SIZE of them busy, or the server not answering)',
      );
    return this.explain(failure);
  }

  /** One connection to `server`, new connections' setup run, bounded (see bounded). */
  protected async connectTo(server: Server): Promise<mysql.Connection> {
    const connection = await mysql.createConnection(connectionOptions(this.settings, server));
    for (const sql of this.sessionSetup()) await connection.query(sql).catch(() => {});
    return bounded(connection, this);
  }

  /** The server did not answer within DB_TIMEOUT_SECONDS; `what` says what that means here. */
  protected notAnswered(what: string): DatabaseError {
    return notAnswered(what, this);
  }

  #poolOf(server: Server): Pool {
    let pool = this.#pools.get(server);
    if (!pool) {
      const { settings, opened } = this;
      pool = mysql.createPool({
        ...connectionOptions(settings, server),
        database: settings.database,
        connectionLimit: settings.poolSize,
      });
      const setup = this.sessionSetup();
      // Runs before any other statement on the connection: the driver queues commands in order.
      pool.on('connection', (connection) => {
        opened.add(connection);
        // Forgotten once its socket closes (ended, killed, dropped): a broken connection keeps nothing.
        const { stream } = connection as unknown as { stream: Socket };
        stream.once('close', () => opened.delete(connection));
        // The driver hands over its own connection here, with the callback API.
        const raw = connection as unknown as { query(sql: string, done: () => void): void };
        for (const sql of setup) raw.query(sql, () => {});
      });
      this.#pools.set(server, pool);
    }
    return pool;
  }

  /**
   * Abandons a connection now. Closing our end is not enough: a statement waiting for a lock keeps
   * waiting on the server until the lock wait ends, so the server is told to end that session too
   * (as the mysql client does on Ctrl-C), which rolls back whatever it had not committed.
   */
  protected abandon({ connection, server }: Borrowed): void {
    const threadId = connection.threadId;
    destroy(connection);
    void this.#kill(threadId, server);
  }

  /**
   * KILL, on a connection of its own, given KILL_WAIT_MS to connect and as long to answer. Not on one of
   * the pool's: a frozen server leaves that connection stuck on the KILL, and the next statement handed
   * it would wait behind the KILL for as long as the server stays frozen.
   */
  async #kill(threadId: number | null, server: Server): Promise<void> {
    const options = { ...connectionOptions(this.settings, server), connectTimeout: KILL_WAIT_MS };
    let killer: mysql.Connection;
    try {
      killer = await mysql.createConnection(options);
    } catch (error) {
      // Not even a new connection is greeted: the server is frozen (or the network gone), so a
      // question's next statements (its next tool, its save, giving its lease back) fail at once for a
      // while, instead of each waiting DB_TIMEOUT_SECONDS again.
      if ((error as { code?: string }).code === 'ETIMEDOUT')
        server.silentUntil = Date.now() + this.settings.timeoutMs;
      return;
    }
    const kill = killer.query('KILL ?', [threadId]);
    await unlessStopped(kill, KILL_WAIT_MS, () => {})
      // Already gone, not ours to kill, or no answer: the lock wait timeout still ends that session.
      .catch(() => {})
      .finally(() => destroy(killer));
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
 * The connection, with each statement given up after DB_TIMEOUT_SECONDS (a frozen server never
 * answers, and setup runs at every start) and its end after CLOSE_WAIT_MS. A statement that waits on
 * purpose, GET_LOCK(?, seconds), gets its own wait on top.
 */
function bounded(connection: mysql.Connection, database: Database): mysql.Connection {
  const query = connection.query.bind(connection) as (...args: unknown[]) => Promise<unknown>;
  const end = connection.end.bind(connection);
  const stop = () => destroy(connection);
  const boundedQuery = (...args: unknown[]) => {
    const sql = typeof args[0] === 'string' ? args[0] : String((args[0] as { sql?: string }).sql);
    const waits = Number(/\bGET_LOCK\(\?, (\d+)\)/.exec(sql)?.[1] ?? 0) * 1000;
    return unlessStopped(query(...args), database.settings.timeoutMs + waits, stop).catch(
      (error: Error) => {
        throw error instanceof Stopped
          ? notAnswered('so the statement was given up', database)
          : error;
      },
    );
  };
  const boundedEnd = () => unlessStopped(end(), CLOSE_WAIT_MS, stop).catch(() => {});
  return Object.assign(connection, { query: boundedQuery, end: boundedEnd }) as mysql.Connection;
}

/**
 * Two writers that collided would collide again at once: a random pause apart, up to twice as long
 * after each try (10, 20, 40 … ms, at most BACKOFF_CAP_MS), so a crowd spreads out ("full jitter").
 */
function backOff(attempt: number): Promise<void> {
  const ms = Math.random() * Math.min(BACKOFF_CAP_MS, 5 * 2 ** attempt);
  return new Promise((resolve) => setTimeout(resolve, ms));
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

/** The connection is gone (dropped, killed, never reached): its statement's outcome is not known. */
export function lostConnection(error: unknown): boolean {
  return Boolean((error as { fatal?: boolean }).fatal);
}

/** What unlessStopped rejects with when it gave up waiting. */
class Stopped extends Error {
  override name = 'Stopped';
}

/**
 * Settles as `work` does, or rejects with Stopped once `timeoutMs` has passed, after calling onStop.
 * Needed because the driver never settles a query whose connection was destroyed under it. (A plain
 * timer, not AbortSignal.timeout: that one may be collected, and then it never fires.)
 */
export function unlessStopped<T>(
  work: Promise<T>,
  timeoutMs: number,
  onStop: () => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      onStop();
      reject(new Stopped(`No answer within ${timeoutMs} ms.`));
    }, timeoutMs);
    work.then(resolve, reject).finally(() => clearTimeout(timer));
  });
}
