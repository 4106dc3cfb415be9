// Each part's README is a chapter a learner can build the part from: its form, and its code copied verbatim.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT_DIR } from '../config.ts';

const PARTS = readdirSync(ROOT_DIR)
  .filter((name) => /^part-\d\d$/.test(name))
  .sort();
/** Every README whose code blocks are checked: the root's, each part's, and the full Nimbus's. */
const READMES = ['.', ...PARTS, 'part-06/going-further'].filter((dir) =>
  existsSync(path.join(ROOT_DIR, dir, 'README.md')),
);

const readme = (dir: string) => readFileSync(path.join(ROOT_DIR, dir, 'README.md'), 'utf8');
const partNumber = (part: string) => Number(part.slice(-2));

/** A text's lines without their indentation, blank ones left out. */
const lines = (text: string) =>
  text
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);

/** A line standing for lines left out of an excerpt: "// …" in code, "-- …" in SQL. */
const ELISION = /^\s*(?:\/\/|--) …\n/m;

interface Excerpt {
  /** The file it is copied from, as the README names it: relative to the README's folder. */
  file: string;
  code: string;
  /** Where it starts in the README, to tell which section holds it. */
  at: number;
}

/** The excerpts of a README: a ```ts or ```sql block right after a line "From `file`:". */
function excerpts(markdown: string): Excerpt[] {
  return [...markdown.matchAll(/^From `([^`]+)`:\n\n```(?:ts|sql)\n([\s\S]*?)```/gm)].map((m) => ({
    file: m[1],
    code: m[2],
    at: m.index,
  }));
}

/** The "## " headings of a README, in order, with where each starts. */
function headings(markdown: string): Array<{ title: string; at: number }> {
  return [...markdown.matchAll(/^## (.+)$/gm)].map((m) => ({ title: m[1], at: m.index }));
}

/** The body of the first "## " section whose title matches (up to the next "## "). */
function section(markdown: string, title: RegExp): string {
  const all = headings(markdown);
  const i = all.findIndex((h) => title.test(h.title));
  if (i === -1) return '';
  return markdown.slice(all[i].at, all[i + 1]?.at ?? markdown.length);
}

/** Lines of code an excerpt shows: blank lines and the "// …" marks aside. */
const shownLines = (code: string) => lines(code.replace(new RegExp(ELISION, 'gm'), '')).length;

/**
 * The chapter form (../shared/notes in the project's guide, Part 6 the model), in this order. The inventory
 * (what changed, the files, the tests) comes last: a reference, not the lesson.
 */
const CHAPTER_FORM: Array<[string, RegExp]> = [
  ['Before you start', /^Before you start$/],
  ['the concept', /^(The concept|How .+)$/],
  ['Build it', /^Build it/],
  ['Try it', /^Try it$/],
  ['Recap', /^Recap$/],
  ['Next', /^Next\b/],
  ['the inventory', /^(What changed since Part \d+|What's here)$/],
  ['Files', /^Files$/],
  ['Tests', /^Tests$/],
];

/**
 * What each chapter teaches, by lines that must stand in a checked excerpt of its README, from the file
 * named: the key code a learner builds the part from (the diff holds it too: diff-parts.test.ts).
 */
const TAUGHT: Record<string, Array<[file: string, line: string]>> = {
  'part-01': [
    ['ask.ts', "{ role: 'system', content: SYSTEM_PROMPT },"],
    ['ask.ts', 'const reply = await chatWithTools(llm, messages);'],
    ['../shared/llm/index.ts', 'export async function chatWithTools('],
    ['../shared/llm/messages.ts', 'export interface AssistantMessage {'],
    ['../shared/llm/messages.ts', 'provider_raw?: ProviderRaw;'],
    ['../shared/llm/messages.ts', 'export interface ToolMessage {'],
    ['../shared/llm/messages.ts', 'export interface ChatResult {'],
    ['../shared/llm/gemini.ts', 'function toContents(messages: Message[]): Content[] {'],
    [
      '../shared/llm/openai.ts',
      'function toOpenAIMessages(messages: Message[]): ChatCompletionMessageParam[] {',
    ],
    // The system prompt in full: its first line, its rules and its last line.
    [
      'prompt.ts',
      'export const SYSTEM_PROMPT = `You are Nimbus, the customer-support assistant of Kestrel Electronics, a small online electronics store.',
    ],
    ['prompt.ts', 'What you must never do:'],
    ['prompt.ts', 'Say so plainly and suggest emailing support@kestrel.example.`;'],
  ],
  'part-02': [
    ['schema.sql', 'CREATE TABLE IF NOT EXISTS orders ('],
    ['tools.ts', "name: 'get_order_status',"],
    ['tools.ts', 'export interface ToolContext {'],
    ['tools.ts', 'FROM orders o WHERE o.id = ? AND o.customer_id = ?`,'],
    [
      'tools.ts',
      'export async function runTool(call: ToolCall, context: ToolContext): Promise<ToolResult> {',
    ],
    ['ask.ts', 'const first = await chatWithTools(llm, messages, TOOL_DEFINITIONS);'],
    ['ask.ts', 'messages.push(first.message);'],
    ['ask.ts', 'tool_call_id: call.id,'],
    [
      'prompt.ts',
      '- For any question about a specific order, call get_order_status and answer from its result.',
    ],
  ],
  'part-03': [
    [
      'functions.sql',
      'CREATE FUNCTION is_refund_eligible(p_status VARCHAR(20), p_paid_at DATETIME) RETURNS BOOLEAN',
    ],
    ['tools.ts', "name: 'check_refund_eligibility',"],
    [
      'tools.ts',
      'is_refund_eligible(status, paid_at) AS eligible, refund_reason(status, paid_at) AS reason',
    ],
    [
      'tools.ts',
      "await db.query('SELECT id FROM customers WHERE id = ? FOR UPDATE', [customerId]);",
    ],
    ['tools.ts', 'already_open: true,'],
    ['tools.ts', 'if (context.ticketsOpened >= MAX_TICKETS_PER_TURN) {'],
    ['schema.sql', 'CREATE TABLE IF NOT EXISTS tickets ('],
    [
      'prompt.ts',
      '- Create a ticket only after the customer has asked for one or agreed to your suggestion. Then give',
    ],
  ],
  'part-04': [
    ['agent.ts', 'export async function runAgent('],
    ['agent.ts', 'for (let step = 1; step <= MAX_STEPS; step++) {'],
    ['agent.ts', 'if (reply.tool_calls.length === 0) {'],
    ['agent.ts', "return finish(STEP_LIMIT_ANSWER, 'step_limit', MAX_STEPS);"],
    ['safe-run-tool.ts', 'export async function safeRunTool('],
    [
      'safe-run-tool.ts',
      'if (count > MAX_REPEAT_CALLS) return { result: { error: REPEATED_CALL_ERROR } };',
    ],
    ['trace.ts', 'export class Trace {'],
  ],
  'part-05': [
    ['chunking.ts', 'export const MAX_CHUNK_CHARS = 1000;'],
    ['chunking.ts', 'export const OVERLAP_CHARS = 150;'],
    [
      'chunking.ts',
      "if (line.startsWith('## ')) sections.push({ heading: line.slice(3).trim(), lines: [] });",
    ],
    [
      'embedding-index.ts',
      'export async function buildIndex(llm: LlmSettings, options: IndexOptions = {}): Promise<Progress> {',
    ],
    ['search-help.ts', 'for (let i = 0; i < q.length; i++) dot += q[i] * v[i];'],
    ['search-help.ts', '.slice(0, TOP_K);'],
    ['search-help.ts', 'WHERE MATCH(c.text) AGAINST (? IN NATURAL LANGUAGE MODE)'],
    ['tools.ts', "name: 'search_help_center',"],
    [
      'prompt.ts',
      'privacy and so on), call search_help_center first and answer only from the passages it returns.',
    ],
  ],
  'part-06': [
    ['context.ts', 'export function splitIntoTurns(messages: Message[]): Turn[] {'],
    [
      'context.ts',
      'export function buildContext(messages: Message[], budget: MemoryBudget): Context {',
    ],
    ['memory.ts', 'export interface ConversationStore {'],
    ['memory.ts', 'export async function saveMessages('],
    ['agent.ts', 'const history = await options.store.loadContext(conversation, question);'],
    ['agent.ts', '...history.messages,'],
    ['agent.ts', 'await turn.save(step);'],
  ],
};

