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
import { customerEmail } from '../../shared/config.ts';
import { commandFor } from '../../shared/hints.ts';
import { chatWithTools } from '../../shared/llm/index.ts';
import { printable } from '../../shared/text.ts';
import { describeIndexStatus, indexStatus } from '../embedding-index.ts';
import { newConversation } from '../memory.ts';
import { describeCustomer, signIn } from '../session.ts';
import { Nimbus, nimbusSettings, saveTrouble, whatHappened, type Asked } from './nimbus.ts';
import { WAITING_FOR_ERASURE, WAITING_FOR_OTHER_QUESTION } from './question/lease.ts';
import { ensureFullDatabase } from './store/ensure-tables.ts';
import { checkQuestion } from './question/question-limit.ts';
import { openClusterDatabase } from './store/cluster-database.ts';

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
  // Settings are read once, here: a missing key, a bad LOG_DIR or budget is said before anything else.
  const nimbus = new Nimbus(nimbusSettings(io.env));
  const { llm } = nimbus.settings;
  await ensureFullDatabase(io.error, llm);
  const customer = await signIn(values.customer, customerEmail(io.env));
  if (!values.quiet) io.error(dim(`Signed in as ${describeCustomer(customer)}.`, io.stderr));
  const problem = describeIndexStatus(
    await indexStatus(llm.embeddingModel),
    commandFor(new URL('../build-index.ts', import.meta.url), '', io),
  );
  if (problem && !values.quiet) io.error(dim(problem, io.stderr));

  let conversation = requested ? await nimbus.resume(customer, requested) : undefined;
  if (requested && !conversation)
    io.error(`Conversation ${requested} was not found; starting a new one.`);
  conversation ??= newConversation(customer.id);

  checkQuestion(question); // a usage error: too long to be worth sending
  // A model server may send no token counts: then the summary says so instead of "0 tokens".
  let uncounted = false;
  const counted: typeof chatWithTools = async (...call) => {
    const reply = await chatWithTools(...call);
    uncounted ||= reply.usage === undefined;
    return reply;
  };
  // Ctrl-C stops the question where it is: the steps it finished are saved, and the follow-up names them.
  const stop = new AbortController();
  const interrupt = () => stop.abort();
  io.signals.on('SIGINT', interrupt);
  let asked: Asked;
  try {
    asked = await nimbus.ask(customer, conversation, question, {
      signal: stop.signal,
      onWait: (waitingFor) =>
        io.error(
          dim(
            waitingFor === 'erasure' ? WAITING_FOR_ERASURE : WAITING_FOR_OTHER_QUESTION,
            io.stderr,
          ),
        ),
      callModel: counted,
      stderr: io.stderr,
      quiet: values.quiet,
    });
  } finally {
    io.signals.off('SIGINT', interrupt);
  }
  const as = values.customer === undefined ? '' : ` --customer=${customer.email}`;
  return report(io, asked, as, uncounted);
}

/**
 * Prints the answer, then on stderr how it went and the command for a follow-up (with `as`, the
 * --customer it was asked as: a conversation continues only as its customer). Returns the exit code:
 * a fallback apology is printed for the customer, but scripts should see that something failed.
 */
function report(io: ScriptIo, asked: Asked, as: string, uncounted: boolean): number {
  const { result, conversation } = asked;
  if (!result) {
    io.error(dim('(Cancelled: nothing from this question was saved.)', io.stderr));
    return 130; // as a shell reports Ctrl-C
  }
  if (result.outcome !== 'cancelled') io.log(printable(result.answer));
  const counted = result.usage.input_tokens + result.usage.output_tokens;
  const tokens = uncounted ? 'tokens not reported by the model server' : `${counted} tokens`;
  const steps = `${result.steps} step${result.steps === 1 ? '' : 's'}`;
  io.error(dim(`(${result.outcome} after ${steps}, ${tokens})`, io.stderr));
  if (result.outcome === 'refused') io.error(printable(result.problem ?? ''));
  // An erasure, a reset or a takeover meanwhile: said as the chat says it, naming no conversation.
  const happened = whatHappened(asked);
  if (happened) io.error(happened);
  if (asked.lost) return 1;
  const viewer = commandFor(
    new URL('./show-conversation.ts', import.meta.url),
    conversation.id,
    io,
  );
  const trouble = saveTrouble(asked, viewer);
  if (trouble) io.error(printable(trouble));
  else if (conversation.saved) {
    const followUp = commandFor(
      import.meta.url,
      `--conversation=${conversation.id}${as} "What about my other order?"`,
      io,
    );
    io.error(printable(`Conversation ${conversation.id}: ask a follow-up with ${followUp}`));
  }
  if (result.outcome === 'cancelled') return 130; // as a shell reports Ctrl-C
  return result.outcome === 'api_error' || result.outcome === 'refused' || result.saveError ? 1 : 0;
}

export const openDatabase = openClusterDatabase;
if (startedDirectly(import.meta.url)) await runMain(main, usage, { openDatabase });
