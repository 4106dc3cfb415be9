// The agent loop with memory: earlier turns from the store, then ask, run tools, repeat; each completed step is saved.
import type { LlmSettings } from '../shared/config.ts';
import { CommitUnknown } from '../shared/db.ts';
import {
  chatWithTools,
  describeRetry,
  ProviderError,
  type ChatOptions,
  type ChatResult,
  type Message,
  type ToolDefinition,
  type Usage,
} from '../shared/llm/index.ts';
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

/**
 * `refused`: the provider called our request invalid (a 400). With memory that request includes the
 * stored history, so the next question would fail the same way: "try later" would not help.
 * `cancelled`: stopped by its signal (Ctrl-C); the steps completed before are saved.
 */
export type Outcome =
  'answered' | 'step_limit' | 'api_error' | 'refused' | 'empty_answer' | 'cancelled';

export interface AgentResult {
  answer: string;
  outcome: Outcome;
  /** Model calls made. */
  steps: number;
  usage: Usage;
  traceFile: string;
  /** The provider's own words when it failed (api_error, refused): for the person running Nimbus. */
  problem?: string;
  /** Why some of this turn is not saved (or may not be). The answer stands; the next question may not see it. */
  saveError?: string;
}

/** How the agent asks the model: chatWithTools, or any function with its shape. */
export type CallModel = (
  llm: LlmSettings,
  messages: Message[],
  tools: ToolDefinition[],
  options: ChatOptions,
) => Promise<ChatResult>;

export interface AgentOptions {
  /** The provider to ask, as the entry script read it from .env. */
  llm: LlmSettings;
  /** Where the conversation is loaded from and saved to (memory.ts). */
  store: ConversationStore;
  /** Default: chatWithTools, which returns the whole reply at once. */
  callModel?: CallModel;
  /** Tools the entry script adds to this chapter's own (tools.ts). */
  tools?: Tool[];
  /** Where traces are written (LOG_DIR, checked at start). */
  logDir: string;
  /** Hide the trace lines on the terminal. */
  quiet?: boolean;
  /** Where the trace's terminal lines go (default: stderr). */
  onTraceLine?: (line: string) => void;
  /**
   * Cancels the question (Ctrl-C): the model call or the running tool stops, the step's other calls do
   * not start, and the loop ends after saving the step it is in.
   */
  signal?: AbortSignal;
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

  const system: Message = { role: 'system', content: systemPrompt(customer) };
  const turn = new TurnInProgress(question, conversation, options.store, trace);
  const tools = [...TOOL_DEFINITIONS, ...(options.tools ?? []).map((tool) => tool.definition)];
  // Handed to every tool beside the model's arguments: the session decides whose data they see.
  const { llm, signal } = options;
  const context: ToolContext = { customer, conversation, llm, ticketsOpened: 0, signal };
  const callCounts = new Map<string, number>();

  for (let step = 1; step <= MAX_STEPS; step++) {
    const request = [system, ...history.messages, ...turn.messages];
    const started = Date.now();
    let reply: ChatResult;
    try {
      reply = await (options.callModel ?? chatWithTools)(options.llm, request, tools, {
        signal: options.signal,
        onRetry: (info) =>
          trace.event('retry', { step, message: describeRetry(info), wait_ms: info.waitMs }),
      });
    } catch (error) {
      return turn.fail(error, step, options.signal);
    }
    const ms = Date.now() - started;
    // What the call cost: the provider's tokens, and the characters we sent (tools included).
    const { input_tokens = 0, output_tokens = 0 } = reply.usage ?? {};
    const request_chars = JSON.stringify(request).length + JSON.stringify(tools).length;
    const cost = { input_tokens, output_tokens, request_chars };
    if (reply.tool_calls.length === 0) {
      trace.event('final_answer', { step, ms });
      const answer = reply.text.trim();
      if (!answer) return turn.finish(EMPTY_ANSWER, 'empty_answer', step, undefined, cost);
      // The provider's own message is kept (provider_raw): a later question replays it.
      return turn.finish(answer, 'answered', step, reply.message, cost);
    }

    // Run every call of this step; each result goes back as one tool message, matched by call id.
    turn.add(reply.message, cost);
    for (const call of reply.tool_calls) {
      trace.event('tool_call', { step, name: call.name, arguments: call.arguments, ms });
      const { result, exception } = await safeRunTool(call, callCounts, context, options.tools);
      trace.event('tool_result', { step, name: call.name, result, exception });
      const content = JSON.stringify(result);
      turn.add({ role: 'tool', tool_call_id: call.id, name: call.name, content });
    }
    // The step is complete: saved now, calls with their results, so what the tools did (a ticket
    // opened) is on record whatever happens next. Ctrl-C stops here, after the save.
    await turn.save(step);
    if (options.signal?.aborted) return turn.finish('', 'cancelled', step);
  }
  trace.event('step_limit', { step: MAX_STEPS });
  return turn.finish(STEP_LIMIT_ANSWER, 'step_limit', MAX_STEPS);
}

/**
 * This question's messages: every one goes with each request, and the ones not saved yet wait for the
 * next save. A failed save never ends the turn: it is traced, tried again with the next step, and
 * reported with the answer if something is still unsaved at the end.
 */
class TurnInProgress {
  readonly messages: StoredMessage[] = [];
  private readonly usage: Usage = { input_tokens: 0, output_tokens: 0 };
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
    try {
      await this.store.saveStep(this.conversation, this.unsaved);
      this.unsaved = [];
      this.saveError = undefined;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      // A COMMIT whose answer never came may have been saved: "not saved" would be a guess.
      this.saveError = error instanceof CommitUnknown ? message : `Not saved: ${message}`;
      this.trace.event('save_failed', { step, message });
    }
  }

  /**
   * Ends the turn. An answer is saved like a step, so the stored turn reads question → answer: a real
   * one with the provider's own message, a fallback as plain text. A cancelled turn saves nothing more:
   * loading closes it (context.ts).
   */
  async finish(
    answer: string,
    outcome: Outcome,
    step: number,
    message: StoredMessage = { role: 'assistant', content: answer },
    cost?: CallCost,
  ): Promise<AgentResult> {
    if (outcome !== 'cancelled') this.add(message, cost);
    if (this.unsaved.length && this.messages.length > 1) await this.save(step);
    const { saveError, usage } = this;
    this.trace.event('end', { answer, outcome, steps: step, tokens: usage, saveError });
    return { answer, outcome, steps: step, usage, traceFile: this.trace.file, saveError };
  }

  /** The model call failed: Ctrl-C, or the provider. A wrong key or model name is not the customer's problem. */
  async fail(error: unknown, step: number, signal?: AbortSignal): Promise<AgentResult> {
    if (signal?.aborted) return this.finish('', 'cancelled', step);
    if (!(error instanceof ProviderError) || error.kind === 'auth' || error.status === 404)
      throw error; // the developer's to fix: stop with that message, not an apology
    const { message, status, kind } = error;
    this.trace.event('api_error', { step, message, status, kind });
    const refused = kind === 'bad_request';
    const result = await this.finish(
      refused ? REFUSED_ANSWER : API_ERROR_ANSWER,
      refused ? 'refused' : 'api_error',
      step,
    );
    return { ...result, problem: message };
  }
}
