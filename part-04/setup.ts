// Resets the database to the sample store: `npx tsx setup.ts` (`npm run setup` at the root). Says what goes, and asks first.
import {
  confirmed,
  listing,
  parseFlags,
  runMain,
  type ScriptIo,
  startedDirectly,
} from '../shared/cli.ts';
import { commandFor } from '../shared/hints.ts';
import { planReset, resetDatabase } from './setup-database.ts';

export function usage(io: ScriptIo): string {
  return `Usage: ${commandFor(import.meta.url, '[--yes]', io)}

Resets the database named by DB_NAME in .env: drops this part's tables and creates them again with
the sample store. If the tables hold any rows, it first says what it would delete and asks; --yes
confirms without asking.
Every other command creates what is missing by itself: you only need this to start over.`;
}

export async function main(io: ScriptIo): Promise<number | void> {
  const { values } = parseFlags({
    args: io.args,
    options: { yes: { type: 'boolean', short: 'y' } },
  });
  const plan = await planReset();
  // Every row counts, sample data too: a customer added or an order changed by hand would be lost.
  if (plan.losses.length) {
    io.log(`Resetting database "${plan.database}" deletes ${listing(plan.losses)}.`);
    if (
      !values.yes &&
      !(await confirmed(
        'Type yes to delete and reset: ',
        commandFor(import.meta.url, '--yes', io),
        io,
      ))
    ) {
      io.log('Nothing was changed.');
      return 1;
    }
  }
  await resetDatabase(io.log);
}

if (startedDirectly(import.meta.url)) await runMain(main, usage);
