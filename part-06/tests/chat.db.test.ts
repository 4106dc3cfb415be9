// The chapter's conversation end to end through the core chat.ts (plain store, readline): piped input, resumed in a new process, both providers.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../shared/db.ts';
import {
  createScratchDatabase,
  useScratchDatabase,
  type ScratchDatabase,
} from '../../shared/testing/database.ts';
import {
  startFakeProvider,
  type ChatView,
  type FakeProvider,
} from '../../shared/testing/fake-provider.ts';
import { runInProcess } from '../../shared/testing/run-in-process.ts';
import { runScript } from '../../shared/testing/run-script.ts';
import { buildContext, splitIntoTurns } from '../context.ts';
import type { Message } from '../../shared/llm/index.ts';
import { loadMessages } from '../memory.ts';
import { DEFAULT_BUDGET } from './test-session.ts';

const CHAT = fileURLToPath(new URL('../chat.ts', import.meta.url));
const SHOW = fileURLToPath(new URL('../show-conversation.ts', import.meta.url));
let fake: FakeProvider;

beforeAll(async () => {
  fake = await startFakeProvider();
});
afterAll(() => fake.close());

const results = (view: ChatView) => view.toolResults.map((r) => r.result as Record<string, any>);

/** The fake model for the chapter's conversation. Each reply is worked out from what the request contains. */
function scriptChapter() {
  fake.reply(
    // 1. "Can I get a refund for order 1043?"
    { tool_calls: [{ name: 'check_refund_eligibility', arguments: { order_id: 1043 } }] },
    (view) => ({ text: `I'm sorry, order 1043 can't be refunded: ${results(view)[0].reason}` }),
    // 2. "What about my other order, 1042?"
    (view) => ({
      tool_calls: [
        {
          name: 'check_refund_eligibility',
          arguments: { order_id: Number(view.lastUserText.match(/\d{4}/)![0]) },
        },
      ],
    }),
    (view) => ({
      text: `Good news: order ${results(view)[0].order_id} is eligible (${results(view)[0].reason}). Shall I open a refund ticket?`,
    }),
    // 3. "Yes please." — no number: the order must come from the conversation sent with the request.
    (view) => {
      const eligible = view.messages.filter(
        (m) => m.role === 'tool' && (m.tool_result!.result as any).eligible === true,
      );
      const orderId = (eligible.at(-1)!.tool_result!.result as any).order_id;
      return {
        tool_calls: [
          {
            name: 'create_support_ticket',
            arguments: {
              category: 'refund',
              summary: `Customer asks for a refund of order ${orderId}.`,
              order_id: orderId,
            },
          },
        ],
      };
    },
    (view) => ({ text: `Done! Your ticket number is #${results(view)[0].ticket_id}.` }),
  );
}

