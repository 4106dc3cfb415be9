// Options written before `--` in `npm run chat --resume=<id>`: npm keeps them, and the script must say so.
import { UsageError, type ScriptIo } from '../../../shared/cli.ts';
import { printable } from '../../../shared/text.ts';

/**
 * `npm run chat --resume=<id>` (no `--`): npm keeps the options written before `--` for itself, as
 * npm_config_<name>, and the script never sees them. Refused in one sentence with the command that works,
 * instead of running without them (another customer signed in, every scenario of an eval run).
 */
export function refuseOptionsNpmKept(
  io: ScriptIo,
  given: Record<string, unknown>,
  names: string[],
) {
  const npmScript = io.env.npm_lifecycle_event;
  for (const name of names) {
    const kept = io.env[`npm_config_${name.replace(/-/g, '_')}`];
    if (npmScript === undefined || given[name] !== undefined || kept === undefined) continue;
    const shown = printable(kept, { singleLine: true });
    throw new UsageError(
      `npm kept --${name} for itself: put -- before it, as in npm run ${npmScript} -- --${name}=${shown}`,
    );
  }
}
