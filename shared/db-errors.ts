// What the database's failures mean: which ones prove nothing was done (so trying again is safe), and one sentence for each.
import type { DbSettings } from './config.ts';
import { besideCommand, setupCommand, type TypedAt } from './hints.ts';
import { printable } from './text.ts';

/** The database could not be used: unreachable, wrong credentials, missing. The message says what to check. */
export class DatabaseError extends Error {
  override name = 'DatabaseError';
}

/**
 * Whether a failed statement (or transaction) certainly did nothing, so running it again is safe:
 * - a deadlock (1213): rolled back;
 * - a lock wait that timed out (1205): the statement was rolled back, and a transaction is rolled
 *   back whole before it is tried again;
 * - a connection found closed before the statement was sent;
 * - with `readOnly` (a read, or a transaction that never reached COMMIT), a connection lost midway.
 * A timeout is not among them: the server may still be working, and waiting again would double the wait.
 */
export function isRetryable(error: unknown, { readOnly }: { readOnly: boolean }): boolean {
  const { errno, code, fatal, message } = error as {
    errno?: number;
    code?: string;
    fatal?: boolean;
    message?: string;
  };
  if (errno === 1213 || errno === 1205) return true;
  if (!fatal || code === 'PROTOCOL_SEQUENCE_TIMEOUT') return false;
  return readOnly || /closed state/.test(message ?? '');
}

/** What a message says about the database in use: its settings, where the script was typed, and where its server is. */
export interface DatabaseInUse {
  settings: DbSettings;
  /** Where the running script was typed, so the setup a message names works there. */
  typedAt?: TypedAt;
  where: Where;
}

/** How messages name the server, and the settings that say where it is. */
export interface Where {
  /** "MySQL at 127.0.0.1:3306" */
  server: string;
  /** "DB_HOST and DB_PORT" */
  settings: string;
}

/** The server did not answer within DB_TIMEOUT_SECONDS; `what` says what that means here. */
export function notAnswered(what: string, { settings, where }: DatabaseInUse): DatabaseError {
  return new DatabaseError(
    `${capitalized(where.server)} did not answer within ${settings.timeoutMs / 1000} s (DB_TIMEOUT_SECONDS), ${what}.`,
  );
}

/** A server's name at the start of a sentence. */
export function capitalized(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/**
 * Turns the driver's errors into one sentence naming what to check. Other errors (a bad query is a
 * bug) are passed through unchanged.
 */
export function explainDatabaseError(error: unknown, database: DatabaseInUse): unknown {
  if (!(error instanceof Error) || error instanceof DatabaseError) return error;
  const explained = explain(error, database);
  // The driver's own error stays attached, for whoever needs its code (a setup that may try again).
  if (explained instanceof DatabaseError) explained.cause ??= error;
  return explained;
}

function explain(error: Error, database: DatabaseInUse): unknown {
  const { code, errno, fatal, sqlState } = error as {
    code?: string;
    errno?: number;
    fatal?: boolean;
    sqlState?: string;
  };
  const { settings, typedAt, where } = database;
  const { user } = settings;
  const at = where.server;
  const At = capitalized(at);
  switch (code) {
    case 'ETIMEDOUT':
      // The connection never completed: nothing listening on a dropped network, or a server that
      // accepts connections but is frozen. "Start the server" would mislead in the second case.
      return new DatabaseError(
        `${At} did not answer when connecting (ETIMEDOUT): it is out of reach, overloaded or frozen. Check the server, and ${where.settings} in .env.`,
      );
    case 'ECONNREFUSED':
    case 'EHOSTUNREACH':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new DatabaseError(
        `Cannot reach ${at} (${code}). Start the database server (none yet? the Requirements in README.md at the repository root start one in one line), or check ${where.settings} in .env.`,
      );
    case 'ER_ACCESS_DENIED_ERROR':
    case 'ER_ACCESS_DENIED_NO_PASSWORD_ERROR': // MariaDB's answer for an unknown user
    case 'ER_DBACCESS_DENIED_ERROR':
      return new DatabaseError(
        `${At} refused user "${user}". Check DB_USER and DB_PASSWORD in .env.`,
      );
    case 'ER_BAD_DB_ERROR':
      return new DatabaseError(
        `Database "${settings.database}" does not exist on ${at}. Run: ${setupCommand(typedAt)}`,
      );
    // A table or function this part adds (an earlier part's database, or one dropped by hand): a first
    // run creates what is missing and keeps the rest; only a reset would delete anything.
    case 'ER_NO_SUCH_TABLE':
    case 'ER_SP_DOES_NOT_EXIST': {
      const firstRun = besideCommand('ask.ts', '"Hello"', typedAt);
      const create = firstRun
        ? `A first run of this part (${firstRun}) creates what is missing and keeps everything else`
        : `Run ${setupCommand(typedAt)} to set it up (it says what it would delete, and asks first)`;
      return new DatabaseError(
        `${missing(code, error.message)} is missing from database "${settings.database}" on ${at}: this part has not set it up there yet. ${create}.`,
      );
    }
    // A table that is there but not as Nimbus made it (changed by hand): setup makes it again, after
    // saying what it would delete.
    case 'ER_BAD_FIELD_ERROR':
      return new DatabaseError(
        `${missing(code, error.message)} is missing from database "${settings.database}" on ${at}: the database is not as this part sets it up (changed since). Run ${setupCommand(typedAt)} to set it up again (it says what it would delete, and asks first).`,
      );
    case 'ER_LOCK_WAIT_TIMEOUT':
      return new DatabaseError(
        `${At} was busy: another session held a lock for more than 5 s (ER_LOCK_WAIT_TIMEOUT), so nothing of this was written. Try again in a moment.`,
      );
    case 'ER_LOCK_DEADLOCK':
      return new DatabaseError(
        `${At} kept refusing a change because another one changed the same rows at the same moment; nothing of it was written. Try again.`,
      );
    case 'PROTOCOL_SEQUENCE_TIMEOUT':
      return notAnswered('so the statement was given up', database);
    case 'ER_NET_PACKET_TOO_LARGE':
      return new DatabaseError(
        `${At} refused a statement larger than its max_allowed_packet, so it did nothing. Raise max_allowed_packet on the server.`,
      );
  }
  // The server was there and the connection broke (a restart, a KILL, a network blip): not "start it".
  if (fatal)
    return new DatabaseError(
      `The connection to ${at} was lost (${code ?? 'no code'}) before the statement finished, so it may not have run. Try again; if it keeps happening, check the server's log.`,
    );
  // Any other refusal from the server: its code, never its text (which can quote the data). The
  // code stays on the error, for callers that act on one (a duplicate key).
  if (sqlState !== undefined && code !== undefined)
    return Object.assign(
      new DatabaseError(
        `${At} refused a statement (${code}), so it did nothing. No setting changes that: if it happens again, report the code.`,
      ),
      {
        code,
        errno,
      },
    );
  return error;
}

/** What a drifted schema lacks, named from the driver's message ("Unknown column 'role' in 'SELECT'"). */
function missing(code: string, message: string): string {
  const [what, pattern] =
    code === 'ER_SP_DOES_NOT_EXIST'
      ? ['Function', /^\w+ (\S+) does not exist/] // "FUNCTION nimbus.refund_allowed does not exist"
      : [code === 'ER_BAD_FIELD_ERROR' ? 'Column' : 'Table', /'([^']*)'/];
  const name = pattern.exec(message)?.[1]?.split('.').pop() ?? '';
  return `${what} "${printable(name, { singleLine: true })}"`;
}