describe.each(['gemini', 'openai'] as const)('chat.ts with %s', (provider) => {
  let db: ScratchDatabase;
  let env: Record<string, string>;
  let conversationId: string;
  type Run = { code: number | null; stdout: string; stderr: string };
  // The chapter's conversation in two sittings: a refund refused and a follow-up, then after a resume
  // in a new process, "Yes please."; and what the viewer shows of it afterwards.
  let firstRun: Run;
  let resumed: Run;
  let shown: Run;
  let stored: Message[];

  beforeAll(async () => {
    db = await createScratchDatabase(); // empty: chat.ts sets it up on the first run
    env = { ...fake.env(provider), DB_NAME: db.name };
    fake.requests.length = 0;
    scriptChapter();
    firstRun = await runScript(CHAT, [], {
      env,
      input: 'Can I get a refund for order 1043?\n\nWhat about my other order, 1042?\nexit\n',
    });
    conversationId = firstRun.stdout.match(/New conversation ([0-9a-f]{32})/)![1];
    resumed = await runInProcess(CHAT, [`--resume=${conversationId}`], {
      env,
      input: 'Yes please.\n',
    });
    await useScratchDatabase(db.name);
    stored = await loadMessages(conversationId);
    shown = await runInProcess(SHOW, [conversationId, '--context'], { env });
  });
  afterAll(() => db.drop());

  it('holds the refusal and the follow-up, and says goodbye with the resume hint', () => {
    expect(firstRun.code, firstRun.stderr).toBe(0);
    expect(firstRun.stderr).toContain(`Database "${db.name}": creating customers,`);
    expect(firstRun.stdout).toMatch(
      /^Signed in as Maya Patel \(maya\.patel@example\.com\)\.\nNew conversation [0-9a-f]{32}\n/,
    );
    const out = firstRun.stdout;
    expect(out).toContain(
      "You: Can I get a refund for order 1043?\nNimbus: I'm sorry, order 1043 can't be refunded: Paid 20 days ago, outside the 14-day refund window.",
    );
    expect(out).toContain(
      'You: What about my other order, 1042?\nNimbus: Good news: order 1042 is eligible (Paid and within the refund window (11 days left).). Shall I open a refund ticket?',
    );
    expect(out).toContain(
      `You: exit\n\nBye! Resume later with: npx tsx part-06/chat.ts --resume=${conversationId}\n`,
    );
    // The first question is sent with no earlier turns, and the line says so in words.
    expect(firstRun.stderr).toContain('[step 0] memory: nothing earlier (a new conversation)\n');
    expect(firstRun.stderr).toMatch(
      /\[step 0\] memory: 1 earlier turn — 1 full, 0 compacted, 0 dropped — [\d,]+ of 12,000 chars\n/,
    );
  });

  it('resumed in a new process, "Yes please." opens one ticket, for 1042, from the conversation alone', async () => {
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain(`Resuming conversation ${conversationId}`);
    expect(resumed.stderr).toMatch(
      /\[step 0\] memory: 2 earlier turns — 2 full, 0 compacted, 0 dropped — [\d,]+ of 12,000 chars\n/,
    );
    expect(resumed.stdout).toContain(
      'You: Yes please.\nNimbus: Done! Your ticket number is #5001.',
    );
    expect(resumed.stdout).toContain(
      `Bye! Resume later with: npx tsx part-06/chat.ts --resume=${conversationId}`,
    );
    const tickets = await query<Array<{ id: number; order_id: number; category: string }>>(
      `SELECT id, order_id, category FROM \`${db.name}\`.tickets`,
    );
    expect(tickets).toEqual([{ id: 5001, order_id: 1042, category: 'refund' }]);
    expect(splitIntoTurns(stored)).toHaveLength(3);
  });

  it('sent the earlier turns with "Yes please." exactly as buildContext says', async () => {
    const turns = splitIntoTurns(stored);
    expect(turns).toHaveLength(3);
    const expected = buildContext(turns.slice(0, 2).flat(), DEFAULT_BUDGET).messages;
    const third = fake.chats().find((r) => r.view?.lastUserText === 'Yes please.')!;
    expect(third.view!.lastUserText).toBe('Yes please.');
    // Every message as the provider received it (ids and signatures aside): text, calls, arguments, results.
    const sent = third.view!.messages.slice(0, -1).map((m) => ({
      role: m.role,
      ...(m.text !== undefined && { text: m.text }),
      ...(m.tool_calls && { calls: m.tool_calls.map((c) => [c.name, c.arguments]) }),
      ...(m.tool_result && { result: [m.tool_result.name, m.tool_result.result] }),
    }));
    expect(sent).toEqual(
      expected.map((m) =>
        m.role === 'tool'
          ? { role: 'tool', result: [m.name, JSON.parse(m.content)] }
          : {
              role: m.role,
              text: m.content,
              ...(m.role === 'assistant' &&
                m.tool_calls && { calls: m.tool_calls.map((c) => [c.name, c.arguments]) }),
            },
      ),
    );
    if (provider === 'gemini') {
      // The replayed function-call parts carry the signatures Gemini issued with them.
      const replayed = third.body.contents.filter(
        (c: any) => c.role === 'model' && c.parts.some((p: any) => p.functionCall),
      );
      const issued = stored
        .filter((m) => m.role === 'assistant' && m.tool_calls)
        .slice(0, 2)
        .map((m: any) => m.provider_raw.message.parts[0].thoughtSignature);
      expect(replayed.map((c: any) => c.parts[0].thoughtSignature)).toEqual(issued);
      expect(issued.every((s: string) => /^sig-/.test(s))).toBe(true);
    }
  });

  it('shows the context: the first turn compacted, the last two in full', () => {
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(
      /^ +1 {2}compacted +[\d,]+ +[\d,]+ +[\d,]+ {2}Can I get a refund for order 1043\?$/m,
    );
    expect(shown.stdout).toMatch(
      /^ +2 {2}full +[\d,]+ +[\d,]+ +[\d,]+ {2}What about my other order, 1042\?$/m,
    );
    expect(shown.stdout).toMatch(/^ +3 {2}full +[\d,]+ +[\d,]+ +[\d,]+ {2}Yes please\.$/m);
    expect(shown.stdout).toMatch(
      /^Budget: \[#*\.*\] [\d,]+ of 12,000 chars \(\d+%\) — 2 full, 1 compacted, 0 dropped$/m,
    );
    const messages = shown.stdout.split('Messages sent with the next question:\n')[1].split('\n');
    expect(messages[0]).toBe('  user: Can I get a refund for order 1043?');
    expect(messages[1]).toBe(
      "  assistant: I'm sorry, order 1043 can't be refunded: Paid 20 days ago, outside the 14-day refund window.",
    );
    expect(messages[2]).toBe('  user: What about my other order, 1042?');
    expect(messages[3]).toBe(
      `  assistant [${provider}]: (requested tools) check_refund_eligibility({"order_id":1042})`,
    );
  });
});

describe('chat.ts input handling', () => {
  let db: ScratchDatabase;
  beforeAll(async () => {
    db = await createScratchDatabase();
  });
  afterAll(() => db.drop());

  it('ignores empty lines, leaves on quit in any case, and at the end of input', async () => {
    fake.reply({ text: 'Hello!' });
    const env = { ...fake.env('gemini'), DB_NAME: db.name };
    const quit = await runInProcess(CHAT, ['--quiet'], {
      env,
      input: '\n   \nHi\nQUIT\nnever asked\n',
    });
    expect(quit.code).toBe(0);
    expect(quit.stdout).toContain('You: Hi\nNimbus: Hello!');
    expect(quit.stdout).not.toContain('never asked');
    expect(quit.stderr).not.toContain('[step');
    expect(quit.stdout).toMatch(
      /Bye! Resume later with: npx tsx part-06\/chat\.ts --resume=[0-9a-f]{32}\n$/,
    );
    // Nothing asked, nothing stored: no conversation to resume.
    const eof = await runInProcess(CHAT, [], { env, input: '' });
    expect(eof.code).toBe(0);
    expect(eof.stdout).toMatch(/You: \nBye!\n$/);
  });

  it('starts a new conversation when a well-formed id is not found, and refuses a malformed one', async () => {
    const env = { ...fake.env('gemini'), DB_NAME: db.name };
    const missing = await runInProcess(CHAT, [`--resume=${'a'.repeat(32)}`], { env, input: '' });
    expect(missing.code).toBe(0);
    expect(missing.stdout).toMatch(
      new RegExp(
        `\\nConversation ${'a'.repeat(32)} was not found; starting a new one\\.\\nNew conversation [0-9a-f]{32}\\n`,
      ),
    );
    const malformed = await runInProcess(CHAT, ['--resume=1043'], { env, input: '' });
    expect(malformed.code).toBe(2);
    expect(malformed.stderr.split('\n')[0]).toBe(
      '--resume needs a conversation id: 32 lowercase hex characters (got "1043").',
    );
  });
});
