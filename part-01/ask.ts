// Nimbus's first answer: send the system prompt and one question to the model, print the reply.
import { parseFlags, runMain, type ScriptIo, startedDirectly, UsageError } from '../shared/cli.ts';
import { llmSettings } from '../shared/config.ts';
import { commandFor } from '../shared/hints.ts';
import { chatWithTools, type Message } from '../shared/llm/index.ts';
import { printable } from '../shared/text.ts';
import { SYSTEM_PROMPT } from './prompt.ts';

export function usage(io: ScriptIo): string {
  return `Usage: ${commandFor(import.meta.url, '"your question"', io)}

Asks Nimbus one question and prints its answer.`;
}

/** The script's work, given its arguments, settings and streams: a test can run it in-process. */
export async function main(io: ScriptIo): Promise<number | void> {
  const { positionals } = parseFlags({ args: io.args, options: {}, allowPositionals: true });
  const question = positionals.join(' ').trim();
  if (!question) throw new UsageError('Please give Nimbus a question.');
  // Settings are read once, here, and handed to what needs them: a missing key is said first.
  const llm = llmSettings(io.env);

  // The model remembers nothing between calls: everything it should know travels in this array.
  const messages: Message[] = [
    { role: 'system', content: SYSTEM_PROMPT },
    { role: 'user', content: question },
  ];
  const reply = await chatWithTools(llm, messages);
  // The model's text goes to a terminal: control characters in it are shown, never obeyed.
  io.log(printable(reply.text) || '(Nimbus gave an empty answer; try asking another way.)');
}

if (startedDirectly(import.meta.url)) await runMain(main, usage);
