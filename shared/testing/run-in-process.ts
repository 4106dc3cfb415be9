// Runs an entry script's main function in this process, with its own arguments, environment, folder and streams: runScript's answer without starting a process.
import { EventEmitter } from 'node:events';
import path from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { runWith, scriptIo, type RunMainOptions, type ScriptIo } from '../cli.ts';
import { ROOT_DIR } from '../config.ts';
import type { RunOptions, ScriptResult } from './run-script.ts';

/** What an entry script exports to be run in-process (its last line runs it when it is the process's entry). */
interface Entry extends RunMainOptions {
  main: (io: ScriptIo) => Promise<number | void>;
  usage: string | ((io: ScriptIo) => string);
}

/**
 * One script at a time: each has a database of its own (runWith hands it down), but they share what
 * belongs to the process, such as its Ctrl-C handlers and the leases it holds.
 */
let queue: Promise<unknown> = Promise.resolve();

/**
 * Runs `script` as runScript does — arguments, environment (over this process's), folder, piped input —
 * and returns its exit code and what it printed. Only for what needs no process of its own: signals,
 * a terminal, npm's variables and a frozen server's effect on exiting are tested with runScript.
 */
export function runInProcess(
  script: string,
  args: string[] = [],
  options: RunOptions & InProcessOptions = {},
): Promise<ScriptResult> {
  const run = queue.then(() => runNow(script, args, options));
  queue = run.catch(() => {});
  return run;
}

export interface InProcessOptions {
  /** Both streams into `stdout`, in the order they were written, as a terminal shows them (sample sessions). */
  merged?: boolean;
  /** Where the script's Ctrl-C comes from: emit 'SIGINT' on it to press Ctrl-C (default: none comes). */
  signals?: EventEmitter;
}

async function runNow(
  script: string,
  args: string[],
  options: RunOptions & InProcessOptions,
): Promise<ScriptResult> {
  const file = path.resolve(ROOT_DIR, script);
  const entry = (await import(pathToFileURL(file).href)) as Partial<Entry>;
  if (!entry.main || !entry.usage)
    throw new Error(`${script} exports no main and usage, so it can only run as a process.`);
  const stdout = capture();
  const stderr = options.merged ? stdout : capture();
  const stdin = new PassThrough();
  stdin.end(options.input ?? '');
  const io: ScriptIo = scriptIo({
    args,
    env: { ...process.env, NO_COLOR: '1', ...options.env },
    cwd: options.cwd ?? ROOT_DIR,
    entry: file,
    stdin,
    stdout: stdout.stream,
    stderr: stderr.stream,
    signals: options.signals ?? new EventEmitter(),
  });
  const code = await runWith(entry.main, entry.usage, io, { openDatabase: entry.openDatabase });
  return {
    code,
    signal: null,
    stdout: stdout.text(),
    stderr: options.merged ? '' : stderr.text(),
  };
}

/** A stream that keeps what is written to it, as text. */
function capture(): { stream: Writable; text: () => string } {
  let text = '';
  const stream = new Writable({
    write(chunk, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  return { stream, text: () => text };
}
