// Test helper: one customer's conversation, asked in-process the way the full Nimbus's chat asks (hardened store, one question at a time).
import type { LlmSettings } from '../../../shared/config.ts';
import { logDir } from '../../../shared/config.ts';
import { runAgent, type AgentOptions } from '../../agent.ts';
import { DEFAULT_BUDGET } from '../../context.ts';
import { newConversation, type Conversation } from '../../memory.ts';
import type { Customer } from '../../session.ts';
import type { TestSession } from '../../tests/test-session.ts';
import { leaseFence, withConversationLock } from '../question/lease.ts';
import { hardenedStore, type HardenedStoreOptions } from '../store/hardened-store.ts';

/**
 * As going-further/chat.ts asks: the hardened store, under the conversation's lease. The database
 * needs going further's tables (ensureFullDatabase).
 */
export function fullSession(
  customer: Customer,
  llm: LlmSettings,
  conversation: Conversation = newConversation(customer.id),
  storeOptions: HardenedStoreOptions = {},
): TestSession {
  const options: AgentOptions = {
    llm,
    logDir: logDir(process.env),
    store: hardenedStore(DEFAULT_BUDGET, storeOptions),
    ...leaseFence,
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
