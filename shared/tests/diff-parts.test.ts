// `npm run diff` shows a chapter's code in reading order, new files in full, on the real part folders.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../cli.ts';
import { ROOT_DIR } from '../config.ts';
import { chapterDiff as computeDiff } from '../scripts/chapter-diff.ts';
import { runInProcess } from '../testing/run-in-process.ts';

/** The parts do not change during the run: each diff is computed once and shared by the tests that read it. */
const computed = new Map<string, ReturnType<typeof computeDiff>>();
function chapterDiff(
  from: number,
  to: number,
  options: { all?: boolean; goingFurther?: boolean } = {},
) {
  const key = `${from}-${to}-${options.all ?? false}-${options.goingFurther ?? false}`;
  if (!computed.has(key)) computed.set(key, computeDiff(from, to, options));
  return computed.get(key)!;
}

const folder = (part: number) => `part-${String(part).padStart(2, '0')}`;
const source = (part: number, file: string) =>
  readFileSync(path.join(ROOT_DIR, folder(part), file), 'utf8');
const isExtra = (file: string) =>
  file === 'README.md' || file === 'scenarios.json' || /(^|\/)tests\//.test(file);

/**
 * The diff of one file: everything from its `--- part-NN/file` line (`--- /dev/null` when the file is new)
 * up to the next file's, found by its name on either label.
 */
function section(text: string, part: number, file: string): string {
  const found = text.split(/^(?=--- (?:part-\d\d\/|\/dev\/null\n))/m).find((diff) =>
    diff
      .split('\n')
      .slice(0, 2)
      .some(
        (label) =>
          label === `--- ${folder(part)}/${file}` || label === `+++ ${folder(part)}/${file}`,
      ),
  );
  if (!found) throw new Error(`${file} is not in the diff`);
  return found;
}

/** The file's lines, each with the given prefix, as diff prints a file added or removed whole. */
const wholeFile = (text: string, prefix: string) =>
  `${text
    .replace(/\n$/, '')
    .split('\n')
    .map((line) => prefix + line)
    .join('\n')}\n`;

/** What each chapter teaches, by the names its diff must add: the diff is the lesson. */
const LESSONS: Record<number, string[]> = {
  2: [
    'async function signIn(',
    'export interface ToolContext',
    "name: 'get_order_status'",
    'export async function ensureDatabase(',
    'Type yes to delete and reset',
    'export function splitSqlStatements(',
    'const first = await chatWithTools(llm, messages, TOOL_DEFINITIONS)',
  ],
  3: [
    'CREATE FUNCTION is_refund_eligible',
    "name: 'create_support_ticket'",
    'MAX_TICKETS_PER_TURN',
    'already_open: true',
    "name: 'list_customer_orders'",
    "['tickets', 'support ticket']",
  ],
  4: [
    'export async function runAgent(',
    'export async function safeRunTool(',
    'export class Trace',
    'MAX_STEPS',
    'const result = await runAgent(question, customer',
  ],
  5: [
    'export function parseArticle(',
    'export async function ingestArticles(',
    'export async function buildIndex(',
    'export async function searchHelpCenter(',
    'export async function indexStatus(',
  ],
  6: [
    'export function splitIntoTurns(',
    'export function buildContext(',
    'export async function saveMessages(',
    'export async function loadMessages(',
    'async function chatLoop(',
    'export function contextView(',
  ],
};

describe("each chapter's diff", () => {
  it.each(Object.entries(LESSONS))('into part %s adds what the chapter teaches', (to, names) => {
    const added = chapterDiff(Number(to) - 1, Number(to))
      .text.split('\n')
      .filter((line) => line.startsWith('+'))
      .join('\n');
    for (const name of names) expect(added, name).toContain(name);
  });
});

