// The SQL files run with the mysql command-line client exactly as the READMEs show, not only through setup.ts.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { dbSettings, ROOT_DIR } from '../config.ts';
import { query } from '../db.ts';
import { createScratchDatabase } from '../testing/database.ts';

const PARTS = ['part-02', 'part-03', 'part-04', 'part-05', 'part-06'];
/** MySQL ships `mysql`; recent MariaDB ships `mariadb` (and often `mysql` too). */
const CLIENT = ['mysql', 'mariadb'].find((name) => spawnSync(name, ['--version']).status === 0);

describe.each(PARTS)('%s SQL files through the mysql client', (part) => {
  it('create the same store that setup.ts creates', async () => {
    expect(
      CLIENT,
      'These tests need the mysql (or mariadb) command-line client on PATH.',
    ).toBeDefined();
    const db = await createScratchDatabase();
    try {
      const { host, port, user, password } = dbSettings(process.env);
      for (const file of ['schema.sql', 'functions.sql', 'seed.sql']) {
        const sql = path.join(ROOT_DIR, part, file);
        if (!existsSync(sql)) continue;
        // The same as `mysql -u root -p nimbus < schema.sql`, with the password from .env instead of a prompt.
        const run = spawnSync(CLIENT!, ['-h', host, '-P', String(port), '-u', user, db.name], {
          input: readFileSync(sql),
          env: { ...process.env, MYSQL_PWD: password },
        });
        expect(run.status, `${file}: ${run.stderr}`).toBe(0);
      }
      const [counts] = await query<Array<Record<string, number>>>(
        'SELECT (SELECT COUNT(*) FROM customers) AS customers, (SELECT COUNT(*) FROM orders) AS orders, (SELECT COUNT(*) FROM order_items) AS items',
      );
      expect(counts).toEqual({ customers: 8, orders: 20, items: 25 });
      if (existsSync(path.join(ROOT_DIR, part, 'functions.sql'))) {
        const [row] = await query<Array<{ reason: string }>>(
          'SELECT refund_reason(status, paid_at) AS reason FROM orders WHERE id = 1042',
        );
        expect(row.reason).toBe('Paid and within the refund window (11 days left).');
      }
    } finally {
      await db.drop();
    }
  });
});
