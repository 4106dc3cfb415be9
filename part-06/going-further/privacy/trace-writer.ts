// Going further: trace lines written so that an erasure is final — the core's trace (trace.ts) hands its lines here.
import { closeSync, constants, fstatSync, ftruncateSync, openSync, writeSync } from 'node:fs';
import path from 'node:path';
import { makeFolders } from '../../../shared/config.ts';
import type { TraceOptions } from '../../trace.ts';

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
