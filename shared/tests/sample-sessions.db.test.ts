// Every sample session a README shows is what shared/scripts/sample-session.ts prints today.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { scriptIo } from '../cli.ts';
import { ROOT_DIR } from '../config.ts';
import { main } from '../scripts/sample-session.ts';

const READMES = [
  ...readdirSync(ROOT_DIR).filter((name) => /^part-\d\d$/.test(name)),
  'part-06/going-further',
].filter((dir) => existsSync(path.join(ROOT_DIR, dir, 'README.md')));

/**
 * The sessions a README shows: a mention of `npx tsx shared/scripts/sample-session.ts <args>`, then the
 * first ```text block after it, which is what that command printed (or its end, from one of the commands
 * it ran on).
 */
function sessions(markdown: string): Array<{ args: string[]; shown: string }> {
  const found = [...markdown.matchAll(/`npx tsx shared\/scripts\/sample-session\.ts ([^`]+)`/g)];
  return found.map((mention) => {
    const after = markdown.slice(mention.index + mention[0].length);
    const block = after.match(/```text\n([\s\S]*?)```/);
    return { args: mention[1].trim().split(/\s+/), shown: block?.[1] ?? '' };
  });
}

/**
 * What changes from run to run: conversation ids, timings and dates (the sample store's are relative to
 * the day it is loaded). Trailing spaces go too ("You: " at the end of the input).
 */
function comparable(transcript: string): string {
  return transcript
    .replace(/[0-9a-f]{32}|<id>/g, '<id>')
    .replace(/\b\d+ ms\b/g, 'N ms')
    .replace(/\b\d{4}-\d\d-\d\d\b/g, 'YYYY-MM-DD')
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n')
    .trim();
}

async function sampleSession(args: string[]): Promise<string> {
  let printed = '';
  const out = new Writable({
    write(chunk, _encoding, done) {
      printed += chunk.toString();
      done();
    },
  });
  const stdin = new PassThrough();
  stdin.end();
  const io = scriptIo({
    args,
    env: process.env,
    cwd: ROOT_DIR,
    entry: path.join(ROOT_DIR, 'shared/scripts/sample-session.ts'),
    stdin,
    stdout: out,
    stderr: out,
  });
  await main(io);
  return printed;
}

describe.each(READMES)('the sample sessions of %s/README.md', (dir) => {
  const shown = sessions(readFileSync(path.join(ROOT_DIR, dir, 'README.md'), 'utf8'));
  it.each(shown.map((s) => [s.args.join(' '), s] as const))(
    'sample-session.ts %s prints what the README shows',
    async (_, { args, shown }) => {
      expect(shown, 'a ```text block after the command').not.toBe('');
      // The whole session, or its end from one of its commands on (the README shows the last one).
      const printed = comparable(await sampleSession(args));
      const tails = printed.split(/^(?=\$ )/m).map((_, i, all) => all.slice(i).join(''));
      const expected = comparable(shown);
      expect(tails.includes(expected) ? expected : printed).toBe(expected);
    },
  );
});
