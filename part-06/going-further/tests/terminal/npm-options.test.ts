// `npm run chat --resume=<id>`, without `--`: refused in one sentence with the command that works.
import { describe, expect, it } from 'vitest';
import { scriptIo, type ScriptIo } from '../../../../shared/cli.ts';
import { refuseOptionsNpmKept } from '../../terminal/npm-options.ts';

const silent = { write: () => true } as unknown as ScriptIo['stdout'];
const io = (env: Record<string, string>) =>
  scriptIo({
    args: [],
    env,
    cwd: process.cwd(),
    entry: '',
    stdin: process.stdin,
    stdout: silent,
    stderr: silent,
  });

describe('refuseOptionsNpmKept', () => {
  it('refuses an option npm kept for itself (written before --), with the command that works', () => {
    const env = { npm_lifecycle_event: 'chat', npm_config_customer: 'sofia@example.com' };
    expect(() => refuseOptionsNpmKept(io(env), {}, ['resume', 'customer'])).toThrow(
      'npm kept --customer for itself: put -- before it, as in npm run chat -- --customer=sofia@example.com',
    );
  });

  it('lets it be when the script was given the option, or not started by npm', () => {
    const kept = { npm_config_only: 'greeting' };
    expect(() =>
      refuseOptionsNpmKept(io({ ...kept, npm_lifecycle_event: 'eval' }), { only: 'x' }, ['only']),
    ).not.toThrow();
    expect(() => refuseOptionsNpmKept(io(kept), {}, ['only'])).not.toThrow();
  });
});
