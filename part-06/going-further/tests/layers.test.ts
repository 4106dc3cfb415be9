// The full Nimbus's folders are layers, each importing only the ones below it: a question's path never steps back up.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * From the bottom up. A file may import its own folder's files and those of any lower layer, the
 * chapter's (../) and shared/ — nothing above it, and no sibling of the top row but nimbus.ts.
 */
const LAYERS = [
  ['model'],
  ['store'],
  ['question'],
  ['notes'],
  ['privacy'],
  ['nimbus.ts'],
  ['terminal', 'eval', 'ops'],
  ['entry scripts'],
];

/** The layer of a file of going-further/, by its path there: "store/fence.ts" is in store. */
function layerOf(file: string): { name: string; rank: number } {
  const name = file.includes('/')
    ? file.split('/')[0]
    : file === 'nimbus.ts'
      ? file
      : 'entry scripts';
  const rank = LAYERS.findIndex((layer) => layer.includes(name));
  if (rank === -1) throw new Error(`${file} is in no layer: add its folder to LAYERS`);
  return { name, rank };
}

const files = readdirSync(ROOT, { recursive: true, encoding: 'utf8' })
  .map((file) => file.split(path.sep).join('/'))
  .filter((file) => file.endsWith('.ts') && !file.startsWith('tests/'));

describe("the full Nimbus's layers", () => {
  it.each(files)('%s imports nothing above its layer', (file) => {
    const own = layerOf(file);
    const source = readFileSync(path.join(ROOT, file), 'utf8');
    for (const [, specifier] of source.matchAll(/\bfrom '(\.[^']+)'/g)) {
      const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier));
      if (target.startsWith('..')) continue; // the chapter's code, or shared/
      const their = layerOf(target);
      const allowed = their.name === own.name || their.rank < own.rank;
      expect(
        allowed,
        `${file} imports ${target} (${their.name}, above or beside ${own.name})`,
      ).toBe(true);
    }
  });
});
