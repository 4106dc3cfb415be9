// Tool-call ids the agent can rely on: every call of a reply has one, and no two calls share it.
import { randomBytes } from 'node:crypto';
import { MAX_ID_CHARS } from './reply-limits.ts';

/**
 * The id to keep for a call: the provider's own, unless it sent none (Gemini often does not), one too
 * long to keep (MAX_ID_CHARS), or one an earlier call of the same reply already has (some models give two
 * calls one id). Results are matched to calls by id, so a repeated id would send one call's result to
 * the other; the repeat gets a fresh id of ours. `taken` collects the ids of the reply so far.
 */
export function uniqueCallId(given: unknown, taken: Set<string>): string {
  const id =
    typeof given === 'string' && given && given.length <= MAX_ID_CHARS && !taken.has(given)
      ? given
      : `call_${randomBytes(8).toString('hex')}`;
  taken.add(id);
  return id;
}
