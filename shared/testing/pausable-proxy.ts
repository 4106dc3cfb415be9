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
   * The next COMMIT (with `statement`: of a transaction that sent it) reaches the server, which
   * commits; its answer is dropped and the connection cut, as when a network fails or a timeout
   * strikes just after COMMIT was sent.
   */
  loseNextCommitAnswer(statement?: RegExp): void;
  /**
   * The next COMMIT of a transaction that sent `statement` (e.g. /INSERT INTO messages/) is held: the
   * app waits, gives up (DB_TIMEOUT_SECONDS), drops its connection and sends KILL, which is swallowed,
   * as by a network that lost it. The server keeps the transaction; its COMMIT is delivered, and
   * commits, just before the app begins its next transaction, so it lands after the app looked
   * whether it had. Resolves once it has committed.
   */
  commitLate(statement: RegExp): Promise<void>;
  /** Cuts every open connection now (a restart, a KILL, a network blip); new ones are served. */
  cutAll(): void;
  close(): Promise<void>;
}

/**
 * Listens on 127.0.0.1 and relays every connection to `host:port`. Frozen, it holds every byte back
 * without closing anything, not even in answer to a client closing its side: the client sees a server
 * that simply stops answering, which is what SIGSTOP on the server, or a network that silently drops
 * packets, looks like. Works in front of any
 * MySQL or MariaDB server, so the tests need no server of their own.
 */
export async function startPausableProxy(host: string, port: number): Promise<PausableProxy> {
  let frozen = false;
  let loseCommitAnswer: RegExp | undefined; // see loseNextCommitAnswer
  let late: Late | undefined; // see commitLate
  let freezeAt: { statements: RegExp[]; frozen: () => void } | undefined; // see freezeOn
  const pairs = new Set<[net.Socket, net.Socket]>();
  // What arrived while frozen, and where it goes: bytes, or the end of one direction ('end').
  const held: Array<[net.Socket, Buffer | 'end']> = [];
  // Half-open, as a real server's socket is: a client that ends its side is not answered with the
  // end of the other until the server itself closes, which a frozen server never does.
  const server = net.createServer({ allowHalfOpen: true }, (client) => {
    const upstream = net.connect({ port, host, allowHalfOpen: true });
    const pair: [net.Socket, net.Socket] = [client, upstream];
    pairs.add(pair);
    let cutAfterAnswer = false;
    let sentStatement = false; // since this connection's last COMMIT: the statement commitLate waits for
    let sentLoseStatement = false; // the same for loseNextCommitAnswer
    client.on('data', (chunk) => {
      if (freezeAt?.statements[0].test(textOf(chunk))) freezeAt.statements.shift();
      if (freezeAt?.statements.length === 0) {
        frozen = true; // this listener runs before the relay's: the statement itself is held
        freezeAt.frozen();
        freezeAt = undefined;
      }
      if (loseCommitAnswer && isQuery(chunk) && loseCommitAnswer.test(textOf(chunk)))
        sentLoseStatement = true;
      if (loseCommitAnswer && sentLoseStatement && isCommit(chunk)) {
        loseCommitAnswer = undefined;
        cutAfterAnswer = true;
      }
      if (late?.stage === 'armed' && isQuery(chunk) && late.statement.test(textOf(chunk)))
        sentStatement = true;
    });
    upstream.on('data', () => {
      if (!cutAfterAnswer) return;
      client.destroy(); // the server committed and answered; the answer never arrives
      upstream.destroy();
    });
    // What commitLate does with the app's statements: true if it took this one.
    const lateTakes = (chunk: Buffer): boolean => {
      if (!late || !isQuery(chunk)) return false;
      if (late.stage === 'armed' && sentStatement && isCommit(chunk)) {
        Object.assign(late, { stage: 'held', commit: chunk, upstream, client });
        return true;
      }
      if (late.stage !== 'armed' && /^kill\b/i.test(textOf(chunk))) return true; // never heard
      if (late.stage === 'given up' && /^(start transaction|begin)\b/i.test(textOf(chunk))) {
        const taken = late;
        taken.stage = 'delivering';
        taken.upstream!.once('data', () => {
          taken.upstream!.destroy(); // committed; the app's end of it is long gone
          late = undefined;
          upstream.write(chunk);
          taken.done();
        });
        taken.upstream!.write(taken.commit!);
        return true;
      }
      return false;
    };
    // The app gives up on a held COMMIT by dropping its connection (then it sends KILL).
    const givenUp = () => {
      if (late?.stage === 'held' && late.client === client) late.stage = 'given up';
    };
    client.on('end', givenUp);
    client.on('close', givenUp);
    for (const [from, to] of [pair, [upstream, client] as const]) {
      from.on('data', (chunk) => {
        if (from === upstream && cutAfterAnswer) return;
        if (from === client && lateTakes(chunk)) return;
        if (frozen) held.push([to, chunk]);
        else to.write(chunk);
      });
      // The server's end of a held COMMIT outlives the app's, which gave up on it.
      const keep = () => from === client && late?.upstream === upstream;
      from.on('end', () => {
        if (keep()) return;
        if (frozen) held.push([to, 'end']);
        else to.end();
      });
      from.on('error', () => keep() || to.destroy());
      from.on('close', () => {
        if (!keep()) to.destroy();
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
      for (const [to, chunk] of held.splice(0)) {
        if (to.destroyed) continue;
        if (chunk === 'end') to.end();
        else to.write(chunk);
      }
    },
    loseNextCommitAnswer: (statement = /^commit\b/i) => {
      loseCommitAnswer = statement;
    },
    commitLate: (statement) =>
      new Promise<void>((done) => {
        late = { stage: 'armed', statement, done };
      }),
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

/** A COMMIT held by commitLate, from the statement it waits for to its late delivery. */
interface Late {
  stage: 'armed' | 'held' | 'given up' | 'delivering';
  statement: RegExp;
  commit?: Buffer;
  upstream?: net.Socket;
  client?: net.Socket;
  done: () => void;
}

/** A MySQL packet carrying a statement: 3 bytes of length, a sequence number, COM_QUERY (3), the text. */
function isQuery(chunk: Buffer): boolean {
  return chunk.length >= 5 && chunk[4] === 0x03;
}

/** The SQL a statement's packet carries, or ''. */
function textOf(chunk: Buffer): string {
  return isQuery(chunk) ? chunk.subarray(5).toString('latin1').trim() : '';
}

function isCommit(chunk: Buffer): boolean {
  return isQuery(chunk) && /^commit\b/i.test(textOf(chunk));
}
