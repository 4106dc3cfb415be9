// The command a hint prints is the one that works where the learner typed theirs: root, part folder or npm run.
//
// commandFor decides from the working directory and npm's variables alone, so every case is checked
// here in-process; hints.db.test.ts runs the real scripts and the commands copied from them.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ROOT_DIR } from '../config.ts';
import { commandFor, displayPath, usageLines } from '../hints.ts';

const PART_06 = path.join(ROOT_DIR, 'part-06');
const CHAT = new URL('../../part-06/chat.ts', import.meta.url);
const ASK = new URL('../../part-06/ask.ts', import.meta.url);
/** What `npm run chat` runs: the full Nimbus. */
const FULL_CHAT = new URL('../../part-06/going-further/chat.ts', import.meta.url);

/** This process, as if `command` had been typed in `typedIn`; `npmScript` when it was `npm run <npmScript>`. */
function startedAs(typedIn: string, script: URL, npmScript?: string): void {
  // npm runs package scripts in the repository root and says where they were typed in INIT_CWD.
  vi.spyOn(process, 'cwd').mockReturnValue(npmScript ? ROOT_DIR : typedIn);
  vi.stubEnv('npm_lifecycle_event', npmScript);
  vi.stubEnv('INIT_CWD', npmScript ? typedIn : undefined);
  const argv = [process.argv[0], fileURLToPath(script), ...process.argv.slice(2)];
  vi.spyOn(process, 'argv', 'get').mockReturnValue(argv);
}

afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllEnvs();
});

describe.each([
  ['the repository root', ROOT_DIR, 'part-06/'],
  ['the part folder', PART_06, ''],
])('typed in %s', (_, dir, prefix) => {
  it('npx tsx: the path is relative to that folder', () => {
    startedAs(dir, CHAT);
    expect(commandFor(CHAT, '--resume=abc')).toBe(`npx tsx ${prefix}chat.ts --resume=abc`);
    expect(commandFor(new URL('./setup.ts', CHAT))).toBe(`npx tsx ${prefix}setup.ts`);
    expect(displayPath(path.join(PART_06, 'logs'))).toBe(`${prefix}logs`);
    // Outside the repository (a cluster under /tmp, LOG_DIR elsewhere): in full, not ../../tmp/….
    expect(displayPath('/tmp/nimbus-cluster')).toBe('/tmp/nimbus-cluster');
  });

  it('npm run chat: the same npm command, and scripts without one relative to that folder', () => {
    startedAs(dir, FULL_CHAT, 'chat');
    expect(commandFor(FULL_CHAT, '--resume=abc')).toBe('npm run chat -- --resume=abc');
    expect(commandFor(new URL('./setup.ts', FULL_CHAT))).toBe('npm run setup');
    expect(commandFor(new URL('./forget.ts', FULL_CHAT), 'x')).toBe(
      `npx tsx ${prefix}going-further/forget.ts x`,
    );
    // The chapter's own chat and setup have no npm script: npm run chat is going further's.
    expect(commandFor(CHAT)).toBe(`npx tsx ${prefix}chat.ts`);
    expect(commandFor(new URL('./setup.ts', CHAT))).toBe(`npx tsx ${prefix}setup.ts`);
    expect(commandFor(ASK, '"…"')).toBe(`npx tsx ${prefix}ask.ts "…"`);
  });

  it('npm test passes its npm variables on: a script it starts is not npm run chat', () => {
    startedAs(dir, CHAT);
    vi.stubEnv('npm_lifecycle_event', 'test');
    vi.stubEnv('INIT_CWD', ROOT_DIR);
    expect(commandFor(CHAT)).toBe(`npx tsx ${prefix}chat.ts`);
  });
});

describe('usageLines', () => {
  it.each([
    ['the repository root', ROOT_DIR, 'part-06/'],
    ['the part folder', PART_06, ''],
  ])('typed in %s: one command per line, what each does in one column', (_, dir, prefix) => {
    startedAs(dir, CHAT);
    const text = usageLines(new URL('./show-conversation.ts', CHAT), [
      ['<id>', 'one'],
      ['<id> --context --budget=4000 --recent=1', 'two'],
    ]);
    const command = `npx tsx ${prefix}show-conversation.ts <id> --context --budget=4000 --recent=1`;
    expect(text.split('\n')).toEqual([
      `Usage: ${`npx tsx ${prefix}show-conversation.ts <id>`.padEnd(command.length)}  one`,
      `       ${command}  two`,
    ]);
  });
});
