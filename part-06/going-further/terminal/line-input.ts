// The chat's input, typed or piped: lines wait in a queue while Nimbus works, and Ctrl-C can empty it.
//
// A terminal is read with readline (editing, history, a prompt). Piped input is split at "\n" only:
// readline would also split at a carriage return inside a line. Either way, lines that arrive while
// Nimbus is answering wait their turn, so a pasted block of 200 lines is 200 questions: Ctrl-C
// cancels the current one and drops the rest, instead of leaving 199 to run. A piped line longer than
// the limit is never held whole (readline holds a typed one): its length and start say what it was.
import readline from 'node:readline';
import { dim, type ScriptIo } from '../../../shared/cli.ts';
import { printable } from '../../../shared/text.ts';

/** A line longer than the limit: its length, and its start to show instead of all of it. */
export class LongLine {
  constructor(
    readonly length: number,
    readonly start: string,
  ) {}
}

/** How much of a long line is shown when it is echoed. */
const ECHO_CHARS = 60;

type Line = string | LongLine;

export class LineInput {
  private readonly waiting: Line[] = [];
  private reader?: (line: Line | undefined) => void;
  private ended = false;
  private readonly rl?: readline.Interface;
  private onInterrupt: () => boolean = () => false;

  /** `maxLineChars`: a longer line comes as a LongLine. */
  constructor(
    private readonly io: ScriptIo,
    private readonly maxLineChars: number,
  ) {
    const input = io.stdin;
    if (input.isTTY) {
      this.rl = readline.createInterface({ input, output: io.stdout, prompt: 'You: ' });
      this.rl.on('line', (line) =>
        this.push(line.length > maxLineChars ? longLine(line.length, line) : line),
      );
      this.rl.on('close', () => this.end());
      this.rl.on('SIGINT', () => this.interrupt()); // Ctrl-C typed in a terminal
    } else {
      void this.readPiped();
    }
    io.signals.on('SIGINT', this.interrupt); // a SIGINT signal, e.g. when the input is piped from a file
  }

  /** Whether a person is typing (a terminal) rather than a file or a pipe. */
  get interactive(): boolean {
    return this.rl !== undefined;
  }

  /**
   * Ctrl-C goes to `handler` first: it returns true when it cancelled something, and then the lines
   * typed meanwhile are dropped too (a paste should not run on). Otherwise Ctrl-C clears a half-typed
   * line, and at an empty prompt ends the input.
   */
  setInterruptHandler(handler: () => boolean): void {
    this.onInterrupt = () => {
      if (!handler()) return false;
      const dropped = this.waiting.splice(0).length;
      if (dropped)
        this.io.log(dim(`(Dropped ${dropped} line${dropped === 1 ? '' : 's'} typed meanwhile.)`));
      return true;
    };
  }

  /** The next line, after showing the prompt; undefined at the end of the input. */
  async next(): Promise<Line | undefined> {
    const line = this.waiting.shift();
    if (line !== undefined) {
      // Typed (or piped) while Nimbus was working: shown after the prompt, so the session reads in order.
      this.io.log(`You: ${echo(line)}`);
      return line;
    }
    if (this.rl) this.rl.prompt();
    else this.io.stdout.write('You: ');
    if (this.ended) return undefined;
    const next = await new Promise<Line | undefined>((resolve) => (this.reader = resolve));
    // A piped line is not echoed by a terminal: print it, so the output reads like a session.
    if (next !== undefined && !this.rl) this.io.log(echo(next));
    return next;
  }

  /** Asks one question outside the chat (a yes/no); '' when Ctrl-C or the end of input answers it. */
  async question(text: string): Promise<string> {
    const rl = this.rl;
    if (!rl || this.ended) return '';
    const controller = new AbortController();
    const cancel = () => controller.abort();
    const previous = this.onInterrupt;
    this.onInterrupt = () => (cancel(), true);
    rl.once('close', cancel); // Ctrl-D: the input ended, so nobody is left to answer
    try {
      return await new Promise<string>((resolve) => {
        controller.signal.addEventListener('abort', () => resolve(''));
        rl.question(text, { signal: controller.signal }, resolve);
      });
    } finally {
      this.onInterrupt = previous;
      rl.off('close', cancel);
      if (controller.signal.aborted) this.io.log();
    }
  }

  /** Stops reading: the program can then end, even with the input still open (a pipe not yet closed). */
  close(): void {
    this.io.signals.off('SIGINT', this.interrupt);
    this.rl?.close();
    if (!this.rl) this.io.stdin.destroy();
    this.end();
  }

  private push(line: Line): void {
    const reader = this.reader;
    this.reader = undefined;
    if (reader) reader(line);
    else this.waiting.push(line);
  }

  private end(): void {
    this.ended = true;
    this.reader?.(undefined);
    this.reader = undefined;
  }

  private readonly interrupt = (): void => {
    if (this.onInterrupt()) return;
    if (this.rl?.line) {
      this.rl.write(null, { ctrl: true, name: 'e' });
      this.rl.write(null, { ctrl: true, name: 'u' });
      return;
    }
    this.close();
  };

  private async readPiped(): Promise<void> {
    this.io.stdin.setEncoding('utf8');
    const line = new PartialLine(this.maxLineChars);
    try {
      for await (const chunk of this.io.stdin as AsyncIterable<string>) {
        // Only the new chunk is searched, once: the time taken grows with the input, not its square.
        let start = 0;
        for (let end = chunk.indexOf('\n'); end !== -1; end = chunk.indexOf('\n', start)) {
          line.add(chunk.slice(start, end));
          this.push(line.take());
          start = end + 1;
        }
        line.add(chunk.slice(start));
      }
      if (!line.empty) this.push(line.take());
    } catch (error) {
      // Ctrl-C at an empty prompt destroys the input: that is the end of the chat, not an error.
      if ((error as NodeJS.ErrnoException).code !== 'ERR_STREAM_PREMATURE_CLOSE') throw error;
    }
    this.end();
  }
}

/**
 * A piped line as its pieces arrive: held while it is within the limit, then only counted. One character
 * more than the limit is held, so a line of exactly the limit may still end in "\r" (dropped, as from
 * Windows).
 */
class PartialLine {
  private pieces: string[] = [];
  private held = 0;
  private length = 0;
  private endsWithReturn = false;

  constructor(private readonly max: number) {}

  get empty(): boolean {
    return this.length === 0;
  }

  add(piece: string): void {
    if (!piece) return;
    this.length += piece.length;
    this.endsWithReturn = piece.endsWith('\r');
    const room = this.max + 1 - this.held;
    if (room <= 0) return;
    this.pieces.push(piece.slice(0, room));
    this.held += Math.min(room, piece.length);
  }

  /** The line, complete (or a LongLine), and a fresh start for the next one. */
  take(): Line {
    const length = this.length - (this.endsWithReturn ? 1 : 0);
    const text = this.pieces.join('').slice(0, length);
    this.pieces = [];
    this.held = this.length = 0;
    this.endsWithReturn = false;
    return length <= this.max ? text : longLine(length, text);
  }
}

function longLine(length: number, text: string): LongLine {
  return new LongLine(length, text.slice(0, ECHO_CHARS));
}

/** A line as it is shown again: escaped, and a long one as its start and its length. */
function echo(line: Line): string {
  if (typeof line === 'string') return printable(line);
  return `${printable(line.start)}… (${line.length.toLocaleString('en-US')} characters)`;
}
