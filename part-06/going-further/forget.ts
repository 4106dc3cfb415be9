// Deletes conversations everywhere, `npx tsx forget.ts <id>`, or all of one customer's, notes too, with --customer=<email> (asked first).
import {
  confirmed,
  conversationId,
  parseFlags,
  runMain,
  type ScriptIo,
  startedDirectly,
  UsageError,
} from '../../shared/cli.ts';
import { logDir } from '../../shared/config.ts';
import { commandFor, displayPath } from '../../shared/hints.ts';
import { plural, printable } from '../../shared/text.ts';
import { lookUpCustomer } from '../session.ts';
import { checkFullDatabase } from './store/ensure-tables.ts';
import {
  forgetConversation,
  forgetCustomer,
  planCustomerErasure,
  planForgetConversation,
  type Removed,
} from './privacy/delete-conversations.ts';
import { openClusterDatabase } from './store/cluster-database.ts';

export function usage(io: ScriptIo): string {
  return `Usage: ${commandFor(import.meta.url, '<conversation id> [--dry-run]', io)}
       ${commandFor(import.meta.url, '--customer=<email> [--dry-run] [--yes]', io)}

Deletes a conversation, all its messages, the customer notes learned in it and its trace file under
logs/, and says what it removed; with --customer, every conversation and every note of that customer
(a request to delete their data, the same erasure as the customer's own forget_everything), naming
the orders, refunds and support tickets the store keeps. --customer first says what it would delete
and asks; --yes confirms without asking (needed when the input is not a terminal). A conversation id
names exactly what goes, so that is not asked. --dry-run says what would go and deletes nothing.
This is an operator's tool: it acts on any customer's conversations. A question being answered in a
conversation is waited for, at most 30 s.`;
}

export async function main(io: ScriptIo): Promise<number | void> {
  const { values, positionals } = parseFlags({
    args: io.args,
    options: {
      customer: { type: 'string' },
      'dry-run': { type: 'boolean' },
      yes: { type: 'boolean', short: 'y' },
    },
    allowPositionals: true,
  });
  if (values.customer !== undefined && positionals.length)
    throw new UsageError('Give a conversation id or --customer, not both.');
  if (values.customer === undefined && positionals.length !== 1)
    throw new UsageError('Give exactly one conversation id, or --customer=<email>.');
  const id = values.customer === undefined ? conversationId(positionals[0], 'forget') : undefined;
  const dryRun = values['dry-run'] ?? false;
  await checkFullDatabase();

  if (id) {
    const removed = dryRun
      ? await planForgetConversation(logDir(io.env), id)
      : await forgetConversation(logDir(io.env), id);
    if (!removed) io.log(`Conversation ${id} was not found; nothing to delete.`);
    else report(io, removed, dryRun ? 'Would delete' : 'Deleted');
    return;
  }
  const customer = await lookUpCustomer(values.customer!);
  const who = printable(customer.email, { singleLine: true });
  const plan = await planCustomerErasure(logDir(io.env), customer.id);
  const planned = `${conversationsAndMessages(plan.conversations)} and ${plural(plan.notes, 'note')}`;
  if (dryRun) {
    for (const c of plan.conversations)
      report(
        io,
        { conversationId: c.id, messages: c.messages, notes: 0, traceFile: c.traceFile },
        'Would delete',
      );
    io.log(`Would keep their orders and refunds${ticketsKept(plan.tickets)}.`);
    io.log(`Would delete ${planned} of ${who}. Nothing was deleted (--dry-run).`);
    return;
  }
  // An erasure cannot be undone: like a reset, it says what goes and asks, unless there is nothing.
  if (plan.conversations.length || plan.notes) {
    io.log(`Forgetting ${who} deletes ${planned}, with their trace files.`);
    const yes = commandFor(import.meta.url, `--customer=${shellWord(customer.email)} --yes`, io);
    if (!values.yes && !(await confirmed('Type yes to delete them: ', yes, io))) {
      io.log('Nothing was deleted.');
      return 1;
    }
  }
  // Deletes what is there now: a conversation saved since the plan goes too, and is reported.
  const { conversations, notes, tickets } = await forgetCustomer(logDir(io.env), customer.id);
  for (const r of conversations) report(io, r, 'Deleted');
  io.log(
    `Kept their orders and refunds${ticketsKept(tickets)}: the store's records, which it must keep.`,
  );
  io.log(
    `Deleted ${conversationsAndMessages(conversations.map((r) => ({ messages: r.messages })))} and ${plural(notes, 'note')} of ${who}.`,
  );
}

function report(io: ScriptIo, removed: Removed, verb: 'Deleted' | 'Would delete'): void {
  const notes = removed.notes ? `, ${plural(removed.notes, 'note')} learned in it` : '';
  const trace = removed.traceFile
    ? ` and its trace file ${displayPath(removed.traceFile, io)}`
    : '';
  io.log(
    `${verb} conversation ${removed.conversationId}: ${plural(removed.messages, 'message')}${notes}${trace}.`,
  );
}

function conversationsAndMessages(conversations: Array<{ messages: number }>): string {
  const messages = conversations.reduce((sum, c) => sum + c.messages, 0);
  return `${plural(conversations.length, 'conversation')} (${plural(messages, 'message')})`;
}

function ticketsKept(tickets: number[]): string {
  if (!tickets.length) return '';
  return ` and ${plural(tickets.length, 'support ticket')} (${tickets.map((id) => `#${id}`).join(', ')})`;
}

/** The address as one shell word, so the printed --yes command works when pasted. */
function shellWord(text: string): string {
  const word = printable(text, { singleLine: true });
  return /^[\w@.+-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

export const openDatabase = openClusterDatabase;
if (startedDirectly(import.meta.url)) await runMain(main, usage, { openDatabase });
