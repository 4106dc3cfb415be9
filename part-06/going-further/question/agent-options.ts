// What chat.ts and ask.ts give the agent, in one place: the hardened store with the customer's notes, the tools that keep them, and the fence every write of a question goes through.
import { dim } from '../../../shared/cli.ts';
import type { AgentOptions } from '../../agent.ts';
import type { MemoryBudget } from '../../context.ts';
import { leaseFence } from './lease.ts';
import { hardenedStore } from '../store/hardened-store.ts';
import { customerMemoryTools } from '../notes/notes-tools.ts';
import { describeRecall } from '../notes/notes-view.ts';
import { withCustomerNotes, type Recall } from '../notes/recall-notes.ts';
import { describeDamage } from '../store/read-history.ts';

/**
 * The store and the extra tools for the agent. Damaged rows left out are always said (on stderr);
 * the notes recalled for a question only when the trace lines are shown too.
 */
export function storeAndTools(
  budget: MemoryBudget,
  notesMaxChars: number,
  { logDir, quiet, stderr = process.stderr }: Pick<AgentOptions, 'logDir' | 'quiet' | 'stderr'>,
): Pick<AgentOptions, 'store' | 'tools' | 'write' | 'appendLines'> {
  const say = (line: string) => stderr.write(`${dim(line, stderr)}\n`);
  const store = hardenedStore(budget, {
    onDamaged: (id, damaged) => say(describeDamage(id, damaged)),
  });
  const onRecall = (recall: Recall) => {
    if (recall.notes.length && !quiet) say(describeRecall(recall));
  };
  const withNotes = withCustomerNotes(store, notesMaxChars, onRecall, leaseFence.write);
  // The tools write through the lease's fence, as the store does: nothing lands after an erasure took over.
  return { store: withNotes, tools: customerMemoryTools(logDir), ...leaseFence };
}
