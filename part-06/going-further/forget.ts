// Going further: deletes conversations everywhere, `npx tsx forget.ts <id>`, or all of one customer's, notes too, with --customer=<email>.
import { conversationId, parseFlags, runMain, UsageError } from '../../shared/cli.ts';
import { logDir } from '../../shared/config.ts';
import { commandFor, displayPath } from '../../shared/hints.ts';
import { printable } from '../../shared/text.ts';
import { lookUpCustomer } from '../session.ts';
import { checkFullDatabase } from './store/ensure-tables.ts';
import {
  forgetConversation,
  forgetCustomer,
  type Removed,
} from './privacy/delete-conversations.ts';

const USAGE = `Usage: ${commandFor(import.meta.url, '<conversation id>')}
       ${commandFor(import.meta.url, '--customer=<email>')}

Deletes a conversation, all its messages, the customer notes learned in it and its trace file under
logs/, and says what it removed; with --customer, every conversation and every note of that customer
(a request to delete their data, the same erasure as the customer's own forget_everything), naming
the orders, refunds and support tickets the store keeps. This is an operator's tool: it acts on any
customer's conversations. A question being answered in a conversation is waited for, at most 30 s.`;

await runMain(async () => {
  const { values, positionals } = parseFlags({
    options: { customer: { type: 'string' } },
    allowPositionals: true,
  });
  if (values.customer !== undefined && positionals.length)
    throw new UsageError('Give a conversation id or --customer, not both.');
  if (values.customer === undefined && positionals.length !== 1)
    throw new UsageError('Give exactly one conversation id, or --customer=<email>.');
  const id = values.customer === undefined ? conversationId(positionals[0], 'forget') : undefined;
  await checkFullDatabase();

  if (id) {
    const removed = await forgetConversation(logDir(), id);
    if (!removed) console.log(`Conversation ${id} was not found; nothing to delete.`);
    else report(removed);
    return;
  }
  const customer = await lookUpCustomer(values.customer!);
  const { conversations, notes, tickets } = await forgetCustomer(logDir(), customer.id);
  for (const r of conversations) report(r);
  const messages = conversations.reduce((sum, r) => sum + r.messages, 0);
  const kept = tickets.length
    ? ` and ${plural(tickets.length, 'support ticket')} (${tickets.map((id) => `#${id}`).join(', ')})`
    : '';
  console.log(`Kept their orders and refunds${kept}: the store's records, which it must keep.`);
  console.log(
    `Deleted ${plural(conversations.length, 'conversation')} (${plural(messages, 'message')}) and ${plural(notes, 'note')} of ${printable(customer.email, { singleLine: true })}.`,
  );
}, USAGE);

function report(removed: Removed): void {
  const notes = removed.notes ? `, ${plural(removed.notes, 'note')} learned in it` : '';
  const trace = removed.traceFile ? ` and its trace file ${displayPath(removed.traceFile)}` : '';
  console.log(
    `Deleted conversation ${removed.conversationId}: ${plural(removed.messages, 'message')}${notes}${trace}.`,
  );
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}
