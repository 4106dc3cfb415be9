// Deleting conversations everywhere they live: their rows, their trace files, the notes learned in them.
//
// Memory is customer data. Deleting only the database rows would leave the same words in logs/, so
// every copy we make is deleted here together.
import { existsSync } from 'node:fs';
import type { ResultSetHeader } from 'mysql2';
import { query } from '../../../shared/db.ts';
import { describeConversation, type ConversationSummary } from '../../stored-conversations.ts';
import { conversationTraceFile } from '../../trace.ts';
import {
  ConversationBusy,
  ErasureRunning,
  leasedConversations,
  takeLeases,
  withLease,
  type LeaseTarget,
} from '../question/lease.ts';
import { withErasureMarked } from '../question/erasure-mark.ts';
import {
  forgetSource,
  notesFromConversation,
  staleNotes,
  type StaleNote,
} from '../notes/notes-queries.ts';
import { forgetNotes } from './delete-notes.ts';
import { deleteTraceFile, oldOrphanTraces } from './trace-files.ts';

export interface Removed {
  conversationId: string;
  messages: number;
  /** Customer notes learned in the conversation, deleted with it. */
  notes: number;
  traceFile?: string;
}

/**
 * Deletes one conversation, its messages, the notes learned in it and its trace file. A question being
 * answered in it is waited for (at most 30 s, then its lease is taken from it, so it saves nothing
 * more): nothing deleted here is written again. Undefined when there was nothing to delete.
 */
export async function forgetConversation(
  logDir: string,
  conversationId: string,
): Promise<Removed | undefined> {
  const found = await describeConversation(conversationId);
  const inFlight = (await leasedConversations()).find((c) => c.id === conversationId);
  const customerId = found?.customer_id ?? inFlight?.customerId;
  if (customerId === undefined) {
    const traceFile = deletedTrace(logDir, conversationId);
    return traceFile ? { conversationId, messages: 0, notes: 0, traceFile } : undefined;
  }
  const release = await takeLeases([{ id: conversationId, customerId }], {
    takeOver: true,
    erasure: true,
  });
  try {
    // The customer said them here: forgetting what was said forgets them, in every trace too.
    const learned = await notesFromConversation(conversationId);
    const notes = learned ? (await forgetNotes(logDir, learned.customerId, learned.ids)).length : 0;
    const messages = (await describeConversation(conversationId))?.messages ?? 0;
    await deleteConversation(conversationId);
    const traceFile = deletedTrace(logDir, conversationId);
    if (!found && !traceFile && !notes && !messages) return undefined;
    return { conversationId, messages, notes, traceFile };
  } finally {
    await release();
  }
}

/** What forgetConversation would delete now, deleting nothing (--dry-run); undefined when nothing. */
export async function planForgetConversation(
  logDir: string,
  conversationId: string,
): Promise<Removed | undefined> {
  const found = await describeConversation(conversationId);
  const notes = (await notesFromConversation(conversationId))?.ids.length ?? 0;
  const file = conversationTraceFile(logDir, conversationId);
  const traceFile = existsSync(file) ? file : undefined;
  if (!found && !traceFile && !notes) return undefined;
  return { conversationId, messages: found?.messages ?? 0, notes, traceFile };
}

/** What an erasure of a customer did, and what it kept. */
export interface Erasure {
  conversations: Removed[];
  notes: number;
  /** Their support tickets, kept: like their orders and refunds, the store's records, which it must keep. */
  tickets: number[];
}

/** What an erasure of a customer would delete and keep, now: forget.ts says it before it asks. */
export interface ErasurePlan {
  conversations: Array<{ id: string; messages: number; traceFile?: string }>;
  notes: number;
  tickets: number[];
}

/** Lists what forgetCustomer would delete for this customer, deleting nothing. */
export async function planCustomerErasure(
  logDir: string,
  customerId: number,
): Promise<ErasurePlan> {
  const conversations = [];
  for (const id of await conversationsOf(customerId)) {
    const messages = (await describeConversation(id))?.messages ?? 0;
    const file = conversationTraceFile(logDir, id);
    conversations.push({ id, messages, traceFile: existsSync(file) ? file : undefined });
  }
  const [{ notes }] = await query<Array<{ notes: number }>>(
    'SELECT COUNT(*) AS notes FROM customer_notes WHERE customer_id = ?',
    [customerId],
  );
  return { conversations, notes: Number(notes), tickets: await ticketsOf(customerId) };
}

/**
 * Deletes every conversation and every note of one customer, everywhere: a data-deletion request, from
 * the operator (forget.ts --customer) or from the customer (forget_everything), the same either way.
 * Questions being answered for them are waited for first (or their leases taken, see
 * forgetConversation), new conversations included, so nothing deleted here is written again.
 *
 * `asking`: the conversation of the question that asked for it (forget_everything). That question
 * holds its lease and keeps it: everything said before it goes, its own conversation's earlier turns
 * included, and what it writes after (its answer) starts the conversation afresh.
 */
export function forgetCustomer(
  logDir: string,
  customerId: number,
  asking?: string,
): Promise<Erasure> {
  // Marked first: a question of theirs that starts now waits, and cannot write back what goes.
  return withErasureMarked(customerId, () => eraseCustomer(logDir, customerId, asking));
}

