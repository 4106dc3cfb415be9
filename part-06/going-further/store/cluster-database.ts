// The full Nimbus's database: one server, or the nodes of a cluster (DB_HOSTS), with failover, reads that see the cluster's last writes, the retries writers on several nodes need, and every write of a question behind its fence.
import type { PoolConnection } from 'mysql2/promise';
import type { ScriptIo } from '../../../shared/cli.ts';
import { ConfigError, dbSettings, type DbSettings, type Env } from '../../../shared/config.ts';
import {
  CommitUnknown,
  Database,
  DatabaseError,
  destroy,
  lostConnection,
  unlessStopped,
  type Borrowed,
  type Server,
} from '../../../shared/db.ts';
import { capitalized, type Where } from '../../../shared/db-errors.ts';
import { printable } from '../../../shared/text.ts';
import { checkFence, currentFence } from './fence.ts';

export interface ClusterSettings extends DbSettings {
  /**
   * Every server to use, the preferred one first: DB_HOSTS (host:port,host:port,…), else DB_HOST and
   * DB_PORT. `host` and `port` are the first's: what a connection of its own (setup's, an admin's) uses.
   */
  servers: Array<{ host: string; port: number }>;
}

/** The DB_* settings, with DB_HOSTS in place of DB_HOST and DB_PORT when it is set. */
export function clusterSettings(env: Env): ClusterSettings {
  const settings = dbSettings(env);
  const hosts = env.DB_HOSTS?.trim();
  const servers = hosts ? serverList(hosts) : [{ host: settings.host, port: settings.port }];
  return { ...settings, ...servers[0], servers };
}

/** DB_HOSTS: "host:port,host:port,…", e.g. the nodes of a Galera cluster, the preferred one first. */
function serverList(value: string): ClusterSettings['servers'] {
  return value.split(',').map((entry) => {
    const match = /^([A-Za-z0-9.-]+):(\d{1,5})$/.exec(entry.trim());
    const port = Number(match?.[2]);
    if (!match || port < 1 || port > 65535) {
      throw new ConfigError(
        `DB_HOSTS must list servers as host:port separated by commas, e.g. 127.0.0.1:3306,127.0.0.1:3307 (it is "${printable(value, { singleLine: true })}"). Fix it in .env.`,
      );
    }
    return { host: match[1], port };
  });
}

/**
 * How every script of the full Nimbus opens its database (runMain's `openDatabase`): on the servers its
 * own settings name, read when first needed.
 */
export function openClusterDatabase(io: ScriptIo): ClusterDatabase {
  return new ClusterDatabase(() => clusterSettings(io.env), io);
}

/** Statements that only read (a SELECT, or one under a WITH as search_past_conversations makes): never fenced. */
const READS = /^\s*(SELECT|WITH)\b/i;

/** How long a server that failed is passed over, when there are others to try. */
const SKIP_MS = 5000;
/** With other servers to try, how long to wait for a connection from one before moving on. */
const SERVER_WAIT_MS = 5000;

/**
 * The database of shared/db.ts, on several servers: a pool per server, the preferred one used while it
 * answers. With one server it is that database, but for trying more often (attempts) and knowing
 * Galera's refusals.
 */
export class ClusterDatabase extends Database<ClusterSettings> {
  #servers?: Server[];
  /** Until when each server that failed is passed over. */
  readonly #skipUntil = new Map<Server, number>();

