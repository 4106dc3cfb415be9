// What a chapter changed, in the order a learner should read it: the chapter's own reading path when its README gives one, else SQL, then each module before its importers, scripts last.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { UsageError } from '../cli.ts';
import { ROOT_DIR } from '../config.ts';

/** The tables come before the functions that query them, and both before the rows that fill them. */
const SQL_ORDER = ['schema.sql', 'functions.sql', 'seed.sql'];

/** A part's product layer (Part 6's full Nimbus): a book of its own, left out of the chapter's diff unless asked. */
const LAYER = 'going-further/';

/**
 * The unified diff from part `from` to part `to`, one file at a time in reading order, under a one-line summary.
 * New files are shown in full as additions, removed files in full as removals, unchanged files not at all.
 * When the chapter's README groups its changes ("### The core, in reading order"), the diff follows
 * that reading path, each group under a heading with the lines it adds. A part's going-further/ (the
 * full Nimbus) follows the chapter only with `goingFurther`, in its own README's order; the README,
 * tests/ and scenarios.json only with `all`, after the code.
 */
export function chapterDiff(
  from: number,
  to: number,
  { all = false, goingFurther = false } = {},
): { files: string[]; text: string } {
  const [fromDir, toDir] = [partFolder(from), partFolder(to)];
  const older = readPart(fromDir);
  const newer = readPart(toDir);
  const sources = new Map([...older, ...newer]);
  const changed = new Set(
    [...sources.keys()].filter((file) => older.get(file) !== newer.get(file)),
  );
  const inLayer = (file: string) => file.startsWith(LAYER);
  const layerChanged = [...changed].filter((file) => inLayer(file) && !isExtra(file)).length;

  const order = readingOrder(sources).filter((file) => goingFurther || !inLayer(file));
  const extras = order.filter((file) => changed.has(file) && isExtra(file));
  const codeOrder = order.filter((file) => changed.has(file) && !isExtra(file));
  const sections = [
    ...readingPath(
      toDir,
      codeOrder.filter((file) => !inLayer(file)),
    ),
    ...(goingFurther ? [layerSection(toDir, codeOrder.filter(inLayer))] : []),
    { title: '', files: all ? extras : [], shared: [] as string[] },
  ];
  const diffs = new Map(
    sections
      .flatMap((section) => section.files)
      .map((file) => [file, unifiedDiff(fromDir, toDir, file, older.has(file), newer.has(file))]),
  );
  for (const section of sections) section.files = section.files.filter((file) => diffs.get(file));
  const files = sections.flatMap((section) => section.files);
  const code = files.filter((file) => !isExtra(file));

  const title = to === from + 1 ? `Chapter ${to}` : `${fromDir} → ${toDir}`;
  const parts = sections.map(({ title: heading, files: inSection, shared }) => {
    const text = inSection.map((file) => diffs.get(file)).join('');
    if (!heading || !text) return text;
    const added = text.split('\n').filter((line) => /^\+(?!\+\+ )\s*\S/.test(line)).length;
    const alsoShared = shared.length
      ? `Also in shared/, used by this group (shared by every part, so no diff shows it): ${shared.join(', ')}\n\n`
      : '';
    return `\n==== ${heading}: ${added.toLocaleString('en-US')} lines added (blank lines aside) ====\n\n${alsoShared}${text}`;
  });
  const layerNote =
    layerChanged && !goingFurther
      ? ` The full Nimbus's ${layerChanged} code files (${LAYER}) are a book of their own; add --going-further to see them.`
      : '';
  const head = `${summary(title, code, extras.length, all)}${layerNote}\n`;
  return { files, text: [head, ...parts].join('') };
}

/**
 * The code files in the order the chapter's README lists them, group by group under "What changed"
 * ("### The core, in reading order"): the reading path the chapter chose. Without such groups, or for
 * a file the README does not name, `codeOrder` decides.
 */
