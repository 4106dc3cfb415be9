// Runs a learner's entry script as a real subprocess, the way a learner runs it, and captures its output.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import path from 'node:path';
import { ROOT_DIR } from '../config.ts';

export interface ScriptResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  env?: Record<string, string>;
  /** Text piped to stdin (then stdin is closed). */
  input?: string;
  /** Working directory; the default is the repo root. */
  cwd?: string;
}

/**
 * Starts `node --import tsx <script>` directly (not through npx or the tsx CLI, which would put a second
 * process in between), so signals sent by a test reach the script itself.
 */
export function startScript(
  script: string,
  args: string[] = [],
  options: RunOptions = {},
): ChildProcessWithoutNullStreams {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.resolve(ROOT_DIR, script), ...args],
    {
      cwd: options.cwd ?? ROOT_DIR,
      env: { ...process.env, NO_COLOR: '1', ...options.env },
    },
  );
  running.add(child);
  child.on('exit', () => running.delete(child));
  return child;
}

/** Scripts still running. A test that fails or times out must not leave one behind, spinning on a core. */
const running = new Set<ChildProcessWithoutNullStreams>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export function runScript(
  script: string,
  args: string[] = [],
  options: RunOptions = {},
): Promise<ScriptResult> {
  const child = startScript(script, args, options);
  if (options.input !== undefined) child.stdin.end(options.input);
  else child.stdin.end();
  return collect(child);
}

/** Waits for the process to end and returns everything it printed. */
export function collect(child: ChildProcessWithoutNullStreams): Promise<ScriptResult> {
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** Resolves once the process has printed `text` (or something `text` matches) on stdout or stderr. */
export function waitForOutput(
  child: ChildProcessWithoutNullStreams,
  text: string | RegExp,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      if (typeof text === 'string' ? seen.includes(text) : text.test(seen)) {
        child.stdout.off('data', onData);
        child.stderr.off('data', onData);
        resolve();
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('close', () =>
      reject(new Error(`process ended before printing ${String(text)}:\n${seen}`)),
    );
  });
}
