// Conversation memory in MySQL: conversations, their messages in order, and the plain store the agent uses.
import { randomBytes } from 'node:crypto';
import type { PoolConnection, RowDataPacket } from 'mysql2/promise';
import { query, withTransaction } from '../shared/db.ts';
import type { Message, SystemMessage, Usage } from '../shared/llm/index.ts';
import { buildContext, type Context, type MemoryBudget } from './context.ts';

/** A stored message: anything but the system prompt, which is added fresh to every request. */
export type StoredMessage = Exclude<Message, SystemMessage>;

/**
 * `id`: 16 random bytes as 32 hex characters, unguessable, unlike an auto-increment number. `customerId`:
 * only they may continue it. `saved`: false until its first step is saved, when its row is created.
 */
export interface Conversation {
  id: string;
  customerId: number;
  saved: boolean;
}

export function newConversation(customerId: number): Conversation {
  return { id: randomBytes(16).toString('hex'), customerId, saved: false };
}

/** The customer's own conversation with this id. Another customer's is "not found", like a missing one. */
export async function findConversation(id: string, customerId: number) {
  const sql = 'SELECT 1 FROM conversations WHERE id = ? AND customer_id = ?';
  const found = (await query<unknown[]>(sql, [id, customerId])).length > 0;
  return found ? { id, customerId, saved: true } : undefined;
}

/** One message to save, with the tokens of the model call that wrote it (assistant messages only). */
export interface MessageToSave {
  message: StoredMessage;
  cost?: Usage;
}

/** Where the agent keeps a conversation: the agent is given its store, so another can take its place. */
export interface ConversationStore {
  /** The earlier turns to send with `question` (a store may add reference material for it too). */
  loadContext(conversation: Conversation, question: string): Promise<Context>;
  saveStep(conversation: Conversation, step: MessageToSave[]): Promise<void>;
}

/** The plain store: read every message, keep what fits the budget; save a step in one transaction. */
export function plainStore(budget: MemoryBudget): ConversationStore {
  return {
    loadContext: async (conversation) => buildContext(await loadMessages(conversation.id), budget),
    saveStep: saveMessages,
  };
}

/** Every message of the conversation, in order. */
export async function loadMessages(conversationId: string): Promise<Message[]> {
  const rows = await query<Array<{ data: unknown }>>(
    'SELECT data FROM messages WHERE conversation_id = ? ORDER BY seq',
    [conversationId],
  );
  // mysql2 parses a JSON column into an object; MariaDB stores JSON as text, which some versions return.
  return rows.map((row) => (typeof row.data === 'string' ? JSON.parse(row.data) : row.data));
}

/**
 * Saves messages in one transaction: all of them or none, so a tool call is always stored with its
 * result. They take the next numbers in the conversation (seq). The first save creates its row.
 */
export async function saveMessages(
  conversation: Conversation,
  messages: MessageToSave[],
): Promise<void> {
  await withTransaction(async (db) => {
    await db.query(
      'INSERT INTO conversations (id, customer_id) VALUES (?, ?) ON DUPLICATE KEY UPDATE updated_at = NOW(3)',
      [conversation.id, conversation.customerId],
    );
    // FOR UPDATE: a second writer waits here until this one commits, then counts on from its messages.
    const [[{ last }]] = await db.query<Array<{ last: number } & RowDataPacket>>(
      'SELECT COALESCE(MAX(seq), 0) AS last FROM messages WHERE conversation_id = ? FOR UPDATE',
      [conversation.id],
    );
    await insertMessages(db, conversation.id, last + 1, messages);
  });
  conversation.saved = true;
}

/** Inserts messages numbered from `firstSeq`, in one statement: `VALUES ?` with rows is one round trip. */
export async function insertMessages(
  db: PoolConnection,
  conversationId: string,
  firstSeq: number,
  messages: Array<MessageToSave & { note?: string }>,
): Promise<void> {
  const rows = messages.map(({ message, cost, note }, i) => [
    conversationId,
    firstSeq + i,
    message.role,
    JSON.stringify(message),
    cost?.input_tokens ?? null,
    cost?.output_tokens ?? null,
    note ?? null,
  ]);
  await db.query(
    `INSERT INTO messages (conversation_id, seq, role, data, input_tokens, output_tokens, storage_note)
     VALUES ?`,
    [rows],
  );
}
