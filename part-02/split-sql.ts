// Splits a .sql file into single statements, so setup can run files written for the mysql client.
//
// The driver runs one statement per call (allowing several at once would make SQL injection worse),
// so we cut at each `;` that is not inside a string, a quoted name or a comment.

export function splitSqlStatements(sql: string): string[] {
  const statements: string[] = [];
  let current = '';
  let i = 0;
  while (i < sql.length) {
    const char = sql[i];
    const next = sql[i + 1];
    if (char === '-' && next === '-' && /\s/.test(sql[i + 2] ?? ' ')) {
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
    } else if (char === ';') {
      pushStatement(statements, current);
      current = '';
      i++;
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
