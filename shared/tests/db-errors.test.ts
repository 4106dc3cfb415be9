// The driver's connection errors become one sentence that names what to check.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { dbSettings, type DbSettings } from '../config.ts';
import { DatabaseError, explainDatabaseError, useDatabase } from '../db.ts';
import { isRetryable } from '../db-errors.ts';

const driverError = (code: string) => Object.assign(new Error(`driver says ${code}`), { code });
/** An error the server sent, as mysql2 makes it: with its SQL state. */
const serverError = (code: string, message: string) =>
  Object.assign(new Error(message), { code, errno: 1000, sqlState: '42S22' });

/** The errors name the database in use: this one, handed in as an entry script would. */
const SET = { DB_HOST: '127.0.0.1', DB_PORT: '3407', DB_NAME: 'nimbus' };
let previous: (() => DbSettings) | undefined;
beforeEach(async () => {
  previous = await useDatabase(() => dbSettings({ ...process.env, ...SET }));
});
afterEach(async () => {
  await useDatabase(previous);
});

describe('explainDatabaseError', () => {
  it.each([
    [
      'ECONNREFUSED',
      'Cannot reach MySQL at 127.0.0.1:3407 (ECONNREFUSED). Start the database server (none yet? the Requirements in README.md at the repository root start one in one line), or check DB_HOST and DB_PORT in .env.',
    ],
    // A frozen server accepts the connection and never answers: "start the server" would mislead.
    [
      'ETIMEDOUT',
      'MySQL at 127.0.0.1:3407 did not answer when connecting (ETIMEDOUT): it is out of reach, overloaded or frozen. Check the server, and DB_HOST and DB_PORT in .env.',
    ],
    [
      'ER_BAD_DB_ERROR',
      'Database "nimbus" does not exist on MySQL at 127.0.0.1:3407. Run: npm run setup',
    ],
  ])('says %s in one sentence', (code, message) => {
    const explained = explainDatabaseError(driverError(code));
    expect(explained).toBeInstanceOf(DatabaseError);
    expect((explained as Error).message).toBe(message);
  });

  // A schema that drifted (a column dropped, a table renamed by hand): what is missing, and the setup to run.
  it.each([
    ['ER_BAD_FIELD_ERROR', "Unknown column 'role' in 'SELECT'", 'Column "role"'],
    ['ER_BAD_FIELD_ERROR', "Unknown column 'm.role' in 'field list'", 'Column "role"'],
    ['ER_NO_SUCH_TABLE', "Table 'nimbus.messages' doesn't exist", 'Table "messages"'],
    [
      'ER_SP_DOES_NOT_EXIST',
      'FUNCTION nimbus.refund_allowed does not exist',
      'Function "refund_allowed"',
    ],
  ])('says %s (%s) in one sentence with the command that repairs it', (code, text, what) => {
    const explained = explainDatabaseError(serverError(code, text));
    expect(explained).toBeInstanceOf(DatabaseError);
    // A column there but changed needs a reset; a table or function this part adds, a first run (here,
    // with no script beside this process to name, the setup).
    expect((explained as Error).message).toBe(
      code === 'ER_BAD_FIELD_ERROR'
        ? `${what} is missing from database "nimbus" on MySQL at 127.0.0.1:3407: the database is not as this part sets it up (changed since). Run npm run setup to set it up again (it says what it would delete, and asks first).`
        : `${what} is missing from database "nimbus" on MySQL at 127.0.0.1:3407: this part has not set it up there yet. Run npm run setup to set it up (it says what it would delete, and asks first).`,
    );
  });

  it("says any other refusal by its code, never the server's text, and keeps the code", () => {
    const refused = serverError(
      'ER_DUP_ENTRY',
      "Duplicate entry 'my door code 4711' for key 'PRIMARY'",
    );
    const explained = explainDatabaseError(refused) as Error & { code?: string };
    expect(explained).toBeInstanceOf(DatabaseError);
    expect(explained.message).toBe(
      'MySQL at 127.0.0.1:3407 refused a statement (ER_DUP_ENTRY), so it did nothing. No setting changes that: if it happens again, report the code.',
    );
    expect(explained.code).toBe('ER_DUP_ENTRY');
  });

  it('passes a bug (any other error) through unchanged', () => {
    const bug = driverError('ER_PARSE_ERROR');
    expect(explainDatabaseError(bug)).toBe(bug);
  });
});

describe('isRetryable', () => {
  it.each([
    ['a deadlock (1213)', { errno: 1213 }],
    ['a lock wait timeout (1205)', { errno: 1205 }],
  ])('tries again after %s, which rolled it back', (_, error) => {
    expect(isRetryable(error, { readOnly: false })).toBe(true);
  });

  it('does not try a write again after a timeout or a duplicate key', () => {
    expect(
      isRetryable({ code: 'PROTOCOL_SEQUENCE_TIMEOUT', fatal: true }, { readOnly: false }),
    ).toBe(false);
    expect(isRetryable({ errno: 1062 }, { readOnly: false })).toBe(false);
  });
});
