// Test helper: a TCP proxy in front of the database that a test can freeze, cut, or make lose the answer to a COMMIT.
import net from 'node:net';
import type { AddressInfo } from 'node:net';

export interface PausableProxy {
  port: number;
  /** From now on nothing passes in either direction, and new connections are accepted but never served. */
  freeze(): void;
  /**
   * Freezes the moment a statement matching the last of `statements` is sent, after one matching each
   * of the others in order (e.g. /^INSERT INTO messages/, /^COMMIT/: the COMMIT of a save), before
   * it reaches the server: the freeze lands exactly there, not after a guessed delay. Resolves then.
   */
  freezeOn(...statements: RegExp[]): Promise<void>;
  /** Everything held back passes again. */
  thaw(): void;
  /**
   * The next COMMIT reaches the server, which commits; its answer is dropped and the connection cut,
   * as when a network fails or a timeout strikes just after COMMIT was sent.
   */
  loseNextCommitAnswer(): void;
  /** Cuts every open connection now (a restart, a KILL, a network blip); new ones are served. */
  cutAll(): void;
  close(): Promise<void>;
}

/**
 * Listens on 127.0.0.1 and relays every connection to `host:port`. Frozen, it holds every byte back
 * without closing anything: the client sees a server that simply stops answering, which is what
 * SIGSTOP on the server, or a network that silently drops packets, looks like. Works in front of any
 * MySQL or MariaDB server, so the tests need no server of their own.
 */
export async function startPausableProxy(host: string, port: number): Promise<PausableProxy> {
  let frozen = false;
  let loseCommitAnswer = false;
  let freezeAt: { statements: RegExp[]; frozen: () => void } | undefined;
  const pairs = new Set<[net.Socket, net.Socket]>();
  const held: Array<[net.Socket, Buffer]> = []; // what arrived while frozen, and where it goes
  const server = net.createServer((client) => {
    const upstream = net.connect(port, host);
    const pair: [net.Socket, net.Socket] = [client, upstream];
    pairs.add(pair);
    let cutAfterAnswer = false;
    client.on('data', (chunk) => {
      if (freezeAt?.statements[0].test(statementOf(chunk))) freezeAt.statements.shift();
      if (freezeAt?.statements.length === 0) {
        frozen = true; // this listener runs before the relay's: the statement itself is held
        freezeAt.frozen();
        freezeAt = undefined;
      }
      if (loseCommitAnswer && isCommit(chunk)) {
        loseCommitAnswer = false;
        cutAfterAnswer = true;
      }
    });
    upstream.on('data', () => {
      if (!cutAfterAnswer) return;
      client.destroy(); // the server committed and answered; the answer never arrives
      upstream.destroy();
    });
    for (const [from, to] of [pair, [upstream, client] as const]) {
      from.on('data', (chunk) => {
        if (from === upstream && cutAfterAnswer) return;
        if (frozen) held.push([to, chunk]);
        else to.write(chunk);
      });
      from.on('error', () => to.destroy());
      from.on('close', () => {
        to.destroy();
        pairs.delete(pair);
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    freeze: () => {
      frozen = true;
    },
    freezeOn: (...statements) =>
      new Promise((resolve) => {
        freezeAt = { statements, frozen: resolve };
      }),
    thaw: () => {
      frozen = false;
      for (const [to, chunk] of held.splice(0)) if (!to.destroyed) to.write(chunk);
    },
    loseNextCommitAnswer: () => {
      loseCommitAnswer = true;
    },
    cutAll: () => {
      for (const [client, upstream] of pairs) {
        client.destroy();
        upstream.destroy();
      }
    },
    close: () =>
      new Promise((resolve) => {
        for (const [client, upstream] of pairs) {
          client.destroy();
          upstream.destroy();
        }
        server.close(() => resolve());
      }),
  };
}

/** A MySQL packet carrying the statement COMMIT. */
function isCommit(chunk: Buffer): boolean {
  return /^commit\b/i.test(statementOf(chunk));
}

/** The SQL a packet carries (3 bytes of length, a sequence number, COM_QUERY (3), the text), or ''. */
function statementOf(chunk: Buffer): string {
  return chunk.length >= 5 && chunk[4] === 0x03 ? chunk.subarray(5).toString('latin1').trim() : '';
}
