// Chooses what earlier conversation the model sees: recent turns whole, older ones shortened, the oldest dropped.
//
// A turn is one customer message and everything that answered it: the model's tool calls, the tool
// results, the final answer. Turns are the unit because the APIs reject a tool call without its
// result (and a result without its call): cutting between messages could separate them.
//
// Three layers, newest first:
//   1. the last MEMORY_RECENT_TURNS turns, whole: the model can rely on its own recent tool results,
//      and Gemini gets its own messages back verbatim (provider_raw);
//   2. older turns compacted to question and answer: what was settled, without the working;
//   3. then, while the whole still exceeds MEMORY_MAX_CHARS, the oldest turns are dropped.
import type { AssistantMessage, Message } from '../shared/llm/index.ts';

/** Turns kept whole. Two covers a follow-up ("and the other order?") and the question before it. */
export const MEMORY_RECENT_TURNS = 2;
/**
 * The history budget, in characters of JSON (about 3,000 tokens). It bounds what every request
 * costs, however long the conversation: the current question's own steps come on top.
 */
export const MEMORY_MAX_CHARS = 12_000;

export type Turn = Message[];

export interface Context {
  messages: Message[];
  /** JSON.stringify(turns).length of the turns kept: what the budget measures. */
  chars: number;
  full: number;
  compacted: number;
  dropped: number;
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
  const answer = turn.findLast((m): m is AssistantMessage => m.role === 'assistant' && m.content.trim() !== '');
  return answer ? [...question, { role: 'assistant', content: answer.content }] : question;
}

export function buildContext(messages: Message[]): Context {
  const turns = splitIntoTurns(messages);
  const recentFrom = Math.max(0, turns.length - MEMORY_RECENT_TURNS);
  const shaped = turns.map((turn, i) => (i < recentFrom ? compactTurn(turn) : turn));

  // Each turn is measured once. JSON.stringify of n turns is "[" + the turns joined by "," + "]",
  // so its length is 1 + Σ(turn length + 1). Dropping a turn just subtracts its share: linear time.
  const sizes = shaped.map((turn) => JSON.stringify(turn).length + 1);
  let chars = 1 + sizes.reduce((sum, size) => sum + size, 0);
  let first = 0;
  while (chars > MEMORY_MAX_CHARS && shaped.length - first > 1) chars -= sizes[first++];
  if (shaped.length === first) chars = 2; // "[]"

  const kept = shaped.slice(first);
  return {
    messages: kept.flat(),
    chars,
    full: kept.length - Math.max(0, recentFrom - first),
    compacted: Math.max(0, recentFrom - first),
    dropped: first,
  };
}

/** The size one turn adds to the context, in the shape it would be sent (whole or compacted). */
export function turnSize(turn: Turn, whole: boolean): number {
  return JSON.stringify(whole ? turn : compactTurn(turn)).length + 1;
}
