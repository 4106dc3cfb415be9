// Conversation memory in MySQL: every statement on the conversations and messages tables lives here.
import { randomBytes } from 'node:crypto';
import type { ResultSetHeader } from 'mysql2';
import { dim, UsageError } from '../shared/cli.ts';
import { DatabaseError, LockBusy, query, withNamedLock, withTransaction } from '../shared/db.ts';
import type { Message, SystemMessage } from '../shared/llm/index.ts';
import { printable } from '../shared/text.ts';
import { storable } from './storable.ts';
import { readHistory, type Damage, type History, type StoredRow } from './stored-history.ts';

/** A stored message: anything but the system prompt, which is added fresh to every request. */
export type StoredMessage = Exclude<Message, SystemMessage>;

// ---------------------------------------------------------------------------------------------------
// Conversations

export interface Conversation {
  /** 16 random bytes as 32 lowercase hex characters: unguessable, unlike an auto-increment number. */
  id: string;
  /** The customer it belongs to: only they may continue it. */
  customerId: number;
  /** False until its first turn is saved: the row is created then, so a chat left unused leaves nothing behind. */
  saved: boolean;
}

export function newConversation(customerId: number): Conversation {
  return { id: randomBytes(16).toString('hex'), customerId, saved: false };
}

/** Checks an id typed by a user (--resume=, --conversation=, ...) before it goes anywhere near the database. */
export function parseConversationId(value: string, where: string): string {
  if (!/^[0-9a-f]{32}$/.test(value)) {
    throw new UsageError(
      `${where} needs a conversation id: 32 lowercase hex characters (got "${printable(value, { singleLine: true })}").`,
    );
  }
  return value;
}

/** The customer's own conversation with this id. Another customer's is "not found", exactly like a missing one. */
export async function findConversation(
  id: string,
  customerId: number,
): Promise<Conversation | undefined> {
  const rows = await query<unknown[]>(
    'SELECT 1 FROM conversations WHERE id = ? AND customer_id = ?',
    [id, customerId],
  );
  return rows.length ? { id, customerId, saved: true } : undefined;
}

/** The conversation was deleted (forget.ts, prune.ts) while a chat still had it open. */
export class ConversationDeleted extends DatabaseError {
  override name = 'ConversationDeleted';
  constructor(readonly conversationId: string) {
    super(`Conversation ${conversationId} was deleted, so nothing more is saved in it.`);
  }
}

/** Throws ConversationDeleted if a conversation that was saved before is gone now. */
export async function checkNotDeleted(conversation: Conversation): Promise<void> {
  if (!conversation.saved) return;
  const rows = await query<unknown[]>('SELECT 1 FROM conversations WHERE id = ?', [
    conversation.id,
  ]);
  if (rows.length === 0) throw new ConversationDeleted(conversation.id);
}

// ---------------------------------------------------------------------------------------------------
// One question at a time

/** Another process is answering in this conversation, and did not finish within the wait. */
export class ConversationBusy extends DatabaseError {
  override name = 'ConversationBusy';
  constructor(conversationId: string, seconds: number) {
    super(
      `Conversation ${conversationId} has been busy answering a question elsewhere for ${seconds} s; ask again when it has finished.`,
    );
  }
}

/** How long a question waits for another process's question in the same conversation. */
const CONVERSATION_WAIT_SECONDS = 30;

/**
 * Runs fn while no other process answers in this conversation. A turn is saved step by step, so two
 * turns answered at once would interleave their messages; this lock makes them take turns instead,
 * and the second one sees the first in its history. A killed process releases the lock by itself.
 */
