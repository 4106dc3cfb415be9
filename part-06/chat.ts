// Chat with Nimbus in the terminal. Every step is saved in MySQL, so a conversation can be resumed later.
import readline from 'node:readline';
import { dim, parseFlags, runMain } from '../shared/cli.ts';
import { ensureLogDir, llmSettings, type LlmSettings } from '../shared/config.ts';
import { DatabaseError } from '../shared/db.ts';
import { commandFor } from '../shared/hints.ts';
import { ProviderError } from '../shared/llm/index.ts';
import { printable } from '../shared/text.ts';
import { QuestionTooLong, runAgent, TurnCancelled, type Session } from './agent.ts';
import { buildIndex, describeIndexStatus, indexStatus } from './embedding-index.ts';
import {
  ConversationDeleted,
  findConversation,
  newConversation,
  parseConversationId,
} from './memory.ts';
import { progressBar } from './progress-bar.ts';
import { describeCustomer, signIn } from './session.ts';
import { ensureDatabase } from './setup-database.ts';

const USAGE = `Usage: ${commandFor(import.meta.url, '[--resume=<id>] [--customer=<email>] [--quiet]')}

Chat with Nimbus as the customer in CUSTOMER_EMAIL (.env) or --customer. Every exchange is saved;
continue one of your conversations later with --resume=<id>. Type exit or quit (or press Ctrl-D) to
leave. Ctrl-C cancels the question Nimbus is working on; at an empty prompt it leaves.
--quiet hides the step-by-step trace lines.`;

await runMain(async () => {
  const { values } = parseFlags({
    options: {
      quiet: { type: 'boolean', short: 'q' },
      resume: { type: 'string' },
      customer: { type: 'string' },
    },
  });
  const resume =
    values.resume === undefined ? undefined : parseConversationId(values.resume, '--resume');
  // Settings first: a missing key or a bad LOG_DIR is said before anything is created or asked.
  const llm = llmSettings();
  ensureLogDir();
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
  const session: Session = { customer, conversation };
  // One line reader for the whole chat: on a terminal, two in turn would both see the same keystrokes.
  const rl = process.stdin.isTTY
    ? readline.createInterface({ input: process.stdin, output: process.stdout, prompt: 'You: ' })
    : undefined;
  await checkSearchIndex(llm, rl);
  console.log(dim('Ask about your orders, refunds or the store. Type exit to leave.'));

  await chatLoop(session, llm, values.quiet ?? false, rl);
  // Nothing is stored until the first answer, so only then is there something to resume; and only by
  // the same customer, so a --customer given now belongs in the command too.
  const as =
    values.customer === undefined
      ? ''
      : ` --customer=${printable(customer.email, { singleLine: true })}`;
  console.log(
    session.conversation.saved
      ? `Bye! Resume later with: ${commandFor(import.meta.url, `--resume=${session.conversation.id}${as}`)}`
      : 'Bye!',
  );
}, USAGE);

/** The chat itself: `rl` reads a terminal; without one (piped input) lines are read straight from stdin. */
async function chatLoop(
  session: Session,
  llm: LlmSettings,
  quiet: boolean,
  rl: readline.Interface | undefined,
): Promise<void> {
  const interactive = rl !== undefined;
  const lines = rl ?? pipedLines(process.stdin);
  const prompt = () => (rl ? rl.prompt() : process.stdout.write('You: '));
  let working: AbortController | undefined;
  let leftByTyping = false;

  // Ctrl-C: cancel the question in progress; clear a half-typed line; at an empty prompt, leave.
  const onInterrupt = () => {
    if (working) working.abort();
    else if (rl?.line) {
      rl.write(null, { ctrl: true, name: 'e' });
      rl.write(null, { ctrl: true, name: 'u' });
    } else if (rl) rl.close();
    else process.stdin.destroy();
  };
  rl?.on('SIGINT', onInterrupt); // Ctrl-C typed in a terminal
  process.on('SIGINT', onInterrupt); // a SIGINT signal, e.g. when the input is piped from a file

  try {
    prompt();
    // Lines typed (or piped) while Nimbus works wait in the iterator's queue until the loop asks for them.
    for await (const line of lines) {
      const question = line.trim();
      if (!question) {
        if (interactive) prompt();
        continue;
      }
      // A piped line is not echoed by the terminal: print it, so the output reads like a session.
      if (!interactive) console.log(printable(line));
      if (/^(exit|quit)$/i.test(question)) {
        leftByTyping = true;
        break;
      }
      working = new AbortController();
      try {
        await ask(question, session, llm, quiet, working.signal);
      } finally {
        working = undefined;
      }
      prompt();
    }
  } finally {
    rl?.close();
    process.off('SIGINT', onInterrupt);
  }
  // Ctrl-D or Ctrl-C leave the cursor after "You: ".
  if (!leftByTyping) console.log();
}

