// Ask Nimbus one question within a conversation; it remembers earlier questions of the same conversation.
import { dim, parseFlags, runMain, UsageError } from '../shared/cli.ts';
import { runAgent } from './agent.ts';
import { conversationExists, newConversation, parseConversationId } from './memory.ts';
import { ensureDatabase } from './setup-database.ts';

const USAGE = `Usage: npx tsx ask-agent.ts [--quiet] [--conversation=<id>] "your question"

Asks Nimbus one question. Without --conversation it starts a new conversation; pass the id it
prints to ask a follow-up in the same conversation. --quiet shows only the answer.`;

await runMain(async () => {
  const { values, positionals } = parseFlags({
    options: {
      help: { type: 'boolean', short: 'h' },
      quiet: { type: 'boolean', short: 'q' },
      conversation: { type: 'string' },
    },
    allowPositionals: true,
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const requested = values.conversation === undefined ? undefined : parseConversationId(values.conversation, '--conversation');
  const question = positionals.join(' ').trim();
  if (!question) throw new UsageError('Please give Nimbus a question.');
  await ensureDatabase();

  let conversationId = requested;
  if (!conversationId || !(await conversationExists(conversationId))) {
    if (conversationId) console.error(`Conversation ${conversationId} was not found; starting a new one.`);
    conversationId = await newConversation();
  }

  const result = await runAgent(question, conversationId, { quiet: values.quiet });
  console.log(result.answer);
  const tokens = result.usage.input_tokens + result.usage.output_tokens;
  console.error(dim(`(${result.outcome} after ${result.steps} step${result.steps === 1 ? '' : 's'}, ${tokens} tokens)`, process.stderr));
  console.error(`Conversation ${conversationId}: ask a follow-up with --conversation=${conversationId}`);
  // A fallback apology is still printed for the customer, but scripts should see that something failed.
  return result.outcome === 'api_error' ? 1 : 0;
}, USAGE);
