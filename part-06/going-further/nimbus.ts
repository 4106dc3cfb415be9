// What the full Nimbus is made of — the chapter's agent and memory, with the hardened store, the customer's notes, the privacy tools and a question's limits — and its one way to answer a question.
//
// Every entry asks through Nimbus.ask: the chat, ask.ts, the eval's sittings and the load test. So a
// question waits for another one in its conversation the same way everywhere, writes nothing once its
// lease is taken (store/fence.ts), and an erasure, a reset or a takeover meanwhile is reported the same
// way (whatHappened), for each entry to say in its own place.
import { dim, listing, type ScriptIo } from '../../shared/cli.ts';
import { ensureLogDir, llmSettings, type Env, type LlmSettings } from '../../shared/config.ts';
import { query } from '../../shared/db.ts';
import { chatWithTools } from '../../shared/llm/index.ts';
import { runAgent, type AgentOptions, type AgentResult } from '../agent.ts';
import { memoryBudget, type MemoryBudget } from '../context.ts';
import {
  findConversation,
  newConversation,
  type Conversation,
  type StoredMessage,
} from '../memory.ts';
import type { Customer } from '../session.ts';
import { customerMemoryTools } from './notes/notes-tools.ts';
import { describeRecall } from './notes/notes-view.ts';
import { notesBudget, withCustomerNotes } from './notes/recall-notes.ts';
import { privacyTools } from './privacy/privacy-tools.ts';
import { maxToolCallsPerReply, withCallLimits } from './question/call-limits.ts';
import { DatabaseCancelled, heldByErasure, takeLease, type WaitingFor } from './question/lease.ts';
import { checkQuestion } from './question/question-limit.ts';
import { withFence } from './store/fence.ts';
import { ConversationDeleted, hardenedStore, type HardenedStore } from './store/hardened-store.ts';
import { describeDamage } from './store/read-history.ts';

type CallModel = NonNullable<AgentOptions['callModel']>;

/** What the full Nimbus is set up with: read once, by the entry script (nimbusSettings). */
export interface NimbusSettings {
  llm: LlmSettings;
  logDir: string;
  budget: MemoryBudget;
  /** MEMORY_NOTES_MAX_CHARS: the customer's notes sent with each question. */
  notesMaxChars: number;
  /** MAX_TOOL_CALLS_PER_REPLY. */
  maxToolCalls: number;
}

/** Every setting the full Nimbus reads, from the entry script's environment: a bad one is said first. */
export function nimbusSettings(env: Env): NimbusSettings {
  return {
    llm: llmSettings(env),
    logDir: ensureLogDir(env),
    budget: memoryBudget(env),
    notesMaxChars: notesBudget(env),
    maxToolCalls: maxToolCallsPerReply(env),
  };
}

/** What the caller of a question watches, and how it wants it answered. */
export interface Watch {
  /** Ctrl-C: the question stops where it is; the steps it completed are kept. */
  signal?: AbortSignal;
  /** Told once when the question has to wait to start: for another question, or for an erasure. */
  onWait?: (waitingFor: WaitingFor) => void;
  /** How the model is asked: the chat's streams as it writes (terminal/answer-printer.ts). */
  callModel?: CallModel;
  /** Where the trace's lines and the store's notices go (default: this process's stderr). */
  stderr?: ScriptIo['stderr'];
  /** Hide the trace's lines and the notes recalled (damaged rows are always said). */
  quiet?: boolean;
  /** Told how long each load and each save of the conversation took (npm run load). */
  onStoreTime?: (what: 'load' | 'save', ms: number) => void;
}

/** What became of a question. */
export interface Asked {
  /** Where the next question goes: this conversation, or a new one when it was erased. */
  conversation: Conversation;
  /** Undefined when it never started: Ctrl-C while it waited for its turn, and nothing was done. */
  result?: AgentResult;
  /** The conversation given was deleted before the question began, so it was asked in a new one. */
  restarted: boolean;
  /**
   * Its lease was taken while it ran, so nothing more of it was kept: an erasure or a reset deleted the
   * conversation, or another question took it over after this process stopped answering for too long.
   */
  lost?: 'erased' | 'taken over';
  /** The support tickets it opened or found open: the store's records, kept whatever else goes. */
  tickets: number[];
}

export class Nimbus {
  constructor(readonly settings: NimbusSettings) {}

  /**
   * The customer's conversation with this id (another customer's is "not found", as in the chapter),
   * counted as in use from now: prune.ts leaves alone a conversation a chat has just resumed.
   */
  async resume(customer: Customer, id: string): Promise<Conversation | undefined> {
    const conversation = await findConversation(id, customer.id);
    if (conversation)
      await query('UPDATE conversations SET updated_at = NOW(3) WHERE id = ?', [conversation.id]);
    return conversation;
  }

  /**
   * Answers one question of a conversation for the signed-in customer: one question at a time in the
   * conversation (a lease), the hardened store with the customer's notes, their tools and the privacy
   * tools, a question's limits; every write of the question checks its lease. Database failures are
   * thrown (one sentence each); what happened to the conversation is in the result.
   */
  async ask(
    customer: Customer,
    conversation: Conversation,
    question: string,
    watch: Watch = {},
  ): Promise<Asked> {
    checkQuestion(question); // too long to be worth sending, from whichever entry
    try {
      return await this.askIn(customer, conversation, question, watch, false);
    } catch (error) {
      if (!(error instanceof ConversationDeleted)) throw error;
      // Deleted before the question began (forget.ts, prune.ts): it goes into a new conversation.
      return this.askIn(customer, newConversation(customer.id), question, watch, true);
    }
  }

