// The agent loop, per conversation: earlier turns from memory, then ask, run tools, repeat; every step is saved as it completes.
import type { LlmSettings } from '../shared/config.ts';
import { DatabaseCancelled } from '../shared/db.ts';
import {
  chatWithTools,
  describeRetry,
  ProviderError,
  type Message,
  type Usage,
} from '../shared/llm/index.ts';
import { memoryBudget } from './context.ts';
import { loadContext } from './load-context.ts';
import {
  checkNotDeleted,
  saveMessages,
  warnDamaged,
  withConversationLock,
  type CallCost,
  type Conversation,
  type MessageToSave,
} from './memory.ts';
import { systemPrompt } from './prompt.ts';
import { safeRunTool } from './safe-run-tool.ts';
import type { Customer } from './session.ts';
import { INTERRUPTED_ANSWER } from './stored-history.ts';
import { TOOL_DEFINITIONS, type ToolContext } from './tools.ts';
import { Trace } from './trace.ts';

/**
 * The most model calls one question may take. Real questions need two or three (look up, check,
 * answer); a model going in circles is stopped here instead of running up a bill.
 */
export const MAX_STEPS = 6;
/** The longest question accepted: plenty for a support question, and it is stored and sent on every later turn. */
export const MAX_QUESTION_CHARS = 4000;

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
  /** Why this turn (or part of it) could not be saved. The answer stands; the next question may not see it. */
  saveError?: string;
}

/** Who is asking, and in which conversation: decided by the program, never by the model. */
export interface Session {
  customer: Customer;
  conversation: Conversation;
}

export interface AgentOptions {
  /** The provider to ask, as the entry script read it from .env. */
  llm: LlmSettings;
  /** Hide the trace lines on the terminal. */
  quiet?: boolean;
  /** Cancels the question (Ctrl-C): runAgent then throws TurnCancelled. */
  signal?: AbortSignal;
}

/** The question was longer than MAX_QUESTION_CHARS: refused before the model is called. */
export class QuestionTooLong extends Error {
  override name = 'QuestionTooLong';
  constructor(length: number) {
    super(
      `That question is ${length.toLocaleString('en-US')} characters long; the limit is ${MAX_QUESTION_CHARS.toLocaleString('en-US')}. Please shorten it.`,
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
          : 'Cancelled while saving: the steps of this question were not saved.',
    );
  }
}

export async function runAgent(
  question: string,
  session: Session,
  options: AgentOptions,
): Promise<AgentResult> {
  if (question.length > MAX_QUESTION_CHARS) throw new QuestionTooLong(question.length);
  try {
    // One question at a time per conversation: its steps are saved as they happen, so two would interleave.
    return await withConversationLock(
      session.conversation.id,
      () => answer(question, session, options),
      { signal: options.signal },
    );
  } catch (error) {
    if (error instanceof DatabaseCancelled) throw new TurnCancelled('nothing'); // Ctrl-C while waiting for the lock
    throw error;
  }
}

