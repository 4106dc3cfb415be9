// The full Nimbus chat. The chapter's agent and memory, with streamed answers, customer notes, one question at a time and everything that makes a chat survive real use.
import {
  conversationId,
  dim,
  parseFlags,
  runMain,
  type ScriptIo,
  startedDirectly,
} from '../../shared/cli.ts';
import { refuseOptionsNpmKept } from './terminal/npm-options.ts';
import { customerEmail, ensureLogDir, llmSettings } from '../../shared/config.ts';
import { DatabaseError } from '../../shared/db.ts';
import { commandFor } from '../../shared/hints.ts';
import { printable } from '../../shared/text.ts';
import { memoryBudget } from '../context.ts';
import { runAgent, type AgentOptions, type AgentResult } from '../agent.ts';
import { findConversation, newConversation, type Conversation } from '../memory.ts';
import { describeCustomer, signIn, type Customer } from '../session.ts';
import {
  DatabaseCancelled,
  ERASED_WHILE_ANSWERING,
  LeaseLost,
  WAITING_FOR_OTHER_QUESTION,
  withConversationLock,
} from './question/lease.ts';
import { storeAndTools } from './question/agent-options.ts';
import { ensureFullDatabase } from './store/ensure-tables.ts';
import { ConversationDeleted } from './store/hardened-store.ts';
import { offerToBuildIndex } from './terminal/index-offer.ts';
import { LineInput, LongLine } from './terminal/line-input.ts';
import { answerPrinter, CANCELLED_BEFORE_START } from './terminal/answer-printer.ts';
import { MAX_QUESTION_CHARS, tooLong } from './terminal/question-limit.ts';
import { notesBudget } from './notes/recall-notes.ts';
import { runBudget, RunSpending } from './terminal/run-budget.ts';
import { maxToolCallsPerReply, withCallLimits, type CallLimits } from './question/call-limits.ts';
import { openClusterDatabase } from './store/cluster-database.ts';

export function usage(io: ScriptIo): string {
  return `Usage: ${commandFor(import.meta.url, '[--resume=<id>] [--customer=<email>] [--quiet]', io)}

Chat with Nimbus as the customer in CUSTOMER_EMAIL (.env) or --customer. Every exchange is saved;
continue one of your conversations later with --resume=<id>. Type exit or quit (or press Ctrl-D) to
leave. Ctrl-C cancels the question Nimbus is working on (and drops lines typed meanwhile); at an
empty prompt it leaves. A run ends after MAX_QUESTIONS_PER_RUN questions or MAX_TOKENS_PER_RUN
tokens (.env). --quiet hides the step-by-step trace lines.`;
}

/** Everything a question needs besides its text: who asks, where, how the agent runs, the run's spending. */
type Chat = {
  io: ScriptIo;
  customer: Customer;
  conversation: Conversation;
  options: AgentOptions;
  spending: RunSpending;
  /** What one question's replies may ask for (call-limits.ts). */
  limits: CallLimits;
};

export async function main(io: ScriptIo): Promise<number | void> {
  const { values } = parseFlags({
    args: io.args,
    options: {
      quiet: { type: 'boolean', short: 'q' },
      resume: { type: 'string' },
      customer: { type: 'string' },
    },
  });
  refuseOptionsNpmKept(io, values, ['resume', 'customer']);
  const resume =
    values.resume === undefined ? undefined : conversationId(values.resume, '--resume');
  // Settings are read once, here: a missing key, a bad LOG_DIR or budget is said before anything else.
  const llm = llmSettings(io.env);
  const logDir = ensureLogDir(io.env);
  const budget = memoryBudget(io.env);
  const notesMaxChars = notesBudget(io.env);
  const spending = new RunSpending(runBudget(io.env));
  const maxToolCalls = maxToolCallsPerReply(io.env);
  await ensureFullDatabase(io.error, llm);
  const customer = await signIn(values.customer, customerEmail(io.env));
  io.log(`Signed in as ${describeCustomer(customer)}.`);

  let conversation = resume ? await findConversation(resume, customer.id) : undefined;
  if (conversation) io.log(`Resuming conversation ${conversation.id}`);
  else {
    if (resume) io.log(`Conversation ${resume} was not found; starting a new one.`);
    conversation = newConversation(customer.id);
    io.log(`New conversation ${conversation.id}`);
  }
  // The hardened store, the customer's notes and their tools: going further, set up in one place.
  const agent = { llm, logDir, quiet: values.quiet, stderr: io.stderr };
  const options = { ...agent, ...storeAndTools(budget, notesMaxChars, agent) };
  const limits = { maxCalls: maxToolCalls, maxResultChars: budget.maxChars };
  const chat: Chat = { io, customer, conversation, options, spending, limits };
  const lines = new LineInput(io, MAX_QUESTION_CHARS);
  await offerToBuildIndex(llm, lines, io);
  io.log(dim('Ask about your orders, refunds or the store. Type exit to leave.'));
  await chatLoop(chat, lines);

  // Only a saved conversation can be resumed, and only by its customer: a --customer goes in the hint.
  const as =
    values.customer === undefined
      ? ''
      : ` --customer=${printable(customer.email, { singleLine: true })}`;
  const resumeWith = commandFor(import.meta.url, `--resume=${chat.conversation.id}${as}`, io);
  io.log(chat.conversation.saved ? `Bye! Resume later with: ${resumeWith}` : 'Bye!');
}

