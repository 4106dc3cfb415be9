// show-conversation: the turn-by-turn view of compaction equals buildContext, other budgets on demand, real tokens; going further's viewer adds the exact JSON and a full export.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureDatabase } from '../setup-database.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../shared/testing/database.ts';
import { buildContext, memoryBudget, type MemoryBudget, DEFAULT_BUDGET } from '../context.ts';
import { contextView, storedView } from '../conversation-view.ts';
import { loadMessages } from '../memory.ts';
import { describeConversation } from '../stored-conversations.ts';
import { conversation, expected, rowsOf, turn } from './context-rows.ts';

let db: ScratchDatabase;

beforeAll(async () => {
  db = await createScratchDatabase();
  await ensureDatabase(() => {});
});
afterAll(() => db.drop());

/** What `show-conversation <id> --context` prints under `budget` (the script only adds the flags). */
async function shownContext(id: string, budget: MemoryBudget = DEFAULT_BUDGET): Promise<string> {
  return contextView(id, buildContext(await loadMessages(id), budget)).join('\n');
}

/** What the core's `show-conversation <id>` prints: the stored messages, turn by turn. */
async function shownStored(id: string): Promise<string> {
  return storedView((await describeConversation(id))!, await loadMessages(id)).join('\n');
}

describe('show-conversation --context, turn by turn', () => {
  it('names each turn full, compacted or dropped, with sizes and running totals equal to buildContext', async () => {
    const id = await conversation(turn(1, 3000), turn(2), turn(3), turn(4), turn(5));
    const budget = { maxChars: 1500, recentTurns: 2 };
    const shown = { stdout: await shownContext(id, budget) };
    const { context, rows } = expected(await loadMessages(id), budget);
    expect(rowsOf(shown.stdout).map(({ question: _, ...row }) => row)).toEqual(rows);
    expect(rows.map((r) => r.fate)).toEqual(['dropped', 'compacted', 'compacted', 'full', 'full']);
    expect(shown.stdout).toMatch(
      new RegExp(
        `^Budget: \\[[#.]{24}\\] ${context.chars.toLocaleString('en-US')} of 1,500 chars \\(\\d+%\\) — 2 full, 2 compacted, 1 dropped$`,
        'm',
      ),
    );
    // The totals add up: each is the one before plus this turn's sent size, the last one the budget's.
    expect(rows.filter((r) => r.total !== undefined).at(-1)!.total).toBe(context.chars);
    expect(shown.stdout).not.toContain('Over budget');
    expect(shown.stdout).toContain(
      '[gemini]/[openai]: the provider that wrote the message; its own version is kept and replayed to it.',
    );
    // The dropped turn is shown, its question shortened, so the learner sees what the model will not.
    expect(rowsOf(shown.stdout)[0].question).toMatch(/^Question 1 q+…$/);
    const sent = shown.stdout.split('Messages sent with the next question:\n')[1];
    expect(sent.split('\n')[0]).toBe('  user: Question 2 ' + 'q'.repeat(40));
  });

  it('MEMORY_MAX_CHARS and MEMORY_RECENT_TURNS in .env are the defaults, and bad values are one sentence', async () => {
    const id = await conversation(turn(1), turn(2), turn(3));
    const saved = { ...process.env };
    try {
      Object.assign(process.env, { MEMORY_MAX_CHARS: '1000', MEMORY_RECENT_TURNS: '1' });
      const shown = await shownContext(id, memoryBudget(process.env));
      expect(shown).toContain('(budget 1,000 chars, the newest turn full):');
      expect(rowsOf(shown).map(({ question: _, ...row }) => row)).toEqual(
        expected(await loadMessages(id), { maxChars: 1000, recentTurns: 1 }).rows,
      );
      for (const [name, value, least] of [
        ['MEMORY_MAX_CHARS', 'lots', '1000'],
        ['MEMORY_MAX_CHARS', '700', '1000'],
        ['MEMORY_RECENT_TURNS', '0', '1'],
      ]) {
        Object.assign(process.env, {
          MEMORY_MAX_CHARS: '',
          MEMORY_RECENT_TURNS: '',
          [name]: value,
        });
        expect(() => memoryBudget(process.env)).toThrow(
          `${name} must be a whole number of at least ${least} (it is "${value}"). Fix it in .env.`,
        );
      }
    } finally {
      Object.assign(process.env, {
        MEMORY_MAX_CHARS: saved.MEMORY_MAX_CHARS,
        MEMORY_RECENT_TURNS: saved.MEMORY_RECENT_TURNS,
      });
    }
  });

  it('shows a single turn over budget as full (the newest turn is never dropped), and a history that starts without a question', async () => {
    const over = await conversation(turn(1, 5000));
    const shown = await shownContext(over, { maxChars: 1000, recentTurns: 2 });
    const [only] = rowsOf(shown);
    expect(only).toMatchObject({ turn: 1, fate: 'full' });
    expect(shown).toMatch(
      /^Budget: \[#{24}\] [\d,]+ of 1,000 chars \(\d{3}%\) — 1 full, 0 compacted, 0 dropped$/m,
    );
    expect(shown).toContain('The newest turn is always kept.');

    const headless = await conversation(
      [{ message: { role: 'assistant', content: 'Welcome back!' } }],
      turn(1),
    );
    const view = rowsOf(await shownContext(headless, { maxChars: 12_000, recentTurns: 1 }));
    expect(view.map((r) => [r.fate, r.question])).toEqual([
      ['compacted', '(before the first question)'],
      ['full', `Question 1 ${'q'.repeat(38)}…`],
    ]);
  });
});

describe('show-conversation <id>, the core’s and going further’s', () => {
  it('shows every stored message turn by turn, before any of it is trimmed', async () => {
    const id = await conversation(turn(1), turn(2));
    const shown = await shownStored(id);
    expect(shown.split('\n')[0]).toMatch(
      new RegExp(
        `^Conversation ${id} of Maya Patel \\(maya\\.patel@example\\.com\\): 8 messages in 2 turns, started `,
      ),
    );
    expect(shown).toContain(
      `Turn 1\n  user: Question 1 ${'q'.repeat(40)}\n  assistant: (requested tools) get_order_status({"order_id":1042})\n  tool: get_order_status → {"status":"shipped"}\n  assistant: Answer 1.\nTurn 2\n`,
    );
    expect(shown.match(/^Turn \d+$/gm)).toEqual(['Turn 1', 'Turn 2']);
  });
});
