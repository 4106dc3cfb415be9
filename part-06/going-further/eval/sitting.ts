// One sitting of an eval scenario, run as the full chat runs a question (the hardened store, the customer's notes, one question at a time), recorded instead of printed.
import { DatabaseError } from '../../../shared/db.ts';
import { ProviderError, type Usage } from '../../../shared/llm/index.ts';
import type { Outcome } from '../../agent.ts';
import { findConversation, newConversation } from '../../memory.ts';
import { lookUpCustomer } from '../../session.ts';
import { TOOL_DEFINITIONS } from '../../tools.ts';
import { streamWithTools } from '../model/stream-with-tools.ts';
import { Nimbus, whatHappened, type Asked, type NimbusSettings } from '../nimbus.ts';
import { customerMemoryTools } from '../notes/notes-tools.ts';
import { privacyTools } from '../privacy/privacy-tools.ts';
import { ensureFullDatabase } from '../store/ensure-tables.ts';

/** The names of the tools the full Nimbus has: those a scenario may expect to be called, or not. */
export const TOOL_NAMES = [
  ...TOOL_DEFINITIONS,
  ...[...customerMemoryTools(), ...privacyTools('', () => {})].map((tool) => tool.definition),
].map((definition) => definition.name);

export interface SittingInput {
  customer: string;
  /** The conversation to continue (a later sitting); without it, a new one. */
  resume?: string;
  turns: string[];
}

export interface ToolCallSeen {
  name: string;
  arguments: Record<string, unknown>;
}

export interface TurnRecord {
  question: string;
  /** Everything the customer was shown for the question: the streamed text of every step, or the fallback. */
  answer: string;
  tools: ToolCallSeen[];
  usage: Usage;
  /** The agent's outcome, or "error" when the question failed before the agent finished. */
  outcome: Outcome | 'error';
  ms: number;
  /** What went wrong (the provider's or the database's words), when the turn is an error. */
  problem?: string;
  /** The question's trace file (trace.ts): every step, to read why a trial failed. */
  trace?: string;
  /** A wrong key or model name: every further question would fail the same way (the chat ends too). */
  fatal?: boolean;
}

export interface SittingResult {
  /** The conversation the last turn was asked in: the next sitting resumes it. */
  conversation: string;
  turns: TurnRecord[];
}

/** The full Nimbus's settings, as the chat reads them (nimbusSettings). */
export type SittingSettings = NimbusSettings;

/** A question that cannot be judged: the provider or the database failed. Later turns are not asked. */
export function unanswered(turn: Pick<TurnRecord, 'outcome'>): boolean {
  return turn.outcome === 'error' || turn.outcome === 'api_error' || turn.outcome === 'refused';
}

/**
 * Runs the sitting's turns in order, as `npm run chat` would with them typed in. The database is
 * set up first as the chat's first run does it (the sample store, the help-center index); a turn
 * that fails ends the sitting, its problem recorded.
 */
export async function runSitting(
  input: SittingInput,
  settings: SittingSettings,
  log: (line: string) => void,
  signal?: AbortSignal,
): Promise<SittingResult> {
  await ensureFullDatabase(log, settings.llm);
  const nimbus = new Nimbus(settings);
  const customer = await lookUpCustomer(input.customer);
  let conversation =
    (input.resume && (await findConversation(input.resume, customer.id))) ||
    newConversation(customer.id);
  const turns: TurnRecord[] = [];
  for (const question of input.turns) {
    if (signal?.aborted) break; // the eval is gone: nobody waits for the rest
    const started = Date.now();
    let turn: Omit<TurnRecord, 'ms'>;
    try {
      // As the chat asks: streamed, and quiet (the trace file keeps every step).
      const asked = await nimbus.ask(customer, conversation, question, {
        callModel: (llm, messages, tools = [], options = {}) =>
          streamWithTools(llm, messages, tools, { ...options, onText: () => {} }),
        quiet: true,
        signal,
      });
      conversation = asked.conversation;
      turn = turnRecord(question, asked);
    } catch (error) {
      turn = errorTurn(question)(error);
    }
    turns.push({ ...turn, ms: Date.now() - started });
    if (unanswered(turn)) break;
  }
  return { conversation: conversation.id, turns };
}

/**
 * What the customer saw of one question, and what the agent did: every piece of text it wrote (the
 * chat shows each step's as it streams) or the fallback it was given, and every tool it called. A
 * question that never got to the end — cancelled, or its conversation erased or taken over meanwhile —
 * is an error: a trial with one is not judged.
 */
function turnRecord(question: string, asked: Asked): Omit<TurnRecord, 'ms'> {
  const { result } = asked;
  const usage = result?.usage ?? { input_tokens: 0, output_tokens: 0 };
  const messages = result?.messages ?? [];
  const tools = messages.flatMap((m) =>
    m.role === 'assistant'
      ? (m.tool_calls ?? []).map((c) => ({ name: c.name, arguments: c.arguments }))
      : [],
  );
  const shown = messages.flatMap((m) => (m.role === 'assistant' ? [m.content] : [])).join('');
  if (!result || result.outcome === 'cancelled' || asked.lost) {
    const problem = whatHappened(asked) ?? 'The question was cancelled before it was answered.';
    return { question, answer: shown, tools, usage, outcome: 'error', problem };
  }
  // A fallback (the provider failed, the step limit) is never streamed: the chat prints it whole.
  const answer = result.outcome === 'answered' ? shown : `${shown}${result.answer}`;
  return {
    question,
    answer,
    tools,
    usage,
    outcome: result.outcome,
    trace: result.traceFile,
    ...(result.problem ? { problem: result.problem } : {}),
  };
}

/** A question that threw: a wrong key, a database that stopped answering. Anything else is a bug, and thrown. */
function errorTurn(question: string) {
  return (error: unknown): Omit<TurnRecord, 'ms'> => {
    if (!(error instanceof ProviderError || error instanceof DatabaseError)) throw error;
    const usage = { input_tokens: 0, output_tokens: 0 };
    const turn = { question, answer: '', tools: [], usage, outcome: 'error' as const };
    const fatal = error instanceof ProviderError && (error.kind === 'auth' || error.status === 404);
    return { ...turn, problem: error.message, ...(fatal ? { fatal } : {}) };
  };
}
