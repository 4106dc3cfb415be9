// Chooses what earlier conversation the model sees: recent turns whole, older ones shortened, the oldest dropped.
//
// A turn is one customer message and everything that answered it: the model's tool calls, the tool
// results, the final answer. Turns are the unit because the APIs reject a tool call without its
// result (and a result without its call): cutting between messages could separate them.
//
// Three layers, newest first:
//   1. the last `recentTurns` turns, full: the model can rely on its own recent tool results,
//      and Gemini gets its own messages back verbatim (provider_raw);
//   2. older turns compacted to question and answer: what was settled, without the working;
//   3. then, while the whole still exceeds `maxChars`, the oldest turns are dropped.
import { integerSetting } from '../shared/config.ts';
import type { AssistantMessage, Message } from '../shared/llm/index.ts';

/** Turns kept full by default. Two covers a follow-up ("and the other order?") and the question before it. */
export const MEMORY_RECENT_TURNS = 2;
/**
 * The history budget by default, in characters of JSON (about 3,000 tokens). It bounds what every
 * request costs, however long the conversation: the current question's own steps come on top.
 */
export const MEMORY_MAX_CHARS = 12_000;

export interface MemoryBudget {
  maxChars: number;
  recentTurns: number;
}

/** The budget in use: MEMORY_MAX_CHARS and MEMORY_RECENT_TURNS from .env, or the defaults above. */
export function memoryBudget(): MemoryBudget {
  return {
    maxChars: integerSetting('MEMORY_MAX_CHARS', MEMORY_MAX_CHARS, 1),
    recentTurns: integerSetting('MEMORY_RECENT_TURNS', MEMORY_RECENT_TURNS, 1),
  };
}

export type Turn = Message[];

/** What happens to a stored turn: sent as it is, shortened to question and answer, or left out. */
export type Fate = 'full' | 'compacted' | 'dropped';

export interface TurnInContext {
  fate: Fate;
  /** The turn as stored, and as sent ([] when dropped). */
  turn: Turn;
  sent: Turn;
  /** Its share of the budget's measure: JSON characters as stored, and as sent (0 when dropped). */
  storedChars: number;
  sentChars: number;
}

export interface Context {
  messages: Message[];
  /** JSON.stringify(turns).length of the turns kept: what the budget measures. */
  chars: number;
  full: number;
  compacted: number;
  dropped: number;
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

export function buildContext(messages: Message[], budget: MemoryBudget = memoryBudget()): Context {
  const turns = splitIntoTurns(messages);
  const shaped = shapeTurns(turns, budget);
  const sizes = shaped.map(size);

  // JSON.stringify of n turns is "[" + the turns joined by "," + "]", so its length is
  // 1 + Σ(turn length + 1). Dropping a turn just subtracts its share: linear time.
  let chars = 1 + sizes.reduce((sum, n) => sum + n, 0);
  let first = 0;
  while (chars > budget.maxChars && turns.length - first > 1) chars -= sizes[first++];
  if (turns.length === first) chars = 2; // "[]"

  const plan = turns.map((turn, i): TurnInContext => {
    const fate: Fate = i < first ? 'dropped' : shaped[i] === turn ? 'full' : 'compacted';
    return {
      fate,
      turn,
      sent: fate === 'dropped' ? [] : shaped[i],
      storedChars: size(turn),
      sentChars: fate === 'dropped' ? 0 : sizes[i],
    };
  });
  return {
    messages: plan.flatMap((t) => t.sent),
    chars,
    full: plan.filter((t) => t.fate === 'full').length,
    compacted: plan.filter((t) => t.fate === 'compacted').length,
    dropped: first,
    turns: plan,
  };
}

/**
 * The budget's measure, added up newest turn first with the same rules as buildContext. Once it passes
 * maxChars, buildContext would drop every older turn: loadContext stops reading there.
 */
export class BudgetMeter {
  private chars = 1; // "[" of JSON.stringify(turns)
  private turns = 0;
  constructor(private readonly budget: MemoryBudget) {}

  /** Adds the next older turn, in the shape buildContext would send it. */
  add(turn: Turn): void {
    this.chars += size(this.turns++ < this.budget.recentTurns ? turn : compactTurn(turn));
  }

  get full(): boolean {
    return this.chars > this.budget.maxChars;
  }
}

/** Layers 1 and 2: the newest turns stay as they are (the same array), older ones are compacted. */
function shapeTurns(turns: Turn[], budget: MemoryBudget): Turn[] {
  const recentFrom = Math.max(0, turns.length - budget.recentTurns);
  return turns.map((turn, i) => (i < recentFrom ? compactTurn(turn) : turn));
}

/** One turn's share of JSON.stringify(turns).length: its own length plus the comma (or bracket) after it. */
function size(turn: Turn): number {
  return JSON.stringify(turn).length + 1;
}
