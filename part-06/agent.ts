// The agent loop with memory: earlier turns from the store, then ask, run tools, repeat; each completed step is saved.
import type { LlmSettings } from '../shared/config.ts';
import { CommitUnknown } from '../shared/db.ts';
import {
  chatWithTools,
  describeRetry,
  ProviderError,
  type ChatResult,
  type Message,
  type RetryInfo,
  type Usage,
} from '../shared/llm/index.ts';
import type { Conversation, ConversationStore, MessageToSave, StoredMessage } from './memory.ts';
import { systemPrompt } from './prompt.ts';
import { safeRunTool } from './safe-run-tool.ts';
import type { Customer } from './session.ts';
import { TOOL_DEFINITIONS, type Tool, type ToolContext } from './tools.ts';
import { memoryEvent, Trace, type TraceOptions } from './trace.ts';

/**
 * The most model calls one question may take. Real questions need two or three (look up, check,
 * answer); a model going in circles is stopped here instead of running up a bill.
 */
export const MAX_STEPS = 6;

export const STEP_LIMIT_ANSWER =
  'Sorry, this is taking more steps than expected. Our support team will help: email support@kestrel.example.';
export const API_ERROR_ANSWER =
  "Sorry, I can't reach my assistant service right now. Please try again in a few minutes, or email support@kestrel.example.";
// With memory a request carries the stored history: a 400 would come back with every later question.
export const REFUSED_ANSWER =
  'Sorry, my assistant service refused to answer in this conversation. Please start a new one, or email support@kestrel.example.';
export const EMPTY_ANSWER =
  "Sorry, I didn't manage to write an answer to that. Could you rephrase your question?";

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
  /** This question's messages: the question, each step's tool calls and results, the answer. */
  messages: StoredMessage[];
  /** Whether anything of this question is stored: a step that ran tools, or the answer. */
  saved: boolean;
  /** What of this turn is not saved (or may not be): the answer stands. */
  saveError?: string;
}

export interface AgentOptions extends TraceOptions {
  /** The provider to ask, as the entry script read it from .env. */
  llm: LlmSettings;
  /** Where the conversation is loaded from and saved to (memory.ts). */
  store: ConversationStore;
  /** How the model is asked; going further passes one that streams. */
  callModel?: typeof chatWithTools;
  /** Tools the entry script adds to this chapter's own (tools.ts). */
  tools?: Tool[];
  /** Ctrl-C: the model call or the tool stops, and the loop ends after saving the step it is in. */
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
  // The history grows within this question: every request carries everything so far.
  const messages: Message[] = [
    { role: 'system', content: systemPrompt(customer) },
    ...history.messages,
    { role: 'user', content: question },
  ];
  const turn = recordTurn(conversation, options.store, trace);
  turn.add({ message: { role: 'user', content: question } }); // the turn's first message
  const callCounts = new Map<string, number>();
  // Handed to every tool beside the model's arguments: the session decides whose data they see.
  const { llm, signal } = options;
  const context: ToolContext = { customer, conversation, llm, ticketsOpened: 0, signal };
  const tools = [...TOOL_DEFINITIONS, ...(options.tools ?? []).map((tool) => tool.definition)];
  let reply: ChatResult | undefined; // the last one: at the step limit, its tokens are counted too
  for (let step = 1; step <= MAX_STEPS; step++) {
    const started = Date.now();
    const onRetry = (info: RetryInfo) =>
      trace.event('retry', { step, message: describeRetry(info), wait_ms: info.waitMs });
    try {
      reply = await (options.callModel ?? chatWithTools)(llm, messages, tools, { signal, onRetry });
    } catch (error) {
      return turn.failed(error, step, signal);
    }
    const ms = Date.now() - started;
    // Keep the provider's own message (via the neutral format): the next request replays it.
    messages.push(reply.message);
    if (reply.tool_calls.length === 0) return turn.answered(reply, step, ms);
    // The last step: no model call is left to read what these tools would do, so none runs (a ticket
    // opened now could never be named to the customer).
    if (step === MAX_STEPS) break;
    turn.add({ message: reply.message, cost: reply.usage });
    // Run every call of this step; each result goes back as one tool message, matched by call id.
    for (const call of reply.tool_calls) {
      trace.event('tool_call', { step, name: call.name, arguments: call.arguments, ms });
      const { result, exception } = await safeRunTool(call, callCounts, context, options.tools);
      trace.event('tool_result', { step, name: call.name, result, exception });
      const content = JSON.stringify(result);
      messages.push({ role: 'tool', tool_call_id: call.id, name: call.name, content });
      turn.add({ message: messages.at(-1) as StoredMessage });
    }
    // The step is complete: saved now, calls with their results, so what the tools did (a ticket
    // opened) is on record whatever happens next. Ctrl-C stops here, after the save.
    await turn.save(step);
    if (signal?.aborted) return turn.finish('', 'cancelled', step);
  }
  trace.event('step_limit', { step: MAX_STEPS });
  // The apology is stored in the last reply's place, with what that reply cost.
  return turn.finish(STEP_LIMIT_ANSWER, 'step_limit', MAX_STEPS, { cost: reply?.usage });
}

