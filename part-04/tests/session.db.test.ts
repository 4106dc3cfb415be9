// Signing in: the customer comes from CUSTOMER_EMAIL or --customer, matched exactly, never from the model.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { UsageError } from '../../shared/cli.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../shared/testing/database.ts';
import { describeCustomer, signIn } from '../session.ts';
import { ensureDatabase } from '../setup-database.ts';

let db: ScratchDatabase;
const configured = process.env.CUSTOMER_EMAIL;
beforeAll(async () => {
  db = await createScratchDatabase();
  await ensureDatabase(() => {});
});
afterEach(() => {
  process.env.CUSTOMER_EMAIL = configured;
});
afterAll(() => db.drop());

describe('signIn', () => {
  it('takes CUSTOMER_EMAIL, and a --customer flag over it, in any case', async () => {
    process.env.CUSTOMER_EMAIL = 'maya.patel@example.com';
    expect(await signIn(undefined)).toEqual({
      id: 1,
      name: 'Maya Patel',
      email: 'maya.patel@example.com',
    });
    const liam = await signIn(' Liam.OBrien@Example.com ');
    expect(describeCustomer(liam)).toBe("Liam O'Brien (liam.obrien@example.com)");
  });

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
      'something that is not an email',
      "x' OR '1'='1",
      `"x' or '1'='1" is not an email address; use one such as --customer=maya.patel@example.com.`,
    ],
  ])('refuses %s with one sentence (a usage error: exit 2)', async (_, email, message) => {
    const error = await signIn(email).catch((e) => e);
    expect(error).toBeInstanceOf(UsageError);
    expect(error.message).toBe(message);
  });

  it('refuses to go on when nobody is configured, or --customer is given empty', async () => {
    process.env.CUSTOMER_EMAIL = '';
    await expect(signIn(undefined)).rejects.toThrow(
      /^Nobody is signed in: set CUSTOMER_EMAIL in \.env/,
    );
    process.env.CUSTOMER_EMAIL = 'maya.patel@example.com';
    await expect(signIn(' ')).rejects.toThrow(
      '--customer needs an email address, e.g. --customer=maya.patel@example.com.',
    );
  });
});
