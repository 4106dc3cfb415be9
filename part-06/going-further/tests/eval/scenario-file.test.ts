// The eval's scenario file: the built-in one is valid, and every way of breaking the format is one sentence naming the place.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseScenarios, selectScenarios } from '../../eval/scenario-file.ts';
import { TOOL_NAMES } from '../../eval/sitting.ts';

const text = readFileSync(new URL('../../eval/scenarios.json', import.meta.url), 'utf8');

/** A file of one scenario, with `change` applied to a valid one. */
function withScenario(change: Record<string, unknown>): string {
  const valid = {
    id: 's1',
    title: 'T',
    sittings: [['Hi', 'More'], ['Again']],
    expect: [{ answer: 'x' }],
  };
  return JSON.stringify({ scenarios: [{ ...valid, ...change }] });
}

describe('the scenario file', () => {
  it('the built-in scenarios are valid, with the issue example among them', () => {
    const scenarios = parseScenarios(text, 'scenarios.json', TOOL_NAMES);
    expect(scenarios.find((s) => s.id === 'yes-after-resume')).toMatchObject({
      sittings: [
        ['Can I get a refund for order 1043?', 'What about my other order, 1042?'],
        ['Yes please.'],
      ],
    });
  });

  it.each([
    ['{ "scenarios": [', /^f\.json is not valid JSON \(/],
    ['{}', 'f.json needs "scenarios": a list of at least one scenario.'],
    [
      withScenario({ id: 'a b' }),
      'f.json: scenarios[0].id must be letters, digits, "-", "_" or "." (at most 64).',
    ],
    [withScenario({ title: '' }), 'f.json: scenarios[0] ("s1").title must be a non-empty text.'],
    [
      withScenario({ sittings: [[]] }),
      /^f\.json: scenarios\[0\] \("s1"\)\.sittings must be a list of sittings/,
    ],
    [
      withScenario({ custmer: 'x' }),
      /^f\.json: scenarios\[0\] has an unknown key "custmer" \(allowed: id, title/,
    ],
    [
      withScenario({ expect: [{ tools: 'x' }] }),
      /^f\.json: scenarios\[0\] \("s1"\)\.expect\[0\] must be one of tool, noTool, ticket/,
    ],
    [
      withScenario({ expect: [{ answer: 'x', beforeTurn: 2 }] }),
      /^f\.json: scenarios\[0\] \("s1"\)\.expect\[0\] has an unknown key "beforeTurn" \(allowed: answer, turn\)\.$/,
    ],
    [
      withScenario({ expect: [{ answer: 'x', turn: 4 }] }),
      'f.json: scenarios[0] ("s1").expect[0].turn must be a turn number from 1 to 3 (turns count from 1 across sittings).',
    ],
    [
      withScenario({ expect: [{ notAnswer: '(' }] }),
      'f.json: scenarios[0] ("s1").expect[0].notAnswer is not a valid regular expression: (',
    ],
    [
      withScenario({ expect: [{ ticket: { order: 1042 } }] }),
      /^f\.json: scenarios\[0\] \("s1"\)\.expect\[0\]\.ticket has an unknown key "order" \(allowed: order_id, category, status, customer_id\)\.$/,
    ],
    [
      withScenario({ expect: [{ tool: 'get_order_status', args: [1] }] }),
      'f.json: scenarios[0] ("s1").expect[0].args must be an object ({ … }).',
    ],
    [
      withScenario({ expect: [{ noTool: 'create_ticket' }] }),
      /^f\.json: scenarios\[0\] \("s1"\)\.expect\[0\]\.noTool names "create_ticket", which is not a tool of Nimbus \(its tools: get_order_status, .*create_support_ticket/,
    ],
    [
      JSON.stringify({ ...JSON.parse(withScenario({})), scenario: [] }),
      'f.json has an unknown key "scenario" (allowed: scenarios).',
    ],
    [
      JSON.stringify({
        scenarios: [
          JSON.parse(withScenario({})).scenarios[0],
          JSON.parse(withScenario({})).scenarios[0],
        ],
      }),
      'f.json: scenarios[1] repeats the id "s1".',
    ],
  ])('%s is refused', (file, sentence) => {
    expect(() => parseScenarios(file, 'f.json', TOOL_NAMES)).toThrow(sentence);
  });

  it('--only keeps the file order, and an unknown id is named with the ids there are', () => {
    const scenarios = parseScenarios(text, 'scenarios.json', TOOL_NAMES);
    const ids = selectScenarios(scenarios, 'follow-up, order-status', 'x').map((s) => s.id);
    expect(ids).toEqual(['order-status', 'follow-up']);
    expect(() => selectScenarios(scenarios, 'order-status,nope', 'the built-in scenarios')).toThrow(
      /^--only names "nope", which is not a scenario of the built-in scenarios \(its ids: order-status, refund-outside-window, /,
    );
  });
});
