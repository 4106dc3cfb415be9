// Chat with Nimbus in the terminal. Every exchange is saved in MySQL, so a conversation can be resumed later.
import readline from 'node:readline';
import { dim, parseFlags, runMain } from '../shared/cli.ts';
import { DatabaseError } from '../shared/db.ts';
import { runAgent, TurnCancelled } from './agent.ts';
import { conversationExists, newConversation, parseConversationId } from './memory.ts';
import { ensureDatabase } from './setup-database.ts';

const USAGE = `Usage: npx tsx chat.ts [--resume=<id>] [--quiet]

Chat with Nimbus. Every exchange is saved; continue a conversation later with --resume=<id>.
Type exit or quit (or press Ctrl-D) to leave. Ctrl-C cancels the question Nimbus is working on;
at an empty prompt it leaves. --quiet hides the step-by-step trace lines.`;

await runMain(async () => {
  const { values } = parseFlags({
    options: {
      help: { type: 'boolean', short: 'h' },
      quiet: { type: 'boolean', short: 'q' },
      resume: { type: 'string' },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const resume = values.resume === undefined ? undefined : parseConversationId(values.resume, '--resume');
  await ensureDatabase();

  let conversationId: string;
  if (resume && (await conversationExists(resume))) {
    conversationId = resume;
    console.log(`Resuming conversation ${conversationId}`);
  } else {
    if (resume) console.log(`Conversation ${resume} was not found; starting a new one.`);
    conversationId = await newConversation();
    console.log(`New conversation ${conversationId}`);
  }
  console.log(dim('Ask about your orders, refunds or the store. Type exit to leave.'));

  await chatLoop(conversationId, values.quiet ?? false);
  console.log(`Bye! Resume later with: npx tsx chat.ts --resume=${conversationId}`);
}, USAGE);

async function chatLoop(conversationId: string, quiet: boolean): Promise<void> {
  const interactive = Boolean(process.stdin.isTTY);
  const rl = readline.createInterface({ input: process.stdin, output: process.stdout, terminal: interactive, prompt: 'You: ' });
  let working: AbortController | undefined;
  let leftByTyping = false;

  // Ctrl-C: cancel the question in progress; clear a half-typed line; at an empty prompt, leave.
  const onInterrupt = () => {
    if (working) working.abort();
    else if (rl.line) {
      rl.write(null, { ctrl: true, name: 'e' });
      rl.write(null, { ctrl: true, name: 'u' });
    } else rl.close();
  };
  rl.on('SIGINT', onInterrupt); // Ctrl-C typed in a terminal
  process.on('SIGINT', onInterrupt); // a SIGINT signal, e.g. when the input is piped from a file

  try {
    rl.prompt();
    // Lines typed (or piped) while Nimbus works wait in the iterator's queue until the loop asks for them.
    for await (const line of rl) {
      const question = line.trim();
      if (!question) {
        if (interactive) rl.prompt();
        continue;
      }
      // A piped line is not echoed by the terminal: print it, so the output reads like a session.
      if (!interactive) console.log(line);
      if (/^(exit|quit)$/i.test(question)) {
        leftByTyping = true;
        break;
      }

      working = new AbortController();
      try {
        const result = await runAgent(question, conversationId, { quiet, signal: working.signal });
        console.log(`Nimbus: ${result.answer}\n`);
      } catch (error) {
        // The database failing affects this question only; anything else (a wrong key, say) ends the chat.
        if (error instanceof TurnCancelled) console.log(dim(`(${error.message})\n`));
        else if (error instanceof DatabaseError) console.error(`${error.message}\n`);
        else throw error;
      } finally {
        working = undefined;
      }
      rl.prompt();
    }
  } finally {
    rl.close();
    process.off('SIGINT', onInterrupt);
  }
  // Ctrl-D or Ctrl-C leave the cursor after "You: ".
  if (!leftByTyping) console.log();
}
