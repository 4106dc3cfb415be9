// Going further: deleting customer notes everywhere they live: their rows, and the trace lines of the questions that wrote them.
//
// A note's words reach logs/ in one place: the trace of each question that wrote it (the customer's
// question, the remember_note call, the answer). Recall and every other note tool name notes by id
// only. So deleting a note deletes, from the customer's trace files, every line of each question in
// which remember_note returned its id.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { query } from '../../shared/db.ts';
import { conversationTraceFile } from '../trace.ts';
import { deleteNotes, type DeletedNote } from './customer-notes.ts';

/**
 * Deletes this customer's notes (the listed ids, or all; with `staleDays`, only those still stale),
 * and the trace lines of the questions that wrote them. Returns the notes deleted.
 */
export async function forgetNotes(
  logDir: string,
  customerId: number,
  which: number[] | 'all',
  staleDays?: number,
): Promise<DeletedNote[]> {
  const deleted = await deleteNotes(customerId, which, staleDays);
  if (deleted.length === 0) return deleted;
  const ids = new Set(deleted.map((note) => note.id));
  for (const file of await traceFilesOf(logDir, customerId, deleted))
    dropQuestionsThatWrote(file, ids);
  return deleted;
}

/**
 * The customer's trace files: one per conversation, and the ones the notes came from (a conversation
 * whose first turn could not be saved has a trace but no row).
 */
async function traceFilesOf(
  logDir: string,
  customerId: number,
  notes: DeletedNote[],
): Promise<string[]> {
  const rows = await query<Array<{ id: string }>>(
    'SELECT id FROM conversations WHERE customer_id = ?',
    [customerId],
  );
  const ids = new Set([
    ...rows.map((row) => row.id),
    ...notes.flatMap((n) => n.conversation_id ?? []),
  ]);
  return [...ids].map((id) => conversationTraceFile(logDir, id)).filter((file) => existsSync(file));
}

/** Removes from one trace file every line of each question in which remember_note returned one of `noteIds`. */
function dropQuestionsThatWrote(file: string, noteIds: Set<number>): void {
  const lines = readFileSync(file, 'utf8').split('\n');
  const questions = new Set(
    lines.filter((line) => wroteNote(line, noteIds)).map((line) => questionOf(line)),
  );
  if (questions.size === 0) return;
  const kept = lines.filter((line) => !questions.has(questionOf(line)));
  // Nothing left but the final newline: no file at all, rather than an empty one to wonder about.
  if (kept.every((line) => line === '')) return unlinkSync(file);
  // Written beside it, then renamed over it: a reader sees the old file or the new one, never half.
  // The trace writer opens the file by name for every line, so a line another process appends at
  // this very moment may be lost with the old file; a deleted line never comes back.
  const next = `${file}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(next, kept.join('\n'), { mode: 0o600 });
  renameSync(next, file);
}

/** Is this line remember_note's result for one of these notes (a new one, or one said again)? */
function wroteNote(line: string, noteIds: Set<number>): boolean {
  try {
    const event = JSON.parse(line);
    return (
      event.type === 'tool_result' &&
      event.name === 'remember_note' &&
      noteIds.has(event.result?.note_id)
    );
  } catch {
    return false; // the empty last line, or one cut short by a crash
  }
}

/** The question (trace id) a line belongs to; found by pattern, so a line cut short by a crash is matched too. */
function questionOf(line: string): string | undefined {
  return /"trace":"([0-9a-f]+)"/.exec(line)?.[1];
}
