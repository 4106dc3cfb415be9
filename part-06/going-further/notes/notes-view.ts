// What the scripts print about customer notes: a question's recall, and one customer's notes.
import { oneLine, printable, shorten } from '../../../shared/text.ts';
import type { CustomerNote } from './notes-queries.ts';
import type { Recall } from './recall-notes.ts';

/** The chat's line for each question: "[step 0] notes: 2 of 3 sent — 170 of 1,500 chars". */
export function describeRecall(recall: Recall): string {
  const sent = recall.notes.filter((n) => n.sent).length;
  return `[step 0] notes: ${sent} of ${recall.notes.length} sent — ${n(recall.chars)} of ${n(recall.maxChars)} chars`;
}

/** The notes that would go with the next question (the customer keeps some): why each ranks where it does, its size, the running total. */
export function recallView(recall: Recall, question: string | undefined): string[] {
  const ranking =
    question === undefined
      ? 'newest first (add --question="…" to rank them by its words)'
      : `by the words they share with "${safe(shorten(question, 60))}", then newest first`;
  const lines = [
    `\nCustomer notes for the next question (budget ${n(recall.maxChars)} chars), ranked ${ranking}:\n`,
  ];
  lines.push('  note  fate          chars    total  written     shares            text');
  let total = 0;
  for (const { note, shared, chars, sent } of recall.notes) {
    if (sent) total += chars;
    lines.push(
      `  ${String(note.id).padStart(4)}  ${(sent ? 'sent' : 'over budget').padEnd(12)} ${n(chars).padStart(6)}  ` +
        `${(sent ? n(total) : '—').padStart(7)}  ${note.written}  ${safe(shorten(shared.join(', ') || '—', 16)).padEnd(16)}  ` +
        safe(shorten(note.text, 60)),
    );
  }
  const used = recall.maxChars ? Math.min(1, recall.chars / recall.maxChars) : 1;
  const sent = recall.notes.filter((r) => r.sent).length;
  lines.push(
    `\nNotes: [${'#'.repeat(Math.round(used * 24)).padEnd(24, '.')}] ${n(recall.chars)} of ${n(recall.maxChars)} chars` +
      ` — ${sent} sent, ${recall.notes.length - sent} over budget`,
    "Sent as the customer's own words, in a message of theirs just before the question (--json shows it).",
  );
  return lines;
}

/** One customer's notes, oldest first: when each was written and last recalled, and where it was said. */
export function notesView(
  customer: { name: string; email: string },
  notes: CustomerNote[],
): string[] {
  const header = `Notes of ${safe(customer.name)} (${safe(customer.email)}): ${notes.length}`;
  if (notes.length === 0) return [header];
  return [
    header,
    '  note  written           last recalled     until       said in conversation              text',
    ...notes.map(
      (note) =>
        `  ${String(note.id).padStart(4)}  ${when(note.created_at)}  ${(note.recalled_at ? when(note.recalled_at) : 'never').padEnd(16)}  ` +
        `${(note.expires_on ?? '—').padEnd(10)}  ${(note.conversation_id ?? '(deleted)').padEnd(32)}  ${safe(note.text)}`,
    ),
  ];
}

/** A note or a question, on one line, with nothing a terminal would obey or hide. */
function safe(text: string): string {
  return printable(oneLine(text), { singleLine: true });
}

function n(value: number): string {
  return value.toLocaleString('en-US');
}

function when(date: Date): string {
  return date.toISOString().slice(0, 16).replace('T', ' ');
}
