// Conversation memory in MySQL: start a conversation, save each turn whole, load what the next question needs.
import { randomBytes } from 'node:crypto';
import type { ResultSetHeader } from 'mysql2';
import { dim, UsageError } from '../shared/cli.ts';
import { DatabaseError, query, withTransaction } from '../shared/db.ts';
import type { Message, SystemMessage } from '../shared/llm/index.ts';
import { buildContext, MEMORY_MAX_CHARS, MEMORY_RECENT_TURNS, turnSize, type Context } from './context.ts';
import { readHistory, type Damage, type History, type StoredRow } from './stored-history.ts';

/** A stored message: anything but the system prompt, which is added fresh to every request. */
export type StoredMessage = Exclude<Message, SystemMessage>;

// ---------------------------------------------------------------------------------------------------
// Conversations

/** 16 random bytes as 32 lowercase hex characters: unguessable, unlike an auto-increment number. */
function newConversationId(): string {
  return randomBytes(16).toString('hex');
}

/** Checks an id typed by a user (--resume=, --conversation=, ...) before it goes anywhere near the database. */
export function parseConversationId(value: string, where: string): string {
  if (!/^[0-9a-f]{32}$/.test(value)) {
    throw new UsageError(`${where} needs a conversation id: 32 lowercase hex characters (got "${value}").`);
  }
  return value;
}

export async function newConversation(): Promise<string> {
  const id = newConversationId();
  await query('INSERT INTO conversations (id) VALUES (?)', [id]);
  return id;
}

export async function conversationExists(id: string): Promise<boolean> {
  const rows = await query<unknown[]>('SELECT 1 FROM conversations WHERE id = ?', [id]);
  return rows.length > 0;
}

// ---------------------------------------------------------------------------------------------------
// Saving

/**
 * Saves one turn in one transaction: the updated_at bump and a single multi-row INSERT. A crash at any
 * moment leaves the whole turn or none of it, so stored history always reads question → answer.
 */
export async function saveMessages(conversationId: string, messages: StoredMessage[]): Promise<void> {
  if (messages.length === 0) return;
  await withTransaction(async (db) => {
    // The UPDATE comes first because it locks the conversation's row until we commit: a second process
    // saving to the same conversation waits here, so two turns can never interleave their messages.
    const [update] = await db.query<ResultSetHeader>('UPDATE conversations SET updated_at = NOW(3) WHERE id = ?', [conversationId]);
    if (update.affectedRows === 0) {
      throw new DatabaseError(`Conversation ${conversationId} no longer exists (was it deleted?), so this turn was not saved.`);
    }
    // `VALUES ?` with an array of rows becomes one INSERT of all rows: one round trip.
    const rows = messages.map((message) => [conversationId, message.role, JSON.stringify(message)]);
    await db.query('INSERT INTO messages (conversation_id, role, data) VALUES ?', [rows]);
  });
}

// ---------------------------------------------------------------------------------------------------
// Loading

/** Every message of the conversation, in order, damaged rows left out (and reported). */
export async function loadMessages(conversationId: string, onDamaged = warnDamaged): Promise<Message[]> {
  const history = await loadHistory(conversationId);
  if (history.damaged.length) onDamaged(conversationId, history.damaged);
  return history.messages;
}

/** The full history with row ids and what was left out, for show-conversation. */
export async function loadHistory(conversationId: string): Promise<History> {
  const rows = await query<StoredRow[]>('SELECT id, role, data FROM messages WHERE conversation_id = ? ORDER BY id', [conversationId]);
  return readHistory(rows);
}

/** Rows read per query by loadContext: usually the first batch already fills the budget. */
export const LOAD_BATCH_ROWS = 128;

/**
 * What the next question needs: exactly buildContext(loadMessages(id)), without reading the whole
 * conversation. It reads newest rows first, a batch at a time, collecting whole turns, and stops as
 * soon as the turns collected exceed the budget: buildContext would drop every older turn anyway.
 * So the cost of a question stays the same at turn 10,000 as at turn 10.
 * (`dropped` in the result counts only the turns that were read.)
 */
export async function loadContext(conversationId: string, onDamaged = warnDamaged): Promise<Context> {
  const turns: Message[][] = []; // complete turns, newest first
  const damaged: Damage[] = [];
  let collecting: StoredRow[] = []; // rows of the turn being collected, oldest first
  let chars = 1; // the budget's measure of the turns collected so far (see buildContext)
  let beforeId = Number.MAX_SAFE_INTEGER;
  let reachedStart = false;

  const closeTurn = () => {
    const history = readHistory(collecting); // pairs calls with results inside this turn
    damaged.push(...history.damaged);
    collecting = [];
    if (history.messages.length === 0) return;
    chars += turnSize(history.messages, turns.length < MEMORY_RECENT_TURNS);
    turns.push(history.messages);
  };

  while (chars <= MEMORY_MAX_CHARS && !reachedStart) {
    const rows = await query<StoredRow[]>(
      'SELECT id, role, data FROM messages WHERE conversation_id = ? AND id < ? ORDER BY id DESC LIMIT ?',
      [conversationId, beforeId, LOAD_BATCH_ROWS],
    );
    reachedStart = rows.length < LOAD_BATCH_ROWS;
    for (const row of rows) {
      beforeId = row.id;
      collecting.unshift(row);
      // A valid user message starts a turn: everything collected since belongs to it.
      if (startsTurn(row)) closeTurn();
      if (chars > MEMORY_MAX_CHARS) break;
    }
  }
  // At the very start, messages before the first user message form a turn of their own.
  if (reachedStart && chars <= MEMORY_MAX_CHARS && collecting.length) closeTurn();

  if (damaged.length) onDamaged(conversationId, damaged);
  return buildContext(turns.reverse().flat());
}

function startsTurn(row: StoredRow): boolean {
  return row.role === 'user' && readHistory([row]).messages.length === 1;
}

/** Says which stored messages were left out and why; they stay in the database for a person to inspect. */
export function warnDamaged(conversationId: string, damaged: Damage[]): void {
  const list = damaged.map((d) => `#${d.id} (${d.reason})`).join(', ');
  console.error(dim(`warning: conversation ${conversationId}: left out damaged messages ${list}`, process.stderr));
}

// ---------------------------------------------------------------------------------------------------
// Listing

export interface ConversationSummary {
  id: string;
  updated_at: Date;
  messages: number;
  first_question: string | null;
}

export async function listConversations(limit = 20): Promise<ConversationSummary[]> {
  return query<ConversationSummary[]>(
    `SELECT c.id, c.updated_at,
            (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id) AS messages,
            (SELECT JSON_UNQUOTE(JSON_EXTRACT(m.data, '$.content')) FROM messages m
              WHERE m.conversation_id = c.id AND m.role = 'user' ORDER BY m.id LIMIT 1) AS first_question
       FROM conversations c ORDER BY c.updated_at DESC, c.id LIMIT ?`,
    [limit],
  );
}
