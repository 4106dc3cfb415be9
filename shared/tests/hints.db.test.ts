// Every command a script prints works when copied where the learner typed theirs; every script answers --help.
//
// What a hint says in each place (the repository root, the part folder, npm run) is worked out by
// commandFor and checked case by case in hints.test.ts. Here the real scripts print their hints and the
// copied commands are run: from the part folder, and once from the root. Each test has its own fake
// provider and database, so the tests run side by side.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT_DIR } from '../config.ts';
import { createScratchDatabase } from '../testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../testing/fake-provider.ts';
import { runInProcess } from '../testing/run-in-process.ts';
import { runScript, type ScriptResult } from '../testing/run-script.ts';

const PART_06 = path.join(ROOT_DIR, 'part-06');
/** For a test that runs several scripts one after another: a busy machine may slow each one down. */
const CHAIN_TIMEOUT_MS = 180_000;

/** A fake provider and an empty scratch database of the test's own, so the tests here can run side by side. */
async function own(): Promise<{
  fake: FakeProvider;
  env: Record<string, string>;
  done: () => Promise<void>;
}> {
  const fake = await startFakeProvider();
  const db = await createScratchDatabase();
  return {
    fake,
    env: { ...fake.env('gemini'), DB_NAME: db.name },
    done: async () => {
      await fake.close();
      await db.drop();
    },
  };
}

/**
 * Runs a printed command exactly as a learner would paste it, in `cwd`. `npx tsx file` is run as
 * `node --import tsx file` (what npx tsx does, without npx's second of start-up); `npm run` is run as is.
 */
function runCopied(
  command: string,
  cwd: string,
  env: Record<string, string>,
  input = '',
): Promise<ScriptResult> {
  // Words as a shell splits them: a double-quoted question is one argument, without its quotes.
  const words = [...command.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2]);
  const [program, args] =
    words[0] === 'npx' && words[1] === 'tsx'
      ? [process.execPath, ['--import', 'tsx', ...words.slice(2)]]
      : words[0] === 'npm'
        ? ['npm', words.slice(1)]
        : [undefined, []];
  if (!program) throw new Error(`not a command a learner runs: ${command}`);
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, {
      cwd,
      env: { ...process.env, NO_COLOR: '1', ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.stdin.end(input);
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** The command after `label` on one line of `output`. */
function hint(output: string, label: string): string {
  const line = output.split('\n').find((l) => l.includes(label));
  if (!line) throw new Error(`no "${label}" in:\n${output}`);
  return line.slice(line.indexOf(label) + label.length).trim();
}

describe.concurrent('hints printed in the part folder, copied and run there', () => {
  it(
    'the core viewer\'s first run of the part sets the database up, and the core chat\'s "Resume later with" resumes',
    async () => {
      const { fake, env, done } = await own();
      try {
        const missing = await runInProcess('part-06/show-conversation.ts', ['a'.repeat(32)], {
          env,
          cwd: PART_06,
        });
        // The part's own first run, beside the viewer, as typed in the part folder: it creates what is missing.
        const create = /A first run of this part \((.+?)\) creates/.exec(missing.stderr)?.[1] ?? '';
        expect(create, missing.stderr).toBe('npx tsx ask.ts "Hello"');
        const setup = await runCopied(create, PART_06, env);
        expect(setup.code, setup.stderr).toBe(0);
        fake.reply({ text: 'Started.' });
        const started = await runCopied('npx tsx chat.ts', PART_06, env, 'Hi\n');
        expect(started.stdout).toContain('Nimbus: Started.');
        const id = started.stdout.match(/New conversation ([0-9a-f]{32})/)![1];
        const resume = hint(started.stdout, 'Resume later with:');
        expect(resume).toBe(`npx tsx chat.ts --resume=${id}`);
        const again = await runCopied(resume, PART_06, env, 'exit\n');
        expect(again.code, again.stderr).toBe(0);
        expect(again.stdout).toContain(`Resuming conversation ${id}`);
      } finally {
        await done();
      }
    },
    CHAIN_TIMEOUT_MS,
  );

  it(
    'npm run chat prints an npm run hint that resumes',
    async () => {
      const { fake, env, done } = await own();
      try {
        fake.reply({ text: 'Hello!' });
        const first = await runCopied('npm run --silent chat -- --quiet', PART_06, env, 'Hi\n');
        const id = first.stdout.match(/New conversation ([0-9a-f]{32})/)![1];
        const resume = hint(first.stdout, 'Resume later with:');
        expect(resume).toBe(`npm run chat -- --resume=${id}`);
        const again = await runCopied(resume, PART_06, env, 'exit\n');
        expect(again.stdout).toContain(`Resuming conversation ${id}`);
      } finally {
        await done();
      }
    },
    CHAIN_TIMEOUT_MS,
  );

  it(
    'npm run setup asks for --yes in a command that works through npm',
    async () => {
      const { fake, env, done } = await own();
      try {
        fake.reply({ text: 'Hello!' });
        const asked = await runInProcess('part-06/ask.ts', ['--quiet', 'Hi'], { env }); // something to lose
        expect(asked.code, asked.stderr).toBe(0);
        const refused = await runCopied('npm run --silent setup', PART_06, env);
        expect(refused.code).toBe(2);
        const confirm = hint(refused.stderr, 'to confirm, run');
        expect(confirm).toBe('npm run setup -- --yes');
        const reset = await runCopied(confirm.replace('npm run', 'npm run --silent'), PART_06, env);
        expect(reset.code, reset.stderr).toBe(0);
        expect(reset.stdout).toContain('Resetting database');
      } finally {
        await done();
      }
    },
    CHAIN_TIMEOUT_MS,
  );
});

describe.concurrent.each([
  ['the repository root', ROOT_DIR],
  ['the part folder', PART_06],
])('hints printed when run from %s', (_, cwd) => {
  it(
    '"Ask a follow-up with" continues the conversation',
    async () => {
      const { fake, env, done } = await own();
      try {
        fake.reply({ text: 'Which order?' }, (view) => ({
          text: `You said: ${view.lastUserText}`,
        }));
        const first = await runInProcess('part-06/ask.ts', ['--quiet', 'Where is my order?'], {
          env,
          cwd,
        });
        const followUp = hint(first.stderr, 'a follow-up with');
        const second = await runCopied(followUp, cwd, env);
        expect(second.code, second.stderr).toBe(0);
        expect(second.stdout).toBe('You said: What about my other order?\n');
      } finally {
        await done();
      }
    },
    CHAIN_TIMEOUT_MS,
  );
});

describe('output read by a program that stops early (| head)', () => {
  it('ends the script quietly, not with a stack trace', async () => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(PART_06, 'show-conversation.ts'), '--help'],
      { cwd: ROOT_DIR, env: process.env },
    );
    child.stdout.destroy(); // the reader is gone before the script writes a word
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });
});

