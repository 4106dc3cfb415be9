// Shows what memory holds: one conversation turn by turn, or how the next context is built and why.
import {
  conversationId,
  parseFlags,
  runMain,
  type ScriptIo,
  startedDirectly,
  UsageError,
} from '../shared/cli.ts';
import { commandFor } from '../shared/hints.ts';
import { printable } from '../shared/text.ts';
import { buildContext, memoryBudget, type MemoryBudget } from './context.ts';
import { contextView, storedView } from './conversation-view.ts';
import { loadMessages } from './memory.ts';
import { describeConversation } from './stored-conversations.ts';

export function usage(io: ScriptIo): string {
  return `Usage: ${commandFor(import.meta.url, '<id>', io)}                     every stored message, turn by turn
       ${commandFor(import.meta.url, '<id> --context', io)}           what the model will see with the next question, and why
       ${commandFor(import.meta.url, '<id> --context --budget=4000 --recent=1', io)}    the same under other settings

<id> is what the chat printed ("Resume later with: … --resume=<id>"). --budget and --recent default to
MEMORY_MAX_CHARS and MEMORY_RECENT_TURNS (.env, else 12000 and 2). An operator's tool: it shows any
customer's conversation, and whose it is.`;
}

/** The script's work, given its arguments, settings and streams: a test can run it in-process. */
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
    maxChars: wholeNumber(values.budget, '--budget') ?? configured.maxChars,
    recentTurns: wholeNumber(values.recent, '--recent') ?? configured.recentTurns,
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

function wholeNumber(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (/^[1-9]\d{0,8}$/.test(value)) return Number(value);
  const shown = printable(value, { singleLine: true });
  throw new UsageError(`${flag} must be a whole number from 1 to 999999999 (got "${shown}").`);
}

if (startedDirectly(import.meta.url)) await runMain(main, usage);
