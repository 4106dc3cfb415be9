// Deletes conversations nobody has used for N days, with their messages and traces, and stale customer notes: `npx tsx prune.ts --days=90`.
import {
  parseFlags,
  runMain,
  UsageError,
  startedDirectly,
  type ScriptIo,
} from '../../shared/cli.ts';
import { logDir } from '../../shared/config.ts';
import { commandFor, displayPath } from '../../shared/hints.ts';
import { plural, printable } from '../../shared/text.ts';
import { checkFullDatabase } from './store/ensure-tables.ts';
import { planPrune, prune } from './privacy/delete-conversations.ts';
import { openClusterDatabase } from './store/cluster-database.ts';

export function usage(io: ScriptIo): string {
  return `Usage: ${commandFor(import.meta.url, '--days=<N> [--dry-run]', io)}

Deletes conversations not updated for N days (their messages and trace files too), trace files
older than N days that belong to no conversation, and customer notes past their expiry or not
recalled for N days. --dry-run lists them without deleting anything. A conversation in use at that
moment is skipped.`;
}

export async function main(io: ScriptIo): Promise<number | void> {
  const { values } = parseFlags({
    args: io.args,
    options: { days: { type: 'string' }, 'dry-run': { type: 'boolean' } },
  });
  if (values.days === undefined || !/^[1-9]\d*$/.test(values.days)) {
    throw new UsageError(
      `--days must be a positive whole number of days (got ${values.days === undefined ? 'nothing' : `"${printable(values.days, { singleLine: true })}"`}).`,
    );
  }
  const days = Number(values.days);
  await checkFullDatabase();

  const plan = await planPrune(logDir(io.env), days);
  const dryRun = values['dry-run'] ?? false;
  const verb = dryRun ? 'Would delete' : 'Deleted';
  const { removed, busy, notes } = dryRun
    ? {
        removed: plan.conversations.map((c) => ({ conversationId: c.id, messages: c.messages })),
        busy: [],
        notes: plan.notes.map((note) => note.id),
      }
    : await prune(logDir(io.env), plan, days);
  for (const r of removed)
    io.log(
      `${verb} conversation ${r.conversationId} (${plural(r.messages, 'message')}) and its traces`,
    );
  for (const id of busy)
    io.log(`Skipped conversation ${id}: a question is being answered in it right now`);
  for (const file of plan.orphanTraces) io.log(`${verb} trace ${displayPath(file, io)}`);
  for (const note of plan.notes.filter((n) => notes.includes(n.id)))
    io.log(
      `${verb} note ${note.id} of ${printable(note.customer_email, { singleLine: true })} (${note.reason === 'expired' ? 'expired' : `not recalled for ${plural(days, 'day')}`})`,
    );
  io.log(
    `${verb} ${plural(removed.length, 'conversation')} and ${plural(plan.orphanTraces.length, 'other trace file')} older than ${plural(days, 'day')}.`,
  );
  io.log(
    `${verb} ${plural(notes.length, 'customer note')}, expired or not recalled for ${plural(days, 'day')}.`,
  );
}

export const openDatabase = openClusterDatabase;
if (startedDirectly(import.meta.url)) await runMain(main, usage, { openDatabase });
