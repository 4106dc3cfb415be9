// Prints a real session of one part against the fake provider, for the READMEs: `npx tsx shared/scripts/sample-session.ts part-04 multi-step` (`part-06/going-further` for the full Nimbus).
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseFlags, runMain, type ScriptIo, startedDirectly, UsageError } from '../cli.ts';
import { ROOT_DIR } from '../config.ts';
import { commandFor } from '../hints.ts';
import { SCENARIOS } from '../scenarios/scenarios.ts';
import { createScratchDatabase } from '../testing/database.ts';
import { startFakeProvider } from '../testing/fake-provider.ts';
import { runInProcess } from '../testing/run-in-process.ts';
import { printable } from '../text.ts';
import { partScenarios, runScenario, scenarioLists } from '../testing/scenario-runner.ts';

export function usage(io: ScriptIo): string {
  return `Usage: ${commandFor(import.meta.url, '<part-NN>[/going-further] <scenario> [--not-yet] [--provider=gemini|openai] [--setup] [--show-context [--budget=N]]', io)}

Runs the scenario against the part with the fake provider and a scratch database (dropped afterwards),
and prints what a learner would see. part-06/going-further runs it through the full Nimbus
(going-further/chat.ts, its setup and its viewer). --not-yet runs a scenario the part does not pass
yet (a chapter opens on the part before it failing). --setup first prints the part's setup;
--show-context ends with show-conversation --context (Part 6), under another memory budget with --budget.`;
}

export async function main(io: ScriptIo): Promise<void> {
  const { values, positionals } = parseFlags({
    args: io.args,
    options: {
      provider: { type: 'string', default: 'gemini' },
      'not-yet': { type: 'boolean' },
      setup: { type: 'boolean' },
      'show-context': { type: 'boolean' },
      budget: { type: 'string' },
    },
    allowPositionals: true,
  });
  const [list, id] = positionals;
  const scenario = SCENARIOS.find((s) => s.id === id);
  if (!list || !scenario) throw new UsageError('Give a part folder and a scenario id.');
  const lists = scenarioLists(
    readdirSync(ROOT_DIR).filter((name) => existsSync(path.join(ROOT_DIR, name, 'scenarios.json'))),
  );
  const part = list.replace(/\/+$/, '');
  if (!lists.includes(part))
    throw new UsageError(`${shown(list)} is not one of ${lists.join(', ')}.`);
  const { entry, scenarios } = partScenarios(part);
  if (values['not-yet'] && scenarios.includes(scenario.id))
    throw new UsageError(`${shown(part)} passes ${scenario.id} already: leave out --not-yet.`);
  if (!values['not-yet'] && !scenarios.includes(scenario.id))
    throw new UsageError(
      `${shown(part)} does not declare ${scenario.id} (--not-yet shows what it does instead).`,
    );
  if (values.provider !== 'gemini' && values.provider !== 'openai')
    throw new UsageError(`--provider must be gemini or openai (got "${shown(values.provider)}").`);
  const provider = values.provider;
  // The part's folder, where the learner types the commands; its scripts beside the entry script.
  const folder = path.join(ROOT_DIR, part.split('/')[0]);
  const beside = (name: string) => path.join(path.dirname(entry), name);
  if (values['show-context'] && !existsSync(path.join(folder, beside('show-conversation.ts'))))
    throw new UsageError(`${shown(part)} has no show-conversation.ts.`);
  if (values.budget !== undefined && !values['show-context'])
    throw new UsageError('--budget goes with --show-context.');

  const fake = await startFakeProvider();
  const db = await createScratchDatabase();
  // Its traces are a scratch database's too: deleted with it, never mixed with the learner's.
  const logs = mkdtempSync(path.join(os.tmpdir(), 'nimbus-sample-logs-'));
  // The demo customer signs in, as .env.example sets it up.
  const env = {
    DB_NAME: db.name,
    LOG_DIR: logs,
    CUSTOMER_EMAIL: 'maya.patel@example.com',
  };
  try {
    // The transcript names the learner's database, not our scratch one.
    const print = (text: string) => io.log(text.replaceAll(db.name, 'nimbus'));
    if (existsSync(path.join(folder, beside('setup.ts')))) {
      const setup = await runInProcess(path.join(folder, beside('setup.ts')), [], {
        env: { ...fake.env(provider), ...env },
        cwd: folder,
        merged: true,
      });
      if (values.setup) print(`$ npx tsx ${beside('setup.ts')}\n${setup.stdout}`);
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
      const viewer = beside('show-conversation.ts');
      const shown = await runInProcess(path.join(folder, viewer), args, {
        env: { ...fake.env(provider), ...env },
        cwd: folder,
        merged: true,
      });
      print(`$ npx tsx ${viewer} ${args.join(' ')}\n${shown.stdout}`);
    }
  } finally {
    await fake.close();
    await db.drop();
    rmSync(logs, { recursive: true, force: true });
  }
}

/** What was typed, quoted back in an error: escaped, so it cannot move the cursor or hide text. */
function shown(text: string): string {
  return printable(text, { singleLine: true });
}

if (startedDirectly(import.meta.url)) await runMain(main, usage);
