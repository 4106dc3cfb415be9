// A request's tool results within the memory budget: the current question's, and the newest stored turn's when it alone is over.
//
// buildContext always sends the newest turn whole (the chapter's rule: the next question follows it
// up), and a question's own results are never trimmed from the loop. Both are bounded here, in what is
// sent only: what is stored stays whole. A question that made 96 searches would otherwise send them all
// with every follow-up.
import type { Message, ToolMessage } from '../../../shared/llm/index.ts';
import { compactTurn, turnChars, type Context } from '../../context.ts';

/** What each cut result keeps at least, however many share the budget: enough to read an order's status. */
const MIN_RESULT_CHARS = 200;

/**
 * The request with this question's tool results within `maxChars` all together: sixteen searches
 * of past conversations can return 36,000 characters. The longest are cut, each to the same length,
 * as far as needed, and say so; what is stored stays whole (only the request is cut).
 */
export function fitResults(messages: Message[], maxChars: number): Message[] {
  const question = messages.findLastIndex((message) => message.role === 'user');
  const results = new Set(
    messages.slice(question + 1).filter((m): m is ToolMessage => m.role === 'tool'),
  );
  const sizes = [...results].map((message) => message.content.length).sort((a, b) => a - b);
  if (sizes.reduce((sum, size) => sum + size, 0) <= maxChars) return messages;
  // The length each result may keep so that they all fit: the short ones whole, the rest shared out.
  let left = maxChars;
  let each = 0;
  for (const [i, size] of sizes.entries()) {
    each = Math.floor(left / (sizes.length - i));
    if (size > each) break;
    left -= size;
  }
  each = Math.max(each, MIN_RESULT_CHARS);
  return messages.map((message) => {
    if (message.role !== 'tool' || !results.has(message) || message.content.length <= each)
      return message;
    const note = ` …(cut to fit the request: ${each} of ${message.content.length} characters)`;
    return {
      ...message,
      content: message.content.slice(0, Math.max(0, each - note.length)) + note,
    };
  });
}

/**
 * The context with its newest turn fitted to the budget when it alone is over it (every older turn is
 * then dropped already): its tool results cut as the current question's are, saying so; and if the
 * turn is still over (thousands of calls), sent compacted to its question and answer.
 */
export function fitNewestTurn(context: Context): Context {
  const { budget } = context;
  const newest = context.turns.at(-1);
  if (context.chars <= budget.maxChars || !newest || newest.fate === 'dropped') return context;
  // The results share what the rest of the turn leaves; as text inside the turn's JSON they take more
  // room than their own length (quotes escaped), so the share is cut again until the turn fits.
  const results = (turn: Message[]) =>
    turn.reduce((sum, m) => sum + (m.role === 'tool' ? m.content.length : 0), 0);
  let room = budget.maxChars - (turnChars(newest.sent) - results(newest.sent));
  let sent = newest.sent;
  for (let tries = 0; tries < 5 && room > 0 && turnChars(sent) + 1 > budget.maxChars; tries++) {
    sent = fitResults(newest.sent, room);
    room = Math.floor((room * budget.maxChars) / (turnChars(sent) + 1));
  }
  if (turnChars(sent) + 1 > budget.maxChars) sent = compactTurn(newest.sent);
  const fate = sent.length < newest.sent.length ? 'compacted' : newest.fate;
  const fitted = { ...newest, fate, sent, sentChars: turnChars(sent) } as const;
  const turns = [...context.turns.slice(0, -1), fitted];
  const messages = turns.flatMap((turn) => turn.sent);
  const chars = JSON.stringify(turns.filter((t) => t.fate !== 'dropped').map((t) => t.sent)).length;
  return { ...context, messages, turns, chars };
}
