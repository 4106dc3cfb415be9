// The agent loop, per conversation: earlier turns from memory, then ask, run tools, repeat; save the turn at the end.
import { chatWithTools, describeRetry, ProviderError, type Message, type Usage } from '../shared/llm/index.ts';
import { loadContext, saveMessages, warnDamaged, type StoredMessage } from './memory.ts';
import { SYSTEM_PROMPT } from './prompt.ts';
import { safeRunTool } from './safe-run-tool.ts';
import { TOOL_DEFINITIONS } from './tools.ts';
import { Trace } from './trace.ts';

/**
 * The most model calls one question may take. Real questions need two or three (look up, check,
 * answer); a model going in circles is stopped here instead of running up a bill.
 */
export const MAX_STEPS = 6;

export const STEP_LIMIT_ANSWER =
  'Sorry, this is taking more steps than expected. Our support team will help: email support@kestrel.example.';
export const API_ERROR_ANSWER =
  "Sorry, I can't reach my assistant service right now. Please try again in a few minutes, or email support@kestrel.example.";
export const EMPTY_ANSWER =
  "Sorry, I didn't manage to write an answer to that. Could you rephrase your question?";

export type Outcome = 'answered' | 'step_limit' | 'api_error' | 'empty_answer';

export interface AgentResult {
  answer: string;
  outcome: Outcome;
  /** Model calls made. */
  steps: number;
  usage: Usage;
  traceFile: string;
}

export interface AgentOptions {
  /** Hide the trace lines on the terminal. */
  quiet?: boolean;
  /** Cancels the question (Ctrl-C): runAgent then throws TurnCancelled and saves nothing. */
  signal?: AbortSignal;
}

/** The question was cancelled before it finished. Nothing of it was saved. */
export class TurnCancelled extends Error {
  override name = 'TurnCancelled';
  constructor() {
    super('Cancelled: nothing from this question was saved.');
  }
}

export async function runAgent(question: string, conversationId: string, options: AgentOptions = {}): Promise<AgentResult> {
  const trace = new Trace(conversationId, { quiet: options.quiet });
  trace.event('start', { question });

  // Earlier turns, loaded once and trimmed to the memory budget (context.ts explains how).
  let damaged: number[] = [];
  const history = await loadContext(conversationId, (id, found) => {
    warnDamaged(id, found);
    damaged = found.map((d) => d.id);
  });
  trace.event('memory', { messages: history.messages.length, chars: history.chars, ...(damaged.length ? { damaged } : {}) });

  // This question's own messages are kept apart: only they are saved, once, at the end.
  const turn: StoredMessage[] = [{ role: 'user', content: question }];
  const system: Message = { role: 'system', content: SYSTEM_PROMPT };
  const usage: Usage = { input_tokens: 0, output_tokens: 0 };
  const callCounts = new Map<string, number>();

  const cancel = (step: number) => {
    trace.event('cancelled', { step });
    return new TurnCancelled();
  };

  const finishTurn = async (answer: string, outcome: Outcome, steps: number): Promise<AgentResult> => {
    // Whatever happened, the stored turn ends with an answer: a fallback is saved as plain text,
    // so the history always reads question → answer.
    if (outcome !== 'answered') turn.push({ role: 'assistant', content: answer });
    await saveMessages(conversationId, turn);
    trace.event('end', { answer, outcome, steps, tokens: usage });
    return { answer, outcome, steps, usage, traceFile: trace.file };
  };

  for (let step = 1; step <= MAX_STEPS; step++) {
    const started = Date.now();
    let reply;
    try {
      reply = await chatWithTools([system, ...history.messages, ...turn], TOOL_DEFINITIONS, {
        signal: options.signal,
        onRetry: (info) => trace.event('retry', { step, message: describeRetry(info), wait_ms: info.waitMs, status: info.status }),
      });
    } catch (error) {
      if (options.signal?.aborted) throw cancel(step);
      // A wrong key or model name is the developer's to fix: stop with that message, not an apology.
      if (!(error instanceof ProviderError) || error.kind === 'auth' || error.kind === 'aborted' || error.status === 404) throw error;
      trace.event('api_error', { step, message: error.message, status: error.status, kind: error.kind });
      return finishTurn(API_ERROR_ANSWER, 'api_error', step);
    }
    const ms = Date.now() - started;
    usage.input_tokens += reply.usage?.input_tokens ?? 0;
    usage.output_tokens += reply.usage?.output_tokens ?? 0;

    if (reply.tool_calls.length === 0) {
      const answer = reply.text.trim();
      trace.event('final_answer', { step, ms });
      if (!answer) return finishTurn(EMPTY_ANSWER, 'empty_answer', step);
      // Keep the provider's own message (via the neutral format): a later question replays it.
      turn.push(reply.message);
      return finishTurn(answer, 'answered', step);
    }

    // Run every call of this step; each result goes back as one tool message, matched by call id.
    turn.push(reply.message);
    for (const call of reply.tool_calls) {
      trace.event('tool_call', { step, name: call.name, arguments: call.arguments, ms });
      const { result, exception } = await safeRunTool(call, callCounts);
      trace.event('tool_result', { step, name: call.name, result, ...(exception ? { exception } : {}) });
      turn.push({ role: 'tool', tool_call_id: call.id, name: call.name, content: JSON.stringify(result) });
    }
    if (options.signal?.aborted) throw cancel(step);
  }

  trace.event('step_limit', { step: MAX_STEPS });
  return finishTurn(STEP_LIMIT_ANSWER, 'step_limit', MAX_STEPS);
}
