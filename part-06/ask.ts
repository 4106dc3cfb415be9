// Ask Nimbus one question within a conversation; it remembers earlier questions of the same conversation.
import {
  conversationId,
  dim,
  parseFlags,
  runMain,
  type ScriptIo,
  startedDirectly,
  UsageError,
} from '../shared/cli.ts';
import { customerEmail, ensureLogDir, llmSettings } from '../shared/config.ts';
import { commandFor } from '../shared/hints.ts';
import { printable } from '../shared/text.ts';
import { runAgent } from './agent.ts';
import { memoryBudget } from './context.ts';
import { describeIndexStatus, indexStatus } from './embedding-index.ts';
import { findConversation, newConversation, plainStore } from './memory.ts';
import { describeCustomer, signIn } from './session.ts';
import { ensureDatabase } from './setup-database.ts';

export function usage(io: ScriptIo): string {
  return `Usage: ${commandFor(import.meta.url, '[--quiet] [--customer=<email>] [--conversation=<id>] "your question"', io)}

Asks Nimbus one question as the customer in CUSTOMER_EMAIL (.env) or --customer. Without
--conversation it starts a new conversation; pass the id it prints to ask a follow-up in the same
conversation. --quiet (or -q) hides the step-by-step trace lines.`;
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
  // Settings first: a missing key, a bad LOG_DIR or budget is said before anything is created.
  const llm = llmSettings(io.env);
  const logDir = ensureLogDir(io.env);
  const store = plainStore(memoryBudget(io.env));
  await ensureDatabase(io.error, llm);
  const customer = await signIn(values.customer, customerEmail(io.env));
  if (!values.quiet) io.error(dim(`Signed in as ${describeCustomer(customer)}.`, io.stderr));
  const problem = describeIndexStatus(
    await indexStatus(llm.embeddingModel),
    commandFor(new URL('./build-index.ts', import.meta.url), '', io),
  );
  if (problem && !values.quiet) io.error(dim(problem, io.stderr));

  let conversation = requested ? await findConversation(requested, customer.id) : undefined;
  if (requested && !conversation)
    io.error(`Conversation ${requested} was not found; starting a new one.`);
  conversation ??= newConversation(customer.id);

  const options = { llm, logDir, store, quiet: values.quiet, stderr: io.stderr };
  const result = await runAgent(question, customer, conversation, options);
  io.log(printable(result.answer));
  const tokens = result.usage.input_tokens + result.usage.output_tokens;
  io.error(
    dim(
      `(${result.outcome} after ${result.steps} step${result.steps === 1 ? '' : 's'}, ${tokens} tokens)`,
      io.stderr,
    ),
  );
  if (result.outcome === 'refused') io.error(printable(result.problem ?? ''));
  if (result.saveError) io.error(`${printable(result.saveError)}`);
  else if (conversation.saved) {
    // A conversation continues only as its customer: a --customer goes in the hint too.
    const as = values.customer === undefined ? '' : ` --customer=${customer.email}`;
    const next = `--conversation=${conversation.id}${as} "What about my other order?"`;
    io.error(printable(`Ask a follow-up with ${commandFor(import.meta.url, next, io)}`));
  }
  // A fallback apology is still printed for the customer, but scripts should see that something failed.
  const failed = result.outcome === 'api_error' || result.outcome === 'refused';
  return failed || result.saveError ? 1 : 0;
}

if (startedDirectly(import.meta.url)) await runMain(main, usage);
