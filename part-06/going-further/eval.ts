// How well does your model run Nimbus? `npm run eval`: the store's scenarios, each tried K times in a fresh copy of the sample store, judged on what the agent did and on the database, scored as pass^k.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  parseFlags,
  runMain,
  type ScriptIo,
  startedDirectly,
  type StopSignal,
  UsageError,
} from '../../shared/cli.ts';
import { refuseOptionsNpmKept } from './terminal/npm-options.ts';
import {
  ConfigError,
  customerEmail,
  ensureLogDir,
  type Env,
  type LlmSettings,
  llmSettings,
  makeFolders,
} from '../../shared/config.ts';
import { connectToServer } from '../../shared/db.ts';
import { commandFor, displayPath, learnerDir } from '../../shared/hints.ts';
import { printable } from '../../shared/text.ts';
import { spawnSittings } from './eval/spawn-sitting.ts';
import { evalProgress } from './eval/progress.ts';
import { failures, summarize, table, totals, type Prices } from './eval/report.ts';
import { parseScenarios, selectScenarios, type Scenario } from './eval/scenario-file.ts';
import { TOOL_NAMES } from './eval/sitting.ts';
import { runTrial, ScratchDatabases, type SittingRunner, type TrialRecord } from './eval/trial.ts';
import { clusterSettings, openClusterDatabase } from './store/cluster-database.ts';

const BUILT_IN = fileURLToPath(new URL('./eval/scenarios.json', import.meta.url));
/** Ctrl-C, a kill, or the terminal closed: each drops the scratch database before leaving. */
const STOP_SIGNALS: StopSignal[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

export function usage(io: ScriptIo): string {
  return `Usage: ${commandFor(import.meta.url, '[--trials=K] [--scenarios=FILE] [--only=ID,…]', io)}

Runs the full Nimbus on the store's scenarios (or those of FILE) against the provider in .env, K
times each (default 3). Every trial gets a fresh copy of the sample store in a scratch database of
its own, dropped at the end, also after Ctrl-C: the database DB_NAME names is never touched. Each
trial is judged on the tools called, the answers and the database at the end. The table shows
pass^k: the chance that all k tries of a scenario pass. A JSON report of every trial is written under
LOG_DIR. --only runs the scenarios with these ids. Exits 0 only when every trial passed.`;
}

/** The eval's work, given its arguments, settings and streams. */
export async function main(io: ScriptIo): Promise<number> {
  const { values } = parseFlags({
    args: io.args,
    options: {
      trials: { type: 'string' },
      scenarios: { type: 'string' },
      only: { type: 'string' },
    },
  });
  // Options written before `--` never reach an npm script: an eval run without them would run them all.
  refuseOptionsNpmKept(io, values, ['trials', 'scenarios', 'only']);
  const tries = values.trials ?? '3';
  if (!/^\d{1,2}$/.test(tries) || Number(tries) < 1)
    throw new UsageError(
      `--trials must be a whole number from 1 to 99 (got "${printable(tries, { singleLine: true })}").`,
    );
  const k = Number(tries);
  if (values.scenarios !== undefined && !values.scenarios.trim())
    throw new UsageError('--scenarios needs the name of a scenario file.');
  const [file, shownAs] = values.scenarios
    ? [
        path.resolve(learnerDir(io), values.scenarios),
        printable(values.scenarios, { singleLine: true }),
      ]
    : [BUILT_IN, 'the built-in scenarios'];
  let scenarios = parseScenarios(readScenarioFile(file, shownAs), shownAs, TOOL_NAMES);
  if (values.only !== undefined) scenarios = selectScenarios(scenarios, values.only, shownAs);
  // Settings are read once, here: without a key the eval says what the chat says.
  const llm = llmSettings(io.env);
  const logDir = ensureLogDir(io.env);
  const prices = priceSettings(io.env);
  const configured = customerEmail(io.env);
  const runs = scenarios.map((s) => {
    const customer = s.customer ?? configured;
    if (!customer)
      throw new UsageError(
        `Scenario "${s.id}" names no customer and CUSTOMER_EMAIL is not set in .env.`,
      );
    return { ...s, customer };
  });

  // This run's folder: the report, and the traces of every trial's conversations.
  const started = new Date();
  const folder = path.join(logDir, `eval-${started.toISOString().replace(/[:.]/g, '-')}`);
  makeFolders(folder);
  const trials = await runTrials(runs, k, folder, io, llm);
  const wallMs = Date.now() - started.getTime();

  const summaries = summarize(
    runs.map((s) => s.id),
    trials,
    k,
  );
  const model = printable(`${llm.provider} ${llm.model}`, { singleLine: true });
  io.log(`Nimbus on ${model}: ${k} trial${k === 1 ? '' : 's'} of each scenario\n`);
  for (const line of table(summaries, k)) io.log(line);
  const broken = failures(trials);
  if (broken.length)
    io.log(`\nFailed and errored trials:\n${broken.map((l) => `  ${l}`).join('\n')}`);
  io.log();
  for (const line of totals(trials, wallMs, prices)) io.log(line);
  const report = { started, provider: llm.provider, model: llm.model, trials: k };
  writeReport(io, path.join(folder, 'report.json'), {
    ...report,
    scenarios: runs,
    summaries,
    runs: trials,
    wall_ms: wallMs,
  });
  return trials.every((t) => t.verdict === 'pass') ? 0 : 1;
}

/**
 * Every trial of every scenario, one after another, each in a scratch database of its own. Ctrl-C (or
 * a kill) stops the sitting's process and drops the scratch database before leaving (exit 130).
 */
async function runTrials(
  runs: Array<Scenario & { customer: string }>,
  k: number,
  folder: string,
  io: ScriptIo,
  llm: LlmSettings,
): Promise<TrialRecord[]> {
  const admin = await connectToServer();
  const databases = new ScratchDatabases(admin);
  // A run killed outright (kill -9) had no time to drop its databases: this one does, and says so.
  const abandoned = await databases.dropAbandoned();
  if (abandoned.length)
    io.error(
      `Dropped ${abandoned.length} scratch database${abandoned.length === 1 ? '' : 's'} an earlier eval left when it was killed: ${abandoned.join(', ')}.`,
    );
  const progress = evalProgress(runs.length * k, io.stderr);
  let child: ChildProcess | undefined;
  let leaving: Promise<never> | undefined;
  // A second Ctrl-C (or tsx passing the first one on again) must not end the process mid-drop: the
  // handlers stay, and only the first signal starts leaving.
  const leave = (signal: StopSignal) => void (leaving ??= stopAndLeave(signal));
  const stopAndLeave = async (signal: StopSignal): Promise<never> => {
    progress.finish();
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await Promise.race([once(child, 'close'), new Promise((r) => setTimeout(r, 5000))]);
    }
    const failed = await databases.stop().then(
      () => undefined,
      (error: Error) => error,
    );
    await admin.end().catch(() => {});
    if (!failed) io.error('Stopped: the scratch database was dropped.');
    else
      io.error(
        `Stopped, but ${databases.names().join(', ')} could not be dropped (${printable(failed.message, { singleLine: true })}): drop ${databases.names().length === 1 ? 'it' : 'them'} with DROP DATABASE.`,
      );
    process.exit(128 + osConstants.signals[signal]);
  };
  for (const signal of STOP_SIGNALS) io.signals.on(signal, leave);
  // The sittings read the settings this process was given (.env included): the same provider and server.
  const startSitting = spawnSittings(io.env, folder, (running) => (child = running));
  // Once leaving, no sitting starts: one started after the drop would create its database again.
  const runSitting: SittingRunner = (input, database) =>
    leaving ? Promise.reject(new Error('Stopped.')) : startSitting(input, database);
  const trials: TrialRecord[] = [];
  try {
    // The sample store, its help-center index included, built once: every trial starts from a copy.
    await databases.createTemplate(llm, clusterSettings(io.env));
    for (const scenario of runs) {
      for (let trial = 1; trial <= k; trial++) {
        progress.update(trials.length, scenario.id, trial, k);
        const done = await runTrial(scenario, trial, databases, admin, runSitting);
        // A wrong key or model name is the developer's to fix, as in the chat: said, and the run ends.
        if (done.fatal)
          throw new ConfigError(done.error ?? 'The provider refused the key or model.');
        trials.push(done);
      }
    }
    // Ctrl-C during the last trial ends it as a failed one: leaving, not the table, is what follows.
    if (leaving) await leaving;
    return trials;
  } catch (error) {
    // Stopped: the trial in flight failed because its sitting was ended; leaving says it and exits.
    if (leaving) await leaving;
    throw error;
  } finally {
    progress.finish();
    await databases.dropAll();
    await admin.end();
    for (const signal of STOP_SIGNALS) io.signals.off(signal, leave);
  }
}

