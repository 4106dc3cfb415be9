// Test setup, run before every test file: the environment variables as the run started, whatever earlier files set.
//
// Test files share worker processes (isolate: false in vitest.config.ts, which saves a module load per
// file); a file that points DB_NAME or the provider at its own server must not leak that into the next.
const started = ((globalThis as { nimbusStartEnv?: NodeJS.ProcessEnv }).nimbusStartEnv ??= {
  ...process.env,
});
for (const name of Object.keys(process.env)) if (!(name in started)) delete process.env[name];
Object.assign(process.env, started);
