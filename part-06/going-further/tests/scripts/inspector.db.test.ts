// Show-conversation: the turn-by-turn view of compaction equals buildContext, other budgets on demand, real tokens; going further's viewer adds the exact JSON and a full export.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../../../shared/db.ts';
import {
  createScratchDatabase,
  type ScratchDatabase,
} from '../../../../shared/testing/database.ts';
import { runInProcess } from '../../../../shared/testing/run-in-process.ts';
import { buildContext, type MemoryBudget, DEFAULT_BUDGET } from '../../../context.ts';
import { contextView } from '../../../conversation-view.ts';
import { turnsView } from '../../store/message-rows.ts';
import { loadMessages, type MessageToSave, type StoredMessage } from '../../../memory.ts';
import { describeConversation } from '../../../stored-conversations.ts';
import { conversation, expected, rowsOf, turn } from '../../../tests/context-rows.ts';
import { loadRows } from '../../store/message-rows.ts';
import { ensureFullDatabase } from '../../store/ensure-tables.ts';

const SHOW = fileURLToPath(new URL('../../../show-conversation.ts', import.meta.url));
const SHOW_FULL = fileURLToPath(new URL('../../show-conversation.ts', import.meta.url));
let db: ScratchDatabase;
let env: Record<string, string>;

beforeAll(async () => {
  db = await createScratchDatabase();
  await ensureFullDatabase(() => {}); // going further's viewer reads only a database it can show whole
  env = { DB_NAME: db.name };
});
afterAll(() => db.drop());

/** What `show-conversation <id> --context` prints under `budget` (the script only adds the flags). */
async function shownContext(id: string, budget: MemoryBudget = DEFAULT_BUDGET): Promise<string> {
  return contextView(id, buildContext(await loadMessages(id), budget)).join('\n');
}

/** What going further's `show-conversation <id>` prints: the rows, with their seq and tokens. */
async function shownRows(id: string): Promise<string> {
  const rows = await loadRows(id);
  const shown = rows.map((row) => ({ row, message: JSON.parse(row.data) }));
  return turnsView((await describeConversation(id))!, shown).join('\n');
}

describe('show-conversation --context, turn by turn', () => {
  it('--budget and --recent give exactly what buildContext gives with those settings', async () => {
    // The last turn hides characters: the JSON must show them escaped, and still parse back to the text.
    const hidden: MessageToSave[] = [
      { message: { role: 'user', content: 'Order \u202e2401\u202c and zero\u200bwidth?' } },
      { message: { role: 'assistant', content: 'Seen\u2060.' } },
    ];
    const id = await conversation(
      turn(1),
      turn(2, 500),
      turn(3),
      turn(4, 900),
      turn(5),
      turn(6),
      hidden,
    );
    const messages = await loadMessages(id);
    for (const budget of [
      { maxChars: 900, recentTurns: 1 },
      { maxChars: 3000, recentTurns: 3 },
      { maxChars: 100_000, recentTurns: 6 },
    ]) {
      const shown = await shownContext(id, budget);
      expect(
        rowsOf(shown).map(({ question: _, ...row }) => row),
        JSON.stringify(budget),
      ).toEqual(expected(messages, budget).rows);
    }
    // The script itself, flags and all: the view; and going further's, the exact JSON that will be sent.
    const shown = await runInProcess(SHOW, [id, '--context', '--budget=900', '--recent=1'], {
      env,
    });
    expect(shown.stdout).toBe(`${await shownContext(id, { maxChars: 900, recentTurns: 1 })}\n`);
    const json = await runInProcess(
      SHOW_FULL,
      [id, '--context', '--json', '--budget=3000', '--recent=3'],
      { env },
    );
    expect(JSON.parse(json.stdout)).toEqual(
      buildContext(messages, { maxChars: 3000, recentTurns: 3 }).messages,
    );
    expect(json.stdout).not.toMatch(/[\u200b\u202c\u202e\u2060]/);
    expect(json.stdout).toContain('Order \\u202e2401\\u202c and zero\\u200bwidth?');
  });
});

