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

describe('splitSqlStatements with DELIMITER', () => {
  it('follows DELIMITER lines, keeps function bodies whole, and never returns the directive', () => {
    const sql = `DROP FUNCTION IF EXISTS f;
DELIMITER $$
CREATE FUNCTION f() RETURNS INT NO SQL
BEGIN
  DECLARE x INT DEFAULT 1; -- a comment; inside
  RETURN x;
END$$
DELIMITER ;
SELECT f();`;
    expect(splitSqlStatements(sql)).toEqual([
      'DROP FUNCTION IF EXISTS f',
      'CREATE FUNCTION f() RETURNS INT NO SQL\nBEGIN\n  DECLARE x INT DEFAULT 1; \n  RETURN x;\nEND',
      'SELECT f()',
    ]);
  });

  it('ignores the word DELIMITER inside a string', () => {
    expect(splitSqlStatements("SELECT 'x\nDELIMITER $$';")).toEqual(["SELECT 'x\nDELIMITER $$'"]);
  });
});
