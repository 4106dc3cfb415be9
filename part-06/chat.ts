// Chat with Nimbus in the terminal: every step is saved in MySQL, so a conversation can be resumed later.
import readline from 'node:readline';
import { conversationId, dim, parseFlags, runMain, startedDirectly } from '../shared/cli.ts';
import type { ScriptIo } from '../shared/cli.ts';
import { customerEmail, ensureLogDir, llmSettings } from '../shared/config.ts';
import { DatabaseError } from '../shared/db.ts';
import { commandFor } from '../shared/hints.ts';
import { printable } from '../shared/text.ts';
import { runAgent, type AgentOptions, type AgentResult } from './agent.ts';
import { memoryBudget } from './context.ts';
import { describeIndexStatus, indexStatus } from './embedding-index.ts';
import { findConversation, newConversation, plainStore } from './memory.ts';
import { describeCustomer, signIn } from './session.ts';
import { ensureDatabase } from './setup-database.ts';

export function usage(io: ScriptIo): string {
  return `Usage: ${commandFor(import.meta.url, '[--resume=<id>] [--customer=<email>] [--quiet]', io)}

Chat as the customer in CUSTOMER_EMAIL (.env) or --customer; continue a conversation later with
--resume=<id>. exit or Ctrl-D leaves; Ctrl-C cancels a question, or leaves at the prompt. --quiet (or -q)
hides the trace lines.`;
}

export async function main(io: ScriptIo): Promise<number | void> {
  const { values } = parseFlags({
    args: io.args,
    options: {
      quiet: { type: 'boolean', short: 'q' },
      resume: { type: 'string' },
      customer: { type: 'string' },
    },
  });
  const resume =
    values.resume === undefined ? undefined : conversationId(values.resume, '--resume');
  // Settings are read once, here: a missing key or a bad budget is said before anything else.
  const llm = llmSettings(io.env);
  const logDir = ensureLogDir(io.env);
  const store = plainStore(memoryBudget(io.env));
  const options: AgentOptions = { llm, logDir, store, quiet: values.quiet, stderr: io.stderr };
  await ensureDatabase(io.error, llm);
  const customer = await signIn(values.customer, customerEmail(io.env));
  io.log(`Signed in as ${describeCustomer(customer)}.`);
  const fix = commandFor(new URL('./build-index.ts', import.meta.url), '', io);
  // As in Part 5: an index missing, partial or from another provider's model is said once, with its fix.
  const problem = describeIndexStatus(await indexStatus(llm.embeddingModel), fix);
  if (problem) io.log(dim(problem));

  let conversation = resume ? await findConversation(resume, customer.id) : undefined;
  if (conversation) io.log(`Resuming conversation ${conversation.id}`);
  else {
    if (resume) io.log(`Conversation ${resume} was not found; starting a new one.`);
    conversation = newConversation(customer.id);
    io.log(`New conversation ${conversation.id}`);
  }
  io.log(dim('Ask about your orders, refunds or the store. Type exit to leave.'));
  await chatLoop(io, (question, signal) =>
    runAgent(question, customer, conversation, { ...options, signal }),
  );

  // Only a saved conversation can be resumed, and only by its customer: a --customer goes in the hint.
  const as = values.customer === undefined ? '' : ` --customer=${customer.email}`;
  const resumeWith = commandFor(import.meta.url, `--resume=${conversation.id}${as}`, io);
  io.log(conversation.saved ? `Bye! Resume later with: ${printable(resumeWith)}` : 'Bye!');
}

/** Reads questions until exit or the end of the input; Ctrl-C cancels the one being answered. */
async function chatLoop(
  io: ScriptIo,
  ask: (question: string, signal: AbortSignal) => Promise<AgentResult>,
) {
  const rl = readline.createInterface({ input: io.stdin, output: io.stdout });
  let working: AbortController | undefined;
  rl.on('SIGINT', () => (working ? working.abort() : rl.close()));
  rl.setPrompt('You: ');
  rl.prompt();
  // Lines typed while Nimbus works wait in the iterator's queue: each is answered in its turn.
  for await (const line of rl) {
    if (!io.stdin.isTTY) io.log(printable(line)); // piped input is not echoed: show it
    const question = line.trim();
    if (/^(exit|quit)$/i.test(question)) break;
    if (question) {
      working = new AbortController();
      await answer(io, ask(question, working.signal));
      working = undefined;
    }
    rl.prompt();
  }
  rl.close();
  io.log();
}

/** Prints one answer. A database problem is said in one line, and the chat goes on. */
async function answer(io: ScriptIo, answering: Promise<AgentResult>): Promise<void> {
  try {
    const result = await answering;
    if (result.outcome === 'cancelled' && result.saved)
      io.log(
        dim('(Cancelled. What Nimbus had already done is saved; the reply it was writing is not.)'),
      );
    else if (result.outcome === 'cancelled') io.log(dim('(Cancelled: nothing of it was saved.)'));
    else io.log(`Nimbus: ${printable(result.answer)}\n`);
    if (result.outcome === 'refused') io.error(`${printable(result.problem ?? '')}\n`);
    if (result.saveError) io.error(`${printable(result.saveError)}\n`);
  } catch (error) {
    if (!(error instanceof DatabaseError)) throw error; // a wrong key or model name ends the chat
    io.error(`${printable(error.message)}\n`);
  }
}

if (startedDirectly(import.meta.url)) await runMain(main, usage);
