// Nimbus with tools: one round of tool use (every call the model asks for), then the answer.
import {
  dim,
  parseFlags,
  runMain,
  type ScriptIo,
  startedDirectly,
  UsageError,
} from '../shared/cli.ts';
import { customerEmail, llmSettings } from '../shared/config.ts';
import { commandFor } from '../shared/hints.ts';
import { chatWithTools, type Message } from '../shared/llm/index.ts';
import { printable, shorten } from '../shared/text.ts';
import { systemPrompt } from './prompt.ts';
import { describeCustomer, signIn } from './session.ts';
import { ensureDatabase } from './setup-database.ts';
import { runTool, TOOL_DEFINITIONS, type ToolContext } from './tools.ts';

export function usage(io: ScriptIo): string {
  return `Usage: ${commandFor(import.meta.url, '[--customer=<email>] "your question"', io)}

Asks Nimbus one question as the customer in CUSTOMER_EMAIL (.env) or --customer, and prints its
answer. Nimbus can look up that customer's orders, check refunds and open tickets.`;
}

/** The script's work, given its arguments, settings and streams: a test can run it in-process. */
export async function main(io: ScriptIo): Promise<number | void> {
  const { values, positionals } = parseFlags({
    args: io.args,
    options: { customer: { type: 'string' } },
    allowPositionals: true,
  });
  const question = positionals.join(' ').trim();
  if (!question) throw new UsageError('Please give Nimbus a question.');
  // Settings first: a missing key is said before anything is created.
  const llm = llmSettings(io.env);
  await ensureDatabase(io.error);
  const customer = await signIn(values.customer, customerEmail(io.env));
  io.error(dim(`Signed in as ${describeCustomer(customer)}.`, io.stderr));

  const messages: Message[] = [
    { role: 'system', content: systemPrompt(customer) },
    { role: 'user', content: question },
  ];
  // 1. The model either answers, or asks us to run tools.
  const first = await chatWithTools(llm, messages, TOOL_DEFINITIONS);
  if (first.tool_calls.length === 0) {
    io.log(printable(first.text) || '(Nimbus gave an empty answer; try asking another way.)');
    return 0;
  }

  // 2. We run every tool it asked for and add the results to the conversation, matched by call id.
  //    The customer goes to the tools from our code, beside the model's arguments: never from the model.
  const context: ToolContext = { customer, ticketsOpened: 0 };
  messages.push(first.message);
  for (const call of first.tool_calls) {
    io.error(
      dim(
        printable(`→ ${call.name}(${JSON.stringify(call.arguments)})`, { singleLine: true }),
        io.stderr,
      ),
    );
    const result = await runTool(call, context);
    io.error(
      dim(printable(`← ${shorten(JSON.stringify(result), 200)}`, { singleLine: true }), io.stderr),
    );
    messages.push({
      role: 'tool',
      tool_call_id: call.id,
      name: call.name,
      content: JSON.stringify(result),
    });
  }

  // 3. With the results in hand, the model writes the answer.
  const second = await chatWithTools(llm, messages, TOOL_DEFINITIONS);
  if (second.tool_calls.length > 0) {
    // One round is all this script does: a model that wants more lookups gets a plain apology.
    io.log(
      printable(second.text) ||
        'Nimbus needed more than one round of lookups for this question; try asking more specifically.',
    );
    return 0;
  }
  io.log(printable(second.text) || '(Nimbus gave an empty answer; try asking another way.)');
}

if (startedDirectly(import.meta.url)) await runMain(main, usage);
