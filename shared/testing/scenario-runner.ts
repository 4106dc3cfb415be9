// Runs one support scenario against one part, the way a learner would: the part's own entry script, as a subprocess.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT_DIR } from '../config.ts';
import mysql from 'mysql2/promise';
import { connectionOptions } from '../db.ts';
import type { Scenario, ScenarioRun } from '../scenarios/scenarios.ts';
import type { FakeProvider, ProviderName } from './fake-provider.ts';
import { runScript } from './run-script.ts';

export interface PartScenarios {
  /** The script a learner runs in that part: ask.ts, ask-agent.ts or chat.ts. */
  entry: string;
  scenarios: string[];
}

export function partScenarios(part: string): PartScenarios {
  return JSON.parse(readFileSync(path.join(ROOT_DIR, part, 'scenarios.json'), 'utf8'));
}

export interface ScenarioResult extends ScenarioRun {
  /** Each command with what it printed (stdout and stderr), for reading and for README sample sessions. */
  transcript: string;
}

export async function runScenario(
  part: string,
  scenario: Scenario,
  provider: ProviderName,
  fake: FakeProvider,
  env: Record<string, string>,
): Promise<ScenarioResult> {
  const { entry } = partScenarios(part);
  const script = path.join(ROOT_DIR, part, entry);
  const firstRequest = fake.chats().length;
  fake.reply(...scenario.replies);
  const outputs: string[] = [];
  const transcript: string[] = [];
  const options = { env: { ...fake.env(provider), ...env }, cwd: path.join(ROOT_DIR, part) };

  const record = (command: string, result: { code: number | null; stdout: string; stderr: string }, input?: string) => {
    if (result.code !== 0) throw new Error(`${command} exited with ${result.code}:\n${result.stderr}`);
    outputs.push(result.stdout);
    transcript.push(`$ ${command}${input ? `   # typed: ${JSON.stringify(input.trim().split('\n'))}` : ''}\n${result.stderr}${result.stdout}`);
  };

  if (entry === 'chat.ts') {
    // One process per sitting; later sittings resume the conversation the first one started.
    let conversationId = '';
    for (const [i, session] of scenario.sessions.entries()) {
      const args = i === 0 ? [] : [`--resume=${conversationId}`];
      const input = `${session.join('\n')}\n`;
      const result = await runScript(script, args, { ...options, input });
      record(`npx tsx ${entry} ${args.join(' ')}`.trim(), result, input);
      conversationId ||= result.stdout.match(/New conversation ([0-9a-f]{32})/)?.[1] ?? '';
    }
  } else {
    // Without memory, every message is a question of its own.
    for (const message of scenario.sessions.flat()) {
      const result = await runScript(script, [message], options);
      record(`npx tsx ${entry} ${JSON.stringify(message)}`, result);
    }
  }

  const requests = fake.chats().slice(firstRequest);
  const rejected = requests.filter((r) => r.status !== 200);
  if (rejected.length) throw new Error(`The fake provider rejected a request: ${rejected[0].rejection ?? rejected[0].status}`);
  return {
    outputs,
    requests: requests.map((r) => r.view!),
    // Its own connection to the scenario's database: scenarios of several parts may run at once.
    query: async (sql, params) => {
      const connection = await mysql.createConnection({ ...connectionOptions(), database: env.DB_NAME });
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
