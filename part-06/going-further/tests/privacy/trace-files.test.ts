// Trace files keep whole lines, never write through a link, and never come back once deleted.
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
import { deleteTraceFile } from '../../privacy/trace-files.ts';
import { erasureSafeTraces } from '../../privacy/trace-files.ts';

let logs: string;
beforeAll(() => {
  logs = mkdtempSync(path.join(os.tmpdir(), 'nimbus-trace-files-'));
  mkdirSync(path.join(logs, 'conversations'));
});
afterAll(() => rmSync(logs, { recursive: true, force: true }));

/** The full Nimbus's writer, as its chat and ask.ts give it to every question of the process. */
const appendLines = erasureSafeTraces(() => true);
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
  return new Trace({ id, saved: true }, { logDir: logs, quiet: true, stderr, appendLines });
}

/** From now on, the warnings the trace prints: call the result to read them. */
function captureWarnings(): () => string[] {
  warnings = [];
  return () => warnings;
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

  it('keeps whole lines when the disk fills up in the middle of one', () => {
    const trace = newTrace();
    trace.event('start', { question: 'Where is order 1042?' });
    const before = statSync(trace.file).size;
    const warned = captureWarnings();
    // The most this process may write to a file, a few bytes past its end: the next line is cut
    // short there by the kernel (a short write, then EFBIG), exactly as a full disk cuts it.
    const restore = limitFileSize(before + 10);
    try {
      trace.event('tool_call', {
        step: 1,
        name: 'get_order_status',
        arguments: { order_id: 1042 },
      });
    } finally {
      restore();
    }
    trace.event('end', { answer: 'It shipped.' });

    expect(statSync(trace.file).size).toBe(before);
    expect(events(trace.file).map((event) => event.type)).toEqual(['start']);
    expect(warned()[0]).toContain('(EFBIG); carrying on without it.');
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
