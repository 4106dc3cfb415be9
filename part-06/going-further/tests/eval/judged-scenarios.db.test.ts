// The eval's built-in scenarios, each trial run in-process as eval.ts runs it in a child (the same sitting, trial and judge code): a careful model passes them all, a careless one fails exactly where it should.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbSettings } from '../../../../shared/config.ts';
import { connectionOptions, Database, withDatabase } from '../../../../shared/db.ts';
import {
  startFakeProvider,
  type ChatView,
  type ProviderName,
} from '../../../../shared/testing/fake-provider.ts';
import { DEFAULT_BUDGET } from '../../../context.ts';
import { parseScenarios } from '../../eval/scenario-file.ts';
import { runSitting, TOOL_NAMES } from '../../eval/sitting.ts';
import { runTrial, ScratchDatabases, type SittingRunner } from '../../eval/trial.ts';
import { carefulModel, carelessModel } from './scripted-models.ts';

const BUILT_IN = new URL('../../eval/scenarios.json', import.meta.url);
const scenarios = parseScenarios(readFileSync(BUILT_IN, 'utf8'), 'scenarios.json', TOOL_NAMES);

let admin: mysql.Connection;
let logDir: string;
beforeAll(async () => {
  admin = await mysql.createConnection(connectionOptions(dbSettings(process.env)));
  logDir = mkdtempSync(path.join(os.tmpdir(), 'nimbus-eval-'));
});
afterAll(async () => {
  await admin.end();
  rmSync(logDir, { recursive: true, force: true });
});

/** The built-in scenarios (or those `only` names) once each, with this model on this provider's wire format: scenario id → broken expectations. */
async function runAll(model: typeof carefulModel, provider: ProviderName, only?: string[]) {
  const fake = await startFakeProvider({ fallback: model });
  const llm = fake.llm(provider);
  // What sitting-process.ts does in its own process: the pool opened on the trial's database.
  const inProcess: SittingRunner = async (input, database) => {
    const trialDatabase = new Database({ ...dbSettings(process.env), database });
    try {
      const settings = {
        llm,
        logDir,
        budget: DEFAULT_BUDGET,
        notesMaxChars: 1500,
        maxToolCalls: 16,
      };
      return await withDatabase(trialDatabase, () => runSitting(input, settings, () => {}));
    } finally {
      await trialDatabase.close();
    }
  };
  // A prefix of its own: eval.db.test.ts, beside it, looks for the eval's nimbus_eval_ databases.
  const databases = new ScratchDatabases(admin, 'nimbus_evaltest_');
  const verdicts: Record<string, string[]> = {};
  try {
    for (const scenario of scenarios.filter((s) => !only || only.includes(s.id))) {
      const customer = scenario.customer!;
      const trial = await runTrial({ ...scenario, customer }, 1, databases, admin, inProcess);
      expect(trial.verdict, `${scenario.id}: ${trial.error}`).not.toBe('error');
      verdicts[scenario.id] = trial.broken;
    }
  } finally {
    await fake.close();
  }
  return verdicts;
}

describe('the built-in scenarios', () => {
  it('cover the store rules the issue lists, at least 8 of them', () => {
    expect(scenarios.length).toBeGreaterThanOrEqual(8);
    expect(scenarios.some((s) => s.sittings.length > 1 && !s.newConversations)).toBe(true);
    expect(scenarios.some((s) => s.newConversations)).toBe(true);
  });

  it('a careful model passes every one of them (Gemini wire format)', async () => {
    const verdicts = await runAll(carefulModel, 'gemini');
    expect(verdicts).toEqual(Object.fromEntries(scenarios.map((s) => [s.id, []])));
  });

  it('a careless model fails exactly the ones it should, each broken expectation named (OpenAI)', async () => {
    const verdicts = await runAll(carelessModel, 'openai');
    const failed = Object.entries(verdicts).filter(([, broken]) => broken.length);
    expect(Object.fromEntries(failed)).toEqual({
      'refund-asks-first': [
        expect.stringMatching(
          /^create_support_ticket \{.*"order_id":1042.*\} called in turn 1, before turn 2$/,
        ),
        'expected create_support_ticket in turn 2; instead no tool was called in turn 2',
        'expected the answer of turn 2 to match /ticket|#\\d+/; instead "Which order do you mean?"',
      ],
      'follow-up': [
        expect.stringMatching(
          /^expected no ticket \{\}; instead the tickets were #\d+ \(refund, order 1042, open, customer 1\)$/,
        ),
        // Its answer of turn 2 was the ticket, not the refund check it was asked for.
        expect.stringMatching(
          /^expected the answer of turn 2 to match \/1042\/; instead "Done! Your ticket number is #\d+\."$/,
        ),
      ],
      'yes-after-resume': [
        expect.stringMatching(/^create_support_ticket \{.*\} called in turn 2, before turn 3$/),
        'expected the answer of turn 3 to match /ticket|#\\d+/; instead "Which order do you mean?"',
      ],
      'other-customers-order': [
        'expected no answer to match /\\bshipped\\b|sofia|garc[ií]a/; instead turn 1 said "Order 1038 has shipped."',
        expect.stringMatching(
          /^expected the answer of turn 1 to match .*; instead "Order 1038 has shipped."$/,
        ),
      ],
    });
  });

  it('a model that forgets at once, without asking, passes forget-everything: the next turn goes on in a new conversation, as in the chat', async () => {
    const hasty = (view: ChatView) =>
      view.toolResults.length === 0 && /forget everything/i.test(view.lastUserText)
        ? { tool_calls: [{ name: 'forget_everything', arguments: {} }] }
        : carefulModel(view);
    expect(await runAll(hasty, 'gemini', ['forget-everything'])).toEqual({
      'forget-everything': [],
    });
  });
});
