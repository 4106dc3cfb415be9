// Ask Nimbus one question within a conversation; it remembers earlier questions of the same conversation.
import { dim, parseFlags, runMain, UsageError } from '../shared/cli.ts';
import { ensureLogDir, llmSettings } from '../shared/config.ts';
import { commandFor } from '../shared/hints.ts';
import { printable } from '../shared/text.ts';
import { QuestionTooLong, runAgent } from './agent.ts';
import { conversationId } from './conversation-id.ts';
import { describeIndexStatus, indexStatus } from './embedding-index.ts';
import { findConversation, newConversation } from './memory.ts';
import { describeCustomer, signIn } from './session.ts';
import { memoryBudget, notesBudget } from './settings.ts';
import { ensureDatabase } from './setup-database.ts';
// Going further: the store and the lock that make a question survive real use, and customer notes, as in chat.ts.
import { withConversationLock } from './going-further/conversation-lock.ts';
import { hardenedStore } from './going-further/hardened-store.ts';
import { describeDamage } from './going-further/stored-history.ts';
import { customerMemoryTools } from './going-further/notes-tools.ts';
import { describeRecall } from './going-further/notes-view.ts';
import { withCustomerNotes } from './going-further/recall.ts';

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
  await ensureDatabase(console.error, llm);
  const customer = await signIn(values.customer);
  if (!values.quiet)
    console.error(dim(`Signed in as ${describeCustomer(customer)}.`, process.stderr));
  const problem = describeIndexStatus(
    await indexStatus(llm.embeddingModel),
    commandFor(new URL('./build-index.ts', import.meta.url)),
  );
  if (problem && !values.quiet) console.error(dim(problem, process.stderr));

  let conversation = requested ? await findConversation(requested, customer.id) : undefined;
  if (requested && !conversation)
    console.error(`Conversation ${requested} was not found; starting a new one.`);
  conversation ??= newConversation(customer.id);

  let result;
  try {
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
    const options = {
      llm,
      logDir,
      store,
      tools: customerMemoryTools(logDir),
      quiet: values.quiet,
    };
    const onWait = () =>
      console.error(
        dim('(Waiting for another question in this conversation to finish…)', process.stderr),
      );
    result = await withConversationLock(
      conversation.id,
      () => runAgent(question, customer, conversation, options),
      { onWait },
    );
  } catch (error) {
    if (error instanceof QuestionTooLong) throw new UsageError(error.message);
    throw error;
  }
  console.log(printable(result.answer));
  const tokens = result.usage.input_tokens + result.usage.output_tokens;
  console.error(
    dim(
      `(${result.outcome} after ${result.steps} step${result.steps === 1 ? '' : 's'}, ${tokens} tokens)`,
      process.stderr,
    ),
  );
  if (result.saveError) console.error(`Not saved: ${printable(result.saveError)}`);
  else {
    // A conversation continues only as its customer, so a --customer given now belongs in the hint.
    const as =
      values.customer === undefined
        ? ''
        : ` --customer=${printable(customer.email, { singleLine: true })}`;
    console.error(
      `Conversation ${conversation.id}: ask a follow-up with ${commandFor(import.meta.url, `--conversation=${conversation.id}${as} "…"`)}`,
    );
  }
  // A fallback apology is still printed for the customer, but scripts should see that something failed.
  if (result.outcome === 'refused') console.error(printable(result.problem ?? ''));
  return result.outcome === 'api_error' || result.outcome === 'refused' || result.saveError ? 1 : 0;
}, USAGE);