async function answer(
  question: string,
  { customer, conversation }: Session,
  options: AgentOptions,
): Promise<AgentResult> {
  // Between two questions the conversation may have been deleted (forget.ts): never write to it again.
  await checkNotDeleted(conversation);
  const trace = new Trace(conversation.id, { quiet: options.quiet });
  trace.event('start', { question, customer_id: customer.id });

  // Earlier turns, loaded once and trimmed to the memory budget (context.ts explains how).
  const budget = memoryBudget();
  let damaged: number[] = [];
  const history = await loadContext(conversation.id, budget, (id, found) => {
    warnDamaged(id, found);
    damaged = found.map((d) => d.id);
  });
  trace.event('memory', {
    full: history.full,
    compacted: history.compacted,
    dropped: history.dropped,
    read_all: history.readAll,
    chars: history.chars,
    max_chars: budget.maxChars,
    ...(damaged.length ? { damaged } : {}),
  });

  const system: Message = { role: 'system', content: systemPrompt(customer) };
  const turn: Message[] = [{ role: 'user', content: question }]; // this question's messages, sent with every step
  const unsaved: MessageToSave[] = [{ message: { role: 'user', content: question } }];
  const usage: Usage = { input_tokens: 0, output_tokens: 0 };
  const callCounts = new Map<string, number>();
  // Handed to every tool beside the model's arguments: the session decides whose data they see.
  const context: ToolContext = { customer, llm: options.llm, ticketsOpened: 0 };
  let saveError: string | undefined;

  /** Saves what is not saved yet. A failure is reported and kept for a later try; it never ends the turn. */
  const save = async (step: number, signal?: AbortSignal) => {
    try {
      await saveMessages(conversation, unsaved, signal);
      unsaved.length = 0;
    } catch (error) {
      if (error instanceof DatabaseCancelled) throw error;
      saveError = error instanceof Error ? error.message : String(error);
      trace.event('save_failed', { step, message: saveError });
    }
  };

  const finish = async (
    answer: string,
    outcome: Outcome,
    step: number,
    reply?: { message: MessageToSave['message']; cost: CallCost },
  ): Promise<AgentResult> => {
    // Whatever happened, the stored turn ends with an answer: a fallback is saved as plain text,
    // so the history always reads question → answer.
    unsaved.push(
      reply && outcome === 'answered'
        ? reply
        : { message: { role: 'assistant', content: answer }, cost: reply?.cost },
    );
    await save(step);
    trace.event('end', {
      answer,
      outcome,
      steps: step,
      tokens: usage,
      ...(saveError ? { save_error: saveError } : {}),
    });
    return {
      answer,
      outcome,
      steps: step,
      usage,
      traceFile: trace.file,
      ...(saveError ? { saveError } : {}),
    };
  };

  /**
   * The turn ends early (Ctrl-C, or an error the developer must fix). If tools ran, what they did is
   * kept: the turn is closed with a note, so the next request is valid and the model knows what happened.
   */
  const endEarly = async (step: number): Promise<TurnCancelled['kept']> => {
    if (!turn.some((m) => m.role === 'tool')) return 'nothing';
    unsaved.push({ message: { role: 'assistant', content: INTERRUPTED_ANSWER } });
    await save(step); // without the signal: Ctrl-C was already pressed, and this note must not be lost to it
    return saveError ? 'unsaved' : 'steps';
  };

  const toolDefinitionChars = JSON.stringify(TOOL_DEFINITIONS).length;
  for (let step = 1; step <= MAX_STEPS; step++) {
    const started = Date.now();
    const request = [system, ...history.messages, ...turn];
    let reply;
    try {
      reply = await chatWithTools(options.llm, request, TOOL_DEFINITIONS, {
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
      if (options.signal?.aborted) {
        trace.event('cancelled', { step });
        throw new TurnCancelled(await endEarly(step));
      }
      // A wrong key or model name is the developer's to fix: stop with that message, not an apology.
      if (!(error instanceof ProviderError) || error.kind === 'auth' || error.status === 404) {
        await endEarly(step);
        throw error;
      }
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
    // Kept beside the message it paid for, so show-conversation can put real tokens next to characters.
    const cost: CallCost = {
      input_tokens: reply.usage?.input_tokens ?? 0,
      output_tokens: reply.usage?.output_tokens ?? 0,
      request_chars: JSON.stringify(request).length + toolDefinitionChars,
    };

    if (reply.tool_calls.length === 0) {
      const answer = reply.text.trim();
      trace.event('final_answer', { step, ms });
      if (!answer)
        return finish(EMPTY_ANSWER, 'empty_answer', step, { message: reply.message, cost });
      // Keep the provider's own message (via the neutral format): a later question replays it.
      return finish(answer, 'answered', step, { message: reply.message, cost });
    }

    // Run every call of this step; each result goes back as one tool message, matched by call id.
    turn.push(reply.message);
    unsaved.push({ message: reply.message, cost });
    for (const call of reply.tool_calls) {
      trace.event('tool_call', { step, name: call.name, arguments: call.arguments, ms });
      const { result, exception } = await safeRunTool(call, callCounts, context);
      trace.event('tool_result', {
        step,
        name: call.name,
        result,
        ...(exception ? { exception } : {}),
      });
      const message: Message = {
        role: 'tool',
        tool_call_id: call.id,
        name: call.name,
        content: JSON.stringify(result),
      };
      turn.push(message);
      unsaved.push({ message });
    }
    // The step is complete: save it now, calls together with their results, so whatever the tools did
    // (a ticket opened, say) is on record before the next model call, however the turn ends.
    try {
      await save(step, options.signal);
    } catch (error) {
      if (!(error instanceof DatabaseCancelled)) throw error;
      trace.event('cancelled', { step });
      throw new TurnCancelled('unsaved');
    }
    if (options.signal?.aborted) {
      trace.event('cancelled', { step });
      throw new TurnCancelled(await endEarly(step));
    }
  }

  trace.event('step_limit', { step: MAX_STEPS });
  return finish(STEP_LIMIT_ANSWER, 'step_limit', MAX_STEPS);
}