export async function withConversationLock<T>(
  conversationId: string,
  fn: () => Promise<T>,
  options: { waitSeconds?: number; signal?: AbortSignal } = {},
): Promise<T> {
  const waitSeconds = options.waitSeconds ?? CONVERSATION_WAIT_SECONDS;
  try {
    return await withNamedLock(
      `nimbus-conversation:${conversationId}`,
      waitSeconds,
      fn,
      options.signal,
    );
  } catch (error) {
    if (error instanceof LockBusy) throw new ConversationBusy(conversationId, waitSeconds);
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------------
// Saving

/** What the model call that wrote a message cost: the provider's token counts and the characters we sent. */
export interface CallCost {
  input_tokens: number;
  output_tokens: number;
  request_chars: number;
}

/** One message to save, with the cost of the model call that wrote it (assistant messages only). */
export interface MessageToSave {
  message: StoredMessage;
  cost?: CallCost;
}

/**
 * Saves messages in one transaction: all of them or none. The agent calls it once per completed step,
 * so a tool call is always stored together with its result. The first save creates the conversation's
 * row; later ones bump updated_at and notice if the conversation was deleted in the meantime.
 * Ctrl-C (`signal`) rolls the save back.
 */
export async function saveMessages(
  conversation: Conversation,
  messages: MessageToSave[],
  signal?: AbortSignal,
): Promise<void> {
  if (messages.length === 0) return;
  // Each message is made storable first (see storable.ts); what had to change is kept in storage_note.
  const rows = messages.map(({ message, cost }) => {
    const { message: stored, note } = storable(message);
    return [
      conversation.id,
      stored.role,
      JSON.stringify(stored),
      cost?.input_tokens ?? null,
      cost?.output_tokens ?? null,
      cost?.request_chars ?? null,
      note ?? null,
    ];
  });
  await withTransaction(async (db) => {
    if (conversation.saved) {
      const [update] = await db.query<ResultSetHeader>(
        'UPDATE conversations SET updated_at = NOW(3) WHERE id = ?',
        [conversation.id],
      );
      if (update.affectedRows === 0) throw new ConversationDeleted(conversation.id);
    } else {
      await db.query('INSERT INTO conversations (id, customer_id) VALUES (?, ?)', [
        conversation.id,
        conversation.customerId,
      ]);
    }
    // `VALUES ?` with an array of rows becomes one INSERT of all rows: one round trip.
    await db.query(
      'INSERT INTO messages (conversation_id, role, data, input_tokens, output_tokens, request_chars, storage_note) VALUES ?',
      [rows],
    );
  }, signal);
  conversation.saved = true;
}

// ---------------------------------------------------------------------------------------------------
// Loading

/** Every message of the conversation, in order, damaged rows left out (and reported). */
export async function loadMessages(
  conversationId: string,
  onDamaged = warnDamaged,
): Promise<Message[]> {
  const history = readHistory(await loadRows(conversationId));
  if (history.damaged.length) onDamaged(conversationId, history.damaged);
  return history.messages;
}

/** A stored row with what the messages table keeps beside the message: for show-conversation and exports. */
export interface FullRow extends StoredRow {
  created_at: Date;
  input_tokens: number | null;
  output_tokens: number | null;
  request_chars: number | null;
  storage_note: string | null;
}

/** Every row of the conversation, oldest first, exactly as stored. */
export async function loadRows(conversationId: string): Promise<FullRow[]> {
  return query<FullRow[]>(
    `SELECT id, role, data, created_at, input_tokens, output_tokens, request_chars, storage_note
       FROM messages WHERE conversation_id = ? ORDER BY id`,
    [conversationId],
  );
}

/** The full history with row ids and what was left out, for show-conversation. */
export async function loadHistory(conversationId: string): Promise<History> {
  return readHistory(await loadRows(conversationId));
}

/** Up to `limit` rows older than row `beforeId`, newest first: how load-context.ts reads backwards. */
export async function loadRowsBefore(
  conversationId: string,
  beforeId: number,
  limit: number,
): Promise<StoredRow[]> {
  return query<StoredRow[]>(
    'SELECT id, role, data FROM messages WHERE conversation_id = ? AND id < ? ORDER BY id DESC LIMIT ?',
    [conversationId, beforeId, limit],
  );
}

/** Says which stored messages were left out and why; they stay in the database for a person to inspect. */
export function warnDamaged(conversationId: string, damaged: Damage[]): void {
  const list = damaged.map((d) => `#${d.id} (${d.reason})`).join(', ');
  console.error(
    dim(
      `warning: conversation ${conversationId}: left out damaged messages ${printable(list, { singleLine: true })}`,
      process.stderr,
    ),
  );
}

// ---------------------------------------------------------------------------------------------------
// Listing and deleting: the operator's tools (show-conversation, forget, prune) see every customer's.

/** The number of messages of conversation `c`, as a subquery. */
const MESSAGE_COUNT = '(SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id)';

export interface ConversationSummary {
  id: string;
  customer_email: string;
  created_at: Date;
  updated_at: Date;
  messages: number;
}

export async function listConversations(
  limit = 20,
): Promise<Array<ConversationSummary & { first_question: string | null }>> {
  return query(
    `SELECT c.id, cu.email AS customer_email, c.created_at, c.updated_at, ${MESSAGE_COUNT} AS messages,
            (SELECT JSON_UNQUOTE(JSON_EXTRACT(m.data, '$.content')) FROM messages m
              WHERE m.conversation_id = c.id AND m.role = 'user' ORDER BY m.id LIMIT 1) AS first_question
       FROM conversations c JOIN customers cu ON cu.id = c.customer_id
      ORDER BY c.updated_at DESC, c.id LIMIT ?`,
    [limit],
  );
}

/** One conversation's summary, whoever it belongs to; undefined if there is none. */
export async function describeConversation(
  id: string,
): Promise<(ConversationSummary & { customer_name: string }) | undefined> {
  const [row] = await query<Array<ConversationSummary & { customer_name: string }>>(
    `SELECT c.id, cu.email AS customer_email, cu.name AS customer_name, c.created_at, c.updated_at, ${MESSAGE_COUNT} AS messages
       FROM conversations c JOIN customers cu ON cu.id = c.customer_id WHERE c.id = ?`,
    [id],
  );
  return row;
}

/** The ids of every conversation of one customer. */
export async function conversationsOf(customerId: number): Promise<string[]> {
  const rows = await query<Array<{ id: string }>>(
    'SELECT id FROM conversations WHERE customer_id = ? ORDER BY created_at',
    [customerId],
  );
  return rows.map((row) => row.id);
}

/** Conversations not updated for `days` days, oldest first. */
export async function staleConversations(days: number): Promise<ConversationSummary[]> {
  return query<ConversationSummary[]>(
    `SELECT c.id, cu.email AS customer_email, c.created_at, c.updated_at, ${MESSAGE_COUNT} AS messages
       FROM conversations c JOIN customers cu ON cu.id = c.customer_id
      WHERE c.updated_at < NOW(3) - INTERVAL ? DAY ORDER BY c.updated_at`,
    [days],
  );
}

/**
 * Deletes a conversation and its messages (ON DELETE CASCADE); with `staleDays`, only if it is still
 * unused for that long (a chat may have resumed it since it was listed). Returns whether a row went.
 */
export async function deleteConversation(id: string, staleDays?: number): Promise<boolean> {
  const result = await query<ResultSetHeader>(
    staleDays === undefined
      ? 'DELETE FROM conversations WHERE id = ?'
      : 'DELETE FROM conversations WHERE id = ? AND updated_at < NOW(3) - INTERVAL ? DAY',
    staleDays === undefined ? [id] : [id, staleDays],
  );
  return result.affectedRows > 0;
}
