// The reset the full Nimbus uses (`npm run setup`): the chapter's, once the questions being answered are waited for, then going further's tables.
import {
  confirmed,
  listing,
  parseFlags,
  runMain,
  type ScriptIo,
  startedDirectly,
} from '../../shared/cli.ts';
import { llmSettingsOrError, logDir } from '../../shared/config.ts';
import { commandFor } from '../../shared/hints.ts';
import { plural } from '../../shared/text.ts';
import { planReset, resetDatabase } from '../setup-database.ts';
import { deleteTraces } from './privacy/trace-files.ts';
import { leasedConversations, takeLeases } from './question/lease.ts';
import { ensureFullDatabase } from './store/ensure-tables.ts';
import { openClusterDatabase } from './store/cluster-database.ts';

export function usage(io: ScriptIo): string {
  return `Usage: ${commandFor(import.meta.url, '[--yes]', io)}

Resets the database named by DB_NAME in .env: drops it, with every table in it (going further's too),
creates Nimbus's tables again with the sample store, and indexes the help center. If the tables hold any rows,
it first says what it would delete (with the conversations' trace files) and asks; --yes confirms
without asking. Questions being answered are waited for. Every other command creates what is missing
by itself: you only need this to start over.`;
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
    const yes = commandFor(import.meta.url, '--yes', io);
    if (!values.yes && !(await confirmed('Type yes to delete and reset: ', yes, io))) {
      io.log('Nothing was changed.');
      return 1;
    }
  }
  // Questions being answered are waited for (new conversations too: their leases name them), or their
  // leases taken: none of them writes anything once the reset begins (every write checks its lease).
  const inFlight = await leasedConversations().catch(() => []); // no such table: nothing in flight
  const onWait = () => io.log('Waiting for the questions being answered to finish…');
  const release = await takeLeases(inFlight, { takeOver: true, erasure: true, onWait });
  const llm = llmSettingsOrError(io.env);
  try {
    await resetDatabase(io.log, llm);
    // The full Nimbus's own tables, so its viewer and tools find them right after a reset.
    await ensureFullDatabase(io.log, llm);
  } finally {
    // A reset that failed leaves the questions free to go on; one that ran dropped the leases anyway.
    await release();
  }
  const ids = [...plan.conversations, ...inFlight.map((c) => c.id)];
  const traces = deleteTraces(logDir(io.env), ids);
  if (traces) io.log(`Deleted ${plural(traces, 'trace file')}.`);
}

export const openDatabase = openClusterDatabase;
if (startedDirectly(import.meta.url)) await runMain(main, usage, { openDatabase });
