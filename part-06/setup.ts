// Resets the database to the sample store: `npx tsx setup.ts`. Says what goes, and asks first.
import { existsSync, rmSync } from 'node:fs';
import {
  confirmed,
  listing,
  parseFlags,
  runMain,
  type ScriptIo,
  startedDirectly,
} from '../shared/cli.ts';
import { commandFor } from '../shared/hints.ts';
import { llmSettingsOrError, logDir } from '../shared/config.ts';
import { planReset, resetDatabase } from './setup-database.ts';
import { conversationTraceFile } from './trace.ts';

export function usage(io: ScriptIo): string {
  return `Usage: ${commandFor(import.meta.url, '[--yes]', io)}

Resets the database named by DB_NAME in .env: drops it, with every table in it, creates this part's
tables again with the sample store, and indexes the help center. If the tables hold any rows, it first
says what it would delete (with the conversations' trace files) and asks; --yes confirms without asking.
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
    io.log(
      `Resetting database "${plan.database}" deletes ${listing(plan.losses)}, with their trace files.`,
    );
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
  await resetDatabase(io.log, llmSettingsOrError(io.env));
  // A conversation's trace is a copy of it: it goes with the rows.
  const files = plan.conversations
    .map((id) => conversationTraceFile(logDir(io.env), id))
    .filter(existsSync);
  for (const file of files) rmSync(file); // a link in a file's place goes itself, not what it points to
  if (files.length) io.log(`Deleted ${files.length} trace file${files.length === 1 ? '' : 's'}.`);
}

if (startedDirectly(import.meta.url)) await runMain(main, usage);
