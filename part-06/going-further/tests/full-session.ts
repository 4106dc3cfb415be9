// Test helper: one customer's conversation, asked in-process through the full Nimbus's one way to ask (nimbus.ts), as its chat asks.
import type { LlmSettings } from '../../../shared/config.ts';
import { logDir } from '../../../shared/config.ts';
import type { AgentResult } from '../../agent.ts';
import { DEFAULT_BUDGET } from '../../context.ts';
import { newConversation, type Conversation } from '../../memory.ts';
import type { Customer } from '../../session.ts';
import { Nimbus, type Asked, type NimbusSettings, type Watch } from '../nimbus.ts';
import { DEFAULT_MAX_TOOL_CALLS } from '../question/call-limits.ts';

export interface FullSession {
  customer: Customer;
  /** Where the next question goes: a new one after an erasure, as in the chat. */
  conversation: Conversation;
  nimbus: Nimbus;
  /** One question, quiet, as the chat asks it; what happened. */
  asked(question: string, watch?: Watch): Promise<Asked>;
  /** One question's result (it must have started: no Ctrl-C while it waited). */
  ask(question: string, watch?: Watch): Promise<AgentResult>;
}

/** The settings a test's Nimbus runs with: the chat's defaults, LOG_DIR as the test run sets it. */
export function testSettings(llm: LlmSettings, more: Partial<NimbusSettings> = {}): NimbusSettings {
  return {
    llm,
    logDir: logDir(process.env),
    budget: DEFAULT_BUDGET,
    notesMaxChars: 1500,
    maxToolCalls: DEFAULT_MAX_TOOL_CALLS,
    ...more,
  };
}

/**
 * As going-further/chat.ts asks: through Nimbus.ask, under the conversation's lease, every write
 * fenced. The database needs going further's tables (ensureFullDatabase), used through the product's
 * database (createProductDatabase) for the fence to hold.
 */
export function fullSession(
  customer: Customer,
  llm: LlmSettings,
  conversation: Conversation = newConversation(customer.id),
  settings: Partial<NimbusSettings> = {},
): FullSession {
  const nimbus = new Nimbus(testSettings(llm, settings));
  const session: FullSession = {
    customer,
    conversation,
    nimbus,
    async asked(question, watch = {}) {
      const asked = await nimbus.ask(customer, session.conversation, question, {
        quiet: true,
        ...watch,
      });
      session.conversation = asked.conversation;
      return asked;
    },
    async ask(question, watch) {
      const { result } = await session.asked(question, watch);
      if (!result) throw new Error('The question never started (cancelled while it waited).');
      return result;
    },
  };
  return session;
}
