// A database that freezes at any moment of a question, the save above all: the process still
// ends, in one line that says whether the step may have been saved, on the full Nimbus and the core.
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { dbSettings } from '../../../../shared/config.ts';
import { Database, withDatabase } from '../../../../shared/db.ts';
import { createScratchDatabase } from '../../../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../../../shared/testing/fake-provider.ts';
import { startPausableProxy } from '../../../../shared/testing/pausable-proxy.ts';
import { collect, startScript } from '../../../../shared/testing/run-script.ts';
import { ensureFullDatabase } from '../../store/ensure-tables.ts';

const script = (file: string) => fileURLToPath(new URL(file, import.meta.url));
const ANSWER = 'Order 1042 has shipped.';
const NOTHING_WRITTEN =
  /^Not saved: MySQL at 127\.0\.0\.1:\d+ did not answer within 1 s \(DB_TIMEOUT_SECONDS\), so nothing was written\.$/m;
/** The full Nimbus names the viewer to look with; the core says its own sentence alone. */
const MAY_HAVE_BEEN_SAVED = {
  full: /may have been saved or not.* See what was saved with npx tsx part-06\/going-further\/show-conversation\.ts [0-9a-f]{32}\.$/m,
  core: /^The answer to a COMMIT never came from MySQL at 127\.0\.0\.1:\d+: it may have been saved or not\.$/m,
};
const NOT_ANSWERED = /^MySQL at 127\.0\.0\.1:\d+ did not answer within 1 s/m;

interface Moment {
  name: string;
  /** The freeze lands on the statement matching the last of these, after one matching each of the others. */
  statements: RegExp[];
  /** Whether the model answered before the freeze, and what stderr says. */
  answered: boolean;
  says?: RegExp;
  code: number;
  /** The model first calls a tool, whose statement the freeze lands on. */
  tool?: boolean;
}

/** The model's replies for a moment: the answer, after a tool call if the freeze lands in a tool. */
function scriptReplies(fake: FakeProvider, moment: Moment): void {
  const lookUp = { tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1042 } }] };
  if (moment.answered) fake.reply(...(moment.tool ? [lookUp] : []), { text: ANSWER });
}

/** Where each program's question talks to the database, in order. */
function momentsOf(history: RegExp, lease: boolean, maySaved: RegExp): Moment[] {
  const fails = { answered: false, says: NOT_ANSWERED, code: 1 };
  return [
    // Setup checks the tables at every start, on a connection of its own.
    { name: 'setting up', statements: [/^CREATE DATABASE/], ...fails },
    ...(lease
      ? [{ name: 'taking the lease', statements: [/^INSERT INTO question_leases/], ...fails }]
      : []),
    { name: 'reading the history', statements: [history], ...fails },
    // The tool says it failed, the model answers, and the save, still frozen, writes nothing (its
    // connection was given up with the tool's statement: a new one never connects).
    {
      name: 'a tool',
      statements: [/^SELECT o\.id, o\.status/],
      answered: true,
      says: /^Not saved: MySQL at 127\.0\.0\.1:\d+ did not answer/m,
      code: 1,
      tool: true,
    },
    // The save's first statement: the first transaction after the history was read.
    {
      name: 'the save begins',
      statements: [history, /^START TRANSACTION/],
      answered: true,
      says: NOTHING_WRITTEN,
      code: 1,
    },
    {
      name: "the save's COMMIT",
      statements: [/^INSERT INTO messages/, /^COMMIT/],
      answered: true,
      says: maySaved,
      code: 1,
    },
    // Saved: the lease, not given back, simply expires.
    ...(lease
      ? [
          {
            name: 'releasing the lease',
            statements: [/^DELETE FROM question_leases/],
            answered: true,
            code: 0,
          },
        ]
      : []),
  ];
}

const PROGRAMS = [
  {
    name: 'the full Nimbus',
    ask: script('../../ask.ts'),
    chat: script('../../chat.ts'),
    moments: momentsOf(/^SELECT seq, role/, true, MAY_HAVE_BEEN_SAVED.full),
  },
  {
    name: "the chapter's core",
    ask: script('../../../ask.ts'),
    chat: script('../../../chat.ts'),
    moments: momentsOf(/^SELECT data FROM messages/, false, MAY_HAVE_BEEN_SAVED.core),
  },
];

/**
 * A database, a proxy and a model of its own for each run (the runs go side by side), the proxy
 * freezing on `statements` and never thawing while the program runs: the program must end by itself.
 * (A database of its own: the server behind a frozen proxy keeps the run's transaction open, locks
 * and all, as a frozen server would, and another run must not wait on them.) Returns the
 * environment that points a program at all three, and what closes them.
 */
async function freezingOn(moment: Moment) {
  const settings = dbSettings(process.env);
  const db = await createScratchDatabase({ use: false });
  const store = new Database({ ...settings, database: db.name });
  await withDatabase(store, () => ensureFullDatabase(() => {})).finally(() => store.close());
  const proxy = await startPausableProxy(settings.host, settings.port);
  const fake = await startFakeProvider();
  scriptReplies(fake, moment);
  const close = async () => {
    await Promise.all([proxy.close(), fake.close()]);
    await db.drop();
  };
  const env = {
    ...fake.env('gemini'),
    DB_NAME: db.name,
    DB_PORT: String(proxy.port),
    DB_TIMEOUT_SECONDS: '1', // the shortest limit there is
  };
  return { close, env, frozen: proxy.freezeOn(...moment.statements) };
}

// Each run waits for its own frozen statements to time out: side by side, the file takes seconds, not a minute.
describe.concurrent.each(PROGRAMS)(
  'a database frozen during a question to $name',
  ({ ask, chat, moments }) => {
    it.each(moments)('ask.ts ends when the freeze lands on $name', async (moment) => {
      const { close, env, frozen } = await freezingOn(moment);
      const result = await collect(startScript(ask, ['--quiet', 'Where is order 1042?'], { env }));
      await frozen; // it did land there
      await close();
      if (moment.answered) expect(result.stdout).toContain(ANSWER);
      else expect(result.stdout).toBe('');
      if (moment.says) expect(result.stderr).toMatch(moment.says);
      if (Object.values(MAY_HAVE_BEEN_SAVED).includes(moment.says!))
        expect(result.stderr).not.toMatch(/nothing was written|Not saved/);
      expect(result.code, result.stderr).toBe(moment.code);
    });

    // The chat's own way out, exit, after a question whose save froze: before COMMIT and at it. (Its
    // other moments are ask.ts's: the question runs the same code in both.)
    const saves = moments.filter((moment) => /^the save/.test(moment.name));
    it.each(saves)("the chat's exit exits when the freeze lands on $name", async (moment) => {
      const { close, env, frozen } = await freezingOn(moment);
      const child = startScript(chat, ['--quiet'], { env });
      const done = collect(child);
      child.stdin.write('Where is order 1042?\n');
      await frozen;
      child.stdin.write('exit\n'); // read once the question has ended, however it ends
      const result = await done;
      await close();
      if (moment.answered) expect(result.stdout).toContain(ANSWER);
      if (moment.says) expect(result.stderr).toMatch(moment.says);
      expect(result.stdout).toMatch(/\nBye!/);
      expect(result.code, result.stderr).toBe(0);
    });
  },
);
