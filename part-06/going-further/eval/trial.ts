// One trial of a scenario: a fresh copy of the sample store, its sittings one after another, then the judge's verdict on what the agent did and what the store holds.
import { createHash, randomBytes } from 'node:crypto';
import os from 'node:os';
import type mysql from 'mysql2/promise';
import type { LlmSettings } from '../../../shared/config.ts';
import { explainDatabaseError, withDatabase } from '../../../shared/db.ts';
import { ensureFullDatabase } from '../store/ensure-tables.ts';
import { ClusterDatabase, type ClusterSettings } from '../store/cluster-database.ts';
import type { Usage } from '../../../shared/llm/index.ts';
import { judge, readStoreFacts } from './judge.ts';
import type { Scenario } from './scenario-file.ts';
import { unanswered, type SittingInput, type SittingResult, type TurnRecord } from './sitting.ts';

/** Runs one sitting against a database: a child process in eval.ts, the same code in-process in tests. */
export type SittingRunner = (input: SittingInput, database: string) => Promise<SittingResult>;

export interface TrialRecord {
  scenario: string;
  /** 1, 2, … within the scenario. */
  trial: number;
  /** "error": the provider or the database failed, so no verdict (pass^k leaves it out). */
  verdict: 'pass' | 'fail' | 'error';
  /** The expectations broken, each with what happened instead. */
  broken: string[];
  /** Why there is no verdict. */
  error?: string;
  /** The provider refused the key or the model: no later trial can do better. */
  fatal?: boolean;
  /** Every turn across the sittings (numbered from 1 in this order), with the sitting it was asked in. */
  turns: Array<TurnRecord & { sitting: number }>;
  usage: Usage;
  /** Time spent answering: the turns' own, without the setup of the trial's database. */
  ms: number;
  /** The scratch database it ran in (dropped at its end). */
  database: string;
}

/**
 * The scratch databases the eval made, so a Ctrl-C can drop the one still there. With a template
 * (createTemplate), each new one is a copy of it: the sample store and its help-center index are built
 * once per run, not once per trial (an index costs a paid embedding request per batch of passages).
 */
export class ScratchDatabases {
  private readonly live = new Set<string>();
  private stopping = false;
  private template?: string;

  /**
   * `prefix`: the eval's own, never DB_NAME's (tests running side by side each take one of their own).
   * Each name also says which machine and process made it, so a later run can tell the databases of a
   * run that was killed (kill -9 leaves no time to drop them) from those of a run still going.
   */
  constructor(
    private readonly admin: mysql.Connection,
    private readonly prefix = 'nimbus_eval_',
  ) {}

  /**
   * Drops the databases of this prefix that an earlier run on this machine left behind when its
   * process died without dropping them; returns their names. Another machine's, or a live run's, stay.
   */
  async dropAbandoned(): Promise<string[]> {
    const [rows] = await this.admin.query<mysql.RowDataPacket[]>(
      'SELECT schema_name AS name FROM information_schema.schemata WHERE schema_name LIKE ?',
      [`${this.prefix.replaceAll('_', '\\_')}%`],
    );
    const mine = new RegExp(`^${this.prefix}${MACHINE}_(\\d+)_[0-9a-f]+$`);
    const abandoned = rows
      .map((row) => String(row.name))
      .filter((name) => {
        const pid = Number(mine.exec(name)?.[1]);
        return pid > 0 && pid !== process.pid && !alive(pid);
      });
    for (const name of abandoned)
      await this.admin.query(`DROP DATABASE IF EXISTS \`${name}\``).catch(said);
    return abandoned;
  }

  async create(): Promise<string> {
    // Ctrl-C is dropping them: no trial may start another (a signal to the process group ends the
    // sitting's process first, and its trial's end would otherwise go on to the next trial).
    if (this.stopping) throw new Error('Stopped.');
    const name = `${this.prefix}${MACHINE}_${process.pid}_${randomBytes(4).toString('hex')}`;
    this.live.add(name);
    await this.admin
      .query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`)
      .catch(said);
    if (this.template) await copyDatabase(this.admin, this.template, name).catch(said);
    return name;
  }

  /**
   * Builds the sample store as `npm run setup` leaves it, its help-center index included when `llm`
   * can embed, in one more of these databases; from then on, each new one starts as a copy of it.
   */
  async createTemplate(llm: LlmSettings, settings: ClusterSettings): Promise<void> {
    const template = await this.create();
    const store = new ClusterDatabase({ ...settings, database: template });
    await withDatabase(store, () => ensureFullDatabase(() => {}, llm)).finally(() => store.close());
    this.template = template;
  }

  async drop(name: string): Promise<void> {
    await this.admin.query(`DROP DATABASE IF EXISTS \`${name}\``).catch(said);
    this.live.delete(name);
  }

  /** The scratch databases not dropped yet. */
  names(): string[] {
    return [...this.live];
  }

  async dropAll(): Promise<void> {
    for (const name of [...this.live]) await this.drop(name);
  }

  /** Drops them all and creates no more: what Ctrl-C does. */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.dropAll();
  }
}