/** The JSON report; a folder that cannot take it is said in one line, and the table stands. */
function writeReport(io: ScriptIo, file: string, report: object): void {
  const shown = printable(displayPath(file, io), { singleLine: true });
  try {
    writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`, { mode: 0o600 });
    io.log(`Report, with every trial's turns, tool calls and answers: ${shown}`);
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    io.error(`The report could not be written to ${shown} (${reason}).`);
  }
}

function readScenarioFile(file: string, shownAs: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new UsageError(
      `Cannot read ${shownAs} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}).`,
    );
  }
}

/** EVAL_PRICE_INPUT and EVAL_PRICE_OUTPUT (per million tokens): both, or no cost estimate. */
function priceSettings(env: Env): Prices | undefined {
  const read = (name: string) => {
    const value = env[name]?.trim();
    if (!value) return undefined;
    if (!/^\d+(\.\d+)?$/.test(value))
      throw new ConfigError(
        `${name} must be a price per million tokens such as 0.30 (it is "${printable(value, { singleLine: true })}"). Fix it in .env.`,
      );
    return Number(value);
  };
  const [input, output] = [read('EVAL_PRICE_INPUT'), read('EVAL_PRICE_OUTPUT')];
  return input === undefined || output === undefined ? undefined : { input, output };
}

export const openDatabase = openClusterDatabase;
if (startedDirectly(import.meta.url)) await runMain(main, usage, { openDatabase });
