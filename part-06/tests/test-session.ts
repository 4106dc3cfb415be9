// Test helper: one customer's conversation, asked in-process the way chat.ts asks, with the store it uses.
import type { LlmSettings } from '../../shared/config.ts';
import { logDir } from '../../shared/config.ts';
import { runAgent, type AgentOptions, type AgentResult } from '../agent.ts';
import { DEFAULT_BUDGET } from '../context.ts';
import { newConversation, type Conversation } from '../memory.ts';
import type { Customer } from '../session.ts';
import { withConversationLock } from '../going-further/conversation-lock.ts';
import { hardenedStore, type HardenedStoreOptions } from '../going-further/hardened-store.ts';

export interface TestSession {
  customer: Customer;
  conversation: Conversation;
  options: AgentOptions;
  /** One question, quiet, under the conversation's lock, as chat.ts asks it. */
  ask(question: string, extra?: Partial<AgentOptions>): Promise<AgentResult>;
}

export { DEFAULT_BUDGET };

export function testSession(
  customer: Customer,
  llm: LlmSettings,
  conversation: Conversation = newConversation(customer.id),
  storeOptions: HardenedStoreOptions = {},
): TestSession {
  const options: AgentOptions = {
    llm,
    logDir: logDir(),
    store: hardenedStore(DEFAULT_BUDGET, storeOptions),
    quiet: true,
  };
  const session: TestSession = {
    customer,
    conversation,
    options,
    ask: (question, extra = {}) =>
      withConversationLock(
        session.conversation,
        () => runAgent(question, customer, session.conversation, { ...options, ...extra }),
        { signal: extra.signal },
      ),
  };
  return session;
}
