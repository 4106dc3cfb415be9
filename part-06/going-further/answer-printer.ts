// Going further: the chat's answer as it streams in, with the trace's lines kept readable around it.
import { dim } from '../../shared/cli.ts';
import { printable } from '../../shared/text.ts';
import type { AgentResult } from '../agent.ts';

/**
 * Prints an answer as it streams in, after "Nimbus: ", escaped like everything from a model (each
 * character on its own, so an escape sequence split across two pieces is still made visible). The
 * trace's lines get lines of their own around it.
 */
export function answerPrinter() {
  let midLine = false;
  let step = 0;
  const breakLine = () => {
    if (midLine) process.stdout.write('\n');
    midLine = false;
  };
  return {
    breakLine,
    text(text: string, textStep: number): void {
      if (textStep !== step) breakLine(); // a new model call, after tool steps
      if (!midLine) process.stdout.write('Nimbus: ');
      process.stdout.write(printable(text));
      midLine = true;
      step = textStep;
    },
    traceLine(line: string): void {
      breakLine();
      console.error(dim(line, process.stderr));
    },
    /** A fallback (the provider failed, the step limit) was never streamed: it is printed whole. */
    finish(result: AgentResult): void {
      breakLine();
      if (result.outcome !== 'answered') console.log(`Nimbus: ${printable(result.answer)}`);
      console.log();
      // Not an outage: the provider called the request invalid, and its words say why.
      if (result.outcome === 'refused') console.error(`${printable(result.problem ?? '')}\n`);
      if (result.saveError) console.error(`Not saved: ${printable(result.saveError)}\n`);
    },
  };
}
