// The eval refuses at validation what no chat could send (issue 42, items 4 and 5): a turn over the chat's question limit, and expect[].args nested too deep; one sentence naming the scenario and the turn, exit 2, no model called.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UsageError } from '../../../../shared/cli.ts';
import { startFakeProvider, type FakeProvider } from '../../../../shared/testing/fake-provider.ts';
import { runInProcess } from '../../../../shared/testing/run-in-process.ts';
import { parseScenarios } from '../../eval/scenario-file.ts';
import { TOOL_NAMES } from '../../eval/sitting.ts';
import { MAX_QUESTION_CHARS } from '../../question/question-limit.ts';

const EVAL = 'part-06/going-further/eval.ts';
let fake: FakeProvider;
let dir: string;

beforeAll(async () => {
  fake = await startFakeProvider();
  dir = mkdtempSync(path.join(os.tmpdir(), 'nimbus-eval-refusals-'));
});
afterAll(async () => {
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A scenario file holding this text (JSON), written whole: the eval reads it as a learner's file. */
function scenarioFile(name: string, json: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, json);
  return file;
}

/** `npm run eval -- --scenarios=FILE`, in-process, against the fake provider (no database is named). */
async function runEval(file: string) {
  const result = await runInProcess(EVAL, [`--scenarios=${file}`, '--trials=1'], {
    env: { ...fake.env('gemini'), LOG_DIR: path.join(dir, 'logs') },
  });
  return { ...result, firstLine: result.stderr.split('\n')[0] };
}

/** An object nested `depth` levels deep ({"a":{"a":…1…}}), as JSON text: built without recursion. */
const nested = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

const scenario = (id: string, turn: string, args = '{ "order_id": 1043 }') =>
  `{ "scenarios": [ { "id": "${id}", "title": "Refused at validation", "customer": "maya.patel@example.com",
     "sittings": [["Hello"], ["Where is my order?", ${JSON.stringify(turn)}]],
     "expect": [ { "answer": "order" }, { "tool": "get_order_status", "args": ${args} } ] } ] }`;

describe('npm run eval refuses at validation', () => {
  it('a turn of 3,000,000 characters: one sentence naming the scenario and the turn, exit 2, no model call', async () => {
    const file = scenarioFile('huge-turn.json', scenario('huge-turn', 'x'.repeat(3_000_000)));
    const before = fake.requests.length;
    const result = await runEval(file);
    expect(result.code).toBe(2);
    expect(result.firstLine).toBe(
      `${file}: scenarios[0] ("huge-turn").sittings[1][1] is 3,000,000 characters long; a question may have at most 4,000, as in the chat.`,
    );
    expect(result.stderr).not.toContain('Unexpected error');
    expect(result.stdout).toBe('');
    expect(fake.requests.length).toBe(before); // nothing was asked, nothing embedded
  });

  it('expect[].args nested 100,000 deep: one sentence naming the scenario and the expectation, exit 2, no model call', async () => {
    const file = scenarioFile('deep-args.json', scenario('deep-args', 'Thanks.', nested(100_000)));
    const before = fake.requests.length;
    const result = await runEval(file);
    expect(result.code).toBe(2);
    expect(result.firstLine).toBe(
      `${file}: scenarios[0] ("deep-args").expect[1].args nests deeper than 8 levels.`,
    );
    expect(result.stderr).not.toContain('Unexpected error');
    expect(result.stdout).toBe('');
    expect(fake.requests.length).toBe(before);
  });

  it('right at the limits the scenario is valid: a turn of exactly the chat’s limit, args 8 levels deep', () => {
    const valid = (turn: string, args: string) =>
      parseScenarios(scenario('at-limit', turn, args), 'limits.json', TOOL_NAMES);
    expect(() => valid('x'.repeat(MAX_QUESTION_CHARS), nested(8))).not.toThrow();
    expect(() => valid('x'.repeat(MAX_QUESTION_CHARS + 1), nested(8))).toThrow(UsageError);
    expect(() => valid('Thanks.', nested(9))).toThrow(
      'limits.json: scenarios[0] ("at-limit").expect[1].args nests deeper than 8 levels.',
    );
  });
});
