// The full Nimbus's database settings (DB_HOSTS) and how its errors name a cluster, without a server.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../../shared/config.ts';
import { DatabaseError } from '../../../../shared/db.ts';
import { ClusterDatabase, clusterSettings } from '../../store/cluster-database.ts';

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('DB_HOSTS', () => {
  beforeEach(() => {
    process.env.DB_NAME = 'nimbus';
    process.env.DB_HOST = '127.0.0.1';
    process.env.DB_PORT = '3306';
  });
  afterEach(() => {
    delete process.env.DB_HOSTS;
  });

  it('lists the servers of a cluster, the first preferred, in place of DB_HOST and DB_PORT', () => {
    process.env.DB_HOSTS = '10.0.0.1:3306, db-2.example:3307';
    const settings = clusterSettings(process.env);
    expect(settings.servers).toEqual([
      { host: '10.0.0.1', port: 3306 },
      { host: 'db-2.example', port: 3307 },
    ]);
    expect([settings.host, settings.port]).toEqual(['10.0.0.1', 3306]);
  });

  it('is one server, DB_HOST and DB_PORT, when unset', () => {
    process.env.DB_HOSTS = '';
    expect(clusterSettings(process.env).servers).toEqual([{ host: '127.0.0.1', port: 3306 }]);
  });

  it.each(['10.0.0.1', '10.0.0.1:0', 'a:3306,,b:3306', 'a:3306;b:3307'])(
    'refuses %s in one sentence naming DB_HOSTS',
    (value) => {
      process.env.DB_HOSTS = value;
      expect(configError(() => clusterSettings(process.env)).message).toMatch(
        /^DB_HOSTS must list servers as host:port/,
      );
    },
  );
});

describe("a cluster's errors", () => {
  const cluster = new ClusterDatabase(
    clusterSettings({ ...process.env, DB_NAME: 'nimbus', DB_HOSTS: '10.0.0.1:3306,10.0.0.2:3306' }),
  );
  const driverError = (fields: object) => Object.assign(new Error('driver says'), fields);

  it.each([
    [
      'a node not ready (1047)',
      { errno: 1047, code: 'ER_UNKNOWN_COM_ERROR', sqlState: '08S01' },
      "The MySQL cluster in DB_HOSTS is not ready to answer (1047: a cluster node that is not in the cluster's primary component). Check the cluster.",
    ],
    [
      "Galera's refused streaming replication fragment",
      {
        errno: 1105,
        code: 'ER_UNKNOWN_ERROR',
        sqlState: 'HY000',
        message: 'Error while appending streaming replication fragment(provider status: 5)',
      },
      "The MySQL cluster in DB_HOSTS kept refusing a change while replicating it to the cluster's other nodes; nothing of it was written. Try again.",
    ],
    [
      'a cluster out of reach',
      { code: 'ECONNREFUSED' },
      'Cannot reach the MySQL cluster in DB_HOSTS (ECONNREFUSED). Start the database server (none yet? the Requirements in README.md at the repository root start one in one line), or check DB_HOSTS in .env.',
    ],
  ])('say %s in one sentence naming the cluster', (_, fields, sentence) => {
    const explained = cluster.explain(driverError(fields));
    expect(explained).toBeInstanceOf(DatabaseError);
    expect((explained as Error).message).toBe(sentence);
  });
});
