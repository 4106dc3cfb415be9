// Chooses what earlier conversation the model sees: recent turns whole, older ones shortened, the oldest dropped.
//
// A turn is one customer message and everything that answered it: tool calls, results, the answer. The
// APIs reject a tool call without its result (and a result without its call), so turns are the unit.
// Newest first: the last `recentTurns` turns full (Gemini gets its own messages back, provider_raw);
// older ones compacted to question and answer; then, while the whole is over `maxChars`, the oldest
// dropped. The newest turn is always kept, even alone over budget: the next question follows it up.
import { integerSetting, type Env } from '../shared/config.ts';
import type { AssistantMessage, Message, ToolMessage } from '../shared/llm/index.ts';
import { shorten } from '../shared/text.ts';

export interface MemoryBudget {
  /** Characters of JSON (12,000 is about 3,000 tokens): what any request's history may cost at most. */
  maxChars: number;
  /** Turns kept full: two covers a follow-up and the question before it. */
  recentTurns: number;
}

export const DEFAULT_BUDGET: MemoryBudget = { maxChars: 12_000, recentTurns: 2 };

/** The smallest MEMORY_MAX_CHARS: less holds no whole turn of a real conversation (a tool result alone is ~300). */
export const MIN_BUDGET_CHARS = 1000;

/** The budget unless MEMORY_MAX_CHARS and MEMORY_RECENT_TURNS in .env say otherwise: read by entry scripts. */
export function memoryBudget(env: Env): MemoryBudget {
  return {
    maxChars: integerSetting('MEMORY_MAX_CHARS', DEFAULT_BUDGET.maxChars, MIN_BUDGET_CHARS, {
      env,
    }),
    recentTurns: integerSetting('MEMORY_RECENT_TURNS', DEFAULT_BUDGET.recentTurns, 1, { env }),
  };
}

export type Turn = Message[];

/** What happens to a stored turn: sent as it is, shortened to question and answer, or left out. */
export type Fate = 'full' | 'compacted' | 'dropped';

/** A turn as stored and as sent ([] when dropped), with its share of the budget: its JSON and its comma. */
export interface TurnInContext {
  fate: Fate;
  turn: Turn;
  sent: Turn;
  storedChars: number;
  sentChars: number;
}

export interface Context {
  messages: Message[];
  budget: MemoryBudget;
  /** What the budget measures: the JSON characters of the list of turns sent, brackets included. */
  chars: number;
  /** Every turn, oldest first, with its fate: what show-conversation --context shows. */
  turns: TurnInContext[];
}

/** A new turn starts at each user message; anything before the first one is a turn of its own. */
export function splitIntoTurns(messages: Message[]): Turn[] {
  const turns: Turn[] = [];
  for (const message of messages) {
    if (message.role === 'user' || turns.length === 0) turns.push([message]);
    else turns.at(-1)!.push(message);
  }
  return turns;
}

/** The question and the last real answer, as plain text: no tool calls, no results, no provider_raw. */
export function compactTurn(turn: Turn): Turn {
  const question = turn[0]?.role === 'user' ? [turn[0]] : [];
  const answer = turn.findLast(
    (m): m is AssistantMessage => m.role === 'assistant' && m.content.trim() !== '',
  );
  return answer ? [...question, { role: 'assistant', content: answer.content }] : question;
}

export function buildContext(messages: Message[], budget: MemoryBudget): Context {
  const stored = splitIntoTurns(messages); // as the table holds them: a closing note is sent, not stored
  const recentFrom = Math.max(0, stored.length - budget.recentTurns);
  const shaped = stored.map(closeTurn).map((t, i) => (i < recentFrom ? compactTurn(t) : t));
  const sizes = shaped.map(turnChars);

  // Each turn's share is known up front, so dropping the oldest just subtracts it: linear time.
  // The list's two brackets take the place of the last turn's comma: one more character in all.
  let chars = sizes.reduce((sum, n) => sum + n, 1);
  let first = 0;
  while (chars > budget.maxChars && stored.length - first > 1) chars -= sizes[first++];

  const plan = stored.map((turn, i): TurnInContext => {
    const fate: Fate = i < first ? 'dropped' : i >= recentFrom ? 'full' : 'compacted';
    const sent = fate === 'dropped' ? [] : shaped[i];
    const storedChars = turnChars(turn);
    return { fate, turn, sent, storedChars, sentChars: sent.length ? sizes[i] : 0 };
  });
  chars = JSON.stringify(shaped.slice(first)).length; // exact, "[]" included when there are no turns
  return { messages: plan.flatMap((t) => t.sent), budget, chars, turns: plan };
}

/** One turn's share of the budget: its JSON, plus the comma that separates it from the next. */
export function turnChars(turn: Turn): number {
  return JSON.stringify(turn).length + 1;
}

/**
 * A turn cut short (Ctrl-C, a crash) has no answer: its question would be followed by the next one, and
 * its last step may be a tool result. Both make some providers refuse the request, so the turn is closed
 * with an answer that names what its tools returned: even once it is compacted, the model still sees,
 * say, the ticket number, and opens no second one.
 */
export function closeTurn(turn: Turn): Turn {
  const last = turn.at(-1);
  if (last?.role === 'assistant' && !last.tool_calls?.length && last.content.trim()) return turn;
  return [...turn, { role: 'assistant', content: interruptedAnswer(turn) }];
}

export function interruptedAnswer(turn: Turn): string {
  const done = turn
    .filter((m): m is ToolMessage => m.role === 'tool')
    .map((m) => `${m.name} → ${shorten(m.content, 300)}`);
  return `(This answer was interrupted. Done before that: ${done.join('; ') || 'nothing'}.)`;
}