describe('chapterDiff', () => {
  it('shows a new file in full, every line an addition', () => {
    expect(existsSync(path.join(ROOT_DIR, 'part-05', 'context.ts'))).toBe(false);
    const [minus, plus, hunk, ...body] = section(chapterDiff(5, 6).text, 6, 'context.ts').split(
      '\n',
    );
    expect([minus, plus]).toEqual(['--- /dev/null', '+++ part-06/context.ts']);
    expect(hunk).toMatch(/^@@ -0,0 \+1(,\d+)? @@$/);
    expect(body.join('\n')).toBe(wholeFile(source(6, 'context.ts'), '+'));
  });

  it('shows a removed file in full, every line a removal', () => {
    const [minus, plus, hunk, ...body] = section(chapterDiff(6, 5).text, 6, 'context.ts').split(
      '\n',
    );
    expect([minus, plus]).toEqual(['--- part-06/context.ts', '+++ /dev/null']);
    expect(hunk).toMatch(/^@@ -1(,\d+)? \+0,0 @@$/);
    expect(body.join('\n')).toBe(wholeFile(source(6, 'context.ts'), '-'));
  });

  it('lists every code file a chapter adds (parts 5 and 6)', () => {
    for (const to of [5, 6]) {
      const topLevel = (part: number) =>
        readdirSync(path.join(ROOT_DIR, folder(part))).filter((f) => /\.(ts|sql)$/.test(f));
      const added = topLevel(to).filter((file) => !topLevel(to - 1).includes(file));
      expect(added.length).toBeGreaterThan(0);
      expect(chapterDiff(to - 1, to).files).toEqual(expect.arrayContaining(added));
    }
  });

  it('without reading groups in the README: SQL first, then each module before the modules that import it, entry scripts last', () => {
    const { files, text } = chapterDiff(4, 5);
    expect(text).not.toMatch(/^====/m);
    const order = ['schema.sql', 'chunking.ts', 'ingest-articles.ts', 'embedding-index.ts'].map(
      (file) => files.indexOf(file),
    );
    expect(order.every((index) => index >= 0)).toBe(true);
    expect(order).toEqual([...order].sort((a, b) => a - b));
    const entryScripts = files.filter((file) => source(5, file).includes('runMain('));
    expect(entryScripts).toContain('build-index.ts');
    expect(files.slice(-entryScripts.length)).toEqual(entryScripts);
  });

  it("follows the chapter's reading path (schema → context → store → agent → REPL → viewer), and leaves the full Nimbus to --going-further, after it, under a heading with the lines it adds", () => {
    const { files, text } = chapterDiff(5, 6);
    const path = [
      'schema.sql',
      'context.ts',
      'memory.ts',
      'agent.ts',
      'chat.ts',
      'show-conversation.ts',
    ];
    const at = path.map((file) => files.indexOf(file));
    expect(at.every((index) => index >= 0)).toBe(true);
    expect(at).toEqual([...at].sort((a, b) => a - b));
    expect(files.some((file) => file.startsWith('going-further/'))).toBe(false);
    expect(text.split('\n')[0]).toMatch(
      /The full Nimbus's \d+ code files \(going-further\/\) are a book of their own; add --going-further to see them\.$/,
    );

    const whole = chapterDiff(5, 6, { goingFurther: true });
    expect(whole.files.slice(0, files.length)).toEqual(files);
    const layer = whole.files.slice(files.length);
    expect(layer.length).toBeGreaterThan(0);
    expect(layer.every((file) => file.startsWith('going-further/'))).toBe(true);
    const further = whole.text.slice(whole.text.indexOf('\n==== Going further'));
    // Counted as the chapter counts itself (reading-budget.test.ts): added lines, blank ones aside.
    const added = further.split('\n').filter((line) => /^\+(?!\+\+ )\s*\S/.test(line)).length;
    expect(further.split('\n')[1]).toBe(
      `==== Going further: ${added.toLocaleString('en-US')} lines added (blank lines aside) ====`,
    );
  });

  it('prints exactly the listed files, in order, under a one-line summary naming them', () => {
    const { files, text } = chapterDiff(5, 6);
    const [summary] = text.split('\n');
    expect(
      summary.startsWith(`Chapter 6: ${files.length} code files changed — ${files.join(', ')}.`),
    ).toBe(true);
    expect([...text.matchAll(/^\+\+\+ part-06\/(.+)$/gm)].map((match) => match[1])).toEqual(files);
  });

  it('leaves out unchanged files', () => {
    expect(source(6, 'split-sql.ts')).toBe(source(5, 'split-sql.ts'));
    const { files, text } = chapterDiff(5, 6, { all: true });
    expect(files).not.toContain('split-sql.ts');
    expect(text).not.toContain('part-06/split-sql.ts');
    for (const file of files) {
      const read = (part: number) =>
        existsSync(path.join(ROOT_DIR, folder(part), file)) ? source(part, file) : undefined;
      expect(read(6), file).not.toBe(read(5));
    }
  });

  it('leaves out the README, tests/ and scenarios.json unless asked, then puts them after the code', () => {
    const code = chapterDiff(5, 6);
    expect(code.files.filter(isExtra)).toEqual([]);
    expect(code.text).not.toMatch(/^\+\+\+ part-06\/(README\.md|scenarios\.json|tests\/)/m);
    expect(code.text.split('\n')[0]).toContain('add --all to see them');

    const all = chapterDiff(5, 6, { all: true });
    expect(all.files.slice(0, code.files.length)).toEqual(code.files);
    const extras = all.files.slice(code.files.length);
    expect(extras.every(isExtra)).toBe(true);
    expect(extras).toEqual(expect.arrayContaining(['README.md', 'scenarios.json']));
    expect(extras.some((file) => file.startsWith('tests/'))).toBe(true);
    expect(all.text).toContain('+++ part-06/README.md\n');
  });

  it('refuses a part that does not exist', () => {
    expect(() => chapterDiff(5, 99)).toThrow(new UsageError('There is no part-99.'));
  });
});

describe('npm run diff', () => {
  it('prints the summary, then the first group’s heading and its first file’s diff', async () => {
    const result = await runInProcess('shared/scripts/diff-parts.ts', ['5', '6']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      /^Chapter 6: \d+ code files changed — schema\.sql, .*\n\n==== The core, in reading order: [\d,]+ lines added \(blank lines aside\) ====\n\n(Also in shared\/.*\n\n)?--- part-05\/schema\.sql\n\+\+\+ part-06\/schema\.sql\n@@ /,
    );
  });

  it('answers anything but two part numbers with one sentence and the usage, exit code 2', async () => {
    const result = await runInProcess('shared/scripts/diff-parts.ts', ['5']);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(
      /^Give two part numbers\.\nUsage: npx tsx shared\/scripts\/diff-parts\.ts <from> <to>/,
    );
  });
});
