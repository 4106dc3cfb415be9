// Test helper: one customer's conversation, asked in-process the way the chapter's chat asks (the plain store).
import type { LlmSettings } from '../../shared/config.ts';
import { logDir } from '../../shared/config.ts';
import { runAgent, type AgentOptions, type AgentResult } from '../agent.ts';
import { DEFAULT_BUDGET, type MemoryBudget } from '../context.ts';
import { newConversation, plainStore, type Conversation } from '../memory.ts';
import type { Customer } from '../session.ts';

export interface TestSession {
  customer: Customer;
  conversation: Conversation;
  options: AgentOptions;
  /** One question, quiet, as the chat asks it. */
  ask(question: string, extra?: Partial<AgentOptions>): Promise<AgentResult>;
}

export { DEFAULT_BUDGET };

/** As part-06/chat.ts asks: the plain store, no lock. */
export function coreSession(
  customer: Customer,
  llm: LlmSettings,
  conversation: Conversation = newConversation(customer.id),
  budget: MemoryBudget = DEFAULT_BUDGET,
): TestSession {
  const options: AgentOptions = {
    llm,
    logDir: logDir(process.env),
    store: plainStore(budget),
    quiet: true,
  };
  const session: TestSession = {
    customer,
    conversation,
    options,
    ask: (question, extra = {}) =>
      runAgent(question, customer, session.conversation, { ...options, ...extra }),
  };
  return session;
}
