// The agent loop with memory: earlier turns from the store, then ask, run tools, repeat; each step is saved as it completes.
import type { LlmSettings } from '../shared/config.ts';
import {
  chatWithTools,
  describeRetry,
  ProviderError,
  streamWithTools,
  type ChatResult,
  type Message,
  type Usage,
} from '../shared/llm/index.ts';
import { interruptedAnswer, type Context } from './context.ts';
import type {
  CallCost,
  Conversation,
  ConversationStore,
  MessageToSave,
  StoredMessage,
} from './memory.ts';
import { systemPrompt } from './prompt.ts';
import { safeRunTool } from './safe-run-tool.ts';
import type { Customer } from './session.ts';
import { TOOL_DEFINITIONS, type Tool, type ToolContext } from './tools.ts';
import { Trace } from './trace.ts';

/**
 * The most model calls one question may take. Real questions need two or three (look up, check,
 * answer); a model going in circles is stopped here instead of running up a bill.
 */
export const MAX_STEPS = 6;
/** The longest question accepted: plenty for support, and it is stored and sent with later turns. */
export const MAX_QUESTION_CHARS = 4000;

export const STEP_LIMIT_ANSWER =
  'Sorry, this is taking more steps than expected. Our support team will help: email support@kestrel.example.';
export const API_ERROR_ANSWER =
  "Sorry, I can't reach my assistant service right now. Please try again in a few minutes, or email support@kestrel.example.";
export const REFUSED_ANSWER =
  'Sorry, my assistant service refused to answer in this conversation. Please start a new one, or email support@kestrel.example.';
export const EMPTY_ANSWER =
  "Sorry, I didn't manage to write an answer to that. Could you rephrase your question?";

/** `refused`: the provider called our request invalid (a 400): not an outage, so "try later" would not help. */
export type Outcome = 'answered' | 'step_limit' | 'api_error' | 'refused' | 'empty_answer';

export interface AgentResult {
  answer: string;
  outcome: Outcome;
  /** Model calls made. */
  steps: number;
  usage: Usage;
  traceFile: string;
  /** The provider's own words when it failed (api_error, refused): for the person running Nimbus. */
  problem?: string;
  /** Why this turn (or part of it) could not be saved. The answer stands; the next question may not see it. */
  saveError?: string;
}

export interface AgentOptions {
  /** The provider to ask, as the entry script read it from .env. */
  llm: LlmSettings;
  /** Where the conversation is loaded from and saved to (memory.ts). */
  store: ConversationStore;
  /** Tools the entry script adds to this chapter's own (tools.ts). */
  tools?: Tool[];
  /** Where traces are written (LOG_DIR, checked at start). */
  logDir: string;
  /** Hide the trace lines on the terminal. */
  quiet?: boolean;
  /** Cancels the question (Ctrl-C): runAgent then throws TurnCancelled. */
  signal?: AbortSignal;
  /** Streams the model's text as it is written; without it each reply arrives whole. */
  onText?: (text: string, step: number) => void;
  /** Where the trace's terminal lines go (default: stderr), so a streamed answer can make room. */
  onTraceLine?: (line: string) => void;
}

/** The question was longer than MAX_QUESTION_CHARS: refused before the model is called. */
export class QuestionTooLong extends Error {
  override name = 'QuestionTooLong';
  constructor(length: number) {
    const n = (x: number) => x.toLocaleString('en-US');
    super(
      `That question is ${n(length)} characters long; the limit is ${n(MAX_QUESTION_CHARS)}. Please shorten it.`,
    );
  }
}

/** The question was cancelled before it finished. `kept` says whether its steps are on record. */
export class TurnCancelled extends Error {
  override name = 'TurnCancelled';
  constructor(readonly kept: 'nothing' | 'steps' | 'unsaved') {
    super(
      kept === 'nothing'
        ? 'Cancelled: nothing from this question was saved.'
        : kept === 'steps'
          ? 'Cancelled. What Nimbus had already done is saved, so the next question knows about it.'
          : 'Cancelled. What Nimbus had already done could not be saved (see the trace).',
    );
  }
}

