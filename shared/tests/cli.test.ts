// What a user typed comes back in an error message escaped: a flag cannot clear the screen or hide text.
import { describe, expect, it } from 'vitest';
import { parseFlags, runWith, scriptIo, UsageError, type ScriptIo } from '../cli.ts';

const refusal = (args: string[]) => {
  try {
    parseFlags({ args, options: { days: { type: 'string' } } });
  } catch (error) {
    if (error instanceof UsageError) return error.message;
    throw error;
  }
  throw new Error('expected a UsageError');
};

describe('parseFlags', () => {
  it.each([
    [['--\x1b[31mx'], 'Unknown option --\\x1b[31mx.'],
    [['--da\u200bys=1'], 'Unknown option --da\\u200bys.'],
    [['ex\u202eet'], 'Unexpected argument ex\\u202eet: this command takes none.'],
  ])('quotes %j back escaped', (args, message) => {
    expect(refusal(args)).toBe(message);
  });

  it('names an option that has a short form by its long one', () => {
    expect(refusal(['--help=yes'])).toBe('--help takes no value.');
  });
});

/** A ScriptIo whose streams keep their lines, for runWith. */
function capturedIo(args: string[] = []) {
  const printed = { stdout: [] as string[], stderr: [] as string[] };
  const lines = (into: string[]) => ({
    write: (text: string) => void into.push(...text.split('\n').slice(0, -1)),
  });
  const io = scriptIo({
    args,
    env: {},
    cwd: process.cwd(),
    entry: '',
    stdin: process.stdin,
    stdout: lines(printed.stdout) as unknown as ScriptIo['stdout'],
    stderr: lines(printed.stderr) as unknown as ScriptIo['stderr'],
  });
  return { io, printed };
}

describe('runWith, what runMain does for a script', () => {
  it('prints any error message escaped: one quoting what a server said, or a bug', async () => {
    const { io, printed } = capturedIo();
    const code = await runWith(
      async () => {
        throw new Error('the server said \x1b[2J\u202ehello');
      },
      'Usage: test',
      io,
    );
    expect(printed.stderr[0]).toBe('Unexpected error: the server said \\x1b[2J\\u202ehello');
    expect(code).toBe(1);
  });

  // Every script parses its flags with parseFlags inside runMain (hints.db.test.ts checks that they do).
  it.each([
    [['--help'], 0, ['Usage: test'], []],
    [['--no-such-option'], 2, [], ['Unknown option --no-such-option.', 'Usage: test']],
  ])(
    '%j: exit %i; the usage on stdout for --help, else after the one-line reason on stderr',
    async (args, expected, stdout, stderr) => {
      const { io, printed } = capturedIo(args);
      const code = await runWith(
        async (given) => {
          parseFlags({ args: given.args, options: {} });
          throw new Error('ran on after its flags were refused');
        },
        (given) => `Usage: ${given.args.length ? 'test' : 'none'}`,
        io,
      );
      expect(printed).toEqual({ stdout, stderr });
      expect(code).toBe(expected);
    },
  );
});
