// Ask Nimbus one question; it works through as many tool calls as it needs, then answers.
import { dim, parseFlags, runMain, UsageError } from '../shared/cli.ts';
import { runAgent } from './agent.ts';
import { ensureDatabase } from './setup-database.ts';

const USAGE = `Usage: npx tsx ask-agent.ts [--quiet] "your question"

Asks Nimbus one question. It looks up orders, checks refunds and opens tickets as needed,
showing each step; --quiet shows only the answer. Every run writes a trace under logs/.`;

await runMain(async () => {
  const { values, positionals } = parseFlags({
    options: { help: { type: 'boolean', short: 'h' }, quiet: { type: 'boolean', short: 'q' } },
    allowPositionals: true,
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const question = positionals.join(' ').trim();
  if (!question) throw new UsageError('Please give Nimbus a question.');
  await ensureDatabase();

  const result = await runAgent(question, { quiet: values.quiet });
  console.log(result.answer);
  const tokens = result.usage.input_tokens + result.usage.output_tokens;
  console.error(dim(`(${result.outcome} after ${result.steps} step${result.steps === 1 ? '' : 's'}, ${tokens} tokens)`, process.stderr));
  // A fallback apology is still printed for the customer, but scripts should see that something failed.
  return result.outcome === 'api_error' ? 1 : 0;
}, USAGE);
