// Going further: what one run of the chat may spend. Piped input can hold any number of questions: 100 MB of it once made 24,059 model calls in five minutes.
import { integerSetting, type Env } from '../../../shared/config.ts';
import type { Usage } from '../../../shared/llm/index.ts';

export interface RunBudget {
  /** Questions one run answers at most (MAX_QUESTIONS_PER_RUN). */
  maxQuestions: number;
  /** Tokens, sent and received, one run uses at most (MAX_TOKENS_PER_RUN); the question that passes it ends. */
  maxTokens: number;
}

/**
 * Read once at start, by the entry script. 100 questions is more than anyone types in one sitting; a
 * question takes about 10,000 to 20,000 tokens (instructions, tools, memory, two or three model calls),
 * so 2,000,000 tokens lets them all through on a normal day and stops a runaway one.
 */
export function runBudget(env?: Env): RunBudget {
  return {
    maxQuestions: integerSetting('MAX_QUESTIONS_PER_RUN', 100, 1, { env }),
    maxTokens: integerSetting('MAX_TOKENS_PER_RUN', 2_000_000, 1, { env }),
  };
}

/** What the run has spent so far, question by question. */
export class RunSpending {
  private questions = 0;
  private tokens = 0;

  constructor(private readonly budget: RunBudget) {}

  /** One more question, with what its model calls used (none when it failed before the first). */
  add(usage?: Usage): void {
    this.questions++;
    this.tokens += (usage?.input_tokens ?? 0) + (usage?.output_tokens ?? 0);
  }

  /** The sentence that ends the run once the budget is spent; undefined while it is not. */
  spent(): string | undefined {
    const n = (x: number) => x.toLocaleString('en-US');
    const { maxQuestions, maxTokens } = this.budget;
    if (this.questions >= maxQuestions) {
      return `This run has asked its ${n(maxQuestions)} questions (MAX_QUESTIONS_PER_RUN in .env), so the chat ends here.`;
    }
    if (this.tokens >= maxTokens) {
      return `This run has used ${n(this.tokens)} tokens, reaching its limit of ${n(maxTokens)} (MAX_TOKENS_PER_RUN in .env), so the chat ends here.`;
    }
    return undefined;
  }
}
