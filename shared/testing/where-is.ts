// Test helper: every place a text could hide after it was deleted: every row of every table of a database, every file under a folder.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { query } from '../db.ts';

/** Where `text` still is, sorted: "table <name>" for each table holding it, "file <path>" for each file. */
export async function whereIs(database: string, logs: string, text: string): Promise<string[]> {
  const found: string[] = [];
  const tables = await query<Array<{ name: string }>>(
    'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = ?',
    [database],
  );
  for (const { name } of tables) {
    const rows = await query<unknown[]>(`SELECT * FROM \`${name}\``);
    // Vectors (BLOBs) are left out: the text is never in them, and they are large.
    if (JSON.stringify(rows, (_, v) => (v?.type === 'Buffer' ? undefined : v)).includes(text))
      found.push(`table ${name}`);
  }
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)],
    );
  for (const file of walk(logs))
    if (readFileSync(file, 'utf8').includes(text)) found.push(`file ${path.relative(logs, file)}`);
  return found.sort();
}
