// Shows what memory holds: recent conversations, one conversation's messages, or the context the model will see next.
import { dim, parseFlags, runMain } from '../shared/cli.ts';
import { query } from '../shared/db.ts';
import type { Message } from '../shared/llm/index.ts';
import { buildContext, MEMORY_MAX_CHARS, MEMORY_RECENT_TURNS, splitIntoTurns } from './context.ts';
import { listConversations, loadHistory, parseConversationId } from './memory.ts';
import { ensureDatabase } from './setup-database.ts';

const USAGE = `Usage: npx tsx show-conversation.ts                   list recent conversations
       npx tsx show-conversation.ts <id>              every stored message of a conversation
       npx tsx show-conversation.ts <id> --context    what the model will see with the next question
       npx tsx show-conversation.ts <id> --context --json    the same, as the exact JSON`;

await runMain(async () => {
  const { values, positionals } = parseFlags({
    options: { help: { type: 'boolean', short: 'h' }, context: { type: 'boolean' }, json: { type: 'boolean' } },
    allowPositionals: true,
  });
  if (values.help) return void console.log(USAGE);
  await ensureDatabase();
  if (positionals.length === 0) return listRecent();
  const id = parseConversationId(positionals[0], 'show-conversation');

  const [conversation] = await query<Array<{ created_at: Date; updated_at: Date }>>(
    'SELECT created_at, updated_at FROM conversations WHERE id = ?',
    [id],
  );
  if (!conversation) {
    console.error(`Conversation ${id} was not found.`);
    return 1;
  }
  const history = await loadHistory(id);

  if (values.context) {
    const context = buildContext(history.messages);
    if (values.json) return void console.log(JSON.stringify(context.messages, null, 2));
    console.log(`Context sent with the next question (${context.chars} chars):`);
    for (const message of context.messages) console.log(`  ${describe(message)}`);
    const turns = splitIntoTurns(history.messages).length;
    console.log(
      dim(
        `Built from ${turns} stored turns: ${context.full} in full, ${context.compacted} compacted to question and answer, ` +
          `${context.dropped} dropped. Budget: ${MEMORY_MAX_CHARS} chars (MEMORY_MAX_CHARS); the last ${MEMORY_RECENT_TURNS} ` +
          'turns stay whole (MEMORY_RECENT_TURNS). The system prompt is added on top, fresh.',
      ),
    );
    return;
  }

  const rows = await query<Array<{ id: number; role: string; data: unknown }>>(
    'SELECT id, role, data FROM messages WHERE conversation_id = ? ORDER BY id',
    [id],
  );
  console.log(`Conversation ${id}: ${rows.length} messages, started ${when(conversation.created_at)}, last updated ${when(conversation.updated_at)}`);
  const kept = new Map(history.ids.map((rowId, i) => [rowId, history.messages[i]]));
  const damaged = new Map(history.damaged.map((d) => [d.id, d.reason]));
  for (const row of rows) {
    const message = kept.get(row.id);
    if (message) console.log(`  #${row.id} ${describe(message)}`);
    else {
      const raw = typeof row.data === 'string' ? row.data : JSON.stringify(row.data);
      console.log(`  #${row.id} [left out: ${damaged.get(row.id)}] ${row.role}: ${shorten(raw)}`);
    }
  }
}, USAGE);

async function listRecent(): Promise<void> {
  const conversations = await listConversations();
  if (conversations.length === 0) return void console.log('No conversations yet. Start one with: npx tsx chat.ts');
  console.log('Recent conversations (newest first):');
  for (const c of conversations) {
    const first = c.first_question === null ? '(no questions yet)' : shorten(oneLine(c.first_question), 60);
    console.log(`  ${c.id}  ${when(c.updated_at)}  ${String(c.messages).padStart(4)} messages  ${first}`);
  }
}

/** One line per message: `user: …`, `assistant: (requested tools) …`, `tool: name → {json}`. */
function describe(message: Message): string {
  if (message.role === 'tool') return `tool: ${message.name} → ${shorten(message.content)}`;
  if (message.role !== 'assistant') return `${message.role}: ${oneLine(message.content)}`;
  const by = message.provider_raw ? ` [${message.provider_raw.provider}]` : '';
  const calls = message.tool_calls?.map((call) => `${call.name}(${JSON.stringify(call.arguments)})`).join(', ');
  const text = message.content ? ` ${oneLine(message.content)}` : '';
  return calls ? `assistant${by}: (requested tools) ${calls}${text}` : `assistant${by}:${text}`;
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ');
}

function shorten(text: string, max = 120): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

function when(date: Date): string {
  return date.toISOString().slice(0, 16).replace('T', ' ');
}
