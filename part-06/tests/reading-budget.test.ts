// Part 6's core stays a lesson: small enough to read in one sitting, short functions, and never leaning on going-further/.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const PART = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const PART_5 = path.join(PART, '..', 'part-05');

/** What a learner follows from the chat through the agent, the context and the store. */
const LESSON_PATH = ['chat.ts', 'agent.ts', 'context.ts', 'memory.ts'];
/** The most lines those files may add to Part 5: the chapter's idea, not its hardening. */
const READING_BUDGET = 550;

/** The files at the top of part-06 (scripts and modules alike), but for the scripts that say "Going further:". */
const coreFiles = readdirSync(PART).filter(
  (file) =>
    file.endsWith('.ts') &&
    !readFileSync(path.join(PART, file), 'utf8').startsWith('// Going further:'),
);

/** Lines `file` adds to its Part 5 version (all of it when Part 5 has none), as `diff` counts them. */
function linesAdded(file: string): number {
  const before = readdirSync(PART_5).includes(file) ? path.join(PART_5, file) : '/dev/null';
  const diff = spawnSync('diff', [before, path.join(PART, file)], { encoding: 'utf8' }).stdout;
  return diff.split('\n').filter((line) => line.startsWith('> ')).length;
}

/** Every function and method in a file, with its length in lines. */
function functionLengths(file: string): Array<{ name: string; lines: number }> {
  const text = readFileSync(path.join(PART, file), 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: Array<{ name: string; lines: number }> = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const line = (pos: number) => source.getLineAndCharacterOfPosition(pos).line;
      const name = node.name?.getText(source) ?? `(function at line ${line(node.getStart()) + 1})`;
      found.push({ name, lines: line(node.getEnd()) - line(node.getStart()) + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe("Part 6's core", () => {
  it(`adds at most ${READING_BUDGET} lines along the lesson's path (${LESSON_PATH.join(', ')})`, () => {
    const added = LESSON_PATH.map(linesAdded);
    expect(
      added.reduce((sum, n) => sum + n, 0),
      added.join(' + '),
    ).toBeLessThanOrEqual(READING_BUDGET);
  });

  it('has no function longer than 60 lines', () => {
    const long = coreFiles.flatMap((file) =>
      functionLengths(file)
        .filter((f) => f.lines > 60)
        .map((f) => `${file}: ${f.name} (${f.lines} lines)`),
    );
    expect(long).toEqual([]);
  });

  it('never imports going-further/ from a module; only the scripts wire it in', () => {
    const modules = coreFiles.filter(
      (file) => !/^await runMain\(/m.test(readFileSync(path.join(PART, file), 'utf8')),
    );
    const leaning = modules.filter((file) =>
      /from '\.\/going-further\//.test(readFileSync(path.join(PART, file), 'utf8')),
    );
    expect(modules).toContain('agent.ts');
    expect(leaning).toEqual([]);
  });
});
