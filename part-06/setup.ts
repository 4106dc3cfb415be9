// Resets the database to the sample store: `npx tsx setup.ts`. Says what goes, and asks first.
import { existsSync, rmSync } from 'node:fs';
import { confirmed, listing, parseFlags, runMain } from '../shared/cli.ts';
import { commandFor } from '../shared/hints.ts';
import { llmSettingsOrError, logDir } from '../shared/config.ts';
import { planReset, resetDatabase } from './setup-database.ts';
import { conversationTraceFile } from './trace.ts';

const USAGE = `Usage: ${commandFor(import.meta.url, '[--yes]')}

Resets the database named by DB_NAME in .env: drops this part's tables, creates them again with the
sample store, and indexes the help center. If the tables hold any rows, it first says what it would
delete (with the conversations' trace files) and asks; --yes confirms without asking.
Every other command creates what is missing by itself: you only need this to start over.`;

await runMain(async () => {
  const { values } = parseFlags({ options: { yes: { type: 'boolean', short: 'y' } } });
  const plan = await planReset();
  // Every row counts, sample data too: a customer added or an order changed by hand would be lost.
  if (plan.losses.length) {
    console.log(
      `Resetting database "${plan.database}" deletes ${listing(plan.losses)}, with their trace files.`,
    );
    if (
      !values.yes &&
      !(await confirmed('Type yes to delete and reset: ', commandFor(import.meta.url, '--yes')))
    ) {
      console.log('Nothing was changed.');
      return 1;
    }
  }
  await resetDatabase(console.log, llmSettingsOrError());
  // A conversation's trace is a copy of it: it goes with the rows.
  const files = plan.conversations
    .map((id) => conversationTraceFile(logDir(), id))
    .filter(existsSync);
  for (const file of files) rmSync(file); // a link in a file's place goes itself, not what it points to
  if (files.length)
    console.log(`Deleted ${files.length} trace file${files.length === 1 ? '' : 's'}.`);
}, USAGE);
