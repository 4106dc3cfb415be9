// Going further: one question to the full Nimbus (customer notes, one question at a time, the hardened store), within a conversation.
import { conversationId, dim, parseFlags, runMain, UsageError } from '../../shared/cli.ts';
import { customerEmail, ensureLogDir, llmSettings } from '../../shared/config.ts';
import { commandFor } from '../../shared/hints.ts';
import { chatWithTools } from '../../shared/llm/index.ts';
import { printable } from '../../shared/text.ts';
import { memoryBudget } from '../context.ts';
import { runAgent, type AgentResult } from '../agent.ts';
import { describeIndexStatus, indexStatus } from '../embedding-index.ts';
import { findConversation, newConversation } from '../memory.ts';
import { describeCustomer, signIn } from '../session.ts';
import { WAITING_FOR_OTHER_QUESTION, withConversationLock } from './conversation-lock.ts';
import { storeAndTools } from './agent-setup.ts';
import { ensureFullDatabase } from './database-setup.ts';
import { notesBudget } from './recall.ts';
import { checkQuestion } from './question-limit.ts';
import { maxToolCallsPerReply, withCallLimits } from './call-limits.ts';

const USAGE = `Usage: ${commandFor(import.meta.url, '[--quiet] [--customer=<email>] [--conversation=<id>] "your question"')}

Asks Nimbus one question as the customer in CUSTOMER_EMAIL (.env) or --customer. Without
--conversation it starts a new conversation; pass the id it prints to ask a follow-up in the same
conversation. --quiet hides the step-by-step trace lines.`;

await runMain(async () => {
  const { values, positionals } = parseFlags({
    options: {
      quiet: { type: 'boolean', short: 'q' },
      customer: { type: 'string' },
      conversation: { type: 'string' },
    },
    allowPositionals: true,
  });
  const requested =
    values.conversation === undefined
      ? undefined
      : conversationId(values.conversation, '--conversation');
  const question = positionals.join(' ').trim();
  if (!question) throw new UsageError('Please give Nimbus a question.');
  // Settings are read once, here: a missing key, a bad LOG_DIR or budget is said before anything else.
  const llm = llmSettings();
  const logDir = ensureLogDir();
  const budget = memoryBudget();
  const notesMaxChars = notesBudget();
  const maxToolCalls = maxToolCallsPerReply();
  await ensureFullDatabase(console.error, llm);
  const customer = await signIn(values.customer, customerEmail());
  if (!values.quiet)
    console.error(dim(`Signed in as ${describeCustomer(customer)}.`, process.stderr));
  const problem = describeIndexStatus(
    await indexStatus(llm.embeddingModel),
    commandFor(new URL('../build-index.ts', import.meta.url)),
  );
  if (problem && !values.quiet) console.error(dim(problem, process.stderr));

  let conversation = requested ? await findConversation(requested, customer.id) : undefined;
  if (requested && !conversation)
    console.error(`Conversation ${requested} was not found; starting a new one.`);
  conversation ??= newConversation(customer.id);

  checkQuestion(question); // a usage error: too long to be worth sending
  // The hardened store, the customer's notes and their tools, as in chat.ts.
  const agent = { llm, logDir, quiet: values.quiet };
  const callModel = withCallLimits(chatWithTools, maxToolCalls); // what one question's replies may ask
  const options = { ...agent, ...storeAndTools(budget, notesMaxChars, agent), callModel };
  const onWait = () => console.error(dim(WAITING_FOR_OTHER_QUESTION, process.stderr));
  const result = await withConversationLock(
    conversation,
    () => runAgent(question, customer, conversation, options),
    { onWait },
  );
  const as = values.customer === undefined ? '' : ` --customer=${customer.email}`;
  return report(result, conversation.id, as);
}, USAGE);

/**
 * Prints the answer, then on stderr how it went and the command for a follow-up (with `as`, the
 * --customer it was asked as: a conversation continues only as its customer). Returns the exit code:
 * a fallback apology is printed for the customer, but scripts should see that something failed.
 */
function report(result: AgentResult, conversationId: string, as: string): number {
  console.log(printable(result.answer));
  const tokens = result.usage.input_tokens + result.usage.output_tokens;
  const steps = `${result.steps} step${result.steps === 1 ? '' : 's'}`;
  console.error(dim(`(${result.outcome} after ${steps}, ${tokens} tokens)`, process.stderr));
  if (result.outcome === 'refused') console.error(printable(result.problem ?? ''));
  if (result.saveError) console.error(`${printable(result.saveError)}`);
  else {
    const followUp = commandFor(
      import.meta.url,
      `--conversation=${conversationId}${as} "What about my other order?"`,
    );
    console.error(printable(`Conversation ${conversationId}: ask a follow-up with ${followUp}`));
  }
  return result.outcome === 'api_error' || result.outcome === 'refused' || result.saveError ? 1 : 0;
}
