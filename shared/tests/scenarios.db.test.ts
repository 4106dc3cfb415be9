// Every part passes the support scenarios it declares (part-NN/scenarios.json); each scenario meets both providers.
import { readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT_DIR } from '../config.ts';
import { SCENARIOS } from '../scenarios/scenarios.ts';
import { createScratchDatabase, type ScratchDatabase } from '../testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../testing/fake-provider.ts';
import { partScenarios, runScenario } from '../testing/scenario-runner.ts';

const PARTS = readdirSync(ROOT_DIR)
  .filter((name) => /^part-\d\d$/.test(name))
  .sort();

describe('the scenario lists', () => {
  it('name only scenarios that exist, and never shrink from one part to the next', () => {
    const known = new Set(SCENARIOS.map((s) => s.id));
    let previous: string[] = [];
    for (const part of PARTS) {
      const { scenarios } = partScenarios(part);
      for (const id of scenarios)
        expect(known.has(id), `${part}: unknown scenario ${id}`).toBe(true);
      for (const id of previous) expect(scenarios, `${part} dropped ${id}`).toContain(id);
      previous = scenarios;
    }
    expect(previous.sort()).toEqual([...known].sort()); // the last part passes every scenario
  });
});

const PROVIDERS = ['gemini', 'openai'] as const;

/**
 * The scenarios a part runs with one provider. Parts alternate, scenario by scenario and part by part,
 * so each part and each scenario still meets both providers across the suite at half the cost (the
 * provider layer is the same for every part, and llm.test.ts and llm-stream.test.ts check it for both).
 * A scenario that only one part declares runs there with both.
 */
function scenariosFor(part: string, provider: (typeof PROVIDERS)[number]): string[] {
  const { scenarios } = partScenarios(part);
  const index = PARTS.indexOf(part);
  const elsewhere = (id: string) =>
    PARTS.some((p) => p !== part && partScenarios(p).scenarios.includes(id));
  return scenarios.filter((id, i) => !elsewhere(id) || PROVIDERS[(i + index) % 2] === provider);
}

describe('the runs', () => {
  it('give every scenario both providers, and every part that declares more than one', () => {
    const met = new Map<string, Set<string>>();
    for (const part of PARTS)
      for (const provider of PROVIDERS)
        for (const id of scenariosFor(part, provider)) {
          met.set(part, (met.get(part) ?? new Set()).add(provider));
          met.set(id, (met.get(id) ?? new Set()).add(provider));
        }
    const both = (key: string) => [key, [...(met.get(key) ?? [])].sort()];
    const parts = PARTS.filter((part) => partScenarios(part).scenarios.length > 1);
    const keys = [...parts, ...SCENARIOS.map((s) => s.id)];
    expect(keys.map(both)).toEqual(keys.map((key) => [key, [...PROVIDERS].sort()]));
  });
});

// Parts and providers run side by side (each pair has its own fake provider and database);
// the scenarios of one pair run in order, as they share that conversation with the fake model.
describe.concurrent.each(PARTS)('%s', (part) => {
  describe.each(PROVIDERS.filter((provider) => scenariosFor(part, provider).length))(
    'with %s',
    (provider) => {
      let db: ScratchDatabase;
      let fake: FakeProvider;
      beforeAll(async () => {
        fake = await startFakeProvider();
        db = await createScratchDatabase(); // empty: the part's first run sets it up, as for a learner
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
