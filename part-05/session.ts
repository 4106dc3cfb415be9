// Who is signed in: the one customer whose data this session may see. Chosen by configuration, never by the model.
//
// A terminal has no login screen, so the customer comes from CUSTOMER_EMAIL in .env or --customer=<email>.
// A web app would take it from its login session instead; everything after this file stays the same.
import { UsageError } from '../shared/cli.ts';
import { ConfigError } from '../shared/config.ts';
import { query } from '../shared/db.ts';
import { printable } from '../shared/text.ts';

export interface Customer {
  id: number;
  name: string;
  email: string;
}

/**
 * Finds the customer to sign in: `--customer=<email>` (`flag`) if given, else the configured one
 * (CUSTOMER_EMAIL, which the script read at start). A problem names what to fix: the flag
 * (a usage error, exit 2) or CUSTOMER_EMAIL (a configuration error, exit 1).
 */
export async function signIn(
  flag: string | undefined,
  configured: string | undefined,
): Promise<Customer> {
  if (flag !== undefined && !flag.trim())
    throw new UsageError(
      '--customer needs an email address, e.g. --customer=maya.patel@example.com.',
    );
  const email = flag ?? configured;
  if (!email) {
    throw new UsageError(
      'Nobody is signed in: set CUSTOMER_EMAIL in .env (the demo customer is maya.patel@example.com), or pass --customer=<email>.',
    );
  }
  return lookUpCustomer(email, flag === undefined ? 'CUSTOMER_EMAIL' : '--customer');
}

/**
 * The customer with this email, in any case: a customer stored as Maya.Patel@Example.com signs in
 * as maya.patel@example.com too, and the other way round. A malformed or unknown email is a usage
 * error when it came from the command line, and a configuration error when it came from .env.
 */
async function lookUpCustomer(
  value: string,
  from: '--customer' | 'CUSTOMER_EMAIL' = '--customer',
): Promise<Customer> {
  const email = value.trim();
  const problem = (sentence: string) =>
    from === '--customer'
      ? new UsageError(sentence)
      : new ConfigError(`${sentence} Fix CUSTOMER_EMAIL in .env, or pass --customer=<email>.`);
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) || email.length > 255) {
    throw problem(
      from === '--customer'
        ? `"${shown(email)}" is not an email address; use one such as --customer=maya.patel@example.com.`
        : `CUSTOMER_EMAIL is "${shown(email)}", which is not an email address.`,
    );
  }
  const rows = await query<Customer[]>('SELECT id, name, email FROM customers WHERE email = ?', [
    email,
  ]);
  // The column's collation ignores case and accents too ("GARCÍA" = "garcia"), so the match is checked
  // again here, ignoring case only: an accent makes it another address.
  const customer = rows.find((row) => row.email.toLowerCase() === email.toLowerCase());
  if (!customer) throw problem(`There is no customer with the email ${shown(email)}.`);
  return customer;
}

/** "Maya Patel (maya.patel@example.com)": how scripts say who is signed in. */
export function describeCustomer(customer: Customer): string {
  return `${shown(customer.name)} (${shown(customer.email)})`;
}

/** What someone typed or stored, made safe to print: a name or an email may hold escape sequences or invisible characters. */
function shown(text: string): string {
  return printable(text, { singleLine: true });
}
