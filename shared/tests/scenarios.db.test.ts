// Every part passes the support scenarios it declares (part-NN/scenarios.json, and Part 6's going-further list through its full chat); each scenario meets both providers.
import { readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT_DIR } from '../config.ts';
import { SCENARIOS } from '../scenarios/scenarios.ts';
import { createScratchDatabase, type ScratchDatabase } from '../testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../testing/fake-provider.ts';
import { partScenarios, runScenario, scenarioLists } from '../testing/scenario-runner.ts';

const PARTS = readdirSync(ROOT_DIR)
  .filter((name) => /^part-\d\d$/.test(name))
  .sort();
/** Every list that runs: each part's, and Part 6's going-further list (`part-06/going-further`). */
const LISTS = scenarioLists(PARTS);

describe('the scenario lists', () => {
  it('name only scenarios that exist, and never shrink from one part to the next', () => {
    const known = new Set(SCENARIOS.map((s) => s.id));
    for (const list of LISTS)
      for (const id of partScenarios(list).scenarios)
        expect(known.has(id), `${list}: unknown scenario ${id}`).toBe(true);
    let previous: string[] = [];
    for (const part of PARTS) {
      const { scenarios } = partScenarios(part);
      for (const id of previous) expect(scenarios, `${part} dropped ${id}`).toContain(id);
      previous = scenarios;
    }
    // The last part passes every scenario: its core chat, or going further's for what only it does.
    const last = PARTS.at(-1)!;
    const all = LISTS.filter((list) => list.split('/')[0] === last).flatMap(
      (list) => partScenarios(list).scenarios,
    );
    expect([...new Set(all)].sort()).toEqual([...known].sort());
  });

  it("are Part 6's core chat.ts and its going further's chat.ts, with customer notes only there", () => {
    expect(LISTS.filter((list) => list.includes('/'))).toEqual(['part-06/going-further']);
    expect(partScenarios('part-06').entry).toBe('chat.ts');
    expect(partScenarios('part-06/going-further')).toMatchObject({
      entry: 'going-further/chat.ts',
      scenarios: expect.arrayContaining(['remembered-across-conversations']),
    });
    expect(partScenarios('part-06').scenarios).not.toContain('remembered-across-conversations');
  });
});

const PROVIDERS = ['gemini', 'openai'] as const;

/**
 * The scenarios a part runs with one provider. Parts alternate, scenario by scenario and part by part,
 * so each part and each scenario still meets both providers across the suite at half the cost (the
 * provider layer is the same for every part, and llm.test.ts and llm-stream.test.ts check it for both).
 * A scenario that only one part declares runs there with both.
 */
function scenariosFor(list: string, provider: (typeof PROVIDERS)[number]): string[] {
  const { scenarios } = partScenarios(list);
  const index = LISTS.indexOf(list);
  const elsewhere = (id: string) =>
    LISTS.some((l) => l !== list && partScenarios(l).scenarios.includes(id));
  return scenarios.filter((id, i) => !elsewhere(id) || PROVIDERS[(i + index) % 2] === provider);
}

describe('the runs', () => {
  it('give every scenario both providers, and every part that declares more than one', () => {
    const met = new Map<string, Set<string>>();
    for (const list of LISTS)
      for (const provider of PROVIDERS)
        for (const id of scenariosFor(list, provider)) {
          met.set(list, (met.get(list) ?? new Set()).add(provider));
          met.set(id, (met.get(id) ?? new Set()).add(provider));
        }
    const both = (key: string) => [key, [...(met.get(key) ?? [])].sort()];
    const parts = LISTS.filter((list) => partScenarios(list).scenarios.length > 1);
    const keys = [...parts, ...SCENARIOS.map((s) => s.id)];
    expect(keys.map(both)).toEqual(keys.map((key) => [key, [...PROVIDERS].sort()]));
  });
});

// Lists and providers run side by side (each pair has its own fake provider and database);
// the scenarios of one pair run in order, as they share that conversation with the fake model.
describe.concurrent.each(LISTS)('%s', (part) => {
  describe.each(PROVIDERS.filter((provider) => scenariosFor(part, provider).length))(
    'with %s',
    (provider) => {
      let db: ScratchDatabase;
      let fake: FakeProvider;
      beforeAll(async () => {
        fake = await startFakeProvider();
        // Empty: the part's first run sets it up, as for a learner. Lists run side by side, each script in-process
        // against its own database (its DB_NAME), so none of them switches this process's.
        db = await createScratchDatabase({ use: false });
      });
      afterAll(async () => {
        await fake.close();
        await db.drop();
      });

      it.sequential.each(scenariosFor(part, provider))('passes %s', async (id) => {
        const scenario = SCENARIOS.find((s) => s.id === id)!;
        const run = await runScenario(part, scenario, provider, fake, { DB_NAME: db.name });
        await scenario.check(run, expect);
        expect(fake.pending()).toBe(0);
      });
    },
  );
});