  private async askIn(
    customer: Customer,
    conversation: Conversation,
    question: string,
    watch: Watch,
    restarted: boolean,
  ): Promise<Asked> {
    const { llm, logDir, budget, maxToolCalls } = this.settings;
    let lease;
    try {
      lease = await takeLease(conversation, { signal: watch.signal, onWait: watch.onWait });
    } catch (error) {
      if (error instanceof DatabaseCancelled) return { conversation, restarted, tickets: [] };
      throw error;
    }
    try {
      const store = this.store(watch);
      const tools = [
        ...customerMemoryTools(),
        ...privacyTools(logDir, () => store.startOver(conversation)),
      ];
      // Bounded for this question: calls per reply, searches, the results sent (call-limits.ts).
      const callModel = withCallLimits(watch.callModel ?? chatWithTools, {
        maxCalls: maxToolCalls,
        maxResultChars: budget.maxChars,
      });
      // A lease found lost stops the question as Ctrl-C would: nothing more of it could be kept.
      const signal = watch.signal ? AbortSignal.any([watch.signal, lease.lost]) : lease.lost;
      const options = { llm, logDir, quiet: watch.quiet, stderr: watch.stderr };
      const result = await withFence(lease.fence, () =>
        runAgent(question, customer, conversation, {
          ...options,
          store,
          tools,
          callModel,
          signal,
        }),
      );
      const tickets = ticketsIn(result.messages);
      // A lease taken is said even if Ctrl-C came too: what was done may not be kept.
      if (!lease.lost.aborted) return { conversation, result, restarted, tickets };
      // The lease was taken: by an erasure or a reset (which may not have deleted the conversation
      // yet), or by another question. A conversation with no row any more, or none yet (an erasure
      // took its lease before its first save), was erased too.
      const erased =
        !conversation.saved ||
        (await heldByErasure(conversation.id)) ||
        !(await stillThere(conversation));
      return erased
        ? { conversation: newConversation(customer.id), result, restarted, tickets, lost: 'erased' }
        : { conversation, result, restarted, tickets, lost: 'taken over' };
    } finally {
      await lease.release();
    }
  }

  /** The store for one question: hardened, with the customer's notes, its notices on the watcher's stderr. */
  private store(watch: Watch): HardenedStore {
    const { budget, notesMaxChars } = this.settings;
    const stderr = watch.stderr ?? process.stderr;
    const say = (line: string) => stderr.write(`${dim(line, stderr)}\n`);
    const hardened = hardenedStore(budget, {
      onDamaged: (id, damaged) => say(describeDamage(id, damaged)),
      // The memory line after it counts the turns read: this says there were older ones.
      onOlderUnread: () => {
        if (!watch.quiet)
          say(
            '[step 0] memory: only the newest turns were read; every older one is past the budget',
          );
      },
    });
    const store = withCustomerNotes(hardened, notesMaxChars, (recall) => {
      if (recall.notes.length && !watch.quiet) say(describeRecall(recall));
    });
    const time = watch.onStoreTime;
    if (!time) return store;
    const timed = async <T>(what: 'load' | 'save', work: () => Promise<T>): Promise<T> => {
      const started = performance.now();
      try {
        return await work();
      } finally {
        time(what, performance.now() - started);
      }
    };
    return {
      ...store,
      loadContext: (conversation, question) =>
        timed('load', () => store.loadContext(conversation, question)),
      saveStep: (conversation, step) => timed('save', () => store.saveStep(conversation, step)),
    };
  }
}

/**
 * Whether the conversation is still stored: an erasure may have taken it while a chat waited at its
 * prompt. If the database cannot say, it is taken to be (nothing is claimed erased).
 */
export async function stillThere(conversation: Conversation): Promise<boolean> {
  const rows = await query<unknown[]>('SELECT 1 FROM conversations WHERE id = ?', [
    conversation.id,
  ]).catch(() => [1]);
  return rows.length > 0;
}

/** The tickets create_support_ticket opened, or found already open, in these messages. */
function ticketsIn(messages: StoredMessage[]): number[] {
  const ids = messages.flatMap((message) => {
    if (message.role !== 'tool' || message.name !== 'create_support_ticket') return [];
    const result = JSON.parse(message.content) as { ticket_id?: unknown };
    return Number.isSafeInteger(result.ticket_id) ? [result.ticket_id as number] : [];
  });
  return [...new Set(ids)];
}

/**
 * What to tell the customer about the conversation once the answer (if any) is shown: the same words
 * in the chat, ask.ts and the eval's report. Undefined when there is nothing to say.
 */
export function whatHappened(asked: Asked): string | undefined {
  const kept = asked.tickets.length
    ? ` Support ${asked.tickets.length === 1 ? 'ticket' : 'tickets'} ${listing(asked.tickets.map((id) => `#${id}`))} ${asked.tickets.length === 1 ? 'stays' : 'stay'}: the store keeps its records.`
    : '';
  if (asked.lost === 'erased')
    return `This conversation was erased while Nimbus was answering (a request to delete data, or a reset), so nothing of it is kept, this answer included.${kept}`;
  if (asked.lost === 'taken over')
    return 'Another window took this conversation over while this one was not answering, so nothing more of this question was saved.';
  if (asked.restarted)
    return `The conversation you were in had been deleted, so this question started a new one: ${asked.conversation.id}.`;
  return undefined;
}

/**
 * What to say when the question's last save failed: the core's sentence; when a COMMIT's answer never
 * came (it may have been saved or not), also how to look (`viewer`: the show-conversation command for
 * this conversation, written for where the script was typed). Nothing to say after an erasure.
 */
export function saveTrouble(asked: Asked, viewer: string): string | undefined {
  const problem = asked.result?.saveError;
  if (!problem || asked.lost) return undefined;
  return problem.startsWith('Not saved')
    ? problem
    : `${problem} See what was saved with ${viewer}.`;
}
