import type { ClaudeCliSettings } from "../../config/types.js";

/**
 * What a failed claude-cli turn tells its caller: the SDK's text, where the API was, and the
 * child's stderr when that explains more (a crash, a refused start); a refused key says what
 * to set. The API's own errors ("API Error: …") say enough without the stderr.
 */
export function describeFailure(text: string, cli: ClaudeCliSettings | undefined, stderrTail: string): string {
  const where = cli?.baseUrl ? ` (base URL ${cli.baseUrl})` : "";
  const stderr = stderrTail && !/^API Error/.test(text) ? `\nclaude stderr:\n${stderrTail}` : "";
  if (/not logged in|invalid api key|x-api-key|authentication/i.test(text)) {
    return `claude-cli: the Anthropic API refused the key${where}: ${text}. Set settings.claudeCli.apiKey / apiKeyEnv or ANTHROPIC_API_KEY.${stderr}`;
  }
  return `claude-cli${where}: ${text}${stderr}`;
}
