// The full Nimbus chat. The chapter's agent and memory, with streamed answers, customer notes, one question at a time and everything that makes a chat survive real use.
import {
  conversationId,
  dim,
  parseFlags,
  runMain,
  type ScriptIo,
  startedDirectly,
} from '../../shared/cli.ts';
import { customerEmail } from '../../shared/config.ts';
import { DatabaseError } from '../../shared/db.ts';
import { commandFor } from '../../shared/hints.ts';
import { printable } from '../../shared/text.ts';
import { newConversation, type Conversation } from '../memory.ts';
import { describeCustomer, signIn, type Customer } from '../session.ts';
import { Nimbus, nimbusSettings, stillThere, whatHappened } from './nimbus.ts';
import { WAITING_FOR_ERASURE, WAITING_FOR_OTHER_QUESTION } from './question/lease.ts';
import { ensureFullDatabase } from './store/ensure-tables.ts';
import { answerPrinter } from './terminal/answer-printer.ts';
import { offerToBuildIndex } from './terminal/index-offer.ts';
import { LineInput, LongLine } from './terminal/line-input.ts';
import { refuseOptionsNpmKept } from './terminal/npm-options.ts';
import { MAX_QUESTION_CHARS, tooLong } from './question/question-limit.ts';
import { runBudget, RunSpending } from './terminal/run-budget.ts';
import { openClusterDatabase } from './store/cluster-database.ts';

export function usage(io: ScriptIo): string {
  return `Usage: ${commandFor(import.meta.url, '[--resume=<id>] [--customer=<email>] [--quiet]', io)}

Chat with Nimbus as the customer in CUSTOMER_EMAIL (.env) or --customer. Every exchange is saved;
continue one of your conversations later with --resume=<id>. Type exit or quit (or press Ctrl-D) to
leave. Ctrl-C cancels the question Nimbus is working on (and drops lines typed meanwhile); at an
empty prompt it leaves. A run ends after MAX_QUESTIONS_PER_RUN questions or MAX_TOKENS_PER_RUN
tokens (.env). --quiet (or -q) hides the step-by-step trace lines.`;
}

/** Everything a question needs besides its text: who asks, where, the full Nimbus, the run's spending. */
type Chat = {
  io: ScriptIo;
  nimbus: Nimbus;
  customer: Customer;
  conversation: Conversation;
  spending: RunSpending;
  quiet: boolean;
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
  const nimbus = new Nimbus(nimbusSettings(io.env));
  const spending = new RunSpending(runBudget(io.env));
  const { llm } = nimbus.settings;
  await ensureFullDatabase(io.error, llm);
  const customer = await signIn(values.customer, customerEmail(io.env));
  io.log(`Signed in as ${describeCustomer(customer)}.`);

  let conversation = resume ? await nimbus.resume(customer, resume) : undefined;
  if (conversation) io.log(`Resuming conversation ${conversation.id}`);
  else {
    if (resume) io.log(`Conversation ${resume} was not found; starting a new one.`);
    conversation = newConversation(customer.id);
    io.log(`New conversation ${conversation.id}`);
  }
  const quiet = values.quiet ?? false;
  const chat: Chat = { io, nimbus, customer, conversation, spending, quiet };
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
  // Erased while the chat waited at its prompt (forget.ts): its id is nobody's to resume any more.
  const kept = chat.conversation.saved && (await stillThere(chat.conversation));
  io.log(kept ? `Bye! Resume later with: ${resumeWith}` : 'Bye!');
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
 * One question, through the full Nimbus (nimbus.ts). What goes wrong is said in one line and the chat
 * goes on, except a setup problem (a wrong key or model name ends the chat: every question would fail).
 */
async function ask(question: string, chat: Chat, signal: AbortSignal): Promise<void> {
  const { io } = chat;
  const out = answerPrinter(io); // the answer as it streams in, the trace lines around it
  try {
    const asked = await chat.nimbus.ask(chat.customer, chat.conversation, question, {
      signal,
      onWait: (waitingFor) =>
        io.error(
          dim(
            waitingFor === 'erasure' ? WAITING_FOR_ERASURE : WAITING_FOR_OTHER_QUESTION,
            io.stderr,
          ),
        ),
      // Counted towards the run's tokens.
      callModel: chat.spending.metered(out.callModel),
      stderr: out.stderr,
      quiet: chat.quiet,
    });
    const viewer = new URL('./show-conversation.ts', import.meta.url);
    out.finish(asked, commandFor(viewer, asked.conversation.id, io));
    const said = whatHappened(asked);
    if (asked.lost === 'erased') io.log(`${said} Your next question starts a new conversation.\n`);
    else if (said) io.log(`${said}\n`);
    chat.conversation = asked.conversation;
  } catch (error) {
    out.breakLine();
    // ConversationBusy is a DatabaseError too: another window kept answering in this conversation.
    if (!(error instanceof DatabaseError)) throw error;
    io.error(`${printable(error.message)}\n`);
  }
}

export const openDatabase = openClusterDatabase;
if (startedDirectly(import.meta.url)) await runMain(main, usage, { openDatabase });
