// Prints a real session of one part against the fake provider, for the READMEs: `npx tsx shared/scripts/sample-session.ts part-04 multi-step`.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { parseFlags, runMain, UsageError } from '../cli.ts';
import { ROOT_DIR } from '../config.ts';
import { commandFor } from '../hints.ts';
import { SCENARIOS } from '../scenarios/scenarios.ts';
import { createScratchDatabase } from '../testing/database.ts';
import { startFakeProvider } from '../testing/fake-provider.ts';
import { runScript } from '../testing/run-script.ts';
import { printable } from '../text.ts';
import { partScenarios, runScenario } from '../testing/scenario-runner.ts';

const USAGE = `Usage: ${commandFor(import.meta.url, '<part-NN> <scenario> [--provider=gemini|openai] [--setup] [--show-context [--budget=N]]')}

Runs the scenario against the part with the fake provider and a scratch database (dropped afterwards),
and prints what a learner would see. --setup first prints the part's setup; --show-context ends with
show-conversation --context (Part 6), under another memory budget with --budget.`;

await runMain(async () => {
  const { values, positionals } = parseFlags({
    options: {
      provider: { type: 'string', default: 'gemini' },
      setup: { type: 'boolean' },
      'show-context': { type: 'boolean' },
      budget: { type: 'string' },
    },
    allowPositionals: true,
  });
  const [part, id] = positionals;
  const scenario = SCENARIOS.find((s) => s.id === id);
  if (!part || !scenario) throw new UsageError('Give a part folder and a scenario id.');
  if (!partScenarios(part).scenarios.includes(scenario.id))
    throw new UsageError(`${shown(part)} does not declare ${scenario.id}.`);
  if (values.provider !== 'gemini' && values.provider !== 'openai')
    throw new UsageError(`--provider must be gemini or openai (got "${shown(values.provider)}").`);
  const provider = values.provider;
  if (values['show-context'] && !existsSync(path.join(ROOT_DIR, part, 'show-conversation.ts')))
    throw new UsageError(`${shown(part)} has no show-conversation.ts.`);
  if (values.budget !== undefined && !values['show-context'])
    throw new UsageError('--budget goes with --show-context.');

  const fake = await startFakeProvider();
  const db = await createScratchDatabase();
  // The demo customer signs in, as .env.example sets it up.
  const env = {
    DB_NAME: db.name,
    LOG_DIR: path.join(ROOT_DIR, 'logs', 'samples'),
    CUSTOMER_EMAIL: 'maya.patel@example.com',
  };
  try {
    // The transcript names the learner's database, not our scratch one.
    const print = (text: string) => console.log(text.replaceAll(db.name, 'nimbus'));
    if (existsSync(path.join(ROOT_DIR, part, 'setup.ts'))) {
      const setup = await runScript(path.join(ROOT_DIR, part, 'setup.ts'), [], {
        env: { ...fake.env(provider), ...env },
      });
      if (values.setup) print(`$ npx tsx setup.ts\n${setup.stdout}${setup.stderr}`);
    }
    const run = await runScenario(part, scenario, provider, fake, env, true);
    print(run.transcript);
    if (values['show-context']) {
      const id = run.outputs[0].match(/New conversation ([0-9a-f]{32})/)?.[1];
      const args = [
        id!,
        '--context',
        ...(values.budget === undefined ? [] : [`--budget=${values.budget}`]),
      ];
      const shown = await runScript(path.join(ROOT_DIR, part, 'show-conversation.ts'), args, {
        env: { ...fake.env(provider), ...env },
      });
      print(`$ npx tsx show-conversation.ts ${args.join(' ')}\n${shown.stdout}${shown.stderr}`);
    }
  } finally {
    await fake.close();
    await db.drop();
  }
}, USAGE);

/** What was typed, quoted back in an error: escaped, so it cannot move the cursor or hide text. */
function shown(text: string): string {
  return printable(text, { singleLine: true });
}
