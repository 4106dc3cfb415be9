// One MySQL connection pool per process, created on first use from the DB_* settings, with readable errors.
import mysql, { type Pool, type PoolConnection } from 'mysql2/promise';
import { dbSettings, type DbSettings } from './config.ts';

/** The database could not be used: unreachable, wrong credentials, missing. The message says what to check. */
export class DatabaseError extends Error {
  override name = 'DatabaseError';
}

let pool: Pool | undefined;

/** Connection options shared by the pool and by setup's server-level connection. */
export function connectionOptions(settings: DbSettings = dbSettings()) {
  return {
    host: settings.host,
    port: settings.port,
    user: settings.user,
    password: settings.password,
    charset: 'utf8mb4', // emoji need 4-byte UTF-8; MySQL's old "utf8" stops at 3 bytes
    decimalNumbers: true, // DECIMAL prices come back as numbers, not strings
    connectTimeout: 5000,
  };
}

function getPool(): Pool {
  if (!pool) {
    const settings = dbSettings();
    pool = mysql.createPool({ ...connectionOptions(settings), database: settings.database, connectionLimit: 4 });
  }
  return pool;
}

/** Runs one parameterised statement. Placeholders (?) keep customer text out of the SQL itself. */
export async function query<T = any>(sql: string, params: unknown[] = []): Promise<T> {
  try {
    const [rows] = await getPool().query(sql, params);
    return rows as T;
  } catch (error) {
    throw explainDatabaseError(error);
  }
}

/** Runs fn inside one transaction: everything it wrote is committed together, or nothing is. */
export async function withTransaction<T>(fn: (connection: PoolConnection) => Promise<T>): Promise<T> {
  let connection: PoolConnection;
  try {
    connection = await getPool().getConnection();
  } catch (error) {
    throw explainDatabaseError(error);
  }
  try {
    await connection.beginTransaction();
    const result = await fn(connection);
    await connection.commit();
    return result;
  } catch (error) {
    await connection.rollback().catch(() => {});
    throw explainDatabaseError(error);
  } finally {
    connection.release();
  }
}

export async function closePool(): Promise<void> {
  const closing = pool;
  pool = undefined;
  await closing?.end().catch(() => {});
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
    case 'ECONNREFUSED':
    case 'ETIMEDOUT':
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
      return new DatabaseError(`${where} refused user "${user}". Check DB_USER and DB_PASSWORD in .env.`);
    case 'ER_BAD_DB_ERROR':
      return new DatabaseError(`Database "${database}" does not exist on ${where}. Run: npm run setup`);
    case 'ER_NO_SUCH_TABLE':
      return new DatabaseError(`${error.message} in ${where}. Run: npm run setup`);
    default:
      return error;
  }
}
