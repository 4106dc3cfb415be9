// How messages name the OpenAI side. Its own file, so naming the provider does not load the SDK (see index.ts).
import type { OpenAISettings } from '../config.ts';

export function openaiProviderName(settings: OpenAISettings): string {
  return settings.baseUrl ? 'the OpenAI-compatible server' : 'OpenAI';
}
