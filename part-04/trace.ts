// Records what the agent did, step by step: JSON lines under logs/ for later, short dim lines for now.
import { closeSync, constants, openSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { dim, type ScriptIo } from '../shared/cli.ts';
import { makeFolders } from '../shared/config.ts';
import { printable, printableJson, shorten } from '../shared/text.ts';

export type TraceEventType =
  | 'start'
  | 'tool_call'
  | 'tool_result'
  | 'retry'
  | 'final_answer'
  | 'api_error'
  | 'step_limit'
  | 'end';

export interface TraceOptions {
  /** The folder traces go in (LOG_DIR, checked at start). */
  logDir: string;
  /** Hide the terminal lines (the file is written anyway). */
  quiet?: boolean;
  /** Where the terminal lines go: the entry script's stderr (default: this process's). */
  stderr?: ScriptIo['stderr'];
}

/**
 * One trace per question, in its own file: logs/traces/<start time>_<id>.jsonl. One file per question
 * means a question's record can be found, shared or deleted as a whole. A trace is a record, not the
 * job: if it cannot be written, the question goes on and one warning says why.
 */
export class Trace {
  readonly id = randomBytes(6).toString('hex');
  readonly file: string;
  private readonly quiet: boolean;
  private readonly stderr: ScriptIo['stderr'];
  private failed = false;

  constructor(options: TraceOptions) {
    this.quiet = options.quiet ?? false;
    this.stderr = options.stderr ?? process.stderr;
    const started = new Date().toISOString().replace(/[:.]/g, '-');
    this.file = path.join(options.logDir, 'traces', `${started}_${this.id}.jsonl`);
  }

  /** Appends one event (one JSON object per line, with a timestamp) and prints its short form. */
  event(type: TraceEventType, data: Record<string, unknown> = {}): void {
    const line = { ts: new Date().toISOString(), trace: this.id, type, ...data };
    // Escaped JSON: people read this file with cat or tail -f, where what was written must stay inert too.
    this.append(printableJson(line) + '\n');
    const text = terminalLine(type, data);
    if (text && !this.quiet) this.say(printable(text, { singleLine: true }));
  }

  private append(line: string): void {
    if (this.failed) return;
    try {
      makeFolders(path.dirname(this.file));
      // Appending whole lines means a crash can cut the file short but never leave a half-written event.
      // O_NONBLOCK: if something other than a file sits at this path (a pipe nobody reads), fail instead of waiting forever.
      // 0o600: a trace holds a customer's questions and orders, so a new file is readable by our user only.
      const fd = openSync(
        this.file,
        constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NONBLOCK,
        0o600,
      );
      try {
        writeSync(fd, line);
      } finally {
        closeSync(fd);
      }
    } catch (error) {
      this.failed = true;
      this.say(
        `warning: could not write the trace ${this.file} (${(error as NodeJS.ErrnoException).code ?? error}); carrying on without it.`,
      );
    }
  }

  /** One dim line on the terminal. */
  private say(text: string): void {
    this.stderr.write(`${dim(text, this.stderr)}\n`);
  }
}

/** The terminal form of an event, e.g. `[step 1] model → check_refund_eligibility({"order_id":1043}) (790 ms)`. */
function terminalLine(type: TraceEventType, data: Record<string, unknown>): string | undefined {
  const step = `[step ${data.step}]`;
  switch (type) {
    case 'tool_call':
      return `${step} model → ${data.name}(${JSON.stringify(data.arguments)}) (${data.ms} ms)`;
    case 'tool_result':
      return `${step} tool ← ${shorten(JSON.stringify(data.result), 160)}`;
    case 'retry':
      return `${step} ${data.message}`;
    case 'final_answer':
      return `${step} model answered (${data.ms} ms)`;
    case 'api_error':
      return `${step} provider error: ${data.message}`;
    case 'step_limit':
      return `${step} step limit reached`;
    default:
      return undefined; // start and end are for the file; the CLI prints the question and answer
  }
}
