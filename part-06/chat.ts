// Chat with Nimbus in the terminal: answers appear as they are written, and every step is saved, so a conversation can be resumed.
import { dim, parseFlags, runMain } from '../shared/cli.ts';
import { ensureLogDir, llmSettings } from '../shared/config.ts';
import { DatabaseCancelled, DatabaseError } from '../shared/db.ts';
import { commandFor } from '../shared/hints.ts';
import { printable } from '../shared/text.ts';
import {
  QuestionTooLong,
  runAgent,
  TurnCancelled,
  type AgentOptions,
  type AgentResult,
} from './agent.ts';
import { conversationId } from './conversation-id.ts';
import { findConversation, newConversation, type Conversation } from './memory.ts';
import { describeCustomer, signIn, type Customer } from './session.ts';
import { memoryBudget, notesBudget } from './settings.ts';
import { ensureDatabase } from './setup-database.ts';
// Going further: what makes the chat survive real use, wired in here and nowhere else.
import { withConversationLock } from './going-further/conversation-lock.ts';
import { ConversationDeleted, hardenedStore } from './going-further/hardened-store.ts';
import { offerToBuildIndex } from './going-further/index-offer.ts';
import { LineInput } from './going-further/line-input.ts';
import { describeDamage } from './going-further/stored-history.ts';
import { customerMemoryTools } from './going-further/notes-tools.ts';
import { describeRecall } from './going-further/notes-view.ts';
import { withCustomerNotes } from './going-further/recall.ts';

const USAGE = `Usage: ${commandFor(import.meta.url, '[--resume=<id>] [--customer=<email>] [--quiet]')}

Chat with Nimbus as the customer in CUSTOMER_EMAIL (.env) or --customer. Every exchange is saved;
continue one of your conversations later with --resume=<id>. Type exit or quit (or press Ctrl-D) to
leave. Ctrl-C cancels the question Nimbus is working on (and drops lines typed meanwhile); at an
empty prompt it leaves. --quiet hides the step-by-step trace lines.`;

/** Everything a question needs besides its text: who asks, where, and how the agent runs. */
interface Chat {
  customer: Customer;
  conversation: Conversation;
  options: AgentOptions;
}

await runMain(async () => {
  const { values } = parseFlags({
    options: {
      quiet: { type: 'boolean', short: 'q' },
      resume: { type: 'string' },
      customer: { type: 'string' },
    },
  });
  const resume =
    values.resume === undefined ? undefined : conversationId(values.resume, '--resume');
  // Settings are read once, here: a missing key, a bad LOG_DIR or budget is said before anything else.
  const llm = llmSettings();
  const logDir = ensureLogDir();
  const budget = memoryBudget();
  const notesMaxChars = notesBudget();
  await ensureDatabase(console.error, llm);
  const customer = await signIn(values.customer);
  console.log(`Signed in as ${describeCustomer(customer)}.`);

  let conversation = resume ? await findConversation(resume, customer.id) : undefined;
  if (conversation) console.log(`Resuming conversation ${conversation.id}`);
  else {
    if (resume) console.log(`Conversation ${resume} was not found; starting a new one.`);
    conversation = newConversation(customer.id);
    console.log(`New conversation ${conversation.id}`);
  }
  // The customer's notes go with every question, and three tools keep, forget and search them.
  const store = withCustomerNotes(
    hardenedStore(budget, {
      onDamaged: (id, damaged) => console.error(dim(describeDamage(id, damaged), process.stderr)),
    }),
    notesMaxChars,
    (recall) => {
      if (recall.notes.length && !values.quiet)
        console.error(dim(describeRecall(recall), process.stderr));
    },
  );
  const chat: Chat = {
    customer,
    conversation,
    options: { llm, logDir, store, tools: customerMemoryTools(logDir), quiet: values.quiet },
  };
  const lines = new LineInput();
  await offerToBuildIndex(llm, lines);
  console.log(dim('Ask about your orders, refunds or the store. Type exit to leave.'));
  await chatLoop(chat, lines);

  // Nothing is stored until the first answer, so only then is there something to resume; and only
  // by the same customer, so a --customer given now belongs in the command too.
  const as =
    values.customer === undefined
      ? ''
      : ` --customer=${printable(customer.email, { singleLine: true })}`;
  const resumeWith = commandFor(import.meta.url, `--resume=${chat.conversation.id}${as}`);
  console.log(chat.conversation.saved ? `Bye! Resume later with: ${resumeWith}` : 'Bye!');
}, USAGE);

