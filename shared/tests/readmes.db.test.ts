// The READMEs are true: their commands run, their "What changed" lists match the diffs, and parts stand alone.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT_DIR } from '../config.ts';
import { SCENARIOS } from '../scenarios/scenarios.ts';
import { createScratchDatabase, type ScratchDatabase } from '../testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../testing/fake-provider.ts';
import { partScenarios, questionCommand } from '../testing/scenario-runner.ts';

const PARTS = readdirSync(ROOT_DIR)
  .filter((name) => /^part-\d\d$/.test(name))
  .sort();
let fake: FakeProvider;
let logs: string;

beforeAll(async () => {
  fake = await startFakeProvider();
  logs = mkdtempSync(path.join(os.tmpdir(), 'nimbus-readme-logs-'));
});
afterAll(async () => {
  await fake.close();
  rmSync(logs, { recursive: true, force: true });
});

const readme = (dir: string) => readFileSync(path.join(ROOT_DIR, dir, 'README.md'), 'utf8');

/** The body of a "## Heading" section (up to the next "## "). */
function section(markdown: string, heading: RegExp): string {
  const lines = markdown.split('\n');
  const start = lines.findIndex((line) => line.startsWith('## ') && heading.test(line));
  if (start === -1) return '';
  const end = lines.findIndex((line, i) => i > start && line.startsWith('## '));
  return lines.slice(start + 1, end === -1 ? undefined : end).join('\n');
}

/**
 * The files the full Nimbus's own README (part-06/going-further/README.md) lists in its "## Files"
 * table, by their path in going-further/: its book lists them, not the chapter's.
 */
