// Trace files as the full Nimbus writes them (the core's Trace): never written through a link, never back once deleted, and a line a full disk cut short hides nothing from forgetting.
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Trace } from '../../../trace.ts';
import { deleteTraceFile, dropQuestions } from '../../privacy/trace-files.ts';

let logs: string;
beforeAll(() => {
  logs = mkdtempSync(path.join(os.tmpdir(), 'nimbus-trace-files-'));
  mkdirSync(path.join(logs, 'conversations'));
});
afterAll(() => rmSync(logs, { recursive: true, force: true }));

/** The warnings traces print on stderr (and carry on), a line each. */
let warnings: string[] = [];
const stderr = new Writable({
  write(chunk, _encoding, done) {
    warnings.push(...chunk.toString().split('\n').filter(Boolean));
    done();
  },
});

let next = 0;
/** A trace of a conversation that has something saved, so every event goes to its file at once. */
function newTrace(id = (++next).toString(16).padStart(32, 'a')): Trace {
  return new Trace({ id, saved: true }, { logDir: logs, quiet: true, stderr });
}

/** From now on, the warnings the trace prints: call the result to read them. */
function captureWarnings(): () => string[] {
  warnings = [];
  return () => warnings;
}

function isJson(line: string): boolean {
  try {
    JSON.parse(line);
    return true;
  } catch {
    return false;
  }
}

/** Every line of a file, each checked to be one whole JSON event. */
function events(file: string): Array<Record<string, unknown>> {
  const text = readFileSync(file, 'utf8');
  expect(text.endsWith('\n')).toBe(true);
  return text
    .slice(0, -1)
    .split('\n')
    .map((line) => JSON.parse(line));
}

describe('a trace file', () => {
  it('is never written through a link put in its place; deleting it deletes the link, not what it points to', () => {
    const trace = newTrace();
    const elsewhere = path.join(logs, 'elsewhere.txt');
    writeFileSync(elsewhere, 'not ours\n');
    symlinkSync(elsewhere, trace.file);
    const warned = captureWarnings();

    trace.event('start', { question: 'My card ends in 4242.' });
    trace.event('end', { answer: 'Noted.' });

    expect(readFileSync(elsewhere, 'utf8')).toBe('not ours\n');
    expect(warned()).toHaveLength(1);
    expect(warned()[0]).toContain(`could not write the trace ${trace.file} (ELOOP)`);
    expect(deleteTraceFile(trace.file)).toBe(true);
    expect(() => lstatSync(trace.file)).toThrow(/ENOENT/);
    expect(readFileSync(elsewhere, 'utf8')).toBe('not ours\n');
  });

  it('cut short by a full disk in the middle of a line, still gives up every event after it to forgetting, and keeps the other questions', () => {
    const other = newTrace();
    other.event('start', { question: 'Hello?' });
    const trace = newTrace(path.basename(other.file, '.jsonl')); // the next question, same file
    trace.event('start', { question: 'My gate code is 4711.' });
    const before = statSync(trace.file).size;
    // The most this process may write to a file, a few bytes past its end: the next line is cut
    // short there by the kernel (a short write), exactly as a full disk cuts it.
    const restore = limitFileSize(before + 10);
    try {
      trace.event('tool_call', { step: 1, name: 'remember_note', arguments: { text: '4711' } });
    } finally {
      restore();
    }
    trace.event('end', { answer: 'Noted: gate code 4711.' });

    // The cut line has the next event glued onto it: the question's words are still in the file…
    const lines = readFileSync(trace.file, 'utf8').split('\n');
    expect(lines.map((line) => (line ? isJson(line) : 'empty'))).toEqual([
      true,
      true,
      false,
      'empty',
    ]);
    expect(lines[2]).toContain('Noted: gate code 4711.');
    // …and forgetting the question (what deleting a note does) finds every event of it, the glued one too.
    dropQuestions(trace.file, (event) => event.trace === trace.id && event.type === 'end');
    expect(readFileSync(trace.file, 'utf8')).not.toContain('4711');
    expect(events(trace.file).map((event) => event.question)).toEqual(['Hello?']);
  });

  it('is not created again once deleted: an erasure deleted it while the question ran', () => {
    const trace = newTrace();
    trace.event('start', { question: 'Please forget everything about me.' });
    expect(existsSync(trace.file)).toBe(true);
    const warned = captureWarnings();

    unlinkSync(trace.file);
    trace.event('tool_call', { step: 1, name: 'forget_everything', arguments: {} });
    trace.event('end', { answer: 'Done.' });

    expect(existsSync(trace.file)).toBe(false);
    expect(warned()).toEqual([]); // nothing went wrong: the trace stops, quietly
  });

  it('is created by the first line a question writes, and appended to by the next questions', () => {
    const first = newTrace();
    first.event('start', { question: 'Hello?' });
    const second = newTrace(path.basename(first.file, '.jsonl'));
    second.event('start', { question: 'Still there?' });
    expect(events(first.file).map((event) => event.question)).toEqual(['Hello?', 'Still there?']);
    expect(statSync(first.file).mode & 0o777).toBe(0o600);
  });
});

/**
 * Sets this process's own limit on the size of a file it writes (RLIMIT_FSIZE, soft limit only; Node
 * ignores SIGXFSZ, so a write past it fails with EFBIG), and returns what puts the limit back. prlimit
 * is part of util-linux.
 */
function limitFileSize(bytes: number): () => void {
  const pid = String(process.pid);
  const soft = execFileSync('prlimit', ['--pid', pid, '--fsize', '--output=SOFT', '--noheadings'])
    .toString()
    .trim();
  execFileSync('prlimit', ['--pid', pid, `--fsize=${bytes}:`]);
  return () => execFileSync('prlimit', ['--pid', pid, `--fsize=${soft}:`]);
}