/** Reads questions until exit, Ctrl-D or the end of the input; Ctrl-C cancels the one in progress. */
async function chatLoop(chat: Chat, lines: LineInput): Promise<void> {
  let working: AbortController | undefined;
  lines.setInterruptHandler(() => {
    if (!working) return false;
    working.abort();
    const dropped = lines.dropWaiting();
    if (dropped)
      console.log(dim(`(Dropped ${dropped} line${dropped === 1 ? '' : 's'} typed meanwhile.)`));
    return true;
  });
  try {
    for (let line = await lines.next(); line !== undefined; line = await lines.next()) {
      const question = line.trim();
      if (/^(exit|quit)$/i.test(question)) return;
      if (!question) continue;
      working = new AbortController();
      try {
        await ask(question, chat, working.signal);
      } finally {
        working = undefined;
      }
    }
    console.log(); // Ctrl-D or Ctrl-C left the cursor after "You: "
  } finally {
    lines.close();
  }
}

/** One question. What goes wrong with it is said in one line and the chat goes on, except a setup problem. */
async function ask(question: string, chat: Chat, signal: AbortSignal): Promise<void> {
  const out = answerPrinter();
  const onWait = () =>
    console.error(
      dim(
        '(Waiting for another window to finish its question in this conversation…)',
        process.stderr,
      ),
    );
  try {
    const options = { ...chat.options, signal, onText: out.text, onTraceLine: out.traceLine };
    const result = await withConversationLock(
      chat.conversation.id,
      () => runAgent(question, chat.customer, chat.conversation, options),
      { signal, onWait },
    );
    out.finish(result);
  } catch (error) {
    out.breakLine();
    if (error instanceof ConversationDeleted) {
      chat.conversation = newConversation(chat.customer.id);
      console.log(`${error.message} Continuing in a new conversation: ${chat.conversation.id}`);
      return ask(question, chat, signal);
    }
    if (error instanceof DatabaseCancelled) error = new TurnCancelled('nothing'); // Ctrl-C while waiting
    if (error instanceof TurnCancelled) console.log(dim(`(${error.message})\n`));
    // ConversationBusy is a DatabaseError too: another window kept answering in this conversation.
    else if (error instanceof QuestionTooLong || error instanceof DatabaseError) {
      console.error(`${printable(error.message)}\n`);
    }
    // A wrong key or model name ends the chat: every further question would fail the same way.
    else throw error;
  }
}

/**
 * Prints an answer as it streams in, after "Nimbus: ", escaped like everything from a model (each
 * character on its own, so an escape sequence split across two pieces is still made visible). The
 * trace's lines get lines of their own around it. (A function, not a class: the chat above runs
 * before a class declared down here would exist.)
 */
function answerPrinter() {
  let midLine = false;
  let step = 0;
  const breakLine = () => {
    if (midLine) process.stdout.write('\n');
    midLine = false;
  };
  return {
    breakLine,
    text(text: string, textStep: number): void {
      if (textStep !== step) breakLine(); // a new model call, after tool steps
      if (!midLine) process.stdout.write('Nimbus: ');
      process.stdout.write(printable(text));
      midLine = true;
      step = textStep;
    },
    traceLine(line: string): void {
      breakLine();
      console.error(dim(line, process.stderr));
    },
    /** A fallback (the provider failed, the step limit) was never streamed: it is printed whole. */
    finish(result: AgentResult): void {
      breakLine();
      if (result.outcome !== 'answered') console.log(`Nimbus: ${printable(result.answer)}`);
      console.log();
      // Not an outage: the provider called the request invalid, and its words say why.
      if (result.outcome === 'refused') console.error(`${printable(result.problem ?? '')}\n`);
      if (result.saveError) console.error(`Not saved: ${printable(result.saveError)}\n`);
    },
  };
}