/** Answers one question of a conversation, for the signed-in customer, whose data alone the tools reach. */
export async function runAgent(
  question: string,
  customer: Customer,
  conversation: Conversation,
  options: AgentOptions,
): Promise<AgentResult> {
  if (question.length > MAX_QUESTION_CHARS) throw new QuestionTooLong(question.length);
  // Earlier turns, loaded once and trimmed to the memory budget (context.ts explains how).
  const history = await options.store.loadContext(conversation, question);
  const trace = new Trace(conversation.id, {
    dir: options.logDir,
    quiet: options.quiet,
    onLine: options.onTraceLine,
  });
  trace.event('start', { question, customer_id: customer.id });
  trace.event('memory', memoryEvent(history));

  const turn = new TurnInProgress(question, conversation, options.store, trace);
  const system: Message = { role: 'system', content: systemPrompt(customer) };
  // Handed to every tool beside the model's arguments: the session decides whose data they see.
  const context: ToolContext = { customer, conversation, llm: options.llm, ticketsOpened: 0 };
  const callCounts = new Map<string, number>();

  for (let step = 1; step <= MAX_STEPS; step++) {
    const request = [system, ...history.messages, ...turn.messages];
    const started = Date.now();
    const reply = await askModel(request, step, options, trace, turn);
    if ('outcome' in reply) return reply; // the provider failed: the turn ended with a fallback
    const ms = Date.now() - started;
    const cost: CallCost = { ...turn.count(reply), request_chars: requestChars(request, options) };
    if (reply.tool_calls.length === 0) {
      trace.event('final_answer', { step, ms });
      const answer = reply.text.trim();
      if (!answer) return turn.finish(EMPTY_ANSWER, 'empty_answer', step, { cost });
      // The provider's own message is kept (provider_raw): a later question replays it.
      return turn.finish(answer, 'answered', step, { message: reply.message, cost });
    }

    // Run every call of this step; each result goes back as one tool message, matched by call id.
    turn.add(reply.message, cost);
    for (const call of reply.tool_calls) {
      trace.event('tool_call', { step, name: call.name, arguments: call.arguments, ms });
      const { result, exception } = await safeRunTool(call, callCounts, context, options.tools);
      trace.event('tool_result', {
        step,
        name: call.name,
        result,
        ...(exception && { exception }),
      });
      turn.add({
        role: 'tool',
        tool_call_id: call.id,
        name: call.name,
        content: JSON.stringify(result),
      });
    }
    // The step is complete: save it now, calls with their results, so whatever the tools did (a
    // ticket opened, say) is on record before anything else can happen. Ctrl-C included: the tools
    // have run, so their step is saved first, and only then is the question cancelled.
    await turn.save(step);
    if (options.signal?.aborted) throw await turn.cancel(step);
  }
  trace.event('step_limit', { step: MAX_STEPS });
  return turn.finish(STEP_LIMIT_ANSWER, 'step_limit', MAX_STEPS);
}

/** One model call: the reply, or the turn ended with a fallback answer when the provider failed. */
async function askModel(
  request: Message[],
  step: number,
  options: AgentOptions,
  trace: Trace,
  turn: TurnInProgress,
): Promise<ChatResult | AgentResult> {
  const call = {
    signal: options.signal,
    onRetry: (info: Parameters<typeof describeRetry>[0]) =>
      trace.event('retry', { step, message: describeRetry(info), wait_ms: info.waitMs }),
  };
  try {
    const { onText } = options;
    const tools = toolDefinitions(options);
    return onText
      ? await streamWithTools(options.llm, request, tools, {
          ...call,
          onText: (text) => onText(text, step),
        })
      : await chatWithTools(options.llm, request, tools, call);
  } catch (error) {
    if (options.signal?.aborted) throw await turn.cancel(step);
    // A wrong key or model name is the developer's to fix: stop with that message, not an apology.
    if (!(error instanceof ProviderError) || error.kind === 'auth' || error.status === 404) {
      await turn.close(step);
      throw error;
    }
    const refused = error.kind === 'bad_request';
    trace.event('api_error', {
      step,
      message: error.message,
      status: error.status,
      kind: error.kind,
    });
    const answer = refused ? REFUSED_ANSWER : API_ERROR_ANSWER;
    const result = await turn.finish(answer, refused ? 'refused' : 'api_error', step);
    return { ...result, problem: error.message };
  }
}

