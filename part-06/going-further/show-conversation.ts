// The chapter's viewer for the full Nimbus: damaged rows shown in place, customer notes with the context, and --json.
import {
  conversationId,
  parseFlags,
  runMain,
  type ScriptIo,
  startedDirectly,
  UsageError,
  wholeNumber,
} from '../../shared/cli.ts';
import { commandFor, usageLines } from '../../shared/hints.ts';
import { printableJson } from '../../shared/text.ts';
import { memoryBudget, type MemoryBudget } from '../context.ts';
import { contextView } from '../conversation-view.ts';
import { checkFullDatabase } from './store/ensure-tables.ts';
import { describeConversation } from '../stored-conversations.ts';
import { loadContext } from './store/load-context.ts';
import { loadRows, turnsView } from './store/message-rows.ts';
import { listConversations, listView } from './store/recent-conversations.ts';
import { exportConversation } from './privacy/customer-data.ts';
import { recallView } from './notes/notes-view.ts';
import { notesBudget, recallNotes } from './notes/recall-notes.ts';
import { readHistory, shownMessages } from './store/read-history.ts';
import { openClusterDatabase } from './store/cluster-database.ts';

export function usage(io: ScriptIo): string {
  return `${usageLines(
    import.meta.url,
    [
      ['', 'list recent conversations'],
      ['<id>', 'every stored message, turn by turn, with tokens'],
      ['<id> --json', 'the whole stored conversation as one JSON object'],
      ['<id> --context', 'what the model will see with the next question, and why'],
      ['<id> --context --json', 'the exact messages that will be sent'],
      ['<id> --context --budget=4000 --recent=1', 'the same under other settings'],
      ['<id> --context --question="…"', 'customer notes ranked for that question'],
    ],
    io,
  )}

--budget and --recent default to MEMORY_MAX_CHARS and MEMORY_RECENT_TURNS (.env, else 12000 and 2);
the customer notes' budget is MEMORY_NOTES_MAX_CHARS (else 1500).
This is an operator's tool: it shows any customer's conversation, and whose it is.`;
}

export async function main(io: ScriptIo): Promise<number | void> {
  const { values, positionals } = parseFlags({
    args: io.args,
    options: {
      context: { type: 'boolean' },
      json: { type: 'boolean' },
      budget: { type: 'string' },
      recent: { type: 'string' },
      question: { type: 'string' },
    },
    allowPositionals: true,
  });
  if (positionals.length > 1)
    throw new UsageError(`Give one conversation id (got ${positionals.length} arguments).`);
  if (
    positionals.length === 0 &&
    (values.context || values.json || values.budget || values.recent)
  ) {
    throw new UsageError('--context, --json, --budget and --recent need a conversation id.');
  }
  if (
    !values.context &&
    (values.budget !== undefined || values.recent !== undefined || values.question !== undefined)
  )
    throw new UsageError('--budget, --recent and --question go with --context.');
  const configured = memoryBudget(io.env);
  const notesMaxChars = notesBudget(io.env);
  const budget: MemoryBudget = {
    maxChars: wholeNumber(values.budget, '--budget', configured.maxChars),
    recentTurns: wholeNumber(values.recent, '--recent', configured.recentTurns),
  };
  await checkFullDatabase(); // read-only: never creates tables
  if (positionals.length === 0) return listRecent(io);

  const id = conversationId(positionals[0], 'show-conversation');
  const conversation = await describeConversation(id);
  if (!conversation) {
    io.error(`Conversation ${id} was not found.`);
    return 1;
  }
  if (values.context) {
    // As the chat loads it: only the newest turns the budget can hold are read, however long it is.
    const context = await loadContext(id, budget);
    const notes = await recallNotes(conversation.customer_id, values.question, notesMaxChars);
    if (values.json) return void io.log(printableJson([...context.messages, ...notes.messages], 2));
    io.log(contextView(id, context).join('\n'));
    if (!context.readAll)
      io.log(
        'Older turns were not read: past the budget, every one of them is dropped (the turns above are numbered from the oldest one read).',
      );
    if (notes.notes.length) io.log(recallView(notes, values.question).join('\n'));
    return;
  }
  // Rows are read defensively: a damaged one is shown as such instead of failing the view.
  const rows = await loadRows(id);
  const history = readHistory(rows);
  if (values.json)
    return void io.log(printableJson(exportConversation(conversation, rows, history), 2));
  io.log(turnsView(conversation, shownMessages(rows)).join('\n'));
}

async function listRecent(io: ScriptIo): Promise<void> {
  const conversations = await listConversations();
  if (conversations.length === 0) {
    return void io.log(
      `No conversations yet. Start one with: ${commandFor(new URL('./chat.ts', import.meta.url), '', io)}`,
    );
  }
  io.log(listView(conversations).join('\n'));
}

export const openDatabase = openClusterDatabase;
if (startedDirectly(import.meta.url)) await runMain(main, usage, { openDatabase });
