// Nimbus with tools: one round of tool use (every call the model asks for), then the answer.
import { dim, parseFlags, runMain, UsageError } from '../shared/cli.ts';
import { chatWithTools, type Message } from '../shared/llm/index.ts';
import { SYSTEM_PROMPT } from './prompt.ts';
import { ensureDatabase } from './setup-database.ts';
import { runTool, TOOL_DEFINITIONS } from './tools.ts';

const USAGE = `Usage: npx tsx ask.ts "your question"

Asks Nimbus one question and prints its answer. Nimbus can look up orders, check refunds and open tickets.`;

await runMain(async () => {
  const { values, positionals } = parseFlags({
    options: { help: { type: 'boolean', short: 'h' } },
    allowPositionals: true,
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const question = positionals.join(' ').trim();
  if (!question) throw new UsageError('Please give Nimbus a question.');
  await ensureDatabase();

  const messages: Message[] = [
    { role: 'system', content: SYSTEM_PROMPT },
    { role: 'user', content: question },
  ];
  // 1. The model either answers, or asks us to run tools.
  const first = await chatWithTools(messages, TOOL_DEFINITIONS);
  if (first.tool_calls.length === 0) {
    console.log(first.text || '(Nimbus gave an empty answer; try asking another way.)');
    return 0;
  }

  // 2. We run every tool it asked for and add the results to the conversation, matched by call id.
  messages.push(first.message);
  for (const call of first.tool_calls) {
    console.error(dim(`→ ${call.name}(${JSON.stringify(call.arguments)})`, process.stderr));
    const result = await runTool(call);
    console.error(dim(`← ${shorten(JSON.stringify(result))}`, process.stderr));
    messages.push({ role: 'tool', tool_call_id: call.id, name: call.name, content: JSON.stringify(result) });
  }

  // 3. With the results in hand, the model writes the answer.
  const second = await chatWithTools(messages, TOOL_DEFINITIONS);
  if (second.tool_calls.length > 0) {
    // One round is all this chapter does; Part 4's agent loop lets the model keep going.
    console.log(second.text || 'Nimbus needed more than one round of lookups for this question; try asking more specifically.');
    return 0;
  }
  console.log(second.text || '(Nimbus gave an empty answer; try asking another way.)');
}, USAGE);

function shorten(text: string, max = 200): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
