// Records what the agent did, step by step: JSON lines under logs/ for later, short dim lines for now.
import { closeSync, constants, openSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { dim } from '../shared/cli.ts';
import { logDir, makeFolders } from '../shared/config.ts';
import { printable, printableJson, shorten } from '../shared/text.ts';

export type TraceEventType =
  | 'start'
  | 'memory'
  | 'tool_call'
  | 'tool_result'
  | 'retry'
  | 'final_answer'
  | 'api_error'
  | 'step_limit'
  | 'save_failed'
  | 'cancelled'
  | 'end';

export interface TraceOptions {
  /** Hide the terminal lines (the file is written anyway). */
  quiet?: boolean;
}

/** All traces of a conversation live in one file, so forgetting a conversation can delete every copy. */
export function conversationTraceFile(conversationId: string): string {
  return path.join(logDir(), 'conversations', `${conversationId}.jsonl`);
}

/**
 * One trace per question, appended to its conversation's file: logs/conversations/<conversation id>.jsonl.
 * Each event carries the question's trace id and the conversation id. A trace is a record, not the job:
 * if it cannot be written, the question goes on and one warning says why.
 */
export class Trace {
  readonly id = randomBytes(6).toString('hex');
  readonly file: string;
  private readonly quiet: boolean;
  private failed = false;

  constructor(
    readonly conversationId: string,
    options: TraceOptions = {},
  ) {
    this.quiet = options.quiet ?? false;
    this.file = conversationTraceFile(conversationId);
  }

  /** Appends one event (one JSON object per line, with a timestamp) and prints its short form. */
  event(type: TraceEventType, data: Record<string, unknown> = {}): void {
    const line = {
      ts: new Date().toISOString(),
      trace: this.id,
      conversation_id: this.conversationId,
      type,
      ...data,
    };
    // Escaped JSON: people read this file with cat or tail -f, where what was written must stay inert too.
    this.append(printableJson(line) + '\n');
    const text = terminalLine(type, data);
    if (text && !this.quiet)
      console.error(dim(printable(text, { singleLine: true }), process.stderr));
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
      console.error(
        dim(
          `warning: could not write the trace ${this.file} (${(error as NodeJS.ErrnoException).code ?? error}); carrying on without it.`,
          process.stderr,
        ),
      );
    }
  }
}

/** The terminal form of an event, e.g. `[step 1] model → check_refund_eligibility({"order_id":1043}) (790 ms)`. */
function terminalLine(type: TraceEventType, data: Record<string, unknown>): string | undefined {
  const step = `[step ${data.step}]`;
  switch (type) {
    case 'memory':
      return `[step 0] memory: ${describeMemory(data as unknown as MemoryEvent)}`;
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
    case 'save_failed':
      return `${step} could not save: ${data.message}`;
    case 'cancelled':
      return `${step} cancelled`;
    default:
      return undefined; // start and end are for the file; the CLI prints the question and answer
  }
}

/** The numbers of a 'memory' event: what the context holds, from buildContext. */
interface MemoryEvent {
  full: number;
  compacted: number;
  dropped: number;
  /** False when older turns were not read at all (they would all have been dropped). */
  read_all: boolean;
  chars: number;
  max_chars: number;
}

/** "9 earlier turns — 2 full, 7 compacted, 0 dropped — 5,912 of 12,000 chars" */
function describeMemory(m: MemoryEvent): string {
  const total = m.full + m.compacted + m.dropped;
  if (total === 0) return 'no earlier turns';
  const n = (x: number) => x.toLocaleString('en-US');
  const budget = `${n(m.chars)} of ${n(m.max_chars)} chars`;
  if (!m.read_all)
    return `${m.full} full, ${m.compacted} compacted, older turns dropped — ${budget}`;
  return `${total} earlier turn${total === 1 ? '' : 's'} — ${m.full} full, ${m.compacted} compacted, ${m.dropped} dropped — ${budget}`;
}
