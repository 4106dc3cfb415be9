// What a model writes is bounded here, as soon as it arrives: a runaway reply (17 MB of tool-call arguments) must not fail the save, flood the terminal or fill memory.
import { wellFormed } from '../text.ts';
import type { ToolCall } from './messages.ts';

/**
 * The longest answer kept, shown and stored. A thorough support answer is under 2,000 characters; ten
 * times that is still a reply a model might mean, and small enough to store and send back with every
 * later question.
 */
export const MAX_ANSWER_CHARS = 20_000;

/**
 * The longest arguments of one tool call, as JSON text. The largest argument a tool takes is a ticket
 * summary of at most 2,000 characters; this leaves room for JSON escapes and for tools added later.
 */
export const MAX_ARGUMENTS_CHARS = 10_000;

/** Both APIs refuse tool names over 64 characters, so a longer name is no tool's: it is cut to that. */
export const MAX_NAME_CHARS = 64;

/** Call ids are a few dozen characters; a longer one (a server gone wrong) is replaced by one of ours. */
export const MAX_ID_CHARS = 100;

/** Ends an answer that was cut, so the reader (and the model, in later turns) sees that it was. */
export const ANSWER_CUT_MARKER = `\n[The answer was cut here: it went past ${MAX_ANSWER_CHARS.toLocaleString('en-US')} characters.]`;

/** What the model reads instead of a result when its call's arguments were too long: the tool is not run. */
export const ARGUMENTS_TOO_LONG = `The arguments were longer than ${MAX_ARGUMENTS_CHARS.toLocaleString('en-US')} characters, so the tool was not run. Call it again with shorter arguments.`;

/** The answer as kept: unchanged up to the limit, else its first MAX_ANSWER_CHARS characters and the marker. */
export function boundedAnswer(text: string): string {
  if (text.length <= MAX_ANSWER_CHARS) return text;
  // wellFormed keeps the length: half an emoji at the cut becomes U+FFFD, which MariaDB's JSON accepts.
  return wellFormed(text.slice(0, MAX_ANSWER_CHARS)) + ANSWER_CUT_MARKER;
}

/** A call whose arguments are over the limit: none kept, and the error the model is told instead. */
export function argumentsTooLong(): Pick<ToolCall, 'arguments' | 'arguments_error'> {
  return { arguments: {}, arguments_error: ARGUMENTS_TOO_LONG };
}
