// Records what the agent did, step by step: JSON lines under logs/ for later, short dim lines for now.
import { appendFileSync, mkdirSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { dim } from '../shared/cli.ts';
import { logDir } from '../shared/config.ts';

export type TraceEventType =
  | 'start'
  | 'memory'
  | 'tool_call'
  | 'tool_result'
  | 'retry'
  | 'final_answer'
  | 'api_error'
  | 'step_limit'
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
 * Each event carries the question's trace id and the conversation id.
 */
export class Trace {
  readonly id = randomBytes(6).toString('hex');
  readonly file: string;
  private readonly quiet: boolean;

  constructor(
    readonly conversationId: string,
    options: TraceOptions = {},
  ) {
    this.quiet = options.quiet ?? false;
    this.file = conversationTraceFile(conversationId);
    mkdirSync(path.dirname(this.file), { recursive: true });
  }

  /** Appends one event (one JSON object per line, with a timestamp) and prints its short form. */
  event(type: TraceEventType, data: Record<string, unknown> = {}): void {
    const line = { ts: new Date().toISOString(), trace: this.id, conversation_id: this.conversationId, type, ...data };
    // Appending whole lines means a crash can cut the file short but never leave a half-written event.
    appendFileSync(this.file, JSON.stringify(line) + '\n');
    const text = terminalLine(type, data);
    if (text && !this.quiet) console.error(dim(text, process.stderr));
  }
}

/** The terminal form of an event, e.g. `[step 1] model → check_refund_eligibility({"order_id":1043}) (790 ms)`. */
function terminalLine(type: TraceEventType, data: Record<string, unknown>): string | undefined {
  const step = `[step ${data.step}]`;
  switch (type) {
    case 'memory':
      return `[step 0] memory: ${data.messages} earlier messages loaded (${data.chars} chars)`;
    case 'tool_call':
      return `${step} model → ${data.name}(${JSON.stringify(data.arguments)}) (${data.ms} ms)`;
    case 'tool_result':
      return `${step} tool ← ${shorten(JSON.stringify(data.result))}`;
    case 'retry':
      return `${step} ${data.message}`;
    case 'final_answer':
      return `${step} model answered (${data.ms} ms)`;
    case 'api_error':
      return `${step} provider error: ${data.message}`;
    case 'step_limit':
      return `${step} step limit reached`;
    case 'cancelled':
      return `${step} cancelled`;
    default:
      return undefined; // start and end are for the file; the CLI prints the question and answer
  }
}

function shorten(text: string, max = 160): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