/** Every script a learner runs: the files that start their work with runMain. */
const RUNS_MAIN =
  /^(await runMain\(|if \(startedDirectly\(import\.meta\.url\)\) await runMain\(main, usage(, \{ openDatabase \})?\);$)/m;
const SCRIPTS = [
  'part-01',
  'part-02',
  'part-03',
  'part-04',
  'part-05',
  'part-06',
  'part-06/going-further',
  'part-06/going-further/eval',
  'part-06/going-further/ops',
  'shared/scripts',
].flatMap((dir) =>
  readdirSync(path.join(ROOT_DIR, dir))
    .filter(
      (file) =>
        file.endsWith('.ts') &&
        RUNS_MAIN.test(readFileSync(path.join(ROOT_DIR, dir, file), 'utf8')),
    )
    .map((file) => `${dir}/${file}`),
);

describe('every script', () => {
  const sources = SCRIPTS.map(
    (script) => [script, readFileSync(path.join(ROOT_DIR, script), 'utf8')] as const,
  );

  it('is found', () => {
    expect(SCRIPTS.length).toBeGreaterThan(20);
  });

  // The behaviour lives in shared/cli.ts (parseFlags and runMain); each script only has to use it.
  it.each(sources)(
    '%s parses its flags with parseFlags and runs under runMain with a usage written for where it is run',
    (script, source) => {
      expect(source).toMatch(/parseFlags\(/);
      expect(source).not.toMatch(/values\.help|help: \{ type/);
      // Every script is main(io): it reads its arguments from io, and writes its usage for where it was typed.
      expect(source).toMatch(/^export async function main\(io: ScriptIo\)/m);
      expect(source).toMatch(/parseFlags\(\{\s+args: io\.args,/);
      // usageLines (shared/hints.ts) writes each of its lines with commandFor.
      expect(source).toMatch(
        /^export function usage\(io: ScriptIo\): string \{\n {2}return `(Usage: \$\{commandFor|\$\{usageLines)\(\s*import\.meta\.url/m,
      );
      // The full Nimbus's scripts open its database (DB_HOSTS, a cluster's nodes); the chapters' the plain one.
      const runs = script.startsWith('part-06/going-further/')
        ? 'runMain(main, usage, { openDatabase })'
        : 'runMain(main, usage)';
      expect(source).toContain(`\nif (startedDirectly(import.meta.url)) await ${runs};\n`);
      if (runs.includes('openDatabase'))
        expect(source).toContain('\nexport const openDatabase = openClusterDatabase;\n');
    },
  );

  // Those two answer --help and an unknown option the same way for every script (cli.test.ts checks
  // them in-process); a script of a part and a shared one are run to show it end to end.
  it.concurrent.each(['part-06/chat.ts', 'shared/scripts/diff-parts.ts'])(
    '%s: --help prints the usage (exit 0); an unknown option is one line and the same usage (exit 2)',
    async (script) => {
      const [help, unknown] = await Promise.all([
        runScript(script, ['--help']),
        runScript(script, ['--no-such-option']),
      ]);
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(/^Usage: (npx tsx|npm run) /);
      expect(help.stderr).toBe('');
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toBe(`Unknown option --no-such-option.\n${help.stdout}`);
      expect(unknown.stdout).toBe('');
    },
  );
});