describe('show-conversation <id>, the core’s and going further’s', () => {
  it('going further’s shows each row with its seq, and each model call’s real tokens next to the message it wrote', async () => {
    const id = await conversation(turn(1), turn(2));
    const shown = await shownRows(id);
    expect(shown.split('\n')[0]).toMatch(
      new RegExp(
        `^Conversation ${id} of Maya Patel \\(maya\\.patel@example\\.com\\): 8 messages, started `,
      ),
    );
    expect(shown).toContain('Turn 1\n  #1 user: Question 1 ');
    expect(shown).toContain(
      '  #2 assistant: (requested tools) get_order_status({"order_id":1042}) (1,001 + 10 tokens)\n  #3 tool: get_order_status → {"status":"shipped"}\n  #4 assistant: Answer 1. (1,101 + 20 tokens)\nTurn 2\n',
    );
    expect(shown).toContain('  #8 assistant: Answer 2. (1,102 + 20 tokens)');
    expect(shown.match(/^Turn \d+$/gm)).toEqual(['Turn 1', 'Turn 2']);
  });

  it('going further’s --json exports the whole conversation: every row, its data as stored, damaged rows included and marked', async () => {
    const id = await conversation(turn(1));
    // A damaged row, as older code or a hand edit could leave: a tool result without its call.
    await query('INSERT INTO messages (conversation_id, seq, role, data) VALUES (?, 5, ?, ?)', [
      id,
      'tool',
      JSON.stringify({
        role: 'tool',
        tool_call_id: 'nobody',
        name: 'x\u202e\u200b',
        content: '{}',
      }),
    ]);
    const shown = await runInProcess(SHOW_FULL, [id, '--json'], { env });
    expect(shown.code).toBe(0);
    // Printed escaped, parsed back as stored.
    expect(shown.stdout).not.toMatch(/[\u200b\u202e]/);
    expect(shown.stdout).toContain('"name": "x\\u202e\\u200b"');
    const exported = JSON.parse(shown.stdout);
    const rows = await loadRows(id);
    expect(exported).toMatchObject({
      id,
      customer: { name: 'Maya Patel', email: 'maya.patel@example.com' },
    });
    expect(exported.messages.map((m: { seq: number }) => m.seq)).toEqual([1, 2, 3, 4, 5]);
    for (const [i, row] of rows.entries()) {
      const data = JSON.parse(row.data);
      expect(JSON.stringify(exported.messages[i].data)).toBe(JSON.stringify(data)); // byte-equal, key order and all
      expect(exported.messages[i]).toMatchObject({
        role: row.role,
        created_at: row.created_at.toISOString(),
        input_tokens: row.input_tokens,
      });
    }
    expect(exported.messages.at(-1).damaged).toBe('tool result without its call');
    expect(
      exported.messages.slice(0, -1).every((m: { damaged?: string }) => m.damaged === undefined),
    ).toBe(true);
    const original: StoredMessage[] = turn(1).map((t) => t.message);
    expect(exported.messages.slice(0, 4).map((m: { data: unknown }) => m.data)).toEqual(original);
  });

  it.each([
    ['show-conversation.ts', ['--context'], 'Give one conversation id (got 0).'],
    [
      'show-conversation.ts',
      [`${'a'.repeat(32)}`, '--budget=500'],
      '--budget and --recent go with --context.',
    ],
    [
      'show-conversation.ts',
      [`${'a'.repeat(32)}`, '--context', '--recent=0'],
      '--recent must be a whole number from 1 to 999999999 (got "0").',
    ],
    [
      'show-conversation.ts',
      [`${'a'.repeat(32)}`, `${'b'.repeat(32)}`],
      'Give one conversation id (got 2).',
    ],
    // Going further's flags, refused the same way.
    [
      'going-further/show-conversation.ts',
      ['--json'],
      '--context, --json, --budget and --recent need a conversation id.',
    ],
    [
      'going-further/show-conversation.ts',
      [`${'a'.repeat(32)}`, '--question=refund'],
      '--budget, --recent and --question go with --context.',
    ],
  ])('%s refuses %j: one line, the usage, exit 2', async (script, args, message) => {
    const run = await runInProcess(
      fileURLToPath(new URL(`../../../${script}`, import.meta.url)),
      args,
      {
        env,
      },
    );
    expect(run.code).toBe(2);
    expect(run.stderr.split('\n')[0]).toBe(message);
    expect(run.stderr).toContain(`Usage: npx tsx part-06/${script}`);
  });

  it.each(['show-conversation.ts', 'going-further/show-conversation.ts'])(
    '%s --help lists its ways to run it with what each does in one column',
    async (script) => {
      const run = await runInProcess(
        fileURLToPath(new URL(`../../../${script}`, import.meta.url)),
        ['--help'],
        {
          env,
        },
      );
      expect(run.code).toBe(0);
      const forms = run.stdout.split('\n').filter((line) => /^(Usage: | {7})npx tsx /.test(line));
      expect(forms.length).toBeGreaterThanOrEqual(3);
      // Where each line's description starts: after the command and at least two spaces.
      const columns = forms.map(
        (line) => /^.*?npx tsx \S+(?: \S+)*? {2,}(?=\S)/.exec(line)![0].length,
      );
      expect(new Set(columns).size, forms.join('\n')).toBe(1);
    },
  );
});
