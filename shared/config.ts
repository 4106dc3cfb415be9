// Settings come from the repo-root .env (or real environment variables) and are checked only when needed.
import { closeSync, existsSync, mkdirSync, openSync, statSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { config as loadDotenv } from 'dotenv';
import { printable } from './text.ts';

/** The repository root, found from this file's location so scripts work from any working directory. */
export const ROOT_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

// Real environment variables win over .env: dotenv leaves a variable that is already set alone. Said
// here rather than left to its default, which dotenv 18 lets a DOTENV_OVERRIDE variable change.
loadDotenv({ path: path.join(ROOT_DIR, '.env'), quiet: true, override: false });

/** A setting is missing or invalid. Entry scripts print the message (one sentence) and exit 1. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** A setting's value quoted in an error message, escaped: it may hold anything, even escape sequences. */
function quoted(value: string | undefined): string {
  return `"${printable(value ?? '', { singleLine: true })}"`;
}

/** Where settings are read from: the process's environment (with .env), or one a test hands an entry script. */
export type Env = Record<string, string | undefined>;

/** Reads a variable; an empty value counts as not set, so `KEY=` in .env means "use the default". */
function read(name: string, env: Env): string | undefined {
  const value = env[name]?.trim();
  return value ? value : undefined;
}

export type ProviderName = 'gemini' | 'openai';

/** What every provider needs: the longest one model call may take, retries and their waits included. */
interface ProviderLimits {
  timeoutMs: number;
}

export interface GeminiSettings extends ProviderLimits {
  provider: 'gemini';
  apiKey: string;
  model: string;
  embeddingModel: string;
  baseUrl?: string;
}

export interface OpenAISettings extends ProviderLimits {
  provider: 'openai';
  apiKey: string;
  model: string;
  /** Undefined when there is no embedding model: a custom server without OPENAI_EMBEDDING_MODEL. */
  embeddingModel?: string;
  baseUrl?: string;
  reasoningEffort?: string;
}

export type LlmSettings = GeminiSettings | OpenAISettings;

const REASONING_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh'];

function providerName(env: Env): ProviderName {
  const value = (read('LLM_PROVIDER', env) ?? 'gemini').toLowerCase();
  if (value !== 'gemini' && value !== 'openai') {
    throw new ConfigError(
      `LLM_PROVIDER must be "gemini" or "openai" (it is ${quoted(value)}). Fix it in .env.`,
    );
  }
  return value;
}

/**
 * The chosen provider's settings; throws a ConfigError naming the variable to fix. Entry scripts call
 * it once at start and pass the result down, so a bad value is said before anything else happens.
 */
export function llmSettings(env: Env): LlmSettings {
  // LLM_TIMEOUT_SECONDS: 120 s by default; raise it for a slow local model.
  const timeoutMs = integerSetting('LLM_TIMEOUT_SECONDS', 120, 1, { max: 86_400, env }) * 1000;
  if (providerName(env) === 'gemini') {
    const apiKey = read('GEMINI_API_KEY', env);
    if (!apiKey) {
      throw new ConfigError(
        'GEMINI_API_KEY is not set. Get a free key at https://aistudio.google.com/apikey and put it in .env',
      );
    }
    return {
      provider: 'gemini',
      apiKey,
      model: read('GEMINI_MODEL', env) ?? 'gemini-flash-latest',
      embeddingModel: read('GEMINI_EMBEDDING_MODEL', env) ?? 'gemini-embedding-001',
      baseUrl: optionalUrl('GEMINI_BASE_URL', env),
      timeoutMs,
    };
  }

  const baseUrl = optionalUrl('OPENAI_BASE_URL', env);
  const apiKey = read('OPENAI_API_KEY', env);
  if (!apiKey && !baseUrl) {
    throw new ConfigError(
      'OPENAI_API_KEY is not set. Create a key at https://platform.openai.com/api-keys and put it in .env',
    );
  }
  const reasoningEffort = read('OPENAI_REASONING_EFFORT', env)?.toLowerCase();
  if (reasoningEffort && !REASONING_EFFORTS.includes(reasoningEffort)) {
    throw new ConfigError(
      `OPENAI_REASONING_EFFORT must be one of ${REASONING_EFFORTS.join(', ')} (it is ${quoted(reasoningEffort)}). Fix it in .env.`,
    );
  }
  return {
    provider: 'openai',
    // Local servers (Ollama, LM Studio) ignore the key, but the SDK refuses to start without one.
    apiKey: apiKey ?? 'not-needed-for-local-servers',
    model: read('OPENAI_MODEL', env) ?? 'gpt-5.4-mini',
    // OpenAI's embedding model does not exist on other servers, so a custom server needs it named.
    embeddingModel:
      read('OPENAI_EMBEDDING_MODEL', env) ?? (baseUrl ? undefined : 'text-embedding-3-small'),
    baseUrl,
    reasoningEffort,
    timeoutMs,
  };
}

/**
 * For scripts that also do their job without a model (setup, ingest): the provider's settings, or the
 * ConfigError saying what is missing, to report instead of stopping.
 */
export function llmSettingsOrError(env: Env): LlmSettings | ConfigError {
  try {
    return llmSettings(env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
}

/** The signed-in customer's email (CUSTOMER_EMAIL), if set: a terminal has no login, so configuration says who it is. */
export function customerEmail(env: Env): string | undefined {
  return read('CUSTOMER_EMAIL', env);
}

/**
 * A whole-number setting such as MEMORY_MAX_CHARS: the default when unset, a ConfigError naming the
 * variable when it is not a whole number from `min` to `max`.
 */
export function integerSetting(
  name: string,
  fallback: number,
  min: number,
  { max = 1_000_000_000, env }: { max?: number; env: Env },
): number {
  const value = read(name, env);
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    const range = max === 1_000_000_000 ? `of at least ${min}` : `from ${min} to ${max}`;
    throw new ConfigError(
      `${name} must be a whole number ${range} (it is ${quoted(value)}). Fix it in .env.`,
    );
  }
  return Number(value);
}

function optionalUrl(name: string, env: Env): string | undefined {
  const value = read(name, env);
  if (value === undefined) return undefined;
  if (!/^https?:\/\/[^/\s]+/.test(value)) {
    throw new ConfigError(
      `${name} must be a URL such as http://localhost:11434/v1 (it is ${quoted(value)}). Fix it in .env.`,
    );
  }
  return value;
}

export interface DbSettings {
  /** Where the server is (DB_HOST, DB_PORT). */
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
  /** The longest any one statement, transaction or wait for the server may take (DB_TIMEOUT_SECONDS). */
  timeoutMs: number;
  /** Connections this process opens to the server at most (DB_POOL_SIZE). */
  poolSize: number;
}

export function dbSettings(env: Env): DbSettings {
  const port = Number(read('DB_PORT', env) ?? '3306');
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new ConfigError(
      `DB_PORT must be a port number such as 3306 (it is ${quoted(read('DB_PORT', env))}). Fix it in .env.`,
    );
  }
  const database = read('DB_NAME', env) ?? 'nimbus';
  // The name is put into CREATE DATABASE, which cannot take a placeholder, so only allow safe names.
  if (!/^[A-Za-z0-9_]{1,64}$/.test(database)) {
    throw new ConfigError(
      `DB_NAME may only contain letters, digits and underscores (it is ${quoted(database)}). Fix it in .env.`,
    );
  }
  return {
    host: read('DB_HOST', env) ?? '127.0.0.1',
    port,
    user: read('DB_USER', env) ?? 'root',
    // A password may legitimately be spaces, so it is not trimmed.
    password: env.DB_PASSWORD ?? '',
    database,
    // A frozen server or a dead network fails after this long instead of hanging (15 s by default).
    timeoutMs: integerSetting('DB_TIMEOUT_SECONDS', 15, 1, { max: 3600, env }) * 1000,
    // Every process opens up to this many: together they must stay under max_connections.
    poolSize: integerSetting('DB_POOL_SIZE', 8, 1, { max: 10_000, env }),
  };
}

/** Where traces are written: logs/ at the repo root unless LOG_DIR says otherwise. */
export function logDir(env: Env): string {
  return path.resolve(ROOT_DIR, read('LOG_DIR', env) ?? 'logs');
}

/**
 * Creates the trace folder and proves it can be written to, so a bad LOG_DIR (a file, a read-only or
 * special path) is one clear sentence at start instead of a failure in the middle of an answer.
 */
export function ensureLogDir(env: Env): string {
  const dir = logDir(env);
  try {
    makeFolders(dir);
    if (!statSync(dir).isDirectory()) throw new Error('it is not a folder');
    const probe = path.join(dir, `.write-test-${process.pid}`);
    closeSync(openSync(probe, 'w'));
    unlinkSync(probe);
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new ConfigError(
      `Traces cannot be written to ${printable(dir, { singleLine: true })} (${reason}). Set LOG_DIR in .env to a folder you can write to.`,
    );
  }
  return dir;
}

/**
 * mkdir -p, one level at a time: Node's own recursive mode never returns for some special paths (under
 * /proc). Traces hold customers' questions and orders, so the folders we create are for our user only
 * (0700); folders that already exist are left as they are.
 */
export function makeFolders(dir: string): void {
  if (existsSync(dir)) return;
  const parent = path.dirname(dir);
  if (parent !== dir) makeFolders(parent);
  mkdirSync(dir, { mode: 0o700 });
}
