import { VeilError, errorMessage } from "../../errors.js";

export type ClaudeSdk = typeof import("@anthropic-ai/claude-agent-sdk");

export const SDK_PACKAGE = "@anthropic-ai/claude-agent-sdk";

/** How the engine imports the SDK; a test passes another to see the not-installed path. */
export type SdkImporter = () => Promise<unknown>;

export const importClaudeSdk: SdkImporter = () => import("@anthropic-ai/claude-agent-sdk");

/**
 * Loads the optional peer on first use (so the openai path never pays for it). Not
 * installed → CONFIG_ERROR naming the install command.
 */
export async function loadClaudeSdk(importer: SdkImporter = importClaudeSdk): Promise<ClaudeSdk> {
  let module: unknown;
  try {
    module = await importer();
  } catch (error) {
    const code = (error as { code?: string })?.code;
    if (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") {
      throw new VeilError("CONFIG_ERROR", `cc/ models run through the Claude Agent SDK, which is not installed: npm i ${SDK_PACKAGE}`, { cause: error });
    }
    throw new VeilError("CONFIG_ERROR", `the Claude Agent SDK (${SDK_PACKAGE}) failed to load: ${errorMessage(error)}`, { cause: error });
  }
  const sdk = module as Partial<ClaudeSdk>;
  if (typeof sdk.query !== "function") throw new VeilError("CONFIG_ERROR", `${SDK_PACKAGE} has no query() export; install a 0.3.x version: npm i ${SDK_PACKAGE}`);
  return sdk as ClaudeSdk;
}
