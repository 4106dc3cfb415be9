// The reset the full Nimbus uses (`npm run setup`): the chapter's, after waiting for the questions being answered, then going further's tables.
import {
  confirmed,
  listing,
  parseFlags,
  runMain,
  type ScriptIo,
  startedDirectly,
} from '../../shared/cli.ts';
import { llmSettingsOrError, logDir } from '../../shared/config.ts';
import { DatabaseError, query } from '../../shared/db.ts';
import { commandFor } from '../../shared/hints.ts';
import { dropTables, planReset, withSetupConnection } from '../setup-database.ts';
import { deleteTraces } from './privacy/trace-files.ts';
import { leasedConversations, takeLeases } from './question/lease.ts';
import { dropProductTables, ensureFullDatabase, PRODUCT_TABLES } from './store/ensure-tables.ts';
import { openClusterDatabase } from './store/cluster-database.ts';

export function usage(io: ScriptIo): string {
  return `Usage: ${commandFor(import.meta.url, '[--yes]', io)}

Resets the database named by DB_NAME in .env: drops Nimbus's tables (going further's too), creates
them again with the sample store, and indexes the help center. If the tables hold any rows,
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
  // Tables neither the chapter nor going further knows would keep their rows, pointing at nothing.
  const others = plan.others.filter((table) => !PRODUCT_TABLES.includes(table));
  if (others.length)
    throw new DatabaseError(
      `Database "${plan.database}" also holds ${listing(others)}, which point at Nimbus's tables: drop or move them first.`,
    );
  const losses = [...plan.losses, ...(await productRows(plan.database))];
  // Every row counts, sample data too: a customer added or an order changed by hand would be lost.
  if (losses.length) {
    io.log(
      `Resetting database "${plan.database}" deletes ${listing(losses)}, with their trace files.`,
    );
    const yes = commandFor(import.meta.url, '--yes', io);
    if (!values.yes && !(await confirmed('Type yes to delete and reset: ', yes, io))) {
      io.log('Nothing was changed.');
      return 1;
    }
  }
  const inFlight = await leasedConversations().catch(() => []); // no such table: nothing in flight
  const llm = llmSettingsOrError(io.env);
  await withSetupConnection(async (db, database) => {
    // Questions being answered are waited for (new conversations too: their leases name them), or their
    // leases taken: with the tables gone, none of them saves a message or a trace after the reset.
    const onWait = () => io.log('Waiting for the questions being answered to finish…');
    await takeLeases(inFlight, { takeOver: true, onWait });
    await dropProductTables(db, database, io.log);
    await dropTables(db, database, io.log);
  });
  // The chapter's tables with the sample store, then going further's, as a first run creates them.
  await ensureFullDatabase(io.log, llm);
  const ids = [...plan.conversations, ...inFlight.map((c) => c.id)];
  const traces = deleteTraces(logDir(io.env), ids);
  if (traces) io.log(`Deleted ${traces} trace file${traces === 1 ? '' : 's'}.`);
}

/** What going further's tables hold, in words ("3 rows of customer_notes"), for those that exist. */
async function productRows(database: string): Promise<string[]> {
  const existing = await query<Array<{ name: string }>>(
    'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = ? AND table_name IN (?)',
    [database, PRODUCT_TABLES],
  );
  const losses: string[] = [];
  for (const table of PRODUCT_TABLES.filter((name) => existing.some((t) => t.name === name))) {
    const [{ rows }] = await query<Array<{ rows: number }>>(
      `SELECT COUNT(*) AS \`rows\` FROM \`${table}\``,
    );
    if (rows) losses.push(`${rows} row${rows === 1 ? '' : 's'} of ${table}`);
  }
  return losses;
}

export const openDatabase = openClusterDatabase;
if (startedDirectly(import.meta.url)) await runMain(main, usage, { openDatabase });
