// One MySQL connection pool per process, created on first use from the DB_* settings, with readable errors.
import mysql, { type Pool, type PoolConnection } from 'mysql2/promise';
import { dbSettings, type DbSettings } from './config.ts';

/** The database could not be used: unreachable, wrong credentials, missing. The message says what to check. */
export class DatabaseError extends Error {
  override name = 'DatabaseError';
}

let pool: Pool | undefined;
/** Every connection the pool opened, so closing can end them even when the server does not answer. */
const opened = new Set<{ destroy(): void }>();

/** How long a statement waits for a row or table another session holds, before it fails (MySQL's default is 50 s, or a year for tables). */
const LOCK_WAIT_SECONDS = 5;
/** How long closing the pool waits for the server's goodbye before it drops the connections. */
const CLOSE_WAIT_MS = 1000;

/** Connection options shared by the pool and by setup's server-level connection. */
export function connectionOptions(settings: DbSettings = dbSettings()) {
  return {
    host: settings.host,
    port: settings.port,
    user: settings.user,
    password: settings.password,
    charset: 'utf8mb4', // emoji need 4-byte UTF-8; MySQL's old "utf8" stops at 3 bytes
    decimalNumbers: true, // DECIMAL prices come back as numbers, not strings
    // A server that does not answer at all (frozen, or the network gone) fails to connect this soon.
    connectTimeout: Math.min(5000, settings.timeoutMs),
  };
}

/** Makes a session give up on a lock after LOCK_WAIT_SECONDS. */
const BOUND_LOCK_WAITS = `SET SESSION innodb_lock_wait_timeout = ${LOCK_WAIT_SECONDS}, SESSION lock_wait_timeout = ${LOCK_WAIT_SECONDS}`;

function getPool(): Pool {
  if (!pool) {
    const settings = dbSettings();
    pool = mysql.createPool({
      ...connectionOptions(settings),
      database: settings.database,
      connectionLimit: 4,
    });
    // Every new connection first bounds its lock waits; the driver runs this before any other statement.
    pool.on('connection', (connection) => {
      opened.add(connection);
      connection.query(BOUND_LOCK_WAITS);
    });
  }
  return pool;
}

/** One connection to the server, not to a database (setup creates the database), with lock waits bounded too. */
export async function connectToServer(): Promise<mysql.Connection> {
  try {
    const connection = await mysql.createConnection(connectionOptions());
    await connection.query(BOUND_LOCK_WAITS);
    return connection;
  } catch (error) {
    throw explainDatabaseError(error);
  }
}

/** Runs one parameterised statement. Placeholders (?) keep customer text out of the SQL itself. */
export async function query<T = any>(sql: string, params: unknown[] = []): Promise<T> {
  const connection = await getConnection();
  try {
    const [rows] = await connection.query({ sql, timeout: dbSettings().timeoutMs }, params);
    return rows as T;
  } catch (error) {
    throw explainDatabaseError(error);
  } finally {
    connection.release();
  }
}

/** A wait for a lock was stopped by its signal (Ctrl-C): nothing was written. */
export class DatabaseCancelled extends Error {
  override name = 'DatabaseCancelled';
  constructor() {
    super('Cancelled: nothing was written.');
  }
}

/**
 * Runs fn inside one transaction: everything it wrote is committed together, or nothing is. A
 * transaction running past DB_TIMEOUT_SECONDS abandons its connection, which makes the server roll
 * back: a save stuck behind a lock or a frozen network never holds up the program.
 */
export async function withTransaction<T>(
  fn: (connection: PoolConnection) => Promise<T>,
): Promise<T> {
  const { timeoutMs } = dbSettings();
  const connection = await getConnection();
  let abandoned = false;
  const abandon = () => {
    abandoned = true;
    stopOnServer(connection);
  };
  const work = async () => {
    await connection.beginTransaction();
    const result = await fn(connection);
    await connection.commit();
    return result;
  };
  try {
    return await unlessStopped(work(), { timeoutMs }, abandon);
  } catch (error) {
    if (abandoned) throw notAnswered(`so nothing was written`);
    await connection.rollback().catch(() => {});
    throw explainDatabaseError(error);
  } finally {
    if (!abandoned) connection.release();
  }
}

/** The lock was held elsewhere for longer than we were willing to wait. */
export class LockBusy extends Error {
  override name = 'LockBusy';
}

export interface LockOptions {
  /** Ctrl-C: stops the wait for the lock (DatabaseCancelled). */
  signal?: AbortSignal;
  /** Called once when the lock is held elsewhere, before waiting for it: say what is being waited for. */
  onWait?: () => void;
}

/**
 * Runs fn while holding a named lock (MySQL's GET_LOCK): one holder at a time across every process
 * using this server. The lock belongs to a connection, so a killed process releases it by itself
 * (and a dropped connection loses it: guarantees that must outlive the connection are checked where
 * the data is written). Waits at most `waitSeconds` (0: do not wait), then throws LockBusy.
 */