describe.each(READMES)('%s/README.md', (dir) => {
  const text = readme(dir);
  it('shows code only as it is: every ts and sql block names its file and is copied from it', () => {
    const found = excerpts(text);
    const blocks = [...text.matchAll(/^```(?:ts|sql|js)\n/gm)];
    expect(found.length, 'every ts, js and sql block is an excerpt that names its file').toBe(
      blocks.length,
    );
    for (const { file, code } of found) {
      const source = lines(readFileSync(path.join(ROOT_DIR, dir, file), 'utf8'));
      // A line "// …" (or "-- …") stands for lines left out; each piece around it is copied whole.
      // Lines are compared without their indentation, which prettier takes off a piece of a function.
      for (const piece of code.split(ELISION).map(lines)) {
        const at = source.some((_, i) => piece.every((line, j) => source[i + j] === line));
        expect(at, `not in ${dir}/${file}:\n${piece.join('\n')}`).toBe(true);
      }
    }
  });
});

describe.each(PARTS)('%s/README.md is a chapter', (part) => {
  const text = readme(part);
  const n = partNumber(part);

  it('in the chapter form: the story, before you start, the concept, numbered steps, try it, recap, next, then the inventory', () => {
    const titles = headings(text).map((h) => h.title);
    let from = 0;
    for (const [name, title] of CHAPTER_FORM) {
      const at = titles.findIndex((t, i) => i >= from && title.test(t));
      expect(at, `${part}: "## ${name}" missing, or out of order`).toBeGreaterThanOrEqual(0);
      from = at + 1;
    }
    const build = section(text, /^Build it/);
    const steps = [...build.matchAll(/^### (\d+)\. /gm)].map((m) => Number(m[1]));
    expect(steps.length, 'Build it is numbered steps: ### 1. …').toBeGreaterThanOrEqual(3);
    expect(steps).toEqual(steps.map((_, i) => i + 1));
  });

  it('opens on the part before it failing, in a real run', () => {
    const opening = text.slice(0, headings(text)[0]?.at ?? 0);
    if (n === 1) return void expect(opening.split(/\s+/).length).toBeGreaterThan(80);
    const before = `part-${String(n - 1).padStart(2, '0')}`;
    expect(opening).toMatch(new RegExp(`sample-session\\.ts ${before} [\\w-]+ --not-yet`));
    expect(opening).toMatch(/```text\n\$ npx tsx /);
  });

  it('builds the part in excerpts of its own code: about 100-200 lines, the key pieces all shown', () => {
    const build = section(text, /^Build it/);
    const start = text.indexOf(build);
    const inBuild = excerpts(text).filter((e) => e.at >= start && e.at < start + build.length);
    expect(inBuild.length).toBeGreaterThanOrEqual(4);
    const shown = inBuild.reduce((sum, e) => sum + shownLines(e.code), 0);
    expect(shown, 'lines of code in Build it').toBeGreaterThanOrEqual(80);
    expect(shown, 'lines of code in Build it').toBeLessThanOrEqual(260);
    const all = excerpts(text);
    for (const [file, line] of TAUGHT[part] ?? []) {
      const shownIn = all.filter((e) => e.file === file).some((e) => lines(e.code).includes(line));
      expect(shownIn, `${part}/README.md shows no excerpt of ${file} with: ${line}`).toBe(true);
    }
  });

  it('has a prompt spotlight when the chapter changes the prompt', () => {
    if (n === 1) return;
    const before = path.join(ROOT_DIR, `part-${String(n - 1).padStart(2, '0')}`, 'prompt.ts');
    const changed = !readFileSync(before).equals(
      readFileSync(path.join(ROOT_DIR, part, 'prompt.ts')),
    );
    const spotlight = section(text, /^Prompt spotlight$/);
    if (!changed) return void expect(spotlight).toBe('');
    expect(excerpts(spotlight).some((e) => e.file === 'prompt.ts')).toBe(true);
  });

  it('says where its sample session comes from: a real run against the fake provider', () => {
    const tryIt = section(text, /^Try it$/);
    expect(tryIt).toMatch(/real run against the project's fake provider/);
    expect(tryIt).toMatch(new RegExp(`sample-session\\.ts ${part} `));
  });

  it('reads in 20 to 45 minutes with its runs (200 words and 8 lines of code a minute)', () => {
    // The lesson: everything before the inventory.
    const inventory = headings(text).find((h) =>
      /^(What changed since Part \d+|What's here)$/.test(h.title),
    );
    const lesson = text.slice(0, inventory?.at ?? text.length);
    const code = [...lesson.matchAll(/```\w*\n([\s\S]*?)```/g)].map((m) => m[1]);
    const prose = lesson.replace(/```\w*\n[\s\S]*?```/g, '');
    const minutes =
      prose.split(/\s+/).filter(Boolean).length / 200 +
      code.reduce((sum, block) => sum + lines(block).length, 0) / 8;
    expect(minutes).toBeGreaterThanOrEqual(20);
    expect(minutes).toBeLessThanOrEqual(45);
  });
});
