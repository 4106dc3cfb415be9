// The chat's answer as it streams in, with the trace's lines kept readable around it.
import { dim, type ScriptIo } from '../../../shared/cli.ts';
import { streamWithTools } from '../model/stream-with-tools.ts';
import { printable } from '../../../shared/text.ts';
import { Writable } from 'node:stream';
import type { AgentOptions } from '../../agent.ts';
import { saveTrouble, type Asked } from '../nimbus.ts';

/** Ctrl-C while the agent worked: the steps it completed are saved (the agent saves each one). */
const CANCELLED_AFTER_TOOLS =
  '(Cancelled. What Nimbus had already done is saved, so the next question knows about it.)';
/** Ctrl-C before any step was saved: nothing of the question is kept. */
const CANCELLED_BEFORE_TOOLS = '(Cancelled: nothing from this question was saved.)';

/** Ctrl-C while the question waited to start (for another window's question): nothing was done. */
const CANCELLED_BEFORE_START = 'Cancelled: nothing from this question was saved.';

/**
 * The agent's model call, streamed (`callModel`): each piece of the answer is printed after "Nimbus: "
 * as it arrives, escaped like everything from a model (each character on its own, so an escape sequence
 * split across two pieces is still made visible). The trace's lines get lines of their own around it.
 */
export function answerPrinter(io: ScriptIo) {
  let midLine = false;
  const working = workingLine(io.stderr);
  const breakLine = () => {
    working.stop();
    if (midLine) io.stdout.write('\n');
    midLine = false;
  };
  const callModel: AgentOptions['callModel'] = (llm, messages, tools = [], options = {}) => {
    breakLine(); // a new model call, after tool steps
    working.start('thinking');
    const reply = streamWithTools(llm, messages, tools, {
      ...options,
      onText(text) {
        working.stop();
        if (!midLine) io.stdout.write('Nimbus: ');
        io.stdout.write(printable(text));
        midLine = true;
      },
    });
    return reply.finally(working.stop);
  };
  // The trace's lines (and the store's notices) go to stderr through here: each on a line of its own.
  const stderr = Object.assign(
    new Writable({
      write(chunk, _encoding, done) {
        breakLine();
        io.stderr.write(chunk);
        if (String(chunk).includes(' model → ')) working.start('running the tool'); // a tool call starts
        done();
      },
    }),
    { isTTY: io.stderr.isTTY },
  );
  return {
    callModel,
    stderr,
    breakLine,
    /**
     * What is left to say once the question ended: a fallback (the provider failed, the step limit) was
     * never streamed, so it is printed whole; Ctrl-C is said with what it left behind. A question whose
     * conversation was lost meanwhile is said by the caller (whatHappened), not here.
     */
    finish(asked: Asked, viewer: string): void {
      breakLine();
      const { result } = asked;
      if (!result) io.log(dim(`(${CANCELLED_BEFORE_START})`));
      else if (result.outcome === 'cancelled') {
        if (!asked.lost) io.log(dim(result.saved ? CANCELLED_AFTER_TOOLS : CANCELLED_BEFORE_TOOLS));
      } else if (result.outcome !== 'answered') io.log(`Nimbus: ${printable(result.answer)}`);
      io.log();
      if (!result) return;
      // Not an outage: the provider called the request invalid, and its words say why.
      if (result.outcome === 'refused') io.error(`${printable(result.problem ?? '')}\n`);
      const trouble = saveTrouble(asked, viewer);
      if (trouble) io.error(`${printable(trouble)}\n`);
    },
  };
}

/**
 * On a terminal, while Nimbus works and nothing new is on screen (before the first word, while a tool
 * runs), one line says so and for how long, redrawn each second and wiped when output comes.
 */
function workingLine(stream: ScriptIo['stderr']) {
  let timer: NodeJS.Timeout | undefined;
  let drawn = false;
  const stop = () => {
    clearInterval(timer);
    if (drawn) stream.write('\r\x1b[2K'); // back to the line's start, and wipe it
    drawn = false;
  };
  return {
    stop,
    start(what: string): void {
      stop();
      if (!stream.isTTY) return; // a file or a pipe keeps only what was said
      const started = Date.now();
      timer = setInterval(() => {
        const seconds = Math.round((Date.now() - started) / 1000);
        stream.write(`\r${dim(`(Nimbus is ${what}… ${seconds} s)`, stream)}`);
        drawn = true;
      }, 1000);
      timer.unref();
    },
  };
}