function readingPath(
  toDir: string,
  codeOrder: string[],
): Array<{ title: string; files: string[]; shared: string[] }> {
  const sections = h2(readme(toDir), /^What changed since Part \d+$/)
    .split(/^### /m)
    .slice(1)
    .map((block) =>
      group(block.slice(0, block.indexOf('\n')).trim(), bulletNames(block), codeOrder),
    );
  if (sections.length === 0) return [{ title: '', files: codeOrder, shared: [] }];
  const named = new Set(sections.flatMap((section) => section.files));
  sections.at(-1)!.files.push(...codeOrder.filter((file) => !named.has(file)));
  return sections;
}

/** The full Nimbus's files, in the order of the Files table of its own README (going-further/README.md). */
function layerSection(toDir: string, codeOrder: string[]) {
  const listed = tableFiles(h2(readme(path.join(toDir, LAYER)), /^Files$/)).map(
    (file) => LAYER + file,
  );
  const section = group('Going further', listed, codeOrder);
  section.files.push(...codeOrder.filter((file) => !section.files.includes(file)));
  return section;
}

/** A group of the reading path: the files named that changed, and those of shared/ it names. */
function group(title: string, named: string[], codeOrder: string[]) {
  return {
    title,
    files: named.filter((file) => codeOrder.includes(file)),
    shared: named.filter((file) => file.startsWith('shared/')),
  };
}

function readme(dir: string): string {
  const file = path.join(ROOT_DIR, dir, 'README.md');
  return existsSync(file) ? readFileSync(file, 'utf8') : '';
}

/** The body of a README's "## Heading" section, up to the next "## " ('' when it has none). */
export function h2(markdown: string, heading: RegExp): string {
  const lines = markdown.split('\n');
  const start = lines.findIndex((line) => line.startsWith('## ') && heading.test(line.slice(3)));
  if (start === -1) return '';
  const end = lines.findIndex((line, i) => i > start && line.startsWith('## '));
  return lines.slice(start + 1, end === -1 ? undefined : end).join('\n');
}

/** The names a list of changes gives at the start of its bullets: "- `a.ts`, `b.ts` — …". */
export function bulletNames(markdown: string): string[] {
  return [...markdown.matchAll(/^- (`[^`]+`(?:, `[^`]+`)*)/gm)].flatMap((match) =>
    [...match[1].matchAll(/`([^`]+)`/g)].map((name) => name[1]),
  );
}

/** The files of a table, by the name in each row's first cell: "| `a.ts` | … |". */
export function tableFiles(markdown: string): string[] {
  return [...markdown.matchAll(/^\| `([^`]+)`/gm)].map((match) => match[1]);
}

/** e.g. "Chapter 6: 2 code files changed — schema.sql, chat.ts. 5 README and test files left out; add --all to see them." */
function summary(title: string, code: string[], extras: number, all: boolean): string {
  const plural = code.length === 1 ? '' : 's';
  const changed =
    code.length === 0
      ? 'no code files changed'
      : `${code.length} code file${plural} changed — ${code.join(', ')}`;
  if (extras === 0) return `${title}: ${changed}.`;
  const rest = all
    ? `Followed by ${extras} README and test files.`
    : `${extras} README and test files left out; add --all to see them.`;
  return `${title}: ${changed}. ${rest}`;
}

function partFolder(part: number): string {
  const folder = `part-${String(part).padStart(2, '0')}`;
  if (!existsSync(path.join(ROOT_DIR, folder))) throw new UsageError(`There is no ${folder}.`);
  return folder;
}

/** Every file in a part folder, by its path inside the folder (e.g. "tests/chunking.test.ts"), with its text. */
function readPart(folder: string): Map<string, string> {
  const dir = path.join(ROOT_DIR, folder);
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((file) =>
    statSync(path.join(dir, file)).isFile(),
  );
  return new Map(
    files.map((file) => [
      file.split(path.sep).join('/'),
      readFileSync(path.join(dir, file), 'utf8'),
    ]),
  );
}

/** What explains the code rather than being the code; shown only with --all. */
function isExtra(file: string): boolean {
  return file.endsWith('.md') || /(^|\/)tests\//.test(file) || file === 'scenarios.json';
}

/** Scripts a learner runs (started with runMain) read best after everything they use. */
function isEntryScript(source: string): boolean {
  return /^if \(startedDirectly\(import\.meta\.url\)\) await runMain\(/m.test(source);
}

/** Every file of the part in the order to read it; `sources` holds each file's text (the old text for a removed file). */
function readingOrder(sources: Map<string, string>): string[] {
  const names = [...sources.keys()].sort();
  const sql = names.filter((file) => file.endsWith('.sql') && !isExtra(file));
  const typescript = names.filter((file) => file.endsWith('.ts') && !isExtra(file));
  const sqlRank = (file: string) =>
    SQL_ORDER.includes(file) ? SQL_ORDER.indexOf(file) : SQL_ORDER.length;
  const importsOf = (file: string) => localImports(file, sources.get(file)!);
  return [
    ...sql.sort((a, b) => sqlRank(a) - sqlRank(b)), // stable, so other SQL files stay alphabetical after the three
    ...dependenciesFirst(
      typescript.filter((file) => !isEntryScript(sources.get(file)!)),
      importsOf,
    ),
    ...dependenciesFirst(
      typescript.filter((file) => isEntryScript(sources.get(file)!)),
      importsOf,
    ),
    // Any other kind of file (there is none yet) still counts as code, so no change goes unseen.
    ...names.filter((file) => !file.endsWith('.sql') && !file.endsWith('.ts') && !isExtra(file)),
    ...names.filter(isExtra),
  ];
}

/** The files of the same part that `file` imports: `from './memory.ts'` inside part-06 is "memory.ts". */
function localImports(file: string, source: string): string[] {
  const specifiers = [...source.matchAll(/\bfrom\s+['"](\.\.?\/[^'"]+)['"]/g)].map(
    (match) => match[1],
  );
  return specifiers.map((specifier) => path.posix.join(path.posix.dirname(file), specifier));
}

/**
 * Orders files so that each comes after the files it imports; among files that are ready, the alphabetically
 * first goes next. Imports of files outside `files` (shared/, or the other group) are ignored.
 */
function dependenciesFirst(files: string[], importsOf: (file: string) => string[]): string[] {
  const waitingOn = new Map(
    files.map((file) => [file, new Set(importsOf(file).filter((dep) => files.includes(dep)))]),
  );
  const order: string[] = [];
  while (waitingOn.size > 0) {
    const remaining = [...waitingOn.keys()].sort();
    // In an import cycle no file is ready; taking the alphabetically first one breaks it.
    const next = remaining.find((file) => waitingOn.get(file)!.size === 0) ?? remaining[0];
    order.push(next);
    waitingOn.delete(next);
    for (const deps of waitingOn.values()) deps.delete(next);
  }
  return order;
}

/**
 * `diff -u` of one file, labelled part-05/x.ts and part-06/x.ts; a missing side is read as empty, like
 * `diff -N`, and labelled /dev/null, as git and diff label a file that is new or removed.
 */
function unifiedDiff(
  fromDir: string,
  toDir: string,
  file: string,
  inOlder: boolean,
  inNewer: boolean,
): string {
  const side = (dir: string, present: boolean) =>
    present ? path.join(ROOT_DIR, dir, file) : '/dev/null';
  const result = spawnSync(
    'diff',
    [
      '-u',
      '--label',
      inOlder ? `${fromDir}/${file}` : '/dev/null',
      '--label',
      inNewer ? `${toDir}/${file}` : '/dev/null',
      side(fromDir, inOlder),
      side(toDir, inNewer),
    ],
    { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 },
  );
  // diff exits 1 when the files differ, which is expected here; 2 means it could not compare them.
  if (result.error || result.status === 2) {
    throw new Error(
      `diff could not compare ${file}: ${result.error?.message ?? result.stderr.trim()}`,
    );
  }
  return result.stdout;
}
