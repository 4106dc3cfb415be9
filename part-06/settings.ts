// The memory budgets from .env, read once by each script at start and passed down: no module below reads .env.
import { integerSetting } from '../shared/config.ts';
import { DEFAULT_MAX_CHARS, DEFAULT_RECENT_TURNS, type MemoryBudget } from './context.ts';

/** MEMORY_MAX_CHARS and MEMORY_RECENT_TURNS, or the defaults; a bad value is one sentence naming it. */
export function memoryBudget(): MemoryBudget {
  return {
    maxChars: integerSetting('MEMORY_MAX_CHARS', DEFAULT_MAX_CHARS, 1),
    recentTurns: integerSetting('MEMORY_RECENT_TURNS', DEFAULT_RECENT_TURNS, 1),
  };
}

/** MEMORY_NOTES_MAX_CHARS: the characters of customer notes sent with each question (0: none). */
export function notesBudget(): number {
  return integerSetting('MEMORY_NOTES_MAX_CHARS', 1500, 0);
}