  /** Every server, the preferred one first (DB_HOSTS's order), each with its pool opened on first use. */
  get #all(): Server[] {
    return (this.#servers ??= this.settings.servers.map(({ host, port }) => ({
      host,
      port,
      silentUntil: 0,
    })));
  }

  get #several(): boolean {
    return this.settings.servers.length > 1;
  }

  /**
   * Every transaction of a question first checks its lease (store/fence.ts), so nothing it writes lands
   * once an erasure, a reset or another question took the conversation; a statement that writes outside
   * a transaction becomes one. Every write a question causes (its saves, its tools', the chapter's
   * ticket too) comes through here: no tool can forget the check.
   */
  override async transaction<T>(fn: (connection: PoolConnection) => Promise<T>): Promise<T> {
    const fence = currentFence();
    if (!fence) return super.transaction(fn);
    const fenced = async (connection: PoolConnection) => {
      await checkFence(fence, connection);
      return fn(connection);
    };
    try {
      return await super.transaction(fenced);
    } catch (error) {
      // Every write of a question looks before it writes (a ticket already open is returned, a step
      // already stored is found by its key): one whose COMMIT's answer never came runs once more and
      // finds what the first did, so the customer hears that (the ticket's number), not a failure.
      if (!(error instanceof CommitUnknown)) throw error;
      // If the second try fails too (its lease taken meanwhile, say), the first one's fate is still
      // unknown: that is what is said, never the second's "nothing was written", so a save looks
      // (reading, which needs no lease) whether its rows landed before it reports anything.
      return super.transaction(fenced).catch(() => {
        throw error;
      });
    }
  }

  override query<T>(sql: string, params: unknown[]): Promise<T> {
    if (!currentFence() || READS.test(sql)) return super.query(sql, params);
    return this.transaction(async (connection) => (await connection.query(sql, params))[0] as T);
  }

  override get where(): Where {
    if (!this.#several) return super.where;
    return { server: 'the MySQL cluster in DB_HOSTS', settings: 'DB_HOSTS' };
  }

  /**
   * Sized for a cluster: writers on several nodes changing the same rows collide at COMMIT (a
   * certification conflict, 1213), and with 100 of them at once some lose several times in a row.
   */
  protected override readonly attempts = 10;

  /** Also a node that is not ready (it refused the statement) and a refused fragment (rolled back). */
  protected override isRetryable(error: unknown, options: { readOnly: boolean }): boolean {
    return notReady(error) || fragmentRefused(error) || super.isRetryable(error, options);
  }

  /**
   * On a cluster, also reads that wait for every write the cluster already committed
   * (wsrep_sync_wait), so a conversation's own last save is seen whichever node answers.
   */
  protected override sessionSetup(): string[] {
    const setup = super.sessionSetup();
    return this.#several ? [...setup, 'SET SESSION wsrep_sync_wait = 1'] : setup;
  }

  /**
   * A connection from the first server that gives one within DB_TIMEOUT_SECONDS: the preferred one, or
   * the next that answers while it is down, each given SERVER_WAIT_MS when there are others to try.
   */
  protected override async connect(): Promise<Borrowed> {
    const deadline = Date.now() + this.settings.timeoutMs;
    const all = this.#all;
    if (all.every((server) => server.silentUntil > Date.now()))
      throw this.notAnswered('so nothing was written');
    // Servers that failed a moment ago go last, not out: if all of them failed, all are tried again.
    const skipped = (server: Server) => (this.#skipUntil.get(server) ?? 0) > Date.now();
    const order = [...all].sort((a, b) => Number(skipped(a)) - Number(skipped(b)));
    let failure: unknown;
    for (const server of order) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      const wait = this.#several ? Math.min(left, SERVER_WAIT_MS) : left;
      try {
        const connection = await this.fromPool(server, wait);
        if (this.#several) await this.#checked({ connection, server }, wait);
        return { connection, server };
      } catch (error) {
        failure = error;
        this.#skip(server);
      }
    }
    throw this.noConnection(failure);
  }

  /** A node that is not ready, or dropped the connection, is passed over for a while (its connection destroyed). */
  protected override dropped(borrowed: Borrowed, error: unknown): void {
    if (!notReady(error) && !lostConnection(error)) return super.dropped(borrowed, error);
    destroy(borrowed.connection);
    this.#skip(borrowed.server);
  }

  /** One connection to the first server that answers (setup's: it creates the database). */
  override async connectToServer() {
    let failure: unknown;
    for (const server of this.#all) {
      try {
        return await this.connectTo(server);
      } catch (error) {
        failure = error;
      }
    }
    throw this.explain(failure);
  }

  /** Galera's refusals, said in one sentence too. */
  override explain(error: unknown): unknown {
    if (error instanceof DatabaseError || !(notReady(error) || fragmentRefused(error)))
      return super.explain(error);
    const at = capitalized(this.where.server);
    const sentence = notReady(error)
      ? `${at} is not ready to answer (1047: a cluster node that is not in the cluster's primary component). Check the cluster.`
      : `${at} kept refusing a change while replicating it to the cluster's other nodes; nothing of it was written. Try again.`;
    return new DatabaseError(sentence, { cause: error });
  }

  #skip(server: Server): void {
    if (this.#several) this.#skipUntil.set(server, Date.now() + SKIP_MS);
  }

  /**
   * A connection the pool kept may lead to a node that stalled since it was last used: a ping first,
   * given the failover time, so such a node costs SERVER_WAIT_MS before the next one is tried, not
   * DB_TIMEOUT_SECONDS for every statement sent to it.
   */
  async #checked(borrowed: Borrowed, waitMs: number): Promise<void> {
    try {
      await unlessStopped(borrowed.connection.ping(), waitMs, () => this.abandon(borrowed));
    } catch (error) {
      destroy(borrowed.connection);
      throw error;
    }
  }
}

/** A cluster node that is not part of the primary component (or not synced yet) answers 1047. */
function notReady(error: unknown): boolean {
  return (error as { errno?: number }).errno === 1047;
}

/** Galera's refusal of a streaming replication fragment (as ER_UNKNOWN_ERROR): the transaction was rolled back. */
function fragmentRefused(error: unknown): boolean {
  const { message } = error as { message?: string };
  return /^Error while appending streaming replication fragment/.test(message ?? '');
}
