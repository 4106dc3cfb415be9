// Nimbus's first answer: send the system prompt and one question to the model, print the reply.
import { parseFlags, runMain, UsageError } from '../shared/cli.ts';
import { chatWithTools, type Message } from '../shared/llm/index.ts';
import { SYSTEM_PROMPT } from './prompt.ts';

const USAGE = `Usage: npx tsx ask.ts "your question"

Asks Nimbus one question and prints its answer.`;

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

  // The model remembers nothing between calls: everything it should know travels in this array.
  const messages: Message[] = [
    { role: 'system', content: SYSTEM_PROMPT },
    { role: 'user', content: question },
  ];
  const reply = await chatWithTools(messages);
  console.log(reply.text || '(Nimbus gave an empty answer; try asking another way.)');
}, USAGE);
