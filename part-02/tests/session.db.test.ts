// Signing in: the customer comes from CUSTOMER_EMAIL or --customer, matched in any case, never from the model.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UsageError } from '../../shared/cli.ts';
import { ConfigError } from '../../shared/config.ts';
import { query } from '../../shared/db.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../shared/testing/database.ts';
import { describeCustomer, signIn } from '../session.ts';
import { ensureDatabase } from '../setup-database.ts';

let db: ScratchDatabase;
beforeAll(async () => {
  db = await createScratchDatabase();
  await ensureDatabase(() => {});
  // Stored as the customer typed it when signing up: addresses are not always lower case.
  await query("INSERT INTO customers (name, email) VALUES ('Zoe Mixed', 'Zoe.Mixed@Example.com')");
});
afterAll(() => db.drop());

describe('signIn', () => {
  it('takes CUSTOMER_EMAIL, and a --customer flag over it, in any case', async () => {
    expect(await signIn(undefined, 'maya.patel@example.com')).toEqual({
      id: 1,
      name: 'Maya Patel',
      email: 'maya.patel@example.com',
    });
    const liam = await signIn(' Liam.OBrien@Example.com ', 'maya.patel@example.com');
    expect(describeCustomer(liam)).toBe("Liam O'Brien (liam.obrien@example.com)");
  });

  it.each(['Zoe.Mixed@Example.com', 'zoe.mixed@example.com', 'ZOE.MIXED@EXAMPLE.COM'])(
    'signs in a customer stored as Zoe.Mixed@Example.com with %s',
    async (email) => {
      expect(await signIn(email, undefined)).toMatchObject({
        name: 'Zoe Mixed',
        email: 'Zoe.Mixed@Example.com',
      });
      expect((await signIn(undefined, email)).name).toBe('Zoe Mixed');
    },
  );

  it.each([
    [
      'an unknown email',
      'nobody@example.com',
      'There is no customer with the email nobody@example.com.',
    ],
    [
      'a near miss the collation would accept',
      'sofia.garcía@example.com',
      'There is no customer with the email sofia.garcía@example.com.',
    ],
    [
      'an accent the collation would ignore, in a mixed-case address',
      'Zoé.Mixed@Example.com',
      'There is no customer with the email Zoé.Mixed@Example.com.',
    ],
    [
      'something that is not an email',
      "x' OR '1'='1",
      `"x' OR '1'='1" is not an email address; use one such as --customer=maya.patel@example.com.`,
    ],
    [
      'an escape sequence, quoting it escaped',
      'maya\x1b[2J@example.com',
      'There is no customer with the email maya\\x1b[2J@example.com.',
    ],
    [
      'an invisible character, quoting it visibly',
      'maya.patel@exa\u200bmple.com',
      'There is no customer with the email maya.patel@exa\\u200bmple.com.',
    ],
    [
      'a bidirectional override in something that is not an email',
      'x\u202e',
      `"x\\u202e" is not an email address; use one such as --customer=maya.patel@example.com.`,
    ],
  ])('refuses %s with one sentence (a usage error: exit 2)', async (_, email, message) => {
    const error = await signIn(email, undefined).catch((e) => e);
    expect(error).toBeInstanceOf(UsageError);
    expect(error.message).toBe(message);
  });

  it.each([
    [
      'not an email',
      'maya.patel',
      'CUSTOMER_EMAIL is "maya.patel", which is not an email address. Fix CUSTOMER_EMAIL in .env, or pass --customer=<email>.',
    ],
    [
      'unknown',
      'nobody@example.com',
      'There is no customer with the email nobody@example.com. Fix CUSTOMER_EMAIL in .env, or pass --customer=<email>.',
    ],
  ])(
    'says a configured email that is %s is CUSTOMER_EMAIL to fix (exit 1)',
    async (_, email, message) => {
      const error = await signIn(undefined, email).catch((e) => e);
      expect(error).toBeInstanceOf(ConfigError);
      expect(error.message).toBe(message);
    },
  );

  it('refuses to go on when nobody is configured, or --customer is given empty', async () => {
    await expect(signIn(undefined, undefined)).rejects.toThrow(
      /^Nobody is signed in: set CUSTOMER_EMAIL in \.env/,
    );
    await expect(signIn(' ', 'maya.patel@example.com')).rejects.toThrow(
      '--customer needs an email address, e.g. --customer=maya.patel@example.com.',
    );
  });
});

describe('describeCustomer', () => {
  it('shows a stored name or email with escape sequences and invisible characters visible', () => {
    expect(
      describeCustomer({ id: 9, name: 'Eve\x1b[2J\u202eevil', email: 'eve@exa\u200bmple.com' }),
    ).toBe('Eve\\x1b[2J\\u202eevil (eve@exa\\u200bmple.com)');
  });
});
