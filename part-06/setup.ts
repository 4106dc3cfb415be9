// Resets the database to the sample store: `npx tsx setup.ts` (`npm run setup` at the root). Says what goes, and asks first.
import readline from 'node:readline/promises';
import { parseFlags, runMain, UsageError } from '../shared/cli.ts';
import { commandFor } from '../shared/hints.ts';
import { llmSettingsOrError, logDir } from '../shared/config.ts';
import { planReset, resetDatabase } from './setup-database.ts';
import { lockConversations } from './going-further/conversation-lock.ts';
import { deleteTraceFiles, existingTraceFiles } from './going-further/retention.ts';

const USAGE = `Usage: ${commandFor(import.meta.url, '[--yes]')}

Resets the database named by DB_NAME in .env: drops this part's tables, creates them again with the
sample store, and indexes the help center. If the tables hold any rows, it first says what it would
delete (with the conversations' trace files) and asks; --yes confirms without asking.
Every other command creates what is missing by itself: you only need this to start over.`;

await runMain(async () => {
  const { values } = parseFlags({ options: { yes: { type: 'boolean', short: 'y' } } });
  const plan = await planReset();
  const traces = existingTraceFiles(logDir(), plan.conversations);
  const losses = traces.length ? [...plan.losses, count(traces.length, 'trace file')] : plan.losses;
  // Every row counts, sample data too: a customer added or an order changed by hand would be lost.
  if (losses.length) {
    console.log(`Resetting database "${plan.database}" deletes ${listing(losses)}.`);
    if (!values.yes && !(await confirmed())) {
      console.log('Nothing was changed.');
      return 1;
    }
  }
  // Questions being answered are waited for, and later ones find their conversation gone: none writes
  // a message or a trace after the reset deleted them.
  await resetDatabase(console.log, llmSettingsOrError(), (db) =>
    lockConversations(db, plan.conversations),
  );
  const deleted = deleteTraceFiles(traces);
  if (deleted.length) console.log(`Deleted ${count(deleted.length, 'trace file')}.`);
}, USAGE);

/** On a terminal, asks (Ctrl-C answers no); in a script (no terminal to ask on), --yes is required. */
async function confirmed(): Promise<boolean> {
  if (!process.stdin.isTTY)
    throw new UsageError(
      `Nothing was changed: to confirm, run ${commandFor(import.meta.url, '--yes')}`,
    );
  const rl = readline.createInterface({ input: process.stdin, output: process.stdout });
  const controller = new AbortController();
  rl.on('SIGINT', () => controller.abort());
  try {
    return /^y(es)?$/i.test(
      (await rl.question('Type yes to delete and reset: ', { signal: controller.signal })).trim(),
    );
  } catch (error) {
    if ((error as Error).name !== 'AbortError') throw error;
    console.log();
    return false;
  } finally {
    rl.close();
  }
}

/** ["a", "b", "c"] → "a, b and c" */
function listing(items: string[]): string {
  return items.length > 1 ? `${items.slice(0, -1).join(', ')} and ${items.at(-1)}` : items.join('');
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}
