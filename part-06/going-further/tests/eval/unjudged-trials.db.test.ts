// A trial whose turn was cancelled, or lost to an erasure or a takeover, is an error, not a verdict (issue 42, item 7): its expectations would all hold, and still it is not judged.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbSettings } from '../../../../shared/config.ts';
import { connectionOptions, withDatabase } from '../../../../shared/db.ts';
import { startFakeProvider, type FakeProvider } from '../../../../shared/testing/fake-provider.ts';
import { DEFAULT_BUDGET } from '../../../context.ts';
import type { Scenario } from '../../eval/scenario-file.ts';
import { runSitting } from '../../eval/sitting.ts';
import { runTrial, ScratchDatabases, type SittingRunner } from '../../eval/trial.ts';
import { DEFAULT_MAX_TOOL_CALLS } from '../../question/call-limits.ts';
import { ClusterDatabase, clusterSettings } from '../../store/cluster-database.ts';

let admin: mysql.Connection;
let logDir: string;
let fake: FakeProvider;
let databases: ScratchDatabases;

beforeAll(async () => {
  admin = await mysql.createConnection(connectionOptions(dbSettings(process.env)));
  logDir = mkdtempSync(path.join(os.tmpdir(), 'nimbus-unjudged-'));
  fake = await startFakeProvider();
  // A prefix of this file's own: the eval's tests look for theirs.
  databases = new ScratchDatabases(admin, 'nimbus_evaltest_unjudged_');
});
afterAll(async () => {
  await databases.dropAll();
  await fake.close();
  await admin.end();
  rmSync(logDir, { recursive: true, force: true });
});

/**
 * What sitting-process.ts does in its own process, in this one: the full Nimbus's database opened on
 * the trial's scratch database (so every write of a question checks its lease), the sitting run with
 * `signal` (the eval gone). `whileAsking` is called with the trial's database once the model is asked.
 */
function inProcess(
  whileAsking: (database: string) => Promise<void>,
  signal?: AbortSignal,
): SittingRunner {
  return async (input, database) => {
    const settings = { ...clusterSettings(process.env), database };
    const trialDatabase = new ClusterDatabase({ ...settings, servers: [settings] });
    const nimbus = {
      llm: fake.llm('gemini'),
      logDir,
      budget: DEFAULT_BUDGET,
      notesMaxChars: 1500,
      maxToolCalls: DEFAULT_MAX_TOOL_CALLS,
    };
    try {
      const asked = fake.chats().length;
      const sitting = withDatabase(trialDatabase, () =>
        runSitting(input, nimbus, () => {}, signal),
      );
      await fake.waitForChat(asked + 1);
      await whileAsking(database);
      return await sitting;
    } finally {
      await trialDatabase.close();
    }
  };
}

/** A scenario of Maya's whose expectations all hold for a turn that never got its answer. */
const scenario = (id: string): Scenario & { customer: string } => ({
  id,
  title: 'Not judged',
  customer: 'maya.patel@example.com',
  sittings: [['Where is my order 1042?', 'Thanks.']],
  expect: [{ tool: 'get_order_status', turn: 1 }, { notAnswer: 'refund' }],
});

describe('a trial whose turn never got its answer', () => {
  it('cancelled (the eval gone): an error, not judged, the later turn not asked', async () => {
    const stop = new AbortController();
    let release!: () => void;
    fake.reply(
      { tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1042 } }] },
      { text: 'Order 1042 is delivered.', gate: new Promise<void>((r) => (release = r)) },
    );
    const before = fake.chats().length;
    const runner = inProcess(async () => {
      await fake.waitForChat(before + 2); // the lookup is done and saved; the answer is being written
      stop.abort();
      release();
    }, stop.signal);
    const trial = await runTrial(scenario('cancelled-turn'), 1, databases, admin, runner);
    expect(trial).toMatchObject({
      verdict: 'error',
      broken: [],
      error: 'The question was cancelled before it was answered.',
    });
    expect(trial.turns.map((t) => [t.question, t.outcome])).toEqual([
      ['Where is my order 1042?', 'error'],
    ]);
    expect(trial.turns[0].tools).toEqual([
      { name: 'get_order_status', arguments: { order_id: 1042 } },
    ]);
  });

  it('lost (its lease taken over while the model answered): an error naming what happened, not judged, the later turn not asked', async () => {
    let release!: () => void;
    fake.reply(
      { tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1042 } }] },
      { text: 'Order 1042 is delivered.', gate: new Promise<void>((r) => (release = r)) },
    );
    const before = fake.chats().length;
    const runner = inProcess(async (database) => {
      await fake.waitForChat(before + 2);
      // An erasure, a reset or a question elsewhere took the conversation's lease meanwhile.
      await admin.query(`UPDATE \`${database}\`.question_leases SET holder = ?`, ['e'.repeat(32)]);
      release();
    });
    const trial = await runTrial(scenario('lost-turn'), 1, databases, admin, runner);
    expect(trial.verdict).toBe('error');
    expect(trial.broken).toEqual([]);
    expect(trial.error).toBe(
      'Another window took this conversation over while this one was not answering, so nothing more of this question was saved.',
    );
    expect(trial.turns.map((t) => t.outcome)).toEqual(['error']);
  });
});
