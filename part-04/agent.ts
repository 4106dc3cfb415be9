// The agent loop: ask the model, run the tools it asks for, and repeat until it answers.
import type { ScriptIo } from '../shared/cli.ts';
import type { LlmSettings } from '../shared/config.ts';
import {
  chatWithTools,
  describeRetry,
  ProviderError,
  type Message,
  type Usage,
} from '../shared/llm/index.ts';
import { systemPrompt } from './prompt.ts';
import { safeRunTool } from './safe-run-tool.ts';
import type { Customer } from './session.ts';
import { TOOL_DEFINITIONS, type ToolContext } from './tools.ts';
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
  /** The provider to ask, as the entry script read it from .env. */
  llm: LlmSettings;
  /** Where traces are written (LOG_DIR, checked at start). */
  logDir: string;
  /** Hide the trace lines on the terminal. */
  quiet?: boolean;
  /** Where the trace lines are shown: the entry script's stderr. */
  stderr?: ScriptIo['stderr'];
  signal?: AbortSignal;
}

/** Answers one question for the signed-in customer, whose data alone the tools may reach. */
export async function runAgent(
  question: string,
  customer: Customer,
  options: AgentOptions,
): Promise<AgentResult> {
  const trace = new Trace(options);
  trace.event('start', { question, customer_id: customer.id });
  // The history grows within this question: every request carries everything so far.
  const messages: Message[] = [
    { role: 'system', content: systemPrompt(customer) },
    { role: 'user', content: question },
  ];
  const usage: Usage = { input_tokens: 0, output_tokens: 0 };
  const callCounts = new Map<string, number>();
  // Handed to every tool beside the model's arguments: the session decides whose data they see.
  const context: ToolContext = { customer, ticketsOpened: 0 };

  const finish = (answer: string, outcome: Outcome, steps: number): AgentResult => {
    trace.event('end', { answer, outcome, steps, tokens: usage });
    return { answer, outcome, steps, usage, traceFile: trace.file };
  };

  for (let step = 1; step <= MAX_STEPS; step++) {
    const started = Date.now();
    let reply;
    try {
      reply = await chatWithTools(options.llm, messages, TOOL_DEFINITIONS, {
        signal: options.signal,
        onRetry: (info) =>
          trace.event('retry', {
            step,
            message: describeRetry(info),
            wait_ms: info.waitMs,
            status: info.status,
          }),
      });
    } catch (error) {
      // A wrong key or model name is the developer's to fix: stop with that message, not an apology.
      if (
        !(error instanceof ProviderError) ||
        error.kind === 'auth' ||
        error.kind === 'aborted' ||
        error.status === 404
      )
        throw error;
      trace.event('api_error', {
        step,
        message: error.message,
        status: error.status,
        kind: error.kind,
      });
      return finish(API_ERROR_ANSWER, 'api_error', step);
    }
    const ms = Date.now() - started;
    usage.input_tokens += reply.usage?.input_tokens ?? 0;
    usage.output_tokens += reply.usage?.output_tokens ?? 0;
    // Keep the provider's own message (via the neutral format): the next request replays it.
    messages.push(reply.message);

    if (reply.tool_calls.length === 0) {
      const answer = reply.text.trim();
      trace.event('final_answer', { step, ms });
      return answer ? finish(answer, 'answered', step) : finish(EMPTY_ANSWER, 'empty_answer', step);
    }
    // The last step: no model call is left to read what these tools would do, so none runs (a ticket
    // opened now could never be named to the customer).
    if (step === MAX_STEPS) break;

    // Run every call of this step; each result goes back as one tool message, matched by call id.
    for (const call of reply.tool_calls) {
      trace.event('tool_call', { step, name: call.name, arguments: call.arguments, ms });
      const { result, exception } = await safeRunTool(call, callCounts, context);
      trace.event('tool_result', { step, name: call.name, result, exception });
      messages.push({
        role: 'tool',
        tool_call_id: call.id,
        name: call.name,
        content: JSON.stringify(result),
      });
    }
  }

  trace.event('step_limit', { step: MAX_STEPS });
  return finish(STEP_LIMIT_ANSWER, 'step_limit', MAX_STEPS);
}
