// How eval.ts runs a sitting: sitting-process.ts in a process of its own, whose DB_NAME names the trial's scratch database (the database pool reads it once, at start).
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ROOT_DIR } from '../../../shared/config.ts';
import type { SittingResult } from './sitting.ts';
import type { SittingRunner } from './trial.ts';

const SITTING_PROCESS = fileURLToPath(new URL('./sitting-process.ts', import.meta.url));

/**
 * A runner that starts one process per sitting, as a learner's later `npm run chat -- --resume=…`
 * would: with the eval's own environment (`env`, its settings), the trial's database as DB_NAME, and
 * traces written to `logDir`. `running` is told the process, for Ctrl-C to stop it.
 */
export function spawnSittings(
  env: NodeJS.ProcessEnv,
  logDir: string,
  running: (child: ChildProcess | undefined) => void,
): SittingRunner {
  return (input, database) =>
    new Promise<SittingResult>((resolve, reject) => {
      const child = spawn(process.execPath, ['--import', 'tsx', SITTING_PROCESS, '--from-eval'], {
        cwd: ROOT_DIR, // where tsx is found, wherever the eval was started from
        env: { ...env, DB_NAME: database, LOG_DIR: logDir, NO_COLOR: '1' },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      running(child);
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk) => (stdout += chunk));
      child.stderr.on('data', (chunk) => (stderr += chunk));
      // One line, and the pipe kept open: it closes when this process ends, even by kill -9, which
      // gives no time to stop the sitting; the sitting then stops itself, so none goes on calling the model.
      child.stdin.write(`${JSON.stringify(input)}\n`);
      child.stdin.on('error', () => {}); // the sitting already ended
      child.on('error', reject);
      child.on('close', (code) => {
        running(undefined);
        child.stdin.end();
        if (code === null)
          return reject(new Error('The sitting was stopped by a signal (Ctrl-C).'));
        // Its last line is its record: the turns, or the one sentence that says why there are none.
        const record = lastRecord(stdout);
        if (code === 0 && record && !('error' in record)) return resolve(record);
        if (record && 'error' in record) return reject(new Error(record.error));
        const said = stderr.trim().split('\n').at(-1);
        reject(
          new Error(said || `The sitting's process ended with ${code} and printed no record.`),
        );
      });
    });
}

function lastRecord(stdout: string): SittingResult | { error: string } | undefined {
  try {
    return JSON.parse(stdout.trim().split('\n').at(-1)!);
  } catch {
    return undefined;
  }
}
