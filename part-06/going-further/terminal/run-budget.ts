// What one run of the chat may spend, in questions and tokens: piped input can hold any number of questions.
import { integerSetting, type Env } from '../../../shared/config.ts';
import type { Usage } from '../../../shared/llm/index.ts';
import type { AgentOptions } from '../../agent.ts';

type CallModel = NonNullable<AgentOptions['callModel']>;

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
export function runBudget(env: Env): RunBudget {
  return {
    maxQuestions: integerSetting('MAX_QUESTIONS_PER_RUN', 100, 1, { env }),
    maxTokens: integerSetting('MAX_TOKENS_PER_RUN', 2_000_000, 1, { env }),
  };
}

/** Characters a token is taken for when a provider says nothing of its tokens: about right for English and JSON. */
export const CHARS_PER_TOKEN = 4;

export const TOKENS_ESTIMATED = `The model server did not report the tokens it used, so this run counts one token for every ${CHARS_PER_TOKEN} characters sent and received towards MAX_TOKENS_PER_RUN.`;

/** What the run has spent so far: the questions asked, and the tokens of every model call. */
export class RunSpending {
  private questions = 0;
  private tokens = 0;
  private estimate: 'never' | 'made' | 'said' = 'never';

  constructor(private readonly budget: RunBudget) {}

  /** One more question. */
  addQuestion(): void {
    this.questions++;
  }

  /**
   * The agent's model call (`callModel`), counted: each call's tokens as the provider reported them.
   * Some servers report none (and a count that is no count is none: shared/llm/usage.ts), so the budget
   * would never end a run: those calls count their request's and reply's characters instead.
   */
  metered(callModel: CallModel): CallModel {
    return async (llm, messages, tools = [], options) => {
      const reply = await callModel(llm, messages, tools, options);
      this.add(
        reply.usage ??
          this.estimated(JSON.stringify([messages, tools, reply.text, reply.tool_calls])),
      );
      return reply;
    };
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

  /** TOKENS_ESTIMATED, once: the first time it is asked for after a call's tokens were estimated. */
  news(): string | undefined {
    if (this.estimate !== 'made') return undefined;
    this.estimate = 'said';
    return TOKENS_ESTIMATED;
  }

  private add(usage: Usage): void {
    this.tokens += usage.input_tokens + usage.output_tokens;
  }

  private estimated(text: string): Usage {
    if (this.estimate === 'never') this.estimate = 'made';
    return { input_tokens: Math.ceil(text.length / CHARS_PER_TOKEN), output_tokens: 0 };
  }
}
