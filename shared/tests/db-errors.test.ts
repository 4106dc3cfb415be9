// The driver's connection errors become one sentence that names what to check.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DatabaseError, explainDatabaseError } from '../db.ts';

const driverError = (code: string) => Object.assign(new Error(`driver says ${code}`), { code });

const SET = { DB_HOST: '127.0.0.1', DB_PORT: '3407', DB_NAME: 'nimbus' };
let saved: Record<string, string | undefined>;
beforeEach(() => {
  saved = Object.fromEntries(Object.keys(SET).map((name) => [name, process.env[name]]));
  Object.assign(process.env, SET);
});
afterEach(() => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
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

  it('passes a bug (any other error) through unchanged', () => {
    const bug = driverError('ER_PARSE_ERROR');
    expect(explainDatabaseError(bug)).toBe(bug);
  });
});
