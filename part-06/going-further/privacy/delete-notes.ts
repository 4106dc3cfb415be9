// Going further: deleting customer notes everywhere they live: their rows, and the trace lines of the questions that wrote them.
//
// A note's words reach logs/ in one place: the trace of each question that wrote it (the customer's
// question, the remember_note call, the answer). Recall and every other note tool name notes by id
// only. So deleting a note deletes, from the customer's trace files, every line of each question in
// which remember_note returned its id.
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  openSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { query } from '../../../shared/db.ts';
import { conversationTraceFile } from '../../trace.ts';
import { deleteNotes, type DeletedNote } from '../notes/notes-queries.ts';

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
  return [...ids].map((id) => conversationTraceFile(logDir, id));
}

/** Removes from one trace file every line of each question in which remember_note returned one of `noteIds`. */
function dropQuestionsThatWrote(file: string, noteIds: Set<number>): void {
  const text = readOwnFile(file);
  if (text === undefined) return;
  const lines = text.split('\n');
  const questions = new Set(
    lines.filter((line) => wroteNote(line, noteIds)).flatMap((line) => questionsOf(line)),
  );
  if (questions.size === 0) return;
  const kept = lines.filter((line) => !questionsOf(line).some((q) => questions.has(q)));
  // Nothing left but the final newline: no file at all, rather than an empty one to wonder about.
  if (kept.every((line) => line === '')) return unlinkSync(file);
  // Written beside it ('wx': a new file, never through a link), then renamed over it: a reader sees
  // the old file or the new one, never half. The trace writer opens the file by name for every line,
  // so a line another process appends at this very moment may be lost with the old file; a deleted
  // line never comes back.
  const next = `${file}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(next, kept.join('\n'), { mode: 0o600, flag: 'wx' });
  renameSync(next, file);
}

/** A trace file's text; undefined if there is none, or if what is there is a link or not a file: not ours to read or rewrite. */
function readOwnFile(file: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ELOOP') return undefined;
    throw error;
  }
  try {
    return fstatSync(fd).isFile() ? readFileSync(fd, 'utf8') : undefined;
  } finally {
    closeSync(fd);
  }
}

/**
 * Is this line remember_note's result for one of these notes (a new one, or one said again)? A line
 * can be damaged: cut short by a crash or a full disk, with the next event glued onto it. Every event
 * starts with `{"ts":"`, which cannot occur inside a JSON string (its quotes would be escaped), so the
 * events glued after the damage are found from there.
 */
function wroteNote(line: string, noteIds: Set<number>): boolean {
  return eventsIn(line).some(
    (event) =>
      event.type === 'tool_result' &&
      event.name === 'remember_note' &&
      noteIds.has(event.result?.note_id),
  );
}

/** The whole events of one line: the line itself, or if it does not parse, each event glued inside it. */
function eventsIn(line: string): Array<Record<string, any>> {
  const whole = parsed(line);
  if (whole) return [whole];
  const starts = [...line.matchAll(/\{"ts":"/g)].map((match) => match.index);
  return starts.flatMap((start) => parsed(line.slice(start)) ?? []);
}

function parsed(text: string): Record<string, any> | undefined {
  try {
    const value = JSON.parse(text);
    return value && typeof value === 'object' ? value : undefined;
  } catch {
    return undefined; // the empty last line, or a damaged part
  }
}

/** The questions (trace ids) a line belongs to: more than one when events were glued; found by pattern, so a damaged part counts too. */
function questionsOf(line: string): string[] {
  return [...line.matchAll(/"trace":"([0-9a-f]+)"/g)].map((match) => match[1]);
}
