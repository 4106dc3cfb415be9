// One question to the full Nimbus (customer notes, one question at a time, the hardened store), within a conversation.
import {
  conversationId,
  dim,
  parseFlags,
  runMain,
  type ScriptIo,
  startedDirectly,
  UsageError,
} from '../../shared/cli.ts';
import { customerEmail, ensureLogDir, llmSettings } from '../../shared/config.ts';
import { commandFor } from '../../shared/hints.ts';
import { chatWithTools } from '../../shared/llm/index.ts';
import { printable } from '../../shared/text.ts';
import { memoryBudget } from '../context.ts';
import { runAgent, type AgentResult } from '../agent.ts';
import { describeIndexStatus, indexStatus } from '../embedding-index.ts';
import { findConversation, newConversation, type Conversation } from '../memory.ts';
import { describeCustomer, signIn } from '../session.ts';
import { LeaseLost, WAITING_FOR_OTHER_QUESTION, withConversationLock } from './question/lease.ts';
import { storeAndTools } from './question/agent-options.ts';
import { ensureFullDatabase } from './store/ensure-tables.ts';
import { notesBudget } from './notes/recall-notes.ts';
import { checkQuestion } from './terminal/question-limit.ts';
import { maxToolCallsPerReply, withCallLimits } from './question/call-limits.ts';
import { openClusterDatabase } from './store/cluster-database.ts';

export function usage(io: ScriptIo): string {
  return `Usage: ${commandFor(import.meta.url, '[--quiet] [--customer=<email>] [--conversation=<id>] "your question"', io)}

Asks Nimbus one question as the customer in CUSTOMER_EMAIL (.env) or --customer. Without
--conversation it starts a new conversation; pass the id it prints to ask a follow-up in the same
conversation. --quiet hides the step-by-step trace lines.`;
}

/** The script's work, given its arguments, settings and streams: a test can run it in-process. */
export async function main(io: ScriptIo): Promise<number | void> {
  const { values, positionals } = parseFlags({
    args: io.args,
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
  const llm = llmSettings(io.env);
  const logDir = ensureLogDir(io.env);
  const budget = memoryBudget(io.env);
  const notesMaxChars = notesBudget(io.env);
  const maxToolCalls = maxToolCallsPerReply(io.env);
  await ensureFullDatabase(io.error, llm);
  const customer = await signIn(values.customer, customerEmail(io.env));
  if (!values.quiet) io.error(dim(`Signed in as ${describeCustomer(customer)}.`, io.stderr));
  const problem = describeIndexStatus(
    await indexStatus(llm.embeddingModel),
    commandFor(new URL('../build-index.ts', import.meta.url), '', io),
  );
  if (problem && !values.quiet) io.error(dim(problem, io.stderr));

  let conversation = requested ? await findConversation(requested, customer.id) : undefined;
  if (requested && !conversation)
    io.error(`Conversation ${requested} was not found; starting a new one.`);
  conversation ??= newConversation(customer.id);

  checkQuestion(question); // a usage error: too long to be worth sending
  // The hardened store, the customer's notes and their tools, as in chat.ts.
  const agent = { llm, logDir, quiet: values.quiet, stderr: io.stderr };
  // A model server may send no token counts: then the summary says so instead of "0 tokens".
  let uncounted = false;
  const counted: typeof chatWithTools = async (...call) => {
    const reply = await chatWithTools(...call);
    uncounted ||= reply.usage === undefined;
    return reply;
  };
  const callModel = withCallLimits(counted, {
    maxCalls: maxToolCalls,
    maxResultChars: budget.maxChars,
  }); // what one question's replies may ask
  const options = { ...agent, ...storeAndTools(budget, notesMaxChars, agent), callModel };
  const onWait = () => io.error(dim(WAITING_FOR_OTHER_QUESTION, io.stderr));
  // Ctrl-C stops the question where it is: the steps it finished are saved, and the follow-up names them.
  const stop = new AbortController();
  const interrupt = () => stop.abort();
  process.once('SIGINT', interrupt);
  const signal = stop.signal;
  let lost: AbortSignal | undefined;
  const result = await withConversationLock(
    conversation,
    (leaseLost) => {
      lost = leaseLost; // an erasure or a reset took the conversation: the question stops there
      const stopped = AbortSignal.any([signal, leaseLost]);
      return runAgent(question, customer, conversation, { ...options, signal: stopped });
    },
    { onWait, signal },
  ).finally(() => process.off('SIGINT', interrupt));
  // Stopped because the lease was taken (an erasure, a reset): said without naming the conversation,
  // which may be erased. An answer already given is shown as usual, its save refused.
  if (result.outcome === 'cancelled' && lost?.aborted && !signal.aborted) {
    io.error(new LeaseLost().message);
    return 1;
  }
  const as = values.customer === undefined ? '' : ` --customer=${customer.email}`;
  return report(io, result, conversation, as, uncounted);
}

/**
 * Prints the answer, then on stderr how it went and the command for a follow-up (with `as`, the
 * --customer it was asked as: a conversation continues only as its customer). Returns the exit code:
 * a fallback apology is printed for the customer, but scripts should see that something failed.
 */
function report(
  io: ScriptIo,
  result: AgentResult,
  conversation: Conversation,
  as: string,
  uncounted: boolean,
): number {
  const conversationId = conversation.id;
  if (result.outcome !== 'cancelled') io.log(printable(result.answer));
  const counted = result.usage.input_tokens + result.usage.output_tokens;
  const tokens = uncounted ? 'tokens not reported by the model server' : `${counted} tokens`;
  const steps = `${result.steps} step${result.steps === 1 ? '' : 's'}`;
  io.error(dim(`(${result.outcome} after ${steps}, ${tokens})`, io.stderr));
  if (result.outcome === 'refused') io.error(printable(result.problem ?? ''));
  if (result.saveError) io.error(`${printable(result.saveError)}`);
  else if (conversation.saved) {
    const followUp = commandFor(
      import.meta.url,
      `--conversation=${conversationId}${as} "What about my other order?"`,
      io,
    );
    io.error(printable(`Conversation ${conversationId}: ask a follow-up with ${followUp}`));
  }
  if (result.outcome === 'cancelled') return 130; // as a shell reports Ctrl-C
  return result.outcome === 'api_error' || result.outcome === 'refused' || result.saveError ? 1 : 0;
}

export const openDatabase = openClusterDatabase;
if (startedDirectly(import.meta.url)) await runMain(main, usage, { openDatabase });
