// Settings errors are one sentence naming the variable and the fix; the trace folder is private.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, dbSettings, ensureLogDir, llmSettings } from '../config.ts';

beforeEach(() => {
  for (const name of [
    'LLM_PROVIDER',
    'GEMINI_API_KEY',
    'OPENAI_API_KEY',
    'OPENAI_BASE_URL',
    'OPENAI_REASONING_EFFORT',
    'GEMINI_BASE_URL',
  ]) {
    process.env[name] = '';
  }
});

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('llmSettings', () => {
  it('defaults to Gemini and asks for its key, with where to get one', () => {
    const error = configError(() => llmSettings(process.env));
    expect(error.message).toBe(
      'GEMINI_API_KEY is not set. Get a free key at https://aistudio.google.com/apikey and put it in .env',
    );
  });

  it('uses the default models when only a key is set', () => {
    process.env.GEMINI_API_KEY = 'k';
    process.env.GEMINI_MODEL = '';
    expect(llmSettings(process.env)).toMatchObject({
      provider: 'gemini',
      model: 'gemini-flash-latest',
      embeddingModel: 'gemini-embedding-001',
    });
  });

  it('rejects an unknown provider by name', () => {
    process.env.LLM_PROVIDER = 'claude';
    expect(configError(() => llmSettings(process.env)).message).toBe(
      'LLM_PROVIDER must be "gemini" or "openai" (it is "claude"). Fix it in .env.',
    );
  });

  it('asks for an OpenAI key, unless a custom server is configured', () => {
    process.env.LLM_PROVIDER = 'openai';
    expect(configError(() => llmSettings(process.env)).message).toMatch(
      /^OPENAI_API_KEY is not set\. .*platform\.openai\.com/,
    );
    process.env.OPENAI_BASE_URL = 'http://localhost:11434/v1';
    expect(llmSettings(process.env)).toMatchObject({
      provider: 'openai',
      baseUrl: 'http://localhost:11434/v1',
      embeddingModel: undefined,
    });
  });

  it('rejects a malformed base URL and an unknown reasoning effort', () => {
    process.env.LLM_PROVIDER = 'openai';
    process.env.OPENAI_API_KEY = 'k';
    process.env.OPENAI_BASE_URL = 'localhost:11434';
    expect(configError(() => llmSettings(process.env)).message).toMatch(
      /^OPENAI_BASE_URL must be a URL/,
    );
    process.env.OPENAI_BASE_URL = '';
    process.env.OPENAI_REASONING_EFFORT = 'maximum';
    expect(configError(() => llmSettings(process.env)).message).toMatch(
      /^OPENAI_REASONING_EFFORT must be one of none, minimal/,
    );
  });
});

describe('dbSettings', () => {
  it('rejects a port that is not a number and a database name that is not safe in SQL', () => {
    process.env.DB_PORT = 'abc';
    expect(configError(() => dbSettings(process.env)).message).toMatch(
      /^DB_PORT must be a port number/,
    );
    process.env.DB_PORT = '3306';
    process.env.DB_NAME = 'nimbus; DROP DATABASE x';
    expect(configError(() => dbSettings(process.env)).message).toMatch(
      /^DB_NAME may only contain letters/,
    );
  });

  it('sizes the pool from DB_POOL_SIZE, 8 by default, and refuses a size that is not a whole number', () => {
    process.env.DB_NAME = 'nimbus';
    process.env.DB_POOL_SIZE = '';
    expect(dbSettings(process.env).poolSize).toBe(8);
    process.env.DB_POOL_SIZE = '64';
    expect(dbSettings(process.env).poolSize).toBe(64);
    for (const bad of ['0', 'eight', '2.5']) {
      process.env.DB_POOL_SIZE = bad;
      expect(configError(() => dbSettings(process.env)).message).toBe(
        `DB_POOL_SIZE must be a whole number from 1 to 10000 (it is "${bad}"). Fix it in .env.`,
      );
    }
    delete process.env.DB_POOL_SIZE;
  });
});

describe('a value quoted back in an error', () => {
  it('is escaped: an escape sequence or an invisible character in .env is shown, not obeyed', () => {
    process.env.DB_NAME = 'nimbus\x1b[2J\u200b';
    expect(configError(() => dbSettings(process.env)).message).toBe(
      'DB_NAME may only contain letters, digits and underscores (it is "nimbus\\x1b[2J\\u200b"). Fix it in .env.',
    );
  });
});

describe('ensureLogDir', () => {
  it('creates LOG_DIR, and any folder above it, readable by our user only (0700)', () => {
    const base = mkdtempSync(path.join(os.tmpdir(), 'nimbus-log-dir-'));
    const saved = process.env.LOG_DIR;
    try {
      process.env.LOG_DIR = path.join(base, 'private', 'logs');
      expect(ensureLogDir(process.env)).toBe(process.env.LOG_DIR);
      for (const dir of [path.join(base, 'private'), path.join(base, 'private', 'logs')])
        expect((statSync(dir).mode & 0o777).toString(8), dir).toBe('700');
    } finally {
      process.env.LOG_DIR = saved;
      rmSync(base, { recursive: true, force: true });
    }
  });
});
