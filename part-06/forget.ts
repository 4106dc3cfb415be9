// Deletes one conversation everywhere: `npx tsx forget.ts <id>` removes its messages and its traces.
import path from 'node:path';
import { parseFlags, runMain, UsageError } from '../shared/cli.ts';
import { ROOT_DIR } from '../shared/config.ts';
import { parseConversationId } from './memory.ts';
import { forgetConversation } from './retention.ts';
import { ensureDatabase } from './setup-database.ts';

const USAGE = `Usage: npx tsx forget.ts <conversation id>

Deletes the conversation, all its messages and its trace file under logs/, and says what it removed.`;

await runMain(async () => {
  const { values, positionals } = parseFlags({ options: { help: { type: 'boolean', short: 'h' } }, allowPositionals: true });
  if (values.help) return void console.log(USAGE);
  if (positionals.length !== 1) throw new UsageError('Give exactly one conversation id.');
  const id = parseConversationId(positionals[0], 'forget');
  await ensureDatabase();

  const removed = await forgetConversation(id);
  if (!removed) {
    console.log(`Conversation ${id} was not found; nothing to delete.`);
    return;
  }
  console.log(`Deleted conversation ${id}: ${removed.messages} messages.`);
  console.log(removed.traceFile ? `Deleted its trace file: ${path.relative(ROOT_DIR, removed.traceFile)}` : 'It had no trace file.');
}, USAGE);
