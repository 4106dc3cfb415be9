// Commands and paths we print for the learner to copy, written so they work where the learner typed theirs.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROOT_DIR } from './config.ts';

/** Where a command was typed: its folder, its environment (npm's variables) and the file it started. */
export interface TypedAt {
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** The file the process was started with. */
  entry: string;
}

const thisProcess = (): TypedAt => ({
  cwd: process.cwd(),
  env: process.env,
  entry: path.resolve(process.argv[1] ?? ''),
});

/**
 * The command that runs `script` (a file URL or path) from where the learner typed theirs, so every
 * hint we print works when copied: `npx tsx chat.ts` inside part-06, `npx tsx part-06/chat.ts` at the
 * root, and `npm run chat -- …` for a learner who started with `npm run …`.
 */
export function commandFor(
  script: string | URL,
  args = '',
  typedAt: TypedAt = thisProcess(),
): string {
  const file =
    typeof script === 'string' && !script.startsWith('file:')
      ? path.resolve(script)
      : fileURLToPath(script);
  const npmName = startedByNpm(typedAt)
    ? [...npmScripts()].find(([, target]) => target === file)?.[0]
    : undefined;
  const command = npmName
    ? `npm run ${npmName}${args ? ' --' : ''}`
    : `npx tsx ${path.relative(learnerDir(typedAt), file)}`;
  return args ? `${command} ${args}` : command;
}

/**
 * A usage text's first lines: one way to run `script` per line, each with what it does, in one column
 * however long the commands are where the learner typed theirs.
 */
export function usageLines(
  script: string | URL,
  forms: Array<[args: string, what: string]>,
  typedAt: TypedAt = thisProcess(),
): string {
  const commands = forms.map(([args]) => commandFor(script, args, typedAt));
  const width = Math.max(...commands.map((command) => command.length)) + 2;
  const line = (command: string, i: number) =>
    `${i === 0 ? 'Usage: ' : '       '}${command.padEnd(width)}${forms[i][1]}`;
  return commands.map(line).join('\n');
}

/**
 * The command that creates the running script's tables again: the setup.ts beside it (every part has
 * its own, and going further too), or the root's `npm run setup` for a script without one.
 */
export function setupCommand(typedAt: TypedAt = thisProcess()): string {
  return besideCommand('setup.ts', '', typedAt) ?? 'npm run setup';
}

/** The command that runs `name`, a script beside the running one (its part's own), with `args`; none when there is no such script. */
export function besideCommand(
  name: string,
  args = '',
  typedAt: TypedAt = thisProcess(),
): string | undefined {
  const script = typedAt.entry && path.join(path.dirname(typedAt.entry), name);
  return script && existsSync(script) ? commandFor(script, args, typedAt) : undefined;
}

/** A file's path as the learner can use it where they typed the command; outside the repository, in full. */
export function displayPath(file: string, typedAt: TypedAt = thisProcess()): string {
  if (path.relative(ROOT_DIR, file).startsWith('..')) return path.resolve(file);
  return path.relative(learnerDir(typedAt), file);
}

/** Where the learner typed the command: npm runs package scripts in the repository root, but remembers where in INIT_CWD. */
export function learnerDir(typedAt: TypedAt): string {
  return (startedByNpm(typedAt) && typedAt.env.INIT_CWD) || typedAt.cwd;
}

/** Was this process started by one of our package.json scripts (`npm run chat`)? */
function startedByNpm(typedAt: TypedAt): boolean {
  const name = typedAt.env.npm_lifecycle_event;
  // Checked against this process's own script: `npm test` passes its variables on to everything it starts.
  return name !== undefined && npmScripts().get(name) === typedAt.entry;
}

/** package.json scripts that run one of our files with tsx: name → absolute path of the file. */
function npmScripts(): Map<string, string> {
  const { scripts } = JSON.parse(readFileSync(path.join(ROOT_DIR, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  const result = new Map<string, string>();
  for (const [name, command] of Object.entries(scripts)) {
    const match = /^tsx (\S+\.ts)$/.exec(command);
    if (match) result.set(name, path.join(ROOT_DIR, match[1]));
  }
  return result;
}
