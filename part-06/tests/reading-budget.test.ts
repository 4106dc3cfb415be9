// Part 6's core stays a lesson: small enough to read in one sitting, short functions, and runnable without going-further/.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const PART = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const ROOT = path.dirname(PART);
const PART_5 = path.join(ROOT, 'part-05');

/** The most non-blank lines the core may add to Part 5: the chapter's idea, not its hardening. */
const READING_BUDGET = 800;
/** The scripts a learner runs in the chapter: each must run without going-further/. */
const CORE_ENTRIES = ['chat.ts', 'ask.ts', 'show-conversation.ts', 'setup.ts'];

/** The core: every file under part-06/ but going-further/, tests/ and the README, as paths relative to it. */
function coreFiles(dir = PART): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    const relative = path.relative(PART, file);
    if (['going-further', 'tests', 'README.md'].includes(relative)) return [];
    return entry.isDirectory() ? coreFiles(file) : [relative];
  });
}

const nonBlank = (line: string) => line.trim() !== '';

/**
 * Non-blank lines `file` adds to its Part 5 version, as `diff` counts them (the `>` lines); all its
 * non-blank lines when Part 5 has no such file.
 */
function linesAdded(file: string): number {
  const before = path.join(PART_5, file);
  const after = path.join(PART, file);
  if (!existsSync(before)) return readFileSync(after, 'utf8').split('\n').filter(nonBlank).length;
  const diff = spawnSync('diff', [before, after], { encoding: 'utf8' });
  if (diff.status === 2) throw new Error(`diff ${before} ${after} failed: ${diff.stderr}`);
  return diff.stdout.split('\n').filter((line) => line.startsWith('>') && nonBlank(line.slice(1)))
    .length;
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

/** The local files a module imports (static, re-exported, type-only or dynamic), as absolute paths. */
function localImports(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest);
  const specifiers: string[] = [];
  const visit = (node: ts.Node) => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    )
      specifiers.push(node.moduleSpecifier.text);
    if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteralLike(node.arguments[0])
    )
      specifiers.push(node.arguments[0].text);
    if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    )
      specifiers.push(node.argument.literal.text);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return specifiers
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => path.resolve(path.dirname(file), specifier));
}

/** Every chain of local imports from `entry` that ends in going-further/ (empty when none does). */
function pathsIntoGoingFurther(entry: string): string[] {
  const goingFurther = path.join(PART, 'going-further') + path.sep;
  const seen = new Set<string>();
  const found: string[] = [];
  const walk = (file: string, chain: string[]) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const imported of localImports(file)) {
      const next = [...chain, path.relative(ROOT, imported)];
      if (imported.startsWith(goingFurther)) found.push(next.join(' → '));
      else walk(imported, next);
    }
  };
  walk(path.join(PART, entry), [path.relative(ROOT, path.join(PART, entry))]);
  return found;
}

describe("Part 6's core", () => {
  it(`adds at most ${READING_BUDGET} non-blank lines to Part 5 outside going-further/, tests/ and the README`, () => {
    const added = coreFiles()
      .map((file) => ({ file, lines: linesAdded(file) }))
      .filter(({ lines }) => lines > 0)
      .sort((a, b) => b.lines - a.lines);
    const total = added.reduce((sum, { lines }) => sum + lines, 0);
    const perFile = added.map(({ file, lines }) => `${file} ${lines}`).join(', ');
    expect(total, `${total} lines added: ${perFile}`).toBeLessThanOrEqual(READING_BUDGET);
  });

  it('counts what a diff shows: a new file whole, a changed one by its added lines, blank lines never', () => {
    expect(linesAdded('memory.ts')).toBe(
      readFileSync(path.join(PART, 'memory.ts'), 'utf8').split('\n').filter(nonBlank).length,
    );
    expect(existsSync(path.join(PART_5, 'memory.ts'))).toBe(false);
    expect(existsSync(path.join(PART_5, 'split-sql.ts'))).toBe(true);
    expect(linesAdded('split-sql.ts')).toBeLessThan(
      readFileSync(path.join(PART, 'split-sql.ts'), 'utf8').split('\n').filter(nonBlank).length,
    );
    expect(coreFiles()).toEqual(expect.arrayContaining(['agent.ts', 'schema.sql']));
    expect(coreFiles().filter((file) => /^(going-further|tests)\/|README/.test(file))).toEqual([]);
  });

  it('has no function longer than 60 lines', () => {
    const long = coreFiles()
      .filter((file) => file.endsWith('.ts'))
      .flatMap((file) =>
        functionLengths(file)
          .filter((f) => f.lines > 60)
          .map((f) => `${file}: ${f.name} (${f.lines} lines)`),
      );
    expect(long).toEqual([]);
  });

  it.each(CORE_ENTRIES)(
    'runs %s without going-further/: no chain of local imports reaches it',
    (entry) => {
      expect(pathsIntoGoingFurther(entry)).toEqual([]);
    },
  );

  it('would see a chain into going-further/ (going further’s chat.ts has one)', () => {
    const goingFurtherChat = path.join('going-further', 'chat.ts');
    expect(pathsIntoGoingFurther(goingFurtherChat).length).toBeGreaterThan(0);
    // Followed through shared/ too: shared/cli.ts is reached from every entry.
    const reached = new Set<string>();
    const walk = (file: string) => {
      for (const imported of localImports(file))
        if (!reached.has(imported)) {
          reached.add(imported);
          walk(imported);
        }
    };
    walk(path.join(PART, 'chat.ts'));
    expect([...reached].map((file) => path.relative(ROOT, file))).toContain('shared/cli.ts');
  });
});
