// Shows how a long job is going: a redrawn bar on a terminal, one plain line per update otherwise.

export interface Progress {
  done: number;
  total: number;
}

const WIDTH = 24;

/** Returns a function to call with each update. Rate and ETA are measured from the first call. */
export function progressBar(
  label: string,
  stream: { write(text: string): unknown; isTTY?: boolean } = process.stderr,
): (progress: Progress) => void {
  const started = Date.now();
  return ({ done, total }) => {
    const seconds = (Date.now() - started) / 1000;
    const rate = seconds > 0 ? done / seconds : 0;
    const eta = rate > 0 ? `${Math.ceil((total - done) / rate)} s` : '?';
    const percent = total === 0 ? 100 : Math.floor((done / total) * 100);
    const text = `${label} ${done}/${total} (${percent}%), ${rate.toFixed(1)}/s, ETA ${eta}`;
    if (!stream.isTTY) {
      stream.write(`${text}\n`); // a log file wants whole lines, not carriage returns
      return;
    }
    const filled = total === 0 ? WIDTH : Math.round((done / total) * WIDTH);
    stream.write(`\r[${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}] ${text}\x1b[K`);
    if (done >= total) stream.write('\n');
  };
}
