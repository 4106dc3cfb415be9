// `npm run eval` stopped (issue 42, item 6): Ctrl-C leaves calmly with its scratch databases dropped; kill -9 leaves no sitting calling the model, and the next run drops what it left, saying so; only a dead process's databases on this machine are dropped.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbSettings, ROOT_DIR } from '../../../../shared/config.ts';
import { connectionOptions } from '../../../../shared/db.ts';
import {
  createScratchDatabase,
  type ScratchDatabase,
} from '../../../../shared/testing/database.ts';
import { startFakeProvider } from '../../../../shared/testing/fake-provider.ts';
import { runInProcess } from '../../../../shared/testing/run-in-process.ts';
import { collect, startScript } from '../../../../shared/testing/run-script.ts';
import { waitUntil } from '../../../../shared/testing/wait-until.ts';
import { ScratchDatabases } from '../../eval/trial.ts';
import { carefulModel } from './scripted-models.ts';

const EVAL = 'part-06/going-further/eval.ts';
let named: ScratchDatabase; // what DB_NAME names: never touched by the eval
let admin: mysql.Connection;
let dir: string;

beforeAll(async () => {
  named = await createScratchDatabase({ use: false });
  admin = await mysql.createConnection(connectionOptions(dbSettings(process.env)));
  dir = mkdtempSync(path.join(os.tmpdir(), 'nimbus-eval-stopped-'));
});
afterAll(async () => {
  await admin.end();
  await named.drop();
  rmSync(dir, { recursive: true, force: true });
});

/** The databases whose names start with `prefix` (underscores matched as themselves). */
async function databasesLike(prefix: string): Promise<string[]> {
  const [rows] = await admin.query<mysql.RowDataPacket[]>(
    'SELECT schema_name AS name FROM information_schema.schemata WHERE schema_name LIKE ?',
    [`${prefix.replaceAll('_', '\\_')}%`],
  );
  return rows.map((row) => String(row.name)).sort();
}

/** The eval's scratch databases made by the process `pid` (their names say which process made them). */
async function scratchOf(pid: number): Promise<string[]> {
  return (await databasesLike('nimbus_eval_')).filter((name) =>
    new RegExp(`^nimbus_eval_[0-9a-f]+_${pid}_[0-9a-f]+$`).test(name),
  );
}

/** Whether a process is running: one that ended but was not reaped yet (a zombie) is not. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // /proc/<pid>/stat: "pid (name) state …"; Z is a zombie.
    return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true; // no /proc here: kill(0) answered
  }
}

/** A pid no process has any more: a process that started and ended. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => child.on('exit', resolve));
  return child.pid!;
}

describe('Ctrl-C during npm run eval, sent to the whole process group as a terminal sends it', () => {
  /** Runs `--only=follow-up --trials=N`, presses Ctrl-C once the first sitting asks the model, and checks the leave. */
  async function stoppedRun(trials: number) {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const fake = await startFakeProvider({
      fallback: (view) => ({ ...carefulModel(view), gate: held }),
    });
    // A process group of its own, so the test can press Ctrl-C for the eval and its sitting at once.
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', path.resolve(ROOT_DIR, EVAL), '--only=follow-up', `--trials=${trials}`],
      {
        cwd: ROOT_DIR,
        env: {
          ...process.env,
          ...fake.env('gemini'),
          DB_NAME: named.name,
          LOG_DIR: path.join(dir, 'logs'),
          NO_COLOR: '1',
        },
        detached: true,
      },
    );
    const done = collect(child);
    try {
      await fake.waitForChat(1); // the trial's sitting is asking the model
      expect((await scratchOf(child.pid!)).length).toBe(2); // the template and the trial's copy
      process.kill(-child.pid!, 'SIGINT');
      const result = await done;
      expect(result.code).toBe(130);
      expect(result.stderr).toContain('Stopped: the scratch database was dropped.');
      expect(result.stderr).not.toContain('Unexpected error');
      expect(result.stderr).not.toContain('DEBUG=1');
      expect(result.stdout).toBe(''); // no table or report of a run that was stopped
      expect(await scratchOf(child.pid!)).toEqual([]);
      expect(fake.chats()).toHaveLength(1);
    } finally {
      if (child.exitCode === null) process.kill(-child.pid!, 'SIGKILL');
      release();
      await fake.close();
    }
  }

  it('with a trial still to come: "Stopped", exit 130, no "Unexpected error", no trial started after it, its scratch databases dropped', async () => {
    await stoppedRun(2);
  });

  it('in the last trial: the same, and no table or report of the stopped run', async () => {
    await stoppedRun(1);
  });
});