/**
 * This question's messages: every one of them goes with each request, and the ones not saved yet
 * wait for the next save. Saving never ends the turn: a failure is traced and reported with the answer.
 */
class TurnInProgress {
  readonly messages: StoredMessage[] = [];
  readonly usage: Usage = { input_tokens: 0, output_tokens: 0 };
  private unsaved: MessageToSave[] = [];
  private saveError?: string;

  constructor(
    question: string,
    private readonly conversation: Conversation,
    private readonly store: ConversationStore,
    private readonly trace: Trace,
  ) {
    this.add({ role: 'user', content: question });
  }

  add(message: StoredMessage, cost?: CallCost): void {
    this.messages.push(message);
    this.unsaved.push({ message, cost });
  }

  /** Adds a reply's tokens to the question's total; returns them for the message that paid for them. */
  count(reply: ChatResult): Omit<CallCost, 'request_chars'> {
    const tokens = {
      input_tokens: reply.usage?.input_tokens ?? 0,
      output_tokens: reply.usage?.output_tokens ?? 0,
    };
    this.usage.input_tokens += tokens.input_tokens;
    this.usage.output_tokens += tokens.output_tokens;
    return tokens;
  }

  async save(step: number): Promise<void> {
    if (this.unsaved.length === 0) return;
    try {
      await this.store.saveStep(this.conversation, this.unsaved);
      this.unsaved = [];
    } catch (error) {
      this.saveError = error instanceof Error ? error.message : String(error);
      this.trace.event('save_failed', { step, message: this.saveError });
    }
  }

  /**
   * Ends the turn with an answer, saved like a step, so the stored turn always reads question → answer.
   * A fallback is saved as plain text; a real answer with the provider's own message (`message`).
   */
  async finish(
    answer: string,
    outcome: Outcome,
    step: number,
    reply: { message?: StoredMessage; cost?: CallCost } = {},
  ): Promise<AgentResult> {
    this.add(reply.message ?? { role: 'assistant', content: answer }, reply.cost);
    await this.save(step);
    const saveError = this.saveError;
    this.trace.event('end', { answer, outcome, steps: step, tokens: this.usage, saveError });
    const result = { answer, outcome, steps: step, usage: this.usage, traceFile: this.trace.file };
    return saveError ? { ...result, saveError } : result;
  }

  /**
   * The turn ends without an answer. If tools ran, what they did is kept: the turn is closed with a
   * note naming their results, so the next request is valid and the model still sees, say, the
   * ticket number once this turn is compacted. Returns whether anything is on record.
   */
  async close(step: number): Promise<TurnCancelled['kept']> {
    if (!this.messages.some((m) => m.role === 'tool')) return 'nothing';
    this.add({ role: 'assistant', content: interruptedAnswer(this.messages) });
    await this.save(step);
    return this.saveError ? 'unsaved' : 'steps';
  }

  /** Ctrl-C: closes the turn, and says so in the trace and in the error to throw. */
  async cancel(step: number): Promise<TurnCancelled> {
    this.trace.event('cancelled', { step });
    return new TurnCancelled(await this.close(step));
  }
}

/** What the model is told it may call: this chapter's tools, then the entry script's. */
function toolDefinitions(options: AgentOptions) {
  return [...TOOL_DEFINITIONS, ...(options.tools ?? []).map((tool) => tool.definition)];
}

/** What the request costs in characters, the tool definitions included: shown beside real tokens. */
function requestChars(request: Message[], options: AgentOptions): number {
  return JSON.stringify(request).length + JSON.stringify(toolDefinitions(options)).length;
}

/** The trace's 'memory' event: how the earlier turns were trimmed (trace.ts prints it as one line). */
function memoryEvent(history: Context & { readAll?: boolean }) {
  const count = (fate: string) => history.turns.filter((t) => t.fate === fate).length;
  return {
    full: count('full'),
    compacted: count('compacted'),
    dropped: count('dropped'),
    // A loader that stops reading once older turns would all be dropped has not counted those.
    read_all: history.readAll ?? true,
    chars: history.chars,
    max_chars: history.budget.maxChars,
  };
}
