// Ask Nimbus one question; it works through as many tool calls as it needs, then answers.
import {
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
import { describeIndexStatus, indexStatus } from './embedding-index.ts';
import { describeCustomer, signIn } from './session.ts';
import { ensureDatabase } from './setup-database.ts';

export function usage(io: ScriptIo): string {
  return `Usage: ${commandFor(import.meta.url, '[--quiet] [--customer=<email>] "your question"', io)}

Asks Nimbus one question as the customer in CUSTOMER_EMAIL (.env) or --customer. It looks up
orders, checks refunds, opens tickets and searches the help center as needed, showing each step;
--quiet (or -q) hides the step-by-step trace lines. Every run writes a trace under logs/traces/.`;
}

/** The script's work, given its arguments, settings and streams: a test can run it in-process. */
export async function main(io: ScriptIo): Promise<number | void> {
  const { values, positionals } = parseFlags({
    args: io.args,
    options: {
      quiet: { type: 'boolean', short: 'q' },
      customer: { type: 'string' },
    },
    allowPositionals: true,
  });
  const question = positionals.join(' ').trim();
  if (!question) throw new UsageError('Please give Nimbus a question.');
  // Settings first: a missing key or a bad LOG_DIR is said before anything is created.
  const llm = llmSettings(io.env);
  const logDir = ensureLogDir(io.env);
  await ensureDatabase(io.error, llm);
  const customer = await signIn(values.customer, customerEmail(io.env));
  if (!values.quiet) io.error(dim(`Signed in as ${describeCustomer(customer)}.`, io.stderr));
  const problem = describeIndexStatus(
    await indexStatus(llm.embeddingModel),
    commandFor(new URL('./build-index.ts', import.meta.url), '', io),
  );
  if (problem && !values.quiet) io.error(dim(problem, io.stderr));

  const options = { llm, logDir, quiet: values.quiet, stderr: io.stderr };
  const result = await runAgent(question, customer, options);
  io.log(printable(result.answer));
  const tokens = result.usage.input_tokens + result.usage.output_tokens;
  io.error(
    dim(
      `(${result.outcome} after ${result.steps} step${result.steps === 1 ? '' : 's'}, ${tokens} tokens)`,
      io.stderr,
    ),
  );
  // A fallback apology is still printed for the customer, but scripts should see that something failed.
  return result.outcome === 'api_error' ? 1 : 0;
}

if (startedDirectly(import.meta.url)) await runMain(main, usage);