/** This machine, in a scratch database's name: a short hash of its host name. */
const MACHINE = createHash('sha256').update(os.hostname()).digest('hex').slice(0, 6);

/** Whether a process of this machine is running (signal 0 tests without sending anything). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'; // running, but someone else's
  }
}

/**
 * One trial in a database of its own, dropped at the end however the trial went. The sittings run in
 * order, each resuming the conversation the last one left (or a new one, newConversations).
 */
export async function runTrial(
  scenario: Scenario & { customer: string },
  trial: number,
  databases: ScratchDatabases,
  admin: mysql.Connection,
  runSitting: SittingRunner,
): Promise<TrialRecord> {
  const database = await databases.create();
  const turns: TrialRecord['turns'] = [];
  const record = (
    fields: Pick<TrialRecord, 'verdict' | 'broken' | 'error' | 'fatal'>,
  ): TrialRecord => ({
    scenario: scenario.id,
    trial,
    ...fields,
    turns,
    usage: {
      input_tokens: turns.reduce((sum, t) => sum + t.usage.input_tokens, 0),
      output_tokens: turns.reduce((sum, t) => sum + t.usage.output_tokens, 0),
    },
    ms: turns.reduce((sum, t) => sum + t.ms, 0),
    database,
  });
  try {
    let conversation: string | undefined;
    for (const [i, sitting] of scenario.sittings.entries()) {
      const input = {
        customer: scenario.customer,
        resume: scenario.newConversations ? undefined : conversation,
        turns: sitting,
      };
      let result: SittingResult;
      try {
        result = await runSitting(input, database);
      } catch (error) {
        // The sitting's process failed before it could say how its turns went (setup, a bad customer).
        return record({ verdict: 'error', broken: [], error: (error as Error).message });
      }
      turns.push(...result.turns.map((turn) => ({ sitting: i + 1, ...turn })));
      conversation = result.conversation;
      const failed = result.turns.find(unanswered);
      if (failed) {
        const error = failed.problem ?? failed.outcome;
        return record({
          verdict: 'error',
          broken: [],
          error,
          ...(failed.fatal ? { fatal: true } : {}),
        });
      }
    }
    const facts = await readStoreFacts(admin, database, scenario.customer).catch(said);
    const broken = judge(scenario, turns, facts);
    return record({ verdict: broken.length ? 'fail' : 'pass', broken });
  } finally {
    await databases.drop(database);
  }
}

/**
 * Copies every table, rows included, and every stored function of `from` into the empty database
 * `to`: the same store, built once. SHOW CREATE gives each as written, foreign keys and the next
 * AUTO_INCREMENT included; they are created in `to` (the connection's database for the while).
 */
async function copyDatabase(admin: mysql.Connection, from: string, to: string): Promise<void> {
  const [tables] = await admin.query<mysql.RowDataPacket[]>(
    "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = ? AND table_type = 'BASE TABLE'",
    [from],
  );
  const [functions] = await admin.query<mysql.RowDataPacket[]>(
    "SELECT routine_name AS name FROM information_schema.routines WHERE routine_schema = ? AND routine_type = 'FUNCTION'",
    [from],
  );
  await admin.query(`USE \`${to}\``);
  // A table may point at one not copied yet: the keys are checked once every row is in.
  await admin.query('SET FOREIGN_KEY_CHECKS = 0');
  try {
    for (const { name } of tables) {
      const [[created]] = await admin.query<mysql.RowDataPacket[]>(
        `SHOW CREATE TABLE \`${from}\`.\`${name}\``,
      );
      await admin.query(created['Create Table']);
      await admin.query(`INSERT INTO \`${to}\`.\`${name}\` SELECT * FROM \`${from}\`.\`${name}\``);
    }
    for (const { name } of functions) {
      const [[created]] = await admin.query<mysql.RowDataPacket[]>(
        `SHOW CREATE FUNCTION \`${from}\`.\`${name}\``,
      );
      // Without its DEFINER: created as the user running the eval, as setup created the template's.
      const sql = String(created['Create Function']).replace(/DEFINER=\S+\s+/, '');
      await admin.query(sql);
    }
  } finally {
    await admin.query('SET FOREIGN_KEY_CHECKS = 1');
  }
}

/** What the database server said, in one sentence (the eval's own connection fails like any other). */
function said(error: unknown): never {
  throw explainDatabaseError(error);
}
