// Text from customers and models reaches a terminal shown, never obeyed or hidden.
import { describe, expect, it } from 'vitest';
import { printable, printableJson } from '../text.ts';

describe('printable', () => {
  it('shows control characters and escape sequences, keeping newlines and tabs unless on one line', () => {
    expect(printable('a\x1b[2Jb\x07c\u009bd\re\tf\ng')).toBe('a\\x1b[2Jb\\x07c\\x9bd\\re\tf\ng');
    expect(printable('e\tf\ng', { singleLine: true })).toBe('e\\tf\\ng');
  });

  it.each([
    ['zero-width space', 'pay\u200bpal.com', 'pay\\u200bpal.com'],
    ['zero-width non-joiner and joiner', 'a\u200cb\u200dc', 'a\\u200cb\\u200dc'],
    ['word joiner and invisible operators', 'a\u2060b\u2061c\u2064d', 'a\\u2060b\\u2061c\\u2064d'],
    ['byte order mark', '\ufeffmaya', '\\ufeffmaya'],
    ['soft hyphen and Mongolian vowel separator', 'a\u00adb\u180ec', 'a\\xadb\\u180ec'],
    ['line and paragraph separators', 'a\u2028b\u2029c', 'a\\u2028b\\u2029c'],
    ['bidirectional override and isolate', '\u202egnp.exe\u2066', '\\u202egnp.exe\\u2066'],
    ['tag characters (invisible letters)', 'ok\u{e0041}\u{e0042}', 'ok\\u{e0041}\\u{e0042}'],
  ])('shows the %s', (_, text, shown) => {
    expect(printable(text)).toBe(shown);
    expect(printable(text, { singleLine: true })).toBe(shown);
  });

  it('keeps the joiner inside emoji, and every other character, as written', () => {
    const text = 'Zoë cafe\u0301 👩‍💻 👩🏽‍💻 🏳️‍🌈 ❤️‍🔥 — 日本語 עברית ½ “quotes” ';
    expect(printable(text, { singleLine: true })).toBe(text);
    expect(printable('👩\u200dx y\u200d💻')).toBe('👩\\u200dx y\\u200d💻');
  });
});

describe('printableJson', () => {
  it('escapes what JSON.stringify leaves raw, and parses back to the same value', () => {
    const value = { text: 'a\u007f\u009b\u202e\u200b\u2028\u{e0041}👩‍💻\x1b', n: [1, 2] };
    const json = printableJson(value, 2);
    expect(json).not.toMatch(/[\u007f-\u009f\u200b\u2028\u202e\u{e0041}\x1b]/u);
    expect(json).toContain('"a\\u007f\\u009b\\u202e\\u200b\\u2028\\udb40\\udc41👩‍💻\\u001b"');
    expect(JSON.parse(json)).toEqual(value);
    expect(printableJson({ plain: 'text' }, 2)).toBe(JSON.stringify({ plain: 'text' }, null, 2));
  });
});
