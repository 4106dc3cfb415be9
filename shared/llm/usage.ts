// Token counts as a provider reports them, checked: they are stored, added up and budgeted, so a number that is no count must not pass for one.
import type { Usage } from './messages.ts';

/**
 * More tokens than one model call can use: the largest context windows hold two million. A count above
 * it is a server gone wrong, and would spend a whole run's budget (or pass for one) in one call.
 */
export const MAX_TOKENS_PER_CALL = 10_000_000;

/**
 * The usage of one call, or undefined (unknown) unless every count is a whole number from 0 to
 * MAX_TOKENS_PER_CALL. A negative count made every save fail (the columns are unsigned); a fractional
 * or absurd one would be stored and budgeted as if it were true. `input` is the request's count, which
 * must be there; `outputs` are the reply's, added up (Gemini counts thoughts apart), a missing one as
 * 0: Gemini leaves out the counts it has nothing for.
 */
export function checkedUsage(input: unknown, ...outputs: unknown[]): Usage | undefined {
  const counts = outputs.map((output) => output ?? 0);
  if (!isCount(input) || !counts.every(isCount)) return undefined;
  const output = counts.reduce((sum, count) => sum + count, 0);
  return isCount(output) ? { input_tokens: input, output_tokens: output } : undefined;
}

function isCount(value: unknown): value is number {
  return (
    typeof value === 'number' &&
    Number.isInteger(value) &&
    value >= 0 &&
    value <= MAX_TOKENS_PER_CALL
  );
}
