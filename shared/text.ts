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

/**
 * Makes text safe to print on a terminal: control characters, escape sequences and bidirectional
 * overrides become visible (`\x1b`, `\u202e`) instead of moving the cursor, changing colours or
 * reordering what the reader sees. Newlines and tabs are kept unless `singleLine` is set.
 */
export function printable(text: string, options: { singleLine?: boolean } = {}): string {
  const unsafe = options.singleLine
    ? /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g
    : /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
  return text.replace(unsafe, (char) => {
    const code = char.charCodeAt(0);
    if (char === '\n') return '\\n';
    if (char === '\r') return '\\r';
    if (char === '\t') return '\\t';
    return code <= 0xff
      ? `\\x${code.toString(16).padStart(2, '0')}`
      : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
