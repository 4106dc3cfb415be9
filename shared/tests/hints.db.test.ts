// Every command a script prints works when copied where the learner typed theirs; every script answers --help.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT_DIR } from '../config.ts';
import { createScratchDatabase, type ScratchDatabase } from '../testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../testing/fake-provider.ts';
import { runScript, type ScriptResult } from '../testing/run-script.ts';

const PART_06 = path.join(ROOT_DIR, 'part-06');
let fake: FakeProvider;
let db: ScratchDatabase;
let env: Record<string, string>;

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createScratchDatabase();
  env = { ...fake.env('gemini'), DB_NAME: db.name };
});
afterAll(async () => {
  await fake.close();
  await db.drop();
});

/**
 * Runs a printed command exactly as a learner would paste it, in `cwd`. `npx tsx file` is run as
 * `node --import tsx file` (what npx tsx does, without npx's second of start-up); `npm run` is run as is.
 */
function runCopied(
  command: string,
  cwd: string,
  input = '',
  extraEnv: Record<string, string> = {},
): Promise<ScriptResult> {
  const words = command.split(' ');
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
      env: { ...process.env, NO_COLOR: '1', ...env, ...extraEnv },
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

describe.each([
  ['the repository root', ROOT_DIR, 'part-06/chat.ts'],
  ['the part folder', PART_06, 'chat.ts'],
])('hints printed when run from %s', (_, cwd, chat) => {
  it('"Resume later with" resumes the conversation', async () => {
    fake.reply({ text: 'Hello!' });
    const first = await runScript(path.join(PART_06, 'chat.ts'), ['--quiet'], {
      env,
      cwd,
      input: 'Hi\n',
    });
    const id = first.stdout.match(/New conversation ([0-9a-f]{32})/)![1];
    const resume = hint(first.stdout, 'Resume later with:');
    expect(resume).toBe(`npx tsx ${chat} --resume=${id}`);
    const again = await runCopied(resume, cwd, 'exit\n');
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain(`Resuming conversation ${id}`);
  });

  it('"ask a follow-up with" continues the conversation, and "Start one with" starts one', async () => {
    fake.reply({ text: 'Which order?' }, (view) => ({ text: `You said: ${view.lastUserText}` }));
    const first = await runScript(path.join(PART_06, 'ask.ts'), ['--quiet', 'Where is my order?'], {
      env,
      cwd,
    });
    const followUp = hint(first.stderr, 'ask a follow-up with').replace('"…"', 'It-is-1042');
    const second = await runCopied(followUp, cwd);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toBe('You said: It-is-1042\n');

    const empty = await createScratchDatabase();
    try {
      const missing = await runScript(path.join(PART_06, 'show-conversation.ts'), [], {
        env: { ...env, DB_NAME: empty.name },
        cwd,
      });
      const create = hint(missing.stderr, 'Create them with:');
      const setup = await runCopied(create, cwd, '', { DB_NAME: empty.name });
      expect(setup.code, setup.stderr).toBe(0);
      const list = await runScript(path.join(PART_06, 'show-conversation.ts'), [], {
        env: { ...env, DB_NAME: empty.name },
        cwd,
      });
      const start = hint(list.stdout, 'Start one with:');
      fake.reply({ text: 'Started.' });
      const started = await runCopied(start, cwd, 'Hi\n', { DB_NAME: empty.name });
      expect(started.stdout).toContain('Nimbus: Started.');
    } finally {
      await empty.drop();
    }
  });
});

describe('npm run chat', () => {
  it.each([
    ['the repository root', ROOT_DIR],
    ['the part folder', PART_06],
  ])('from %s prints an npm run hint that resumes', async (_, cwd) => {
    fake.reply({ text: 'Hello!' });
    const first = await runCopied('npm run --silent chat -- --quiet', cwd, 'Hi\n');
    const id = first.stdout.match(/New conversation ([0-9a-f]{32})/)![1];
    const resume = hint(first.stdout, 'Resume later with:');
    expect(resume).toBe(`npm run chat -- --resume=${id}`);
    const again = await runCopied(resume, cwd, 'exit\n');
    expect(again.stdout).toContain(`Resuming conversation ${id}`);
  });
});

describe('npm run setup', () => {
  it('asks for --yes in a command that works through npm', async () => {
    const scratch = await createScratchDatabase();
    try {
      await runCopied('npx tsx part-06/setup.ts --yes', ROOT_DIR, '', { DB_NAME: scratch.name });
      await runScript(path.join(PART_06, 'ask.ts'), ['--quiet', 'Hi'], {
        env: { ...env, DB_NAME: scratch.name },
      }); // something to lose
      const refused = await runCopied('npm run --silent setup', PART_06, '', {
        DB_NAME: scratch.name,
      });
      expect(refused.code).toBe(2);
      const confirm = hint(refused.stderr, 'to confirm, run');
      expect(confirm).toBe('npm run setup -- --yes');
      const reset = await runCopied(confirm.replace('npm run', 'npm run --silent'), PART_06, '', {
        DB_NAME: scratch.name,
      });
      expect(reset.code, reset.stderr).toBe(0);
      expect(reset.stdout).toContain('Resetting database');
    } finally {
      await scratch.drop();
    }
  });
});

describe('output read by a program that stops early (| head)', () => {
  it('ends the script quietly, not with a stack trace', async () => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(PART_06, 'show-conversation.ts'), '--help'],
      { cwd: ROOT_DIR, env: { ...process.env, ...env } },
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
const SCRIPTS = [
  'part-01',
  'part-02',
  'part-03',
  'part-04',
  'part-05',
  'part-06',
  'shared/scripts',
].flatMap((dir) =>
  readdirSync(path.join(ROOT_DIR, dir))
    .filter(
      (file) =>
        file.endsWith('.ts') &&
        /^await runMain\(/m.test(readFileSync(path.join(ROOT_DIR, dir, file), 'utf8')),
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
    (_, source) => {
      expect(source).toMatch(/parseFlags\(/);
      expect(source).toMatch(/^const USAGE = `Usage: \$\{commandFor\(import\.meta\.url/m);
      expect(source).toMatch(/^}, USAGE\);$/m);
      expect(source).not.toMatch(/values\.help|help: \{ type/);
    },
  );

  it.concurrent.each([
    'part-01/ask.ts',
    'part-06/chat.ts',
    'part-06/show-conversation.ts',
    'shared/scripts/diff-parts.ts',
  ])(
    '%s: --help prints the usage (exit 0); an unknown option is one line and the same usage (exit 2)',
    async (script) => {
      const [help, unknown] = await Promise.all([
        runScript(script, ['--help'], { env }),
        runScript(script, ['--no-such-option'], { env }),
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