/** One question. Whatever goes wrong with it is said in one line and the chat goes on, except a setup problem. */
async function ask(
  question: string,
  session: Session,
  llm: LlmSettings,
  quiet: boolean,
  signal: AbortSignal,
): Promise<void> {
  try {
    const result = await runAgent(question, session, { llm, quiet, signal });
    console.log(`Nimbus: ${printable(result.answer)}\n`);
    if (result.saveError) console.error(`Not saved: ${printable(result.saveError)}\n`);
  } catch (error) {
    if (error instanceof ConversationDeleted) {
      session.conversation = newConversation(session.customer.id);
      console.log(`${error.message} Continuing in a new conversation: ${session.conversation.id}`);
      return ask(question, session, llm, quiet, signal);
    }
    if (error instanceof TurnCancelled) console.log(dim(`(${error.message})\n`));
    // ConversationBusy is a DatabaseError too: another window is answering in this conversation.
    else if (error instanceof QuestionTooLong || error instanceof DatabaseError)
      console.error(`${printable(error.message)}\n`);
    // A wrong key or model name ends the chat: every further question would fail the same way.
    else throw error;
  }
}

/** Lines of piped input, split at "\n" only: a carriage return inside a line stays in it (readline would split there). */
async function* pipedLines(input: NodeJS.ReadStream): AsyncGenerator<string> {
  input.setEncoding('utf8');
  let buffer = '';
  try {
    for await (const chunk of input) {
      buffer += chunk;
      for (let end = buffer.indexOf('\n'); end !== -1; end = buffer.indexOf('\n')) {
        yield buffer.slice(0, end).replace(/\r$/, '');
        buffer = buffer.slice(end + 1);
      }
    }
  } catch (error) {
    // Ctrl-C at an empty prompt closes the input: that is the end of the chat, not an error.
    if ((error as NodeJS.ErrnoException).code !== 'ERR_STREAM_PREMATURE_CLOSE') throw error;
    return;
  }
  if (buffer) yield buffer.replace(/\r$/, '');
}

/**
 * Says once if help-center search will fall back to keywords (index missing, partial or built by
 * another model), with the command that fixes it; on a terminal, offers to build it right now.
 * Ctrl-C skips the offer, or stops the build (what is embedded so far is kept).
 */
async function checkSearchIndex(
  llm: LlmSettings,
  rl: readline.Interface | undefined,
): Promise<void> {
  const command = commandFor(new URL('./build-index.ts', import.meta.url));
  const problem = describeIndexStatus(await indexStatus(llm.embeddingModel), command);
  if (!problem) return;
  console.log(dim(problem));
  if (!rl) return;
  const controller = new AbortController();
  const onInterrupt = () => controller.abort();
  rl.on('SIGINT', onInterrupt);
  try {
    const answer = await new Promise<string>((resolve) => {
      controller.signal.addEventListener('abort', () => resolve(''));
      rl.question('Build it now? [y/N] ', { signal: controller.signal }, resolve);
    });
    if (!/^y(es)?$/i.test(answer.trim())) return void (controller.signal.aborted && console.log());
    const bar = progressBar('Embedding the help center:');
    await buildIndex(llm, {
      onProgress: (progress) => progress.total > 0 && bar(progress),
      signal: controller.signal,
    });
    if (controller.signal.aborted)
      console.log(`\nStopped; what is embedded so far is kept. Finish later with: ${command}`);
  } catch (error) {
    if (!(error instanceof ProviderError)) throw error;
    const why =
      error.kind === 'aborted' ? 'stopped' : printable(error.message, { singleLine: true });
    console.log(
      `\nThe index is not finished (${why}); what is embedded so far is kept. Finish later with: ${command}`,
    );
  } finally {
    rl.off('SIGINT', onInterrupt);
  }
}