/**
 * Reads questions until exit, Ctrl-D, the end of the input or the end of the run's budget; Ctrl-C
 * cancels the one in progress.
 */
async function chatLoop(chat: Chat, lines: LineInput): Promise<void> {
  const { io } = chat;
  let working: AbortController | undefined;
  // Ctrl-C cancels the question in progress (and the line input drops the lines typed meanwhile).
  lines.setInterruptHandler(() => {
    working?.abort();
    return working !== undefined;
  });
  try {
    for (let line = await lines.next(); line !== undefined; line = await lines.next()) {
      // Too long to be worth sending: said, and the chat goes on (the line was never held whole).
      if (line instanceof LongLine) {
        io.error(`${tooLong(line.length)}\n`);
        continue;
      }
      const question = line.trim();
      if (/^(exit|quit)$/i.test(question)) return;
      if (!question) continue;
      working = new AbortController();
      chat.spending.addQuestion();
      try {
        await ask(question, chat, working.signal);
      } finally {
        working = undefined;
      }
      const estimated = chat.spending.news();
      if (estimated) io.error(dim(`(${estimated})\n`, io.stderr));
      const spent = chat.spending.spent();
      if (spent) return void io.log(spent);
    }
    io.log(); // Ctrl-D or Ctrl-C left the cursor after "You: "
  } finally {
    lines.close();
  }
}

/**
 * Whether the conversation was deleted while its question ran (its row gone). Its id is then printed
 * no more, not even in "Resume later with". If the database cannot say, the conversation is kept.
 */
async function erasedMeanwhile(conversation: Conversation): Promise<boolean> {
  if (!conversation.saved) return false; // never stored: nothing of it to resume anyway
  const found = await findConversation(conversation.id, conversation.customerId).catch(() => true);
  return !found;
}

/**
 * One question; its result, unless it failed before the agent finished. What goes wrong is said in one
 * line and the chat goes on, except a setup problem.
 */
async function ask(
  question: string,
  chat: Chat,
  signal: AbortSignal,
): Promise<AgentResult | undefined> {
  const { io } = chat;
  const out = answerPrinter(io); // the answer as it streams in, the trace lines around it
  const onWait = () => io.error(dim(WAITING_FOR_OTHER_QUESTION, io.stderr));
  try {
    // The store, watched: whether a step of this question was saved is what Ctrl-C leaves behind,
    // and a save refused because the question lost its lease may mean the conversation was erased.
    const { store } = chat.options;
    let [saved, leaseLost] = [false, false];
    const watched = {
      ...store,
      saveStep: (...args: Parameters<typeof store.saveStep>) =>
        store.saveStep(...args).then(
          () => void (saved = true),
          (error: unknown) => {
            leaseLost ||= error instanceof LeaseLost;
            throw error;
          },
        ),
    };
    const options = {
      ...chat.options,
      store: watched,
      signal,
      // Bounded for this question (call-limits.ts), and counted towards the run's tokens.
      callModel: chat.spending.metered(withCallLimits(out.callModel, chat.limits)),
      onTraceLine: out.traceLine,
    };
    const result = await withConversationLock(
      chat.conversation,
      (lost) => {
        // The lease found lost stops the question, as Ctrl-C would: nothing more of it could be kept.
        lost.addEventListener('abort', () => (leaseLost ||= !signal.aborted));
        const stopped = AbortSignal.any([signal, lost]);
        return runAgent(question, chat.customer, chat.conversation, {
          ...options,
          signal: stopped,
        });
      },
      { signal, onWait },
    );
    if (leaseLost && (await erasedMeanwhile(chat.conversation))) {
      out.finish({ ...result, saveError: undefined }, saved);
      chat.conversation = newConversation(chat.customer.id);
      io.log(
        `${ERASED_WHILE_ANSWERING} Continuing in a new conversation: ${chat.conversation.id}\n`,
      );
    } else if (leaseLost && result.outcome === 'cancelled') {
      // Stopped because the lease was taken, not erased (this process was frozen past the lease's
      // expiry): said as it is. An answer already given is shown as usual, its save refused.
      out.breakLine();
      io.error(`${new LeaseLost().message}\n`);
    } else out.finish(result, saved);
    return result;
  } catch (error) {
    out.breakLine();
    if (error instanceof ConversationDeleted) {
      chat.conversation = newConversation(chat.customer.id);
      io.log(`${error.message} Continuing in a new conversation: ${chat.conversation.id}`);
      return ask(question, chat, signal);
    }
    if (error instanceof DatabaseCancelled) io.log(dim(`(${CANCELLED_BEFORE_START})\n`));
    // ConversationBusy is a DatabaseError too: another window kept answering in this conversation.
    else if (error instanceof DatabaseError) io.error(`${printable(error.message)}\n`);
    // A wrong key or model name ends the chat: every further question would fail the same way.
    else throw error;
    return undefined;
  }
}

export const openDatabase = openClusterDatabase;
if (startedDirectly(import.meta.url)) await runMain(main, usage, { openDatabase });
