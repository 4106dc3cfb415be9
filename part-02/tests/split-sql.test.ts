// The SQL splitter cuts only at real statement ends.
import { describe, expect, it } from 'vitest';
import { splitSqlStatements } from '../split-sql.ts';

describe('splitSqlStatements', () => {
  it('splits at semicolons and drops comments and empty statements', () => {
    const sql = `-- a comment; with a semicolon
      CREATE TABLE a (id INT); # another; comment
      /* block; comment */ INSERT INTO a VALUES (1);;
      SELECT 1`;
    expect(splitSqlStatements(sql)).toEqual([
      'CREATE TABLE a (id INT)',
      'INSERT INTO a VALUES (1)',
      'SELECT 1',
    ]);
  });

  it('keeps semicolons and comment markers that are inside strings and quoted names', () => {
    const sql = `INSERT INTO t VALUES ('a;b', 'it''s -- not a comment', "x;y", 'back\\'slash;');
      SELECT \`odd;name\` FROM t`;
    expect(splitSqlStatements(sql)).toEqual([
      `INSERT INTO t VALUES ('a;b', 'it''s -- not a comment', "x;y", 'back\\'slash;')`,
      'SELECT `odd;name` FROM t',
    ]);
  });

  it('treats "--" without a following space as an operator, as MySQL does', () => {
    expect(splitSqlStatements('SELECT 5--1;')).toEqual(['SELECT 5--1']);
  });
});
