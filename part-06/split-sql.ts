// Splits a .sql file into single statements, so setup can run files written for the mysql client.
//
// The driver runs one statement per call (allowing several at once would make SQL injection worse),
// so we cut at each `;` that is not inside a string, a quoted name or a comment.
//
// Stored functions contain `;` inside their body, so .sql files switch the terminator with a
// `DELIMITER $$` line, as the mysql client expects. That line is a client command, not SQL: the
// server would reject it, so we follow it here and never send it.

export function splitSqlStatements(sql: string): string[] {
  const statements: string[] = [];
  let delimiter = ';';
  let current = '';
  let i = 0;
  while (i < sql.length) {
    const char = sql[i];
    const next = sql[i + 1];
    const newDelimiter = current.trim() === '' ? delimiterDirective(sql, i) : undefined;
    if (newDelimiter) {
      delimiter = newDelimiter;
      i = skipLine(sql, i);
    } else if (char === '-' && next === '-' && /\s/.test(sql[i + 2] ?? ' ')) {
      i = skipLine(sql, i); // -- comment
    } else if (char === '#') {
      i = skipLine(sql, i); // # comment
    } else if (char === '/' && next === '*') {
      const end = sql.indexOf('*/', i + 2);
      i = end === -1 ? sql.length : end + 2; // /* comment */
    } else if (char === "'" || char === '"' || char === '`') {
      const end = endOfQuoted(sql, i);
      current += sql.slice(i, end);
      i = end;
    } else if (sql.startsWith(delimiter, i)) {
      pushStatement(statements, current);
      current = '';
      i += delimiter.length;
    } else {
      current += char;
      i++;
    }
  }
  pushStatement(statements, current);
  return statements;
}

function pushStatement(statements: string[], text: string) {
  const statement = text.trim();
  if (statement) statements.push(statement);
}

/** `DELIMITER $$` at the start of a line → '$$'; anything else → undefined. */
function delimiterDirective(sql: string, i: number): string | undefined {
  if (i > 0 && sql[i - 1] !== '\n') return undefined;
  return /^[ \t]*DELIMITER[ \t]+(\S+)/i.exec(sql.slice(i, skipLine(sql, i)))?.[1];
}

function skipLine(sql: string, i: number): number {
  const end = sql.indexOf('\n', i);
  return end === -1 ? sql.length : end;
}

/** Index just past the closing quote. Handles doubled quotes ('it''s') and backslash escapes. */
function endOfQuoted(sql: string, start: number): number {
  const quote = sql[start];
  let i = start + 1;
  while (i < sql.length) {
    if (sql[i] === '\\' && quote !== '`') {
      i += 2;
    } else if (sql[i] === quote) {
      if (sql[i + 1] === quote) i += 2;
      else return i + 1;
    } else {
      i++;
    }
  }
  return sql.length;
}
