// Shows what memory holds: one conversation turn by turn, or how the next context is built and why.
import {
  conversationId,
  parseFlags,
  runMain,
  startedDirectly,
  UsageError,
  wholeNumber,
} from '../shared/cli.ts';
import type { ScriptIo } from '../shared/cli.ts';
import { usageLines } from '../shared/hints.ts';
import { buildContext, memoryBudget, type MemoryBudget } from './context.ts';
import { contextView, storedView } from './conversation-view.ts';
import { loadMessages } from './memory.ts';
import { describeConversation } from './stored-conversations.ts';

export function usage(io: ScriptIo): string {
  return `${usageLines(
    import.meta.url,
    [
      ['<id>', 'every stored message, turn by turn'],
      ['<id> --context', 'what the model will see with the next question, and why'],
      ['<id> --context --budget=4000 --recent=1', 'the same under other settings'],
    ],
    io,
  )}

<id> is what the chat printed ("Resume later with: … --resume=<id>"). --budget and --recent default to
MEMORY_MAX_CHARS and MEMORY_RECENT_TURNS (.env, else 12000 and 2). An operator's tool: it shows any
customer's conversation, and whose it is.`;
}

export async function main(io: ScriptIo): Promise<number | void> {
  const { values, positionals } = parseFlags({
    args: io.args,
    options: {
      context: { type: 'boolean' },
      budget: { type: 'string' },
      recent: { type: 'string' },
    },
    allowPositionals: true,
  });
  if (positionals.length !== 1)
    throw new UsageError(`Give one conversation id (got ${positionals.length}).`);
  if (!values.context && (values.budget !== undefined || values.recent !== undefined))
    throw new UsageError('--budget and --recent go with --context.');
  const configured = memoryBudget(io.env);
  const budget: MemoryBudget = {
    maxChars: wholeNumber(values.budget, '--budget', configured.maxChars),
    recentTurns: wholeNumber(values.recent, '--recent', configured.recentTurns),
  };

  const id = conversationId(positionals[0], 'show-conversation');
  const conversation = await describeConversation(id);
  if (!conversation) {
    io.error(`Conversation ${id} was not found.`);
    return 1;
  }
  const messages = await loadMessages(id);
  if (!values.context) return void io.log(storedView(conversation, messages).join('\n'));
  io.log(contextView(id, buildContext(messages, budget)).join('\n'));
}

if (startedDirectly(import.meta.url)) await runMain(main, usage);
