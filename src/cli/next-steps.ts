import type { VeilConfig } from "../config/types.js";
import { VeilError } from "../errors.js";
import { checkModelKeyReady, pickModelKey } from "../llm/models.js";
import type { SecretSource } from "../server/secret.js";

/** What `veil serve` tells a newcomer once it listens: where the dashboard is, where the secret is, which model chat uses. */
export interface NextSteps {
  dashboard: string;
  /** Where the secret came from, in words ("stored in /ws/.veil/secret"). */
  secret: string;
  /** A ready-to-paste request against the API. */
  api: string;
  /** The model chat uses, or what is missing. */
  model: string;
  /** How to configure a model, when none is ready. */
  modelHint?: string;
}

const EXAMPLE_ENV = "VEIL_BASE_URL=https://openrouter.ai/api/v1 VEIL_API_KEY=<key> VEIL_MODEL=openai/gpt-4.1-mini npx veil serve";

export function nextSteps(input: { url: string; config: VeilConfig; secretSource: SecretSource }): NextSteps {
  const { url, config, secretSource } = input;
  const file = config.paths.secretPath;
  const secret = {
    flag: "the --secret given",
    env: "the VEIL_SECRET variable",
    file: `stored in ${file}`,
    generated: `generated now, stored in ${file} (mode 0600)`,
  }[secretSource];
  const bearer = secretSource === "flag" || secretSource === "env" ? "$VEIL_SECRET" : `$(cat ${file})`;
  return {
    dashboard: `${url}/`,
    secret,
    api: `curl -H "Authorization: Bearer ${bearer}" ${url}/sessions`,
    ...modelLine(config),
  };
}

function modelLine(config: VeilConfig): Pick<NextSteps, "model" | "modelHint"> {
  try {
    const key = pickModelKey({ settings: config.settings });
    if (key.startsWith("cc/")) return { model: `${key} (the claude-cli engine)` };
    const { providerName, provider } = checkModelKeyReady(key, config.settings, config.env);
    return { model: `${key} (provider "${providerName}" at ${provider.baseUrl})` };
  } catch (error) {
    const problem = error instanceof VeilError ? error.message : String(error);
    const none = !config.settings.defaultModel;
    return {
      model: `not ready, chat fails until it is: ${problem}`,
      ...(none ? { modelHint: `point it at any OpenAI-compatible endpoint, e.g. ${EXAMPLE_ENV}; or set "providers" and "defaultModel" in ${config.paths.projectDir}/settings.json` } : {}),
    };
  }
}

/** The steps as the lines a person reads on a terminal. */
export function nextStepsText(steps: NextSteps): string {
  const lines = [
    `Dashboard  ${steps.dashboard} in a browser (the same address serves the HTTP API); sign in with the secret`,
    `Secret     ${steps.secret}`,
    `API        ${steps.api}`,
    `Model      ${steps.model}`,
    ...(steps.modelHint ? [`           ${steps.modelHint}`] : []),
  ];
  return `${lines.join("\n")}\n`;
}
