// Going further: the eval's progress on stderr: which scenario and trial, how many are done, for how long. Redrawn on a terminal, one line each otherwise.

const WIDTH = 24;

export function evalProgress(total: number, stream: NodeJS.WriteStream = process.stderr) {
  const started = Date.now();
  return {
    /** Before trial `done + 1` of `total` starts. */
    update(done: number, scenario: string, trial: number, trials: number): void {
      const text = `${done}/${total} trials · ${scenario} trial ${trial}/${trials} · ${elapsed(Date.now() - started)}`;
      if (!stream.isTTY) return void stream.write(`${text}\n`);
      const filled = Math.round((done / total) * WIDTH);
      stream.write(`\r[${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}] ${text}\x1b[K`);
    },
    /** The run is over (or stopped): the bar's line is ended so the table starts on its own. */
    finish(): void {
      if (stream.isTTY) stream.write(`\r\x1b[K`);
    },
  };
}

/** 75 s → "1m 15s". */
export function elapsed(ms: number): string {
  const seconds = Math.round(ms / 1000);
  return seconds < 60 ? `${seconds}s` : `${Math.floor(seconds / 60)}m ${seconds % 60}s`;
}