/**
 * A question's record: its messages not saved yet (the question, then each step) and the tokens spent.
 * A failed save is tried again with the next step, and reported with the answer if still unsaved.
 */
function recordTurn(conversation: Conversation, store: ConversationStore, trace: Trace) {
  const messages: StoredMessage[] = [];
  let unsaved: MessageToSave[] = [];
  let saveError: string | undefined;
  let saved = false;
  const usage: Usage = { input_tokens: 0, output_tokens: 0 };
  const turn = {
    add(step: MessageToSave) {
      messages.push(step.message);
      unsaved.push(step);
      usage.input_tokens += step.cost?.input_tokens ?? 0;
      usage.output_tokens += step.cost?.output_tokens ?? 0;
    },
    async save(step: number) {
      try {
        await store.saveStep(conversation, unsaved);
        unsaved = [];
        saveError = undefined;
        saved = true;
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        trace.event('save_failed', { step, message });
        saveError = error instanceof CommitUnknown ? message : `Not saved: ${message}`;
      }
    },
    // The model answered: stored with its own message (provider_raw) and the tokens the call cost.
    answered(reply: ChatResult, step: number, ms: number) {
      trace.event('final_answer', { step, ms });
      const answer = reply.text.trim();
      if (answer)
        return turn.finish(answer, 'answered', step, { message: reply.message, cost: reply.usage });
      return turn.finish(EMPTY_ANSWER, 'empty_answer', step, { cost: reply.usage });
    },
    // The answer is saved like a step, so the stored turn reads question → answer. A cancelled turn
    // has no answer (loading closes it, context.ts), and a question cancelled before any step is not kept.
    async finish(answer: string, outcome: Outcome, steps: number, last?: Partial<MessageToSave>) {
      if (outcome !== 'cancelled') turn.add({ message: fallback(answer), ...last });
      const stepsUnsaved = unsaved.some((step) => step.message.role !== 'user');
      if (stepsUnsaved) await turn.save(steps);
      trace.event('end', { answer, outcome, steps, tokens: usage, saveError });
      const traceFile = trace.file;
      return { answer, outcome, steps, usage, traceFile, messages, saved, saveError };
    },
    // Ctrl-C, or the provider failed; a wrong key or model name is the developer's to fix, not an apology.
    async failed(error: unknown, step: number, signal?: AbortSignal): Promise<AgentResult> {
      if (signal?.aborted) return turn.finish('', 'cancelled', step);
      if (!(error instanceof ProviderError) || error.kind === 'auth' || error.status === 404)
        throw error;
      const { message, status, kind } = error;
      trace.event('api_error', { step, message, status, kind });
      const ended =
        kind === 'bad_request'
          ? await turn.finish(REFUSED_ANSWER, 'refused', step)
          : await turn.finish(API_ERROR_ANSWER, 'api_error', step);
      return { ...ended, problem: message };
    },
  };
  return turn;
}

function fallback(answer: string): StoredMessage {
  return { role: 'assistant', content: answer };
}
