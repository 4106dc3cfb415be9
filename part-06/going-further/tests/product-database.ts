// Test helper: a scratch database used through the full Nimbus's own database (its fence, DB_HOSTS), as its scripts use it.
import { dbSettings } from '../../../shared/config.ts';
import { useDatabase } from '../../../shared/db.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../../shared/testing/database.ts';
import { ClusterDatabase } from '../store/cluster-database.ts';

/**
 * A scratch database of its own (createScratchDatabase), which this process then uses through the
 * full Nimbus's database: every write of a question checks its lease there, as in the chat.
 */
export async function createProductDatabase(): Promise<ScratchDatabase> {
  const scratch = await createScratchDatabase();
  const settings = dbSettings(process.env);
  await useDatabase(new ClusterDatabase({ ...settings, servers: [settings] }));
  return scratch;
}
