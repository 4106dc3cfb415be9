// What the product does with trace files on disk: finding, reading, rewriting and deleting them. The core's trace.ts writes them (never bringing back a file deleted while a question ran).
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { conversationTraceFile } from '../../trace.ts';

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
