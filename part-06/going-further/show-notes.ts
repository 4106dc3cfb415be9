// Lists what Nimbus keeps about one customer across conversations: `npx tsx show-notes.ts --customer=<email>`.
import {
  parseFlags,
  runMain,
  type ScriptIo,
  startedDirectly,
  UsageError,
} from '../../shared/cli.ts';
import { commandFor } from '../../shared/hints.ts';
import { lookUpCustomer } from '../session.ts';
import { checkFullDatabase } from './store/ensure-tables.ts';
import { allNotes } from './notes/notes-queries.ts';
import { notesView } from './notes/notes-view.ts';
import { openClusterDatabase } from './store/cluster-database.ts';

const VIEWER = new URL('./show-conversation.ts', import.meta.url);
export function usage(io: ScriptIo): string {
  return `Usage: ${commandFor(import.meta.url, '--customer=<email>', io)}

Lists one customer's notes, expired ones too: what they asked Nimbus to remember, when, in which
conversation, when a question last needed it, and until when it applies. This is an operator's
tool. Which notes go with a question, and why:
  ${commandFor(VIEWER, '<id> --context --question="…"', io)}`;
}

export async function main(io: ScriptIo): Promise<number | void> {
  const { values } = parseFlags({ args: io.args, options: { customer: { type: 'string' } } });
  if (values.customer === undefined)
    throw new UsageError('Say whose notes to list: --customer=<email>.');
  await checkFullDatabase();
  const customer = await lookUpCustomer(values.customer);
  io.log(notesView(customer, await allNotes(customer.id)).join('\n'));
}

export const openDatabase = openClusterDatabase;
if (startedDirectly(import.meta.url)) await runMain(main, usage, { openDatabase });
