// The agent loop with memory: earlier turns from the store, then ask, run tools, repeat; each step is saved as it completes.
import type { LlmSettings } from '../shared/config.ts';
import {
  describeRetry,
  ProviderError,
  streamWithTools,
  type ChatResult,
  type Message,
  type Usage,
} from '../shared/llm/index.ts';
import { interruptedAnswer } from './context.ts';
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
import { memoryEvent, Trace } from './trace.ts';

/**
 * The most model calls one question may take. Real questions need two or three (look up, check,
 * answer); a model going in circles is stopped here instead of running up a bill.
 */
export const MAX_STEPS = 6;

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
  /** Told each piece of the model's text as it is written (the answer streams in). */
  onText?: (text: string, step: number) => void;
  /** Where the trace's terminal lines go (default: stderr), so a streamed answer can make room. */
  onTraceLine?: (line: string) => void;
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
  // Earlier turns, loaded once and trimmed to the memory budget (context.ts explains how).
  const history = await options.store.loadContext(conversation, question);
  const trace = new Trace(conversation, options);
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
    const cost = costOf(reply, request, options);
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
      trace.event('tool_result', { step, name: call.name, result, exception });
      turn.add({
        role: 'tool',
        tool_call_id: call.id,
        name: call.name,
        content: JSON.stringify(result),
      });
    }
    // The step is complete: saved now, calls with their results, so what the tools did (a ticket
    // opened) is on record first. Ctrl-C waits for this save too: the tools have already run.
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
    // Streamed, so a person can read the answer while the rest is written (see onText).
    return await streamWithTools(options.llm, request, toolDefinitions(options), {
      ...call,
      onText: (text) => options.onText?.(text, step),
    });
  } catch (error) {
    if (options.signal?.aborted) throw await turn.cancel(step);
    // A wrong key or model name is the developer's to fix: stop with that message, not an apology.
    if (!(error instanceof ProviderError) || error.kind === 'auth' || error.status === 404) {
      await turn.close(step);
      throw error;
    }
    const refused = error.kind === 'bad_request';
    const { message, status, kind } = error;
    trace.event('api_error', { step, message, status, kind });
    const answer = refused ? REFUSED_ANSWER : API_ERROR_ANSWER;
    const result = await turn.finish(answer, refused ? 'refused' : 'api_error', step);
    return { ...result, problem: message };
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

  /** Adds a message; `cost` is what the model call that wrote it cost, counted into the question's usage. */
  add(message: StoredMessage, cost?: CallCost): void {
    this.messages.push(message);
    this.unsaved.push({ message, cost });
    this.usage.input_tokens += cost?.input_tokens ?? 0;
    this.usage.output_tokens += cost?.output_tokens ?? 0;
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
    const { saveError, usage } = this;
    this.trace.event('end', { answer, outcome, steps: step, tokens: usage, saveError });
    return { answer, outcome, steps: step, usage, traceFile: this.trace.file, saveError };
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

/** What a model call cost: the provider's token counts, and the characters sent (tools included). */
function costOf(reply: ChatResult, request: Message[], options: AgentOptions): CallCost {
  const sent = JSON.stringify(request).length + JSON.stringify(toolDefinitions(options)).length;
  const { input_tokens = 0, output_tokens = 0 } = reply.usage ?? {};
  return { input_tokens, output_tokens, request_chars: sent };
}

/** What the model is told it may call: this chapter's tools, then the entry script's. */
function toolDefinitions(options: AgentOptions) {
  return [...TOOL_DEFINITIONS, ...(options.tools ?? []).map((tool) => tool.definition)];
}
