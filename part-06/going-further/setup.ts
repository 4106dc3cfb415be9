// Going further: the reset the full Nimbus uses (`npm run setup`): the chapter's, after waiting for the questions being answered, then going further's tables.
import { confirmed, listing, parseFlags, runMain } from '../../shared/cli.ts';
import { commandFor } from '../../shared/hints.ts';
import { llmSettingsOrError, logDir } from '../../shared/config.ts';
import { planReset, resetDatabase } from '../setup-database.ts';
import { leasedConversations, takeLeases } from './question/lease.ts';
import { deleteTraces } from './privacy/delete-conversations.ts';
import { ensureFullDatabase } from './store/ensure-tables.ts';

const USAGE = `Usage: ${commandFor(import.meta.url, '[--yes]')}

Resets the database named by DB_NAME in .env: drops Nimbus's tables (going further's too), creates
them again with the sample store, and indexes the help center. If the tables hold any rows,
it first says what it would delete (with the conversations' trace files) and asks; --yes confirms
without asking. Questions being answered are waited for. Every other command creates what is missing
by itself: you only need this to start over.`;

await runMain(async () => {
  const { values } = parseFlags({ options: { yes: { type: 'boolean', short: 'y' } } });
  const plan = await planReset();
  // Every row counts, sample data too: a customer added or an order changed by hand would be lost.
  if (plan.losses.length) {
    console.log(
      `Resetting database "${plan.database}" deletes ${listing(plan.losses)}, with their trace files.`,
    );
    const yes = commandFor(import.meta.url, '--yes');
    if (!values.yes && !(await confirmed('Type yes to delete and reset: ', yes))) {
      console.log('Nothing was changed.');
      return 1;
    }
  }
  // Questions being answered are waited for (new conversations too: their leases name them), or their
  // leases taken: with the tables gone, none of them saves a message or a trace after the reset.
  const inFlight = await leasedConversations().catch(() => []); // no such table: nothing in flight
  const llm = llmSettingsOrError();
  await resetDatabase(console.log, llm, async () => {
    const onWait = () => console.log(`Waiting for the questions being answered to finish…`);
    await takeLeases(inFlight, { takeOver: true, onWait });
  });
  // The full Nimbus's own tables, so its viewer and tools find them right after a reset.
  await ensureFullDatabase(console.log, llm);
  const ids = [...plan.conversations, ...inFlight.map((c) => c.id)];
  const traces = deleteTraces(logDir(), ids);
  if (traces) console.log(`Deleted ${traces} trace file${traces === 1 ? '' : 's'}.`);
}, USAGE);