describe('kill -9 of npm run eval', () => {
  it('its sitting stops calling the model, and the next run drops the databases it left, saying so', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const fake = await startFakeProvider({
      fallback: (view) => ({ ...carefulModel(view), gate: held }),
    });
    const env = { ...fake.env('gemini'), DB_NAME: named.name, LOG_DIR: path.join(dir, 'logs') };
    const killed = startScript(EVAL, ['--only=follow-up', '--trials=1'], { env });
    const done = collect(killed);
    try {
      await fake.waitForChat(1); // the sitting (a question of two turns) is asking the model
      const [sitting] = execFileSync('ps', ['-o', 'pid=', '--ppid', String(killed.pid)], {
        encoding: 'utf8',
      })
        .trim()
        .split(/\s+/)
        .map(Number);
      expect(sitting).toBeGreaterThan(0);
      killed.kill('SIGKILL');
      expect((await done).signal).toBe('SIGKILL');
      const left = await scratchOf(killed.pid!);
      expect(left.length).toBe(2);

      // The next run (in-process; its provider refuses the key, so it ends at its first trial).
      const refusing = await startFakeProvider({
        fallback: { error: { status: 401, message: 'API key not valid.' } },
      });
      try {
        const next = await runInProcess(EVAL, ['--only=order-status', '--trials=1'], {
          env: { ...refusing.env('gemini'), DB_NAME: named.name, LOG_DIR: path.join(dir, 'logs') },
        });
        expect(next.code).toBe(1);
        const said =
          /^Dropped 2 scratch databases an earlier eval left when it was killed: (.+)\.$/m.exec(
            next.stderr,
          );
        expect(said?.[1].split(', ').sort(), next.stderr).toEqual(left);
      } finally {
        await refusing.close();
      }
      expect(await scratchOf(killed.pid!)).toEqual([]);

      // Its sitting saw its input close (the eval gone) and stopped: it asks the model nothing more,
      // even once the model would answer.
      await waitUntil('the sitting has stopped', () => !alive(sitting));
      release();
      expect(fake.chats()).toHaveLength(1);
      expect(fake.chats()[0].aborted).toBe(true);
    } finally {
      release();
      await fake.close();
    }
  });
});

describe('the databases an earlier eval left (ScratchDatabases.dropAbandoned)', () => {
  it("drops those of a dead process of this machine, and names them; a live process's and another machine's stay", async () => {
    // A prefix of this test's own: no other eval, here or in another test file, sees these.
    const prefix = `nimbus_evaltest_${randomBytes(3).toString('hex')}_`;
    const databases = new ScratchDatabases(admin, prefix);
    const mine = await databases.create(); // this process's, alive: <prefix><machine>_<pid>_<hex>
    const machine = new RegExp(`^${prefix}([0-9a-f]+)_${process.pid}_[0-9a-f]+$`).exec(mine)![1];
    const dead = await deadPid();
    const names = {
      dead: `${prefix}${machine}_${dead}_0badc0de`,
      live: `${prefix}${machine}_${process.ppid}_0badc0de`,
      elsewhere: `${prefix}${machine === 'ffffff' ? 'eeeeee' : 'ffffff'}_${dead}_0badc0de`,
    };
    try {
      for (const name of Object.values(names)) await admin.query(`CREATE DATABASE \`${name}\``);
      expect(await databases.dropAbandoned()).toEqual([names.dead]);
      expect(await databasesLike(prefix)).toEqual([mine, names.live, names.elsewhere].sort());
    } finally {
      for (const name of [mine, ...Object.values(names)])
        await admin.query(`DROP DATABASE IF EXISTS \`${name}\``);
    }
  });
});
