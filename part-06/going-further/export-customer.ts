// Prints everything held about one customer as one JSON object: `npx tsx export-customer.ts --customer=<email>`.
import {
  parseFlags,
  runMain,
  startedDirectly,
  UsageError,
  type ScriptIo,
} from '../../shared/cli.ts';
import { logDir } from '../../shared/config.ts';
import { commandFor } from '../../shared/hints.ts';
import { lookUpCustomer } from '../session.ts';
import { checkFullDatabase } from './store/ensure-tables.ts';
import { exportCustomer } from './privacy/customer-data.ts';
import { openClusterDatabase } from './store/cluster-database.ts';

export function usage(io: ScriptIo): string {
  return `Usage: ${commandFor(import.meta.url, '--customer=<email>', io)}

Prints, as one JSON object, everything Nimbus holds about one customer: their record, orders,
support tickets, notes, and every conversation with its messages and the path of its trace file
under logs/. The answer to "what do you hold about me?". This is an operator's tool; forget.ts
--customer=<email> deletes the conversations and notes.`;
}

export async function main(io: ScriptIo): Promise<void> {
  const { values } = parseFlags({ args: io.args, options: { customer: { type: 'string' } } });
  if (values.customer === undefined)
    throw new UsageError('Say whose data to export: --customer=<email>.');
  await checkFullDatabase();
  const customer = await lookUpCustomer(values.customer);
  try {
    await exportCustomer(logDir(io.env), customer, (text) => written(io.stdout, text));
  } catch (error) {
    if (!(error instanceof ReaderGone)) throw error; // `| head` has read all it wanted: not a failure
  }
}

/** The reader of the output left (a pipe closed by `head`): nothing more is read or written. */
class ReaderGone extends Error {}

/**
 * Writes as it is read: a reader that is behind (a pipe, a slow terminal) is waited for, and one that
 * left stops the export, instead of a wait for a 'drain' that never comes.
 */
function written(stream: ScriptIo['stdout'], text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    if (stream.destroyed) return reject(new ReaderGone());
    if (stream.write(text)) return resolve();
    const settle = (gone: boolean) => () => {
      stream.off('drain', drained).off('close', closed).off('error', closed);
      if (gone) reject(new ReaderGone());
      else resolve();
    };
    const drained = settle(false);
    const closed = settle(true);
    stream.once('drain', drained).once('close', closed).once('error', closed);
  });
}

export const openDatabase = openClusterDatabase;
if (startedDirectly(import.meta.url)) await runMain(main, usage, { openDatabase });
