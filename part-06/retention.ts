// Deleting conversations everywhere they live: the conversations table, their messages, and their trace files.
//
// Memory is customer data. Deleting only the database rows would leave the same words in logs/, so
// every copy we make is deleted here together.
import { existsSync } from 'node:fs';
import { readdir, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { logDir } from '../shared/config.ts';
import { query } from '../shared/db.ts';
import { conversationTraceFile } from './trace.ts';

export interface Removed {
  conversationId: string;
  messages: number;
  traceFile?: string;
}

/** Deletes one conversation, its messages (ON DELETE CASCADE) and its trace file. Undefined if none existed. */
export async function forgetConversation(conversationId: string): Promise<Removed | undefined> {
  const [row] = await query<Array<{ messages: number }>>(
    'SELECT (SELECT COUNT(*) FROM messages WHERE conversation_id = c.id) AS messages FROM conversations c WHERE c.id = ?',
    [conversationId],
  );
  await query('DELETE FROM conversations WHERE id = ?', [conversationId]);
  const traceFile = await removeFile(conversationTraceFile(conversationId));
  if (!row && !traceFile) return undefined;
  return { conversationId, messages: row?.messages ?? 0, traceFile };
}

export interface PrunePlan {
  conversations: Array<{ id: string; messages: number; updated_at: Date }>;
  /** Trace files older than the limit that belong to no (remaining) conversation. */
  orphanTraces: string[];
}

/** What prune would delete: conversations not updated for `days` days, and old traces of no conversation. */
export async function planPrune(days: number): Promise<PrunePlan> {
  const conversations = await query<PrunePlan['conversations']>(
    `SELECT c.id, c.updated_at, (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id) AS messages
       FROM conversations c WHERE c.updated_at < NOW(3) - INTERVAL ? DAY ORDER BY c.updated_at`,
    [days],
  );
  const expiring = new Set(conversations.map((c) => c.id));
  const cutoff = Date.now() - days * 86_400_000;
  const orphanTraces: string[] = [];

  // Traces of conversations that no longer exist (deleted some other way).
  const conversationDir = path.dirname(conversationTraceFile('x'));
  for (const file of await listFiles(conversationDir)) {
    const id = path.basename(file, '.jsonl');
    if (expiring.has(id)) continue; // deleted with its conversation below
    const [exists] = await query<unknown[]>('SELECT 1 FROM conversations WHERE id = ?', [id]);
    if (!exists && (await stat(file)).mtimeMs < cutoff) orphanTraces.push(file);
  }
  // Per-question traces written by the earlier chapters' ask-agent.ts: they belong to no conversation.
  for (const file of await listFiles(path.join(logDir(), 'traces'))) {
    if ((await stat(file)).mtimeMs < cutoff) orphanTraces.push(file);
  }
  return { conversations, orphanTraces };
}

/** Carries out a plan. Each conversation is deleted only if it is still unused (a chat may have resumed it). */
export async function prune(plan: PrunePlan, days: number): Promise<Removed[]> {
  const removed: Removed[] = [];
  for (const conversation of plan.conversations) {
    const result = await query<{ affectedRows: number }>(
      'DELETE FROM conversations WHERE id = ? AND updated_at < NOW(3) - INTERVAL ? DAY',
      [conversation.id, days],
    );
    if (result.affectedRows === 0) continue;
    const traceFile = await removeFile(conversationTraceFile(conversation.id));
    removed.push({ conversationId: conversation.id, messages: conversation.messages, traceFile });
  }
  for (const file of plan.orphanTraces) await removeFile(file);
  return removed;
}

async function listFiles(dir: string): Promise<string[]> {
  if (!existsSync(dir)) return [];
  return (await readdir(dir)).filter((name) => name.endsWith('.jsonl')).map((name) => path.join(dir, name));
}

/** Deletes a file if it exists; returns its path when it did. */
async function removeFile(file: string): Promise<string | undefined> {
  try {
    await unlink(file);
    return file;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