async function eraseCustomer(
  logDir: string,
  customerId: number,
  asking?: string,
): Promise<Erasure> {
  const targets = new Map<string, LeaseTarget>();
  for (const id of await conversationsOf(customerId)) targets.set(id, { id, customerId });
  for (const target of await leasedConversations(customerId)) targets.set(target.id, target);
  if (asking) targets.delete(asking); // its question holds it, and keeps it
  const release = await takeLeases([...targets.values()], { takeOver: true, erasure: true });
  try {
    const notes = (await forgetNotes(logDir, customerId, 'all')).length;
    const conversations: Removed[] = [];
    // Listed again: a conversation saved while the leases were being taken goes too.
    const ids = [
      ...targets.keys(),
      ...(asking ? [asking] : []),
      ...(await conversationsOf(customerId)),
    ];
    for (const id of new Set(ids)) {
      const messages = (await describeConversation(id))?.messages ?? 0;
      const deleted = await deleteConversation(id);
      const traceFile = deletedTrace(logDir, id);
      if (deleted || traceFile)
        conversations.push({ conversationId: id, messages, notes: 0, traceFile });
    }
    return { conversations, notes, tickets: await ticketsOf(customerId) };
  } finally {
    await release();
  }
}

export interface PrunePlan {
  conversations: ConversationSummary[];
  /** Trace files older than the limit that belong to no (remaining) conversation. */
  orphanTraces: string[];
  /** Customer notes past their expiry, or not sent with any question for the days given. */
  notes: StaleNote[];
}

/** What prune would delete: conversations not updated for `days` days, and old traces of no conversation. */
export async function planPrune(logDir: string, days: number): Promise<PrunePlan> {
  const conversations = await staleConversations(days);
  const expiring = new Set(conversations.map((c) => c.id));
  // Traces of conversations that no longer exist (deleted some other way, or never saved a turn);
  // those expiring now are deleted with their conversation.
  const gone = async (id: string) => !expiring.has(id) && !(await describeConversation(id));
  const orphanTraces = await oldOrphanTraces(logDir, Date.now() - days * 86_400_000, gone);
  return { conversations, orphanTraces, notes: await staleNotes(days) };
}

export interface PruneResult {
  removed: Removed[];
  /** Conversations skipped because a question was being answered in them at that moment. */
  busy: string[];
  /** The notes deleted: those of the plan still stale (one may have been recalled since). */
  notes: number[];
}

/** Carries out a plan. A conversation is deleted only if it is still unused (a chat may have resumed it). */
export async function prune(logDir: string, plan: PrunePlan, days: number): Promise<PruneResult> {
  const result: PruneResult = { removed: [], busy: [], notes: [] };
  for (const conversation of plan.conversations) {
    try {
      // Never wait: a conversation in use right now is not stale, whatever its updated_at says.
      await withLease(
        { id: conversation.id, customerId: conversation.customer_id },
        async () => {
          if (!(await deleteConversation(conversation.id, days))) return;
          // Its notes stay while questions still use them (they have their own clock, below).
          await forgetSource(conversation.id);
          const traceFile = deletedTrace(logDir, conversation.id);
          result.removed.push({
            conversationId: conversation.id,
            messages: conversation.messages,
            notes: 0,
            traceFile,
          });
        },
        { waitSeconds: 0 },
      );
    } catch (error) {
      // In use right now, or its customer being erased (which deletes it anyway): not stale.
      if (!(error instanceof ConversationBusy || error instanceof ErasureRunning)) throw error;
      result.busy.push(conversation.id);
    }
  }
  for (const file of plan.orphanTraces) deleteTraceFile(file);
  // Customer by customer, since notes are deleted for one customer at a time.
  for (const customerId of new Set(plan.notes.map((note) => note.customer_id))) {
    const ids = plan.notes.filter((note) => note.customer_id === customerId).map((note) => note.id);
    const deleted = await forgetNotes(logDir, customerId, ids, { staleDays: days });
    result.notes.push(...deleted.map((note) => note.id));
  }
  return result;
}

/** Deletes a conversation's trace file; its path if there was one. */
function deletedTrace(logDir: string, conversationId: string): string | undefined {
  const file = conversationTraceFile(logDir, conversationId);
  return deleteTraceFile(file) ? file : undefined;
}

/** The ids of every conversation of one customer. */
async function conversationsOf(customerId: number): Promise<string[]> {
  const rows = await query<Array<{ id: string }>>(
    'SELECT id FROM conversations WHERE customer_id = ? ORDER BY created_at',
    [customerId],
  );
  return rows.map((row) => row.id);
}

/** The ids of one customer's support tickets: kept by an erasure, and named. */
async function ticketsOf(customerId: number): Promise<number[]> {
  const rows = await query<Array<{ id: number }>>(
    'SELECT id FROM tickets WHERE customer_id = ? ORDER BY id',
    [customerId],
  );
  return rows.map((row) => row.id);
}

/** Conversations not updated for `days` days, oldest first. */
async function staleConversations(days: number): Promise<ConversationSummary[]> {
  return query<ConversationSummary[]>(
    `SELECT c.id, c.customer_id, cu.email AS customer_email, cu.name AS customer_name, c.created_at, c.updated_at,
            (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id) AS messages
       FROM conversations c JOIN customers cu ON cu.id = c.customer_id
      WHERE c.updated_at < NOW(3) - INTERVAL ? DAY ORDER BY c.updated_at`,
    [days],
  );
}

/**
 * Deletes a conversation and its messages (ON DELETE CASCADE); with `staleDays`, only if it is still
 * unused for that long (a chat may have resumed it since it was listed). Returns whether a row went.
 */
async function deleteConversation(id: string, staleDays?: number): Promise<boolean> {
  const result = await query<ResultSetHeader>(
    staleDays === undefined
      ? 'DELETE FROM conversations WHERE id = ?'
      : 'DELETE FROM conversations WHERE id = ? AND updated_at < NOW(3) - INTERVAL ? DAY',
    staleDays === undefined ? [id] : [id, staleDays],
  );
  return result.affectedRows > 0;
}
