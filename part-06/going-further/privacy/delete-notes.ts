// Deleting customer notes everywhere they live: their rows, and the trace lines of the questions that wrote them.
//
// A note's words reach logs/ in one place: the trace of each question that wrote it (the customer's
// question, the remember_note call, the answer). Recall and every other note tool name notes by id
// only. So deleting a note deletes, from the customer's trace files, every line of each question in
// which remember_note returned its id.
import { query } from '../../../shared/db.ts';
import { conversationTraceFile } from '../../trace.ts';
import { deleteNotes, type DeletedNote } from '../notes/notes-queries.ts';
import { dropQuestions, type TraceEvent } from './trace-files.ts';

/**
 * Deletes this customer's notes (the listed ids, or all; with `staleDays`, only those still stale),
 * and the trace lines of the questions that wrote them. Returns the notes deleted.
 */
export async function forgetNotes(
  logDir: string,
  customerId: number,
  which: number[] | 'all',
  options: Parameters<typeof deleteNotes>[2] = {},
): Promise<DeletedNote[]> {
  const deleted = await deleteNotes(customerId, which, options);
  if (deleted.length === 0) return deleted;
  const ids = new Set(deleted.map((note) => note.id));
  // remember_note's result names the note it wrote, a new one or one said again.
  const wroteOne = (event: TraceEvent) =>
    event.type === 'tool_result' &&
    event.name === 'remember_note' &&
    ids.has(event.result?.note_id);
  for (const file of await traceFilesOf(logDir, customerId, deleted)) dropQuestions(file, wroteOne);
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
  return [...ids].map((id) => conversationTraceFile(logDir, id));
}
