// Records what the agent did, step by step: JSON lines under logs/ for later, short dim lines for now.
import { closeSync, constants, openSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { dim, type ScriptIo } from '../shared/cli.ts';
import { makeFolders } from '../shared/config.ts';
import { plural, printable, printableJson, shorten, thousands } from '../shared/text.ts';
import type { Context, Fate } from './context.ts';

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
  | 'end';

export interface TraceOptions {
  /** The folder traces go in (LOG_DIR, checked at start). */
  logDir: string;
  /** Hide the terminal lines (the file is written anyway). */
  quiet?: boolean;
  /** Where the terminal lines go: the entry script's stderr (default: this process's). */
  stderr?: ScriptIo['stderr'];
}

/** All traces of a conversation live in one file, so forgetting a conversation can delete every copy. */
export function conversationTraceFile(dir: string, conversationId: string): string {
  return path.join(dir, 'conversations', `${conversationId}.jsonl`);
}

/**
 * One trace per question, appended to its conversation's file: logs/conversations/<conversation id>.jsonl.
 * A trace is a record, not the job: if it cannot be written, the question goes on and one warning says why.
 */
export class Trace {
  readonly id = randomBytes(6).toString('hex');
  readonly file: string;
  private readonly quiet: boolean;
  private readonly stderr: ScriptIo['stderr'];
  private held = '';
  private failed = false;
  /** Set once this trace has written to its file: from then on, a missing file was deleted on purpose. */
  private opened = false;

  constructor(
    private readonly conversation: { id: string; saved: boolean },
    options: TraceOptions,
  ) {
    this.quiet = options.quiet ?? false;
    this.stderr = options.stderr ?? process.stderr;
    this.file = conversationTraceFile(options.logDir, conversation.id);
  }

  /** Appends one event (one JSON object per line, with a timestamp) and prints its short form. */
  event(type: TraceEventType, data: Record<string, unknown> = {}): void {
    const line = {
      ts: new Date().toISOString(),
      trace: this.id,
      conversation_id: this.conversation.id,
      type,
      ...data,
    };
    // Escaped JSON: people read this file with cat or tail -f, where what was written must stay inert too.
    this.held += printableJson(line) + '\n';
    // Until the conversation has a row, lines wait here: no trace file is left that no reset could find.
    if (this.conversation.saved) {
      this.append(this.held);
      this.held = '';
    }
    const text = terminalLine(type, data);
    if (text && !this.quiet) this.say(printable(text, { singleLine: true }));
  }

  private append(lines: string): void {
    if (this.failed) return;
    try {
      makeFolders(path.dirname(this.file));
      // O_NOFOLLOW: a link put in the file's place is refused, never written through to where it points.
      // O_NONBLOCK: if something other than a file sits at this path (a pipe nobody reads), fail instead of waiting forever.
      // O_CREAT only for this trace's first lines: a file that vanishes later was deleted with its
      // conversation (a reset, an erasure) while the question ran, and must not come back.
      // 0o600: a trace holds a customer's questions and orders, so a new file is readable by our user only.
      const flags =
        constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW | constants.O_NONBLOCK;
      const fd = openSync(this.file, this.opened ? flags : flags | constants.O_CREAT, 0o600);
      this.opened = true;
      try {
        writeSync(fd, lines);
      } finally {
        closeSync(fd);
      }
    } catch (error) {
      this.failed = true;
      const { code } = error as NodeJS.ErrnoException;
      if (this.opened && code === 'ENOENT') return; // deleted on purpose: nothing more is written
      this.say(
        `warning: could not write the trace ${this.file} (${code ?? error}); carrying on without it.`,
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
    case 'memory':
      return `[step 0] memory: ${data.summary}`;
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
    default:
      return undefined; // start and end are for the file; the CLI prints the question and answer
  }
}

/** How a question's earlier turns were trimmed, e.g. "9 earlier turns — 2 full, 7 compacted, 0 dropped — 5,912 of 12,000 chars". */
export function memoryEvent({ turns, chars, budget }: Context) {
  const count = (fate: Fate) => turns.filter((t) => t.fate === fate).length;
  const fates = { full: count('full'), compacted: count('compacted'), dropped: count('dropped') };
  const over = chars > budget.maxChars ? ' (over budget: the newest turn is always kept)' : '';
  const sizes = `${fates.full} full, ${fates.compacted} compacted, ${fates.dropped} dropped — ${thousands(chars)} of ${thousands(budget.maxChars)} chars${over}`;
  // A first question has nothing before it: said in words, not as the "[]" of an empty list.
  const summary = turns.length
    ? `${plural(turns.length, 'earlier turn')} — ${sizes}`
    : 'nothing earlier (a new conversation)';
  return { ...fates, chars, max_chars: budget.maxChars, summary };
}
