// Test settings: a clean provider environment for every test, and database tests only where MySQL answers.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { defineConfig } from 'vitest/config';
import { dbSettings } from './shared/config.ts';
import { databaseProblem } from './shared/testing/database.ts';

// Tests that need MySQL are named *.db.test.ts. Without a server they are left out, loudly;
// in CI (or with REQUIRE_DB=1) a missing database fails the run instead.
const problem = await databaseProblem();
const exclude = ['**/node_modules/**'];
if (problem) {
  const { host, port } = dbSettings(process.env);
  const message = `MySQL is not reachable at ${host}:${port} (${problem})`;
  if (process.env.CI === 'true' || process.env.REQUIRE_DB === '1') {
    throw new Error(
      `${message}, and CI or REQUIRE_DB=1 requires it. Start MySQL/MariaDB or fix DB_* in .env.`,
    );
  }
  console.warn(
    `\n⚠ ${message}: skipping every *.db.test.ts file. Start MySQL/MariaDB (or set DB_HOST, DB_PORT, DB_USER, DB_PASSWORD in .env) to run them.\n`,
  );
  exclude.push('**/*.db.test.ts');
}

// The cluster tests (*.cluster.test.ts, `npm run test:cluster`, which is `vitest run --mode cluster`)
// start a local 3-node Galera cluster (part-06/going-further/ops/local-cluster.ts) and stop nodes on
// purpose: a run of their own, so `npm test` stays quick and needs no Galera. They need Debian's
// galera-4, rsync and MariaDB's server: without them the run says so in one line and fails.
function clusterProblem(): string | undefined {
  const missing = ['/usr/lib/galera/libgalera_smm.so', '/usr/sbin/mariadbd'].filter(
    (file) => !existsSync(file),
  );
  if (missing.length === 0) return undefined;
  return `The local Galera cluster cannot start here (no ${missing.join(', ')}): apt-get install galera-4 rsync mariadb-server`;
}

// Traces written by the tests go to a temporary folder of this run's own, deleted when it ends: two runs
// at once on one machine never delete each other's traces.
const testLogs = mkdtempSync(path.join(os.tmpdir(), 'nimbus-test-logs-'));
process.on('exit', () => rmSync(testLogs, { recursive: true, force: true }));

export default defineConfig(({ mode }) => {
  const cluster = mode === 'cluster';
  if (cluster && (problem ?? clusterProblem())) throw new Error(problem ?? clusterProblem());
  return {
    test: {
      include: cluster
        ? ['part-0*/**/*.cluster.test.ts']
        : ['shared/**/*.test.ts', 'part-0*/**/*.test.ts'],
      exclude: cluster ? exclude : [...exclude, '**/*.cluster.test.ts'],
      // One file per core (at least two, as the waits on subprocesses and MySQL leave room): measured on two
      // cores, three files at once took 165-196 s against 155-174 s for two, back to back.
      maxWorkers: Math.max(2, os.availableParallelism()),
      // Files share worker processes instead of each loading every module again; fresh-env.ts gives each
      // file the environment the run started with, so no file depends on what an earlier one set.
      isolate: false,
      setupFiles: ['shared/testing/fresh-env.ts'],
      testTimeout: 60_000,
      hookTimeout: 60_000,
      // Every provider setting is blanked, so a developer's .env never changes what a test sees;
      // tests that need a provider point it at the fake server explicitly.
      env: {
        LLM_PROVIDER: '',
        GEMINI_API_KEY: '',
        GEMINI_MODEL: '',
        GEMINI_EMBEDDING_MODEL: '',
        GEMINI_BASE_URL: '',
        OPENAI_API_KEY: '',
        OPENAI_MODEL: '',
        OPENAI_EMBEDDING_MODEL: '',
        OPENAI_BASE_URL: '',
        OPENAI_REASONING_EFFORT: '',
        GOOGLE_API_KEY: '',
        // Variables the SDKs read themselves when the code does not say: blanked too.
        GOOGLE_GEMINI_BASE_URL: '',
        GOOGLE_GENAI_USE_VERTEXAI: '',
        GOOGLE_GENAI_USE_ENTERPRISE: '',
        // @google/genai 3 takes its API version from here when the code names none (we name none).
        GOOGLE_GENAI_API_VERSION: '',
        DB_NAME: 'nimbus_tests_must_use_a_scratch_database',
        // The demo customer signs in, whatever a developer's .env says; tests of other customers say so.
        CUSTOMER_EMAIL: 'maya.patel@example.com',
        MEMORY_MAX_CHARS: '',
        MEMORY_RECENT_TURNS: '',
        MEMORY_NOTES_MAX_CHARS: '',
        MAX_QUESTIONS_PER_RUN: '',
        MAX_TOKENS_PER_RUN: '',
        LLM_TIMEOUT_SECONDS: '',
        DB_TIMEOUT_SECONDS: '',
        DB_POOL_SIZE: '',
        MAX_TOOL_CALLS_PER_REPLY: '',
        EVAL_PRICE_INPUT: '',
        EVAL_PRICE_OUTPUT: '',
        LOG_DIR: testLogs,
        NO_COLOR: '1',
      },
    },
  };
});
