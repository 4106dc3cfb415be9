// One sitting of an eval scenario, run as the full chat runs a question (the hardened store, the customer's notes, one question at a time), recorded instead of printed.
import type { LlmSettings } from '../../../shared/config.ts';
import { DatabaseError } from '../../../shared/db.ts';
import { ProviderError, type Usage } from '../../../shared/llm/index.ts';
import { streamWithTools } from '../model/stream-with-tools.ts';
import type { MemoryBudget } from '../../context.ts';
import { runAgent, type AgentOptions, type Outcome } from '../../agent.ts';
import { findConversation, newConversation, type Conversation } from '../../memory.ts';
import { lookUpCustomer, type Customer } from '../../session.ts';
import { TOOL_DEFINITIONS } from '../../tools.ts';
import { customerMemoryTools } from '../notes/notes-tools.ts';
import { storeAndTools } from '../question/agent-options.ts';
import { withCallLimits, type CallLimits } from '../question/call-limits.ts';
import { withConversationLock } from '../question/lease.ts';
import { ensureFullDatabase } from '../store/ensure-tables.ts';
import { ConversationDeleted } from '../store/hardened-store.ts';

/** The names of the tools the full Nimbus has: those a scenario may expect to be called, or not. */
export const TOOL_NAMES = [
  ...TOOL_DEFINITIONS,
  ...customerMemoryTools('').map((tool) => tool.definition),
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

export interface SittingSettings {
  llm: LlmSettings;
  logDir: string;
  budget: MemoryBudget;
  notesMaxChars: number;
  /** MAX_TOOL_CALLS_PER_REPLY, as the chat bounds one reply's calls. */
  maxToolCalls: number;
}

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
): Promise<SittingResult> {
  const { llm, logDir, budget, notesMaxChars } = settings;
  await ensureFullDatabase(log, llm);
  const customer = await lookUpCustomer(input.customer);
  let conversation =
    (input.resume && (await findConversation(input.resume, customer.id))) ||
    newConversation(customer.id);
  const agent = { llm, logDir, quiet: true };
  const options: AgentOptions = { ...agent, ...storeAndTools(budget, notesMaxChars, agent) };
  const limits = { maxCalls: settings.maxToolCalls, maxResultChars: budget.maxChars };
  const turns: TurnRecord[] = [];
  for (const question of input.turns) {
    const started = Date.now();
    let turn: Omit<TurnRecord, 'ms'>;
    try {
      turn = await ask(question, customer, conversation, options, limits);
    } catch (error) {
      if (error instanceof ConversationDeleted) {
        // As the chat does: the conversation was erased (forget everything), the question goes on in a new one.
        conversation = newConversation(customer.id);
        turn = await ask(question, customer, conversation, options, limits).catch(
          errorTurn(question),
        );
      } else turn = errorTurn(question)(error);
    }
    turns.push({ ...turn, ms: Date.now() - started });
    if (unanswered(turn)) break;
  }
  return { conversation: conversation.id, turns };
}

/** One question through the agent, with the chat's streamed model call, watched for what it shows and calls. */
async function ask(
  question: string,
  customer: Customer,
  conversation: Conversation,
  options: AgentOptions,
  limits: CallLimits,
): Promise<Omit<TurnRecord, 'ms'>> {
  let shown = '';
  const tools: ToolCallSeen[] = [];
  const callModel: AgentOptions['callModel'] = async (llm, messages, definitions = [], call) => {
    const reply = await streamWithTools(llm, messages, definitions, {
      ...call,
      onText: (text) => void (shown += text),
    });
    for (const { name, arguments: args } of reply.tool_calls) tools.push({ name, arguments: args });
    return reply;
  };
  const result = await withConversationLock(conversation, (leaseLost) =>
    runAgent(question, customer, conversation, {
      ...options,
      callModel: withCallLimits(callModel, limits),
      signal: leaseLost, // as in the chat: a question whose lease was taken stops
    }),
  );
  // A fallback (the provider failed, the step limit) is never streamed: the chat prints it whole.
  const answer = result.outcome === 'answered' ? shown : `${shown}${result.answer}`;
  return {
    question,
    answer,
    tools,
    usage: result.usage,
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
