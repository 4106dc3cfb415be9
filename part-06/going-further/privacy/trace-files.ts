// Everything the product does with trace files on disk — writing lines so that an erasure is final, finding, reading, rewriting and deleting them. The core's trace.ts owns a line's format and a file's name.
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  ftruncateSync,
  lstatSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import { makeFolders } from '../../../shared/config.ts';
import { conversationTraceFile, type TraceOptions } from '../../trace.ts';

type AppendLines = NonNullable<TraceOptions['appendLines']>;

/**
 * A trace file is a copy of the conversation, so it must go wherever the rows go, and never come back:
 * - lines wait while `mayWrite` says the question's lease is lost (the core's trace already holds them
 *   until the conversation has a row);
 * - a link put in the file's place is refused (O_NOFOLLOW), never written through to where it points;
 * - the file is created only by the first lines this process writes to it: gone after that, it was
 *   deleted by an erasure while the question ran, and nothing more is written;
 * - lines are appended whole or not at all (a full disk cuts them back), so no half event is left
 *   with the next one glued onto it.
 */
export function erasureSafeTraces(mayWrite: (conversationId: string) => boolean): AppendLines {
  const waiting = new Map<string, string>(); // file → lines not written yet
  const created = new Set<string>();
  const erased = new Set<string>();
  return (file, lines, conversation) => {
    if (erased.has(file)) return;
    const pending = (waiting.get(file) ?? '') + lines;
    if (!mayWrite(conversation.id)) return void waiting.set(file, pending);
    waiting.delete(file);
    makeFolders(path.dirname(file));
    // O_NONBLOCK: something other than a file at this path (a pipe nobody reads) fails instead of blocking.
    // 0o600: a trace holds a customer's questions and orders, so a new file is readable by our user only.
    const flags =
      constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW | constants.O_NONBLOCK;
    let fd: number;
    try {
      fd = openSync(file, created.has(file) ? flags : flags | constants.O_CREAT, 0o600);
    } catch (error) {
      const gone = created.has(file) && (error as NodeJS.ErrnoException).code === 'ENOENT';
      if (!gone) throw error;
      return void erased.add(file); // erased while the question ran: stop quietly
    }
    created.add(file);
    try {
      appendWhole(fd, pending);
    } finally {
      closeSync(fd);
    }
  };
}

/** Appends whole lines or nothing: a part written before the disk filled up is cut off again. */
function appendWhole(fd: number, lines: string): void {
  const size = fstatSync(fd).size;
  const bytes = Buffer.from(lines);
  try {
    for (let written = 0; written < bytes.length;) written += writeSync(fd, bytes, written);
  } catch (error) {
    ftruncateSync(fd, size);
    throw error;
  }
}

/** Deletes the trace files of these conversations; returns how many there were. */
export function deleteTraces(logDir: string, conversationIds: string[]): number {
  return conversationIds.filter((id) => deleteTraceFile(conversationTraceFile(logDir, id))).length;
}

/** Deletes one trace file; false if there was none. A link in its place goes itself: what it points to is not ours. */
export function deleteTraceFile(file: string): boolean {
  try {
    unlinkSync(file); // never follows a link
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}

/**
 * The trace files older than `cutoff` (ms) whose conversation `isGone` says no longer exists, and every
 * old per-question trace the earlier chapters' ask.ts wrote to logs/traces/ (they belong to no conversation).
 */
export async function oldOrphanTraces(
  logDir: string,
  cutoff: number,
  isGone: (conversationId: string) => Promise<boolean>,
): Promise<string[]> {
  const orphans: string[] = [];
  const conversations = path.dirname(conversationTraceFile(logDir, 'id'));
  for (const file of traceFilesIn(conversations))
    if (lstatSync(file).mtimeMs < cutoff && (await isGone(path.basename(file, '.jsonl'))))
      orphans.push(file);
  for (const file of traceFilesIn(path.join(logDir, 'traces')))
    if (lstatSync(file).mtimeMs < cutoff) orphans.push(file);
  return orphans;
}

function traceFilesIn(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => name.endsWith('.jsonl'))
    .map((name) => path.join(dir, name));
}

/**
 * Removes from one trace file every line of each question (trace id) in which an event matches
 * `wanted`: how deleting a note deletes the questions that wrote its words.
 */
export function dropQuestions(file: string, wanted: (event: TraceEvent) => boolean): void {
  const text = readOwnFile(file);
  if (text === undefined) return;
  const lines = text.split('\n');
  const questions = new Set(
    lines.filter((line) => eventsIn(line).some(wanted)).flatMap((line) => questionsOf(line)),
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

/** One line of a trace file, parsed: `type` and the event's own fields (trace.ts writes them). */
export type TraceEvent = Record<string, any>;

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
 * The whole events of one line. A line can be damaged: cut short by a crash or a full disk, with the
 * next event glued onto it. Every event starts with `{"ts":"` (trace.ts writes ts first), which cannot
 * occur inside a JSON string (its quotes would be escaped), so the events glued after the damage are
 * found from there.
 */
function eventsIn(line: string): TraceEvent[] {
  const whole = parsed(line);
  if (whole) return [whole];
  const starts = [...line.matchAll(/\{"ts":"/g)].map((match) => match.index);
  return starts.flatMap((start) => parsed(line.slice(start)) ?? []);
}

function parsed(text: string): TraceEvent | undefined {
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
