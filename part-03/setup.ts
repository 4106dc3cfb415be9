// Resets the database to the sample store: `npx tsx setup.ts` (`npm run setup` at the root). Says what goes, and asks first.
import { confirmed, listing, parseFlags, runMain } from '../shared/cli.ts';
import { commandFor } from '../shared/hints.ts';
import { planReset, resetDatabase } from './setup-database.ts';

const USAGE = `Usage: ${commandFor(import.meta.url, '[--yes]')}

Resets the database named by DB_NAME in .env: drops this part's tables and creates them again with
the sample store. If the tables hold any rows, it first says what it would delete and asks; --yes
confirms without asking.
Every other command creates what is missing by itself: you only need this to start over.`;

await runMain(async () => {
  const { values } = parseFlags({ options: { yes: { type: 'boolean', short: 'y' } } });
  const plan = await planReset();
  // Every row counts, sample data too: a customer added or an order changed by hand would be lost.
  if (plan.losses.length) {
    console.log(`Resetting database "${plan.database}" deletes ${listing(plan.losses)}.`);
    if (
      !values.yes &&
      !(await confirmed('Type yes to delete and reset: ', commandFor(import.meta.url, '--yes')))
    ) {
      console.log('Nothing was changed.');
      return 1;
    }
  }
  await resetDatabase();
}, USAGE);
