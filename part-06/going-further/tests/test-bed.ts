// Test helper: what most of the full Nimbus's tests start from, made before a file's tests and removed after.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ScratchDatabase } from '../../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../../shared/testing/fake-provider.ts';
import { ensureFullDatabase } from '../store/ensure-tables.ts';
import { createProductDatabase } from './product-database.ts';

export interface TestBed {
  fake: FakeProvider;
  /** A product database with going further's tables: every write of a question checks its lease. */
  db: ScratchDatabase;
  /** A folder of its own for the traces (whereIs looks there). */
  logs: string;
}

/** The fake provider, the product database, a traces folder named `nimbus-<name>-…`. */
export async function openTestBed(name: string): Promise<TestBed> {
  const fake = await startFakeProvider();
  const db = await createProductDatabase();
  await ensureFullDatabase(() => {});
  return { fake, db, logs: mkdtempSync(path.join(os.tmpdir(), `nimbus-${name}-`)) };
}

export async function closeTestBed({ fake, db, logs }: TestBed): Promise<void> {
  rmSync(logs, { recursive: true, force: true });
  await fake.close();
  await db.drop();
}
