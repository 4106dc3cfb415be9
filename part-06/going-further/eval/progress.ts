// The eval's progress on stderr: which scenario and trial, how many are done, for how long. Redrawn each second on a terminal, one line per trial otherwise.
import type { Writable } from 'node:stream';

const WIDTH = 24;

export function evalProgress(total: number, stream: Writable & { isTTY?: boolean }) {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  let draw = () => {};
  return {
    /** Before trial `done + 1` of `total` starts. */
    update(done: number, scenario: string, trial: number, trials: number): void {
      const text = () =>
        `${done}/${total} trials · ${scenario} trial ${trial}/${trials} · ${elapsed(Date.now() - started)}`;
      if (!stream.isTTY) return void stream.write(`${text()}\n`); // a log file wants whole lines
      const filled = Math.round((done / total) * WIDTH);
      draw = () =>
        stream.write(`\r[${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}] ${text()}\x1b[K`);
      draw();
      // A trial takes a while with a real model: the elapsed time keeps moving meanwhile.
      timer ??= setInterval(() => draw(), 1000).unref();
    },
    /** The run is over (or stopped): the bar's line is wiped so the table starts on its own. */
    finish(): void {
      clearInterval(timer);
      if (stream.isTTY) stream.write(`\r\x1b[K`);
    },
  };
}

/** 75 s → "1m 15s". */
export function elapsed(ms: number): string {
  const seconds = Math.round(ms / 1000);
  return seconds < 60 ? `${seconds}s` : `${Math.floor(seconds / 60)}m ${seconds % 60}s`;
}