function layerTable(part: string): string[] {
  const file = path.join(ROOT_DIR, part, 'going-further', 'README.md');
  if (!existsSync(file)) return [];
  const table = section(readFileSync(file, 'utf8'), /^## Files$/);
  return [...table.matchAll(/^\| `([^`]+)`/gm)].map((m) => `going-further/${m[1]}`);
}

const inLayer = (file: string) => file.startsWith('going-further/');

/** Commands a learner copies: lines of ```bash blocks that run Nimbus (npx tsx …, npm run …), without placeholders. */
function commands(markdown: string): string[] {
  const blocks = [...markdown.matchAll(/```bash\n([\s\S]*?)```/g)].map((m) => m[1]);
  return blocks
    .flatMap((block) => block.split('\n'))
    .map((line) => line.trim())
    .filter((line) => /^(npx tsx |npm run )/.test(line) && !line.includes('<'));
}

/**
 * The commands scenarios.db.test.ts runs in a part's folder, word for word as a learner types them:
 * each question to a one-question script. That test fails when one does not end with exit 0, so a
 * README command among them is not run a second time here. (chat.ts reads its questions at the prompt.)
 */
function runByScenarios(dir: string): Set<string> {
  if (!PARTS.includes(dir)) return new Set();
  const { entry, scenarios } = partScenarios(dir);
  if (entry === 'chat.ts') return new Set();
  const questions = SCENARIOS.filter((s) => scenarios.includes(s.id)).flatMap((s) =>
    s.sessions.flat(),
  );
  return new Set(questions.map((question) => questionCommand(entry, question)));
}

/**
 * Runs a README command in the README's folder, through the shell as a learner would. `npx tsx` becomes
 * `node --import tsx`, which is what it runs, without npx's second of start-up per command.
 */
function sh(
  command: string,
  cwd: string,
  env: Record<string, string>,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const direct = command.replace(/^npx tsx /, `"${process.execPath}" --import tsx `);
    const child = spawn('sh', ['-c', direct], {
      cwd,
      env: { ...process.env, NO_COLOR: '1', ...env },
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.stdin.end(); // chat.ts sees the end of input and says goodbye
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

// The READMEs are checked side by side, each against its own database. A README's commands run in one
// test, in order, as a learner types them: a later one may need what an earlier one set up (show-
// conversation.ts needs the tables chat.ts created), so they must not be shuffled apart. No reply is
// queued: the fake model answers every question with its default text, so the READMEs can share it.
describe.concurrent.each(['.', ...PARTS, 'part-06/going-further'])(
  'the commands in %s/README.md',
  (dir) => {
    let db: ScratchDatabase;
    beforeAll(async () => {
      db = await createScratchDatabase();
    });
    afterAll(() => db.drop());

    const list = commands(readme(dir));
    it('are there to check', () => {
      expect(list.length).toBeGreaterThan(0);
    });
    const runElsewhere = runByScenarios(dir);
    const toRun = list.filter((command) => !runElsewhere.has(command));
    it(`run in order and succeed: ${toRun.join(' ; ')}`, async () => {
      for (const command of toRun) {
        const result = await sh(command, path.join(ROOT_DIR, dir), {
          ...fake.env('gemini'),
          DB_NAME: db.name,
          LOG_DIR: logs,
        });
        expect(result.output, command).not.toContain('Unexpected error');
        expect(result.code, `${command}\n${result.output}`).toBe(0);
      }
    }, 180_000); // several scripts one after another: a busy machine may slow each one down
  },
);

/** Files that differ between two folders (added, removed or changed), relative to them. */
function changedFiles(a: string, b: string): string[] {
  const list = (dir: string, base = dir): string[] =>
    readdirSync(dir).flatMap((name) => {
      const full = path.join(dir, name);
      return statSync(full).isDirectory() ? list(full, base) : [path.relative(base, full)];
    });
  const left = new Set(list(a));
  const right = new Set(list(b));
  return [...new Set([...left, ...right])]
    .filter(
      (file) =>
        !left.has(file) ||
        !right.has(file) ||
        !readFileSync(path.join(a, file)).equals(readFileSync(path.join(b, file))),
    )
    .sort();
}

describe.each(PARTS.slice(1).map((part, i) => [PARTS[i], part]))('%s → %s', (before, after) => {
  it('changes exactly the files its README lists under "What changed" (tests/ as one entry), the full Nimbus\'s in its own README', () => {
    const changed = changedFiles(path.join(ROOT_DIR, before), path.join(ROOT_DIR, after))
      .filter((file) => file !== 'README.md')
      // Each folder of tests counts as one entry: tests/, going-further/tests/.
      .map((file) => file.replace(/^((?:.*\/)?tests\/).*$/, '$1'));
    const layer = layerTable(after).filter((file) => !file.endsWith('README.md'));
    expect([...new Set(layer)].sort()).toEqual(
      [...new Set(changed.filter(inLayer).filter((file) => !file.endsWith('README.md')))].sort(),
    );
    const listed = section(readme(after), /^## What changed since Part \d+$/);
    expect(listed, `${after}/README.md needs a "## What changed since Part N" section`).not.toBe(
      '',
    );
    const mentioned = [...listed.matchAll(/^- (`[^`]+`(?:, `[^`]+`)*)/gm)].flatMap((m) =>
      [...m[1].matchAll(/`([^`]+)`/g)].map((x) => x[1]),
    );
    // A group may also name code in shared/ it relies on (npm run diff lists it): no part's file.
    const ownFiles = mentioned.filter((file) => !file.startsWith('shared/'));
    const chapter = changed.filter((file) => !inLayer(file));
    expect([...new Set(ownFiles)].sort()).toEqual([...new Set(chapter)].sort());
  });
});

describe('every part', () => {
  it.each(PARTS)('%s imports only its own files, shared/ and packages', (part) => {
    const files = readdirSync(path.join(ROOT_DIR, part), { recursive: true })
      .map(String)
      .filter((f) => f.endsWith('.ts'));
    for (const file of files) {
      const source = readFileSync(path.join(ROOT_DIR, part, file), 'utf8');
      for (const [, target] of source.matchAll(/from '([^']+)'/g)) {
        const resolved = path.relative(
          ROOT_DIR,
          path.resolve(path.dirname(path.join(ROOT_DIR, part, file)), target),
        );
        if (target.startsWith('.'))
          expect(
            resolved.startsWith(part) || resolved.startsWith('shared'),
            `${part}/${file} imports ${target}`,
          ).toBe(true);
      }
    }
  });

  it.each(PARTS)(
    "%s/README.md lists every file of the part in its Files table, the full Nimbus's in its own README",
    (part) => {
      // Files in folders too (part-06/going-further/…), by their path in the part; not the tests.
      const files = readdirSync(path.join(ROOT_DIR, part), { recursive: true, encoding: 'utf8' })
        .map((name) => name.split(path.sep).join('/'))
        .filter((name) => statSync(path.join(ROOT_DIR, part, name)).isFile())
        .filter((name) => name !== 'README.md' && !/(^|\/)tests\//.test(name));
      const table = section(readme(part), /^## Files$/);
      const listed = [...table.matchAll(/^\| `([^`]+)`/gm)].map((m) => m[1]);
      expect(listed.sort()).toEqual(files.filter((file) => !inLayer(file)).sort());
      const layer = layerTable(part).filter((file) => !file.endsWith('tests/'));
      expect(layer.sort()).toEqual(
        files
          .filter(inLayer)
          .filter((file) => file !== 'going-further/README.md')
          .sort(),
      );
    },
  );
});