export async function withNamedLock<T>(
  name: string,
  waitSeconds: number,
  fn: () => Promise<T>,
  options: LockOptions = {},
): Promise<T> {
  if (options.signal?.aborted) throw new DatabaseCancelled();
  const connection = await getConnection();
  let abandoned = false;
  const abandon = () => {
    abandoned = true;
    stopOnServer(connection);
  };
  // Every statement on this connection is bounded by our own clock as well as the server's: a frozen
  // server answers nothing at all, not even "the lock is busy".
  const bounded = <R>(sql: string, params: unknown[], waitMs = 0): Promise<R> =>
    unlessStopped(
      connection.query(sql, params).then(([rows]) => rows as R),
      { timeoutMs: waitMs + dbSettings().timeoutMs, signal: options.signal },
      abandon,
    );
  const getLock = async (seconds: number) =>
    (
      await bounded<Array<{ got: number | null }>>(
        'SELECT GET_LOCK(?, ?) AS got',
        [name, seconds],
        seconds * 1000,
      )
    )[0].got === 1;
  try {
    let got: boolean;
    try {
      got = await getLock(0);
      if (!got && waitSeconds > 0) {
        options.onWait?.();
        got = await getLock(waitSeconds);
      }
    } catch (error) {
      if (abandoned && options.signal?.aborted) throw new DatabaseCancelled();
      if (abandoned) throw notAnswered('while waiting for a lock');
      throw explainDatabaseError(error);
    }
    if (!got) throw new LockBusy(`Lock ${name} is held elsewhere.`);
    try {
      return await fn();
    } finally {
      await bounded('SELECT RELEASE_LOCK(?)', [name]).catch(() => {}); // a lost connection released it
    }
  } finally {
    if (!abandoned) connection.release();
  }
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
function stopOnServer(connection: PoolConnection): void {
  const threadId = connection.threadId;
  connection.destroy();
  getPool()
    .query('KILL ?', [threadId])
    .catch(() => {}); // already gone, or not ours to kill: the lock wait timeout still ends it
}

/**
 * A connection from the pool, within DB_TIMEOUT_SECONDS. The wait is bounded by our own clock: when
 * every connection is stuck on a server that stopped answering, the pool would queue us forever.
 */
async function getConnection(): Promise<PoolConnection> {
  const pending = getPool().getConnection();
  let gaveUp = false;
  const giveUp = () => {
    gaveUp = true;
    pending.then((late) => late.release()).catch(() => {}); // back to the pool if it comes after all
  };
  try {
    return await unlessStopped(pending, { timeoutMs: dbSettings().timeoutMs }, giveUp);
  } catch (error) {
    if (gaveUp) throw notAnswered('so no connection to it was free');
    throw explainDatabaseError(error);
  }
}

/**
 * Closes the pool so the process can end. A server that does not answer (frozen, or the network gone)
 * never says goodbye: after CLOSE_WAIT_MS the connections are dropped without it.
 */
export async function closePool(): Promise<void> {
  const closing = pool;
  pool = undefined;
  if (!closing) return;
  const ended = closing.end().catch(() => {});
  await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, CLOSE_WAIT_MS).unref())]);
  for (const connection of opened) connection.destroy();
  opened.clear();
}

/** The server did not answer within DB_TIMEOUT_SECONDS; `what` says what that means here. */
function notAnswered(what: string): DatabaseError {
  const { host, port, timeoutMs } = dbSettings();
  return new DatabaseError(
    `MySQL at ${host}:${port} did not answer within ${timeoutMs / 1000} s (DB_TIMEOUT_SECONDS), ${what}.`,
  );
}

/**
 * Turns the driver's connection errors into one sentence naming what to check.
 * Other errors (a bad query is a bug) are passed through unchanged.
 */
export function explainDatabaseError(error: unknown): unknown {
  if (!(error instanceof Error) || error instanceof DatabaseError) return error;
  const code = (error as { code?: string }).code;
  const { host, port, user, database } = dbSettings();
  const where = `MySQL at ${host}:${port}`;
  switch (code) {
    case 'ETIMEDOUT':
      // The connection never completed: nothing listening on a dropped network, or a server that
      // accepts connections but is frozen. "Start the server" would mislead in the second case.
      return new DatabaseError(
        `${where} did not answer when connecting (ETIMEDOUT): it is out of reach, overloaded or frozen. Check the server, and DB_HOST and DB_PORT in .env.`,
      );
    case 'ECONNREFUSED':
    case 'EHOSTUNREACH':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'PROTOCOL_CONNECTION_LOST':
      return new DatabaseError(
        `Cannot reach ${where} (${code}). Start the database server, or check DB_HOST and DB_PORT in .env.`,
      );
    case 'ER_ACCESS_DENIED_ERROR':
    case 'ER_ACCESS_DENIED_NO_PASSWORD_ERROR': // MariaDB's answer for an unknown user
    case 'ER_DBACCESS_DENIED_ERROR':
      return new DatabaseError(
        `${where} refused user "${user}". Check DB_USER and DB_PASSWORD in .env.`,
      );
    case 'ER_BAD_DB_ERROR':
      return new DatabaseError(
        `Database "${database}" does not exist on ${where}. Run: npm run setup`,
      );
    case 'ER_NO_SUCH_TABLE':
      return new DatabaseError(`${error.message} in ${where}. Run: npm run setup`);
    case 'ER_LOCK_WAIT_TIMEOUT':
      return new DatabaseError(
        `${where} was busy: another session held a lock for more than ${LOCK_WAIT_SECONDS} s (ER_LOCK_WAIT_TIMEOUT).`,
      );
    case 'PROTOCOL_SEQUENCE_TIMEOUT':
      return notAnswered('so the statement was given up');
    case 'ER_NET_PACKET_TOO_LARGE':
      return new DatabaseError(`${where} refused a statement larger than its max_allowed_packet.`);
    default:
      return error;
  }
}
