// Runs one support scenario against one part, the way a learner would: the part's own entry script, in-process (stderr and stdout in one, for a sample session).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { dbSettings, ROOT_DIR } from '../config.ts';
import mysql from 'mysql2/promise';
import { connectionOptions } from '../db.ts';
import type { Scenario, ScenarioRun } from '../scenarios/scenarios.ts';
import type { FakeProvider, ProviderName } from './fake-provider.ts';
import { runInProcess } from './run-in-process.ts';
import type { RunOptions, ScriptResult } from './run-script.ts';

export interface PartScenarios {
  /** The script a learner runs in that part, relative to its folder: ask.ts, chat.ts, going-further/chat.ts. */
  entry: string;
  scenarios: string[];
  /** A second list, run through the part's full version (Part 6's going-further/chat.ts). */
  goingFurther?: { entry: string; scenarios: string[] };
}

/** The folder of a list (`part-06`, or `part-06/going-further` for its going-further list) holding scenarios.json. */
function partOf(list: string): { part: string; goingFurther: boolean } {
  const goingFurther = list.endsWith('/going-further');
  return { part: goingFurther ? path.dirname(list) : list, goingFurther };
}

/**
 * A part's scenarios (`part-06`), or those of its going-further list (`part-06/going-further`): its
 * entry script (relative to the part's folder) and the scenarios it passes.
 */
export function partScenarios(list: string): PartScenarios {
  const { part, goingFurther } = partOf(list);
  const declared: PartScenarios = JSON.parse(
    readFileSync(path.join(ROOT_DIR, part, 'scenarios.json'), 'utf8'),
  );
  if (!goingFurther) return declared;
  if (!declared.goingFurther) throw new Error(`${part}/scenarios.json has no goingFurther list.`);
  return declared.goingFurther;
}

/** Every scenario list of the parts: each part's own, then its going-further list if it has one. */
export function scenarioLists(parts: string[]): string[] {
  return parts.flatMap((part) =>
    partScenarios(part).goingFurther ? [part, `${part}/going-further`] : [part],
  );
}

/** The command a learner types for one question to a one-question script (ask.ts), in its part folder. */
export function questionCommand(entry: string, question: string): string {
  return `npx tsx ${entry} ${JSON.stringify(question)}`;
}

export interface ScenarioResult extends ScenarioRun {
  /** Each command with what it printed (stdout and stderr), for reading and for README sample sessions. */
  transcript: string;
}

export async function runScenario(
  /** A part folder (`part-04`), or a part's going-further list (`part-06/going-further`). */
  part: string,
  scenario: Scenario,
  provider: ProviderName,
  fake: FakeProvider,
  env: Record<string, string>,
  /** Interleave stderr with stdout, as a terminal shows them (for sample sessions). */
  merged = false,
): Promise<ScenarioResult> {
  // In-process: the script's main with its own arguments, settings and piped input, as a process would run it.
  const run = (script: string, args: string[], options: RunOptions) =>
    runInProcess(script, args, { ...options, merged });
  const { entry } = partScenarios(part);
  // Run in the part's folder, as a learner does: `npx tsx going-further/chat.ts` in part-06.
  const folder = partOf(part).part;
  const script = path.join(ROOT_DIR, folder, entry);
  const firstRequest = fake.chats().length;
  fake.reply(...scenario.replies);
  const outputs: string[] = [];
  const transcript: string[] = [];
  const options = { env: { ...fake.env(provider), ...env }, cwd: path.join(ROOT_DIR, folder) };

  const record = (command: string, result: ScriptResult) => {
    if (result.code !== 0)
      throw new Error(`${command} exited with ${result.code}:\n${result.stderr || result.stdout}`);
    outputs.push(result.stdout);
    transcript.push(`$ ${command}\n${result.stderr}${result.stdout}`);
  };

  if (path.basename(entry) === 'chat.ts') {
    // One process per sitting; later sittings resume the conversation the first one started, or
    // start their own (newConversations).
    let conversationId = '';
    for (const [i, session] of scenario.sessions.entries()) {
      const args = i === 0 || scenario.newConversations ? [] : [`--resume=${conversationId}`];
      const input = `${session.join('\n')}\n`;
      const result = await run(script, args, { ...options, input });
      record(`npx tsx ${entry} ${args.join(' ')}`.trim(), result);
      conversationId ||= result.stdout.match(/New conversation ([0-9a-f]{32})/)?.[1] ?? '';
    }
  } else {
    // Without memory, every message is a question of its own.
    for (const message of scenario.sessions.flat()) {
      const result = await run(script, [message], options);
      record(questionCommand(entry, message), result);
    }
  }

  const requests = fake.chats().slice(firstRequest);
  const rejected = requests.filter((r) => r.status !== 200);
  if (rejected.length)
    throw new Error(
      `The fake provider rejected a request: ${rejected[0].rejection ?? rejected[0].status}`,
    );
  return {
    outputs,
    requests: requests.map((r) => r.view!),
    // Its own connection to the scenario's database: scenarios of several parts may run at once.
    query: async (sql, params) => {
      const connection = await mysql.createConnection({
        ...connectionOptions(dbSettings(process.env)),
        database: env.DB_NAME,
      });
      try {
        const [rows] = await connection.query(sql, params);
        return rows as any;
      } finally {
        await connection.end();
      }
    },
    transcript: transcript.join('\n'),
  };
}
