// Small text helpers for what customers and models write: shortening, storing and showing it safely.

/** Cuts `text` to at most `max` characters with an ellipsis, never between the two halves of an emoji. */
export function shorten(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max - 1;
  // A UTF-16 surrogate pair is one character to the reader; cutting it would leave half an emoji.
  if (isHighSurrogate(text.charCodeAt(end - 1))) end--;
  return `${text.slice(0, end)}…`;
}

/** Line breaks (and the spaces around them) become one space, for one-line listings. */
export function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, ' ');
}

/**
 * Replaces lone UTF-16 surrogates (half an emoji, e.g. from a string cut in the wrong place) with
 * U+FFFD. JavaScript allows them; JSON parsers, MariaDB's JSON check and most APIs do not.
 */
export function wellFormed(text: string): string {
  return text.replace(
    /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g,
    '\uFFFD',
  );
}

// What a terminal would obey or hide instead of showing, kind by kind.
// Control characters (C0, DEL and C1) move the cursor, change colours, clear the screen. Tab and
// newline are left to the caller.
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/u;
// Bidirectional marks, embeddings, overrides and isolates: they reorder what the reader sees.
const REORDERING = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;
// Invisible characters: zero-width space and non-joiner, soft hyphen, word joiner and invisible
// operators, byte order mark, line and paragraph separators, and tag characters (invisible letters a
// model still reads). "pay\u200bpal.com" looks like "paypal.com" and is not.
const INVISIBLE =
  /[\u00ad\u180e\u200b\u200c\u2028\u2029\u2060-\u2064\u206a-\u206f\ufeff\ufff9-\ufffb\u{e0000}-\u{e007f}]/u;
// A zero-width joiner is invisible too, except between two emoji: that is how 👩‍💻 (👩, joiner, 💻) is written.
const STRAY_JOINER =
  /(?<!\p{Extended_Pictographic}[\ufe0f\u{1f3fb}-\u{1f3ff}]?)\u200d|\u200d(?!\p{Extended_Pictographic})/u;

const UNSAFE = new RegExp(
  [CONTROLS, REORDERING, INVISIBLE, STRAY_JOINER].map((kind) => kind.source).join('|'),
  'gu',
);
const UNSAFE_IN_ONE_LINE = new RegExp(`[\\t\\n]|${UNSAFE.source}`, 'gu');

/**
 * Makes text safe to print on a terminal: control characters, escape sequences, bidirectional
 * overrides and invisible characters become visible (`\x1b`, `\u202e`, `\u200b`) instead of moving
 * the cursor, changing colours, reordering or hiding what the reader sees. Newlines and tabs are kept
 * unless `singleLine` is set.
 */
export function printable(text: string, options: { singleLine?: boolean } = {}): string {
  return text.replace(options.singleLine ? UNSAFE_IN_ONE_LINE : UNSAFE, (char) => {
    if (char === '\n') return '\\n';
    if (char === '\r') return '\\r';
    if (char === '\t') return '\\t';
    const code = char.codePointAt(0)!;
    if (code <= 0xff) return `\\x${hex(code, 2)}`;
    return code <= 0xffff ? `\\u${hex(code, 4)}` : `\\u{${hex(code, 5)}}`;
  });
}

/**
 * JSON for a terminal or a pipe, e.g. `--json` output. JSON.stringify escapes the control characters
 * below U+0020 but leaves DEL, C1, bidirectional and invisible characters raw; here they become
 * `\uXXXX` escapes too, which any JSON parser reads back as the same text.
 */
export function printableJson(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(UNSAFE, (char) =>
    // JSON escapes UTF-16 units: a character above U+FFFF (a tag character) is two of them.
    char
      .split('')
      .map((unit) => `\\u${hex(unit.charCodeAt(0), 4)}`)
      .join(''),
  );
}

function hex(code: number, digits: number): string {
  return code.toString(16).padStart(digits, '0');
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** A number as people read it: 12,000. */
export function thousands(value: number): string {
  return value.toLocaleString('en-US');
}

/** "1 turn", "3 turns", "12,000 messages": a count and its noun. */
export function plural(value: number, noun: string): string {
  return `${thousands(value)} ${noun}${value === 1 ? '' : 's'}`;
}

/** Text from a customer, a model or a stored row, on one line, with nothing a terminal would obey or hide. */
export function safeLine(text: string): string {
  return printable(oneLine(text), { singleLine: true });
}

/** A moment to the minute, in UTC: 2026-12-04 20:18. */
export function minute(date: Date): string {
  return date.toISOString().slice(0, 16).replace('T', ' ');
}
