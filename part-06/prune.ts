// Deletes conversations nobody has used for N days, with their messages and traces: `npx tsx prune.ts --days=90`.
import path from 'node:path';
import { parseFlags, runMain, UsageError } from '../shared/cli.ts';
import { ROOT_DIR } from '../shared/config.ts';
import { planPrune, prune } from './retention.ts';
import { ensureDatabase } from './setup-database.ts';

const USAGE = `Usage: npx tsx prune.ts --days=<N> [--dry-run]

Deletes conversations not updated for N days (their messages and trace files too), and trace files
older than N days that belong to no conversation. --dry-run lists them without deleting anything.`;

await runMain(async () => {
  const { values } = parseFlags({
    options: { help: { type: 'boolean', short: 'h' }, days: { type: 'string' }, 'dry-run': { type: 'boolean' } },
  });
  if (values.help) return void console.log(USAGE);
  if (values.days === undefined || !/^[1-9]\d*$/.test(values.days)) {
    throw new UsageError(`--days must be a positive whole number of days (got ${values.days === undefined ? 'nothing' : `"${values.days}"`}).`);
  }
  const days = Number(values.days);
  await ensureDatabase();

  const plan = await planPrune(days);
  const dryRun = values['dry-run'] ?? false;
  const verb = dryRun ? 'Would delete' : 'Deleted';
  const relative = (file: string) => path.relative(ROOT_DIR, file);

  const removed = dryRun
    ? plan.conversations.map((c) => ({ conversationId: c.id, messages: c.messages }))
    : await prune(plan, days);
  for (const r of removed) console.log(`${verb} conversation ${r.conversationId} (${r.messages} messages) and its traces`);
  for (const file of plan.orphanTraces) console.log(`${verb} trace ${relative(file)}`);
  console.log(
    `${verb} ${removed.length} conversation${removed.length === 1 ? '' : 's'} and ${plan.orphanTraces.length} other trace file${plan.orphanTraces.length === 1 ? '' : 's'} older than ${days} days.`,
  );
}, USAGE);
