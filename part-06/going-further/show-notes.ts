// Going further: lists what Nimbus keeps about one customer across conversations: `npx tsx show-notes.ts --customer=<email>`.
import { parseFlags, runMain, UsageError } from '../../shared/cli.ts';
import { commandFor } from '../../shared/hints.ts';
import { lookUpCustomer } from '../session.ts';
import { checkFullDatabase } from './database-setup.ts';
import { allNotes } from './customer-notes.ts';
import { notesView } from './notes-view.ts';

const VIEWER = new URL('./show-conversation.ts', import.meta.url);
const USAGE = `Usage: ${commandFor(import.meta.url, '--customer=<email>')}

Lists one customer's notes, expired ones too: what they asked Nimbus to remember, when, in which
conversation, when a question last needed it, and until when it applies. This is an operator's
tool. Which notes go with a question, and why:
  ${commandFor(VIEWER, '<id> --context --question="…"')}`;

await runMain(async () => {
  const { values } = parseFlags({ options: { customer: { type: 'string' } } });
  if (values.customer === undefined)
    throw new UsageError('Say whose notes to list: --customer=<email>.');
  await checkFullDatabase();
  const customer = await lookUpCustomer(values.customer);
  console.log(notesView(customer, await allNotes(customer.id)).join('\n'));
}, USAGE);
