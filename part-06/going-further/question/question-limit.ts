// A question too long to be worth sending is refused before the model is called.
import { UsageError } from '../../../shared/cli.ts';

/** Plenty for a support question; and a question is stored, and sent again with later turns. */
export const MAX_QUESTION_CHARS = 4000;

/** The question was longer than MAX_QUESTION_CHARS. A usage error: the person typing can fix it. */
class QuestionTooLong extends UsageError {
  override name = 'QuestionTooLong';
}

/** Throws QuestionTooLong for a question over the limit, with both lengths in the sentence. */
export function checkQuestion(question: string): void {
  if (question.length > MAX_QUESTION_CHARS) throw new QuestionTooLong(tooLong(question.length));
}

/** The sentence for a question `length` characters long: chat.ts knows only the length of a long line. */
export function tooLong(length: number): string {
  const n = (x: number) => x.toLocaleString('en-US');
  return `That question is ${n(length)} characters long; the limit is ${n(MAX_QUESTION_CHARS)}. Please shorten it.`;
}
