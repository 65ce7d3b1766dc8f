import type { Clock } from "../../base/clock.js";
import type { IdGenerator } from "../../base/ids.js";
import type { Logger } from "../../base/log.js";
import type { InboundWebhook } from "../../config/types.js";
import { VeilError } from "../../errors.js";
import type { Store } from "../../store/store.js";
import type { ScheduleSessions } from "../schedules/runner.js";
import { signatureMatches } from "./signature.js";

export interface InboundWebhookDeps {
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  log: Logger;
  /** settings.webhooks.in */
  hooks: Readonly<Record<string, InboundWebhook>>;
  /** Where each hook's secretEnv is looked up. */
  env: Readonly<Record<string, string | undefined>>;
  sessions: ScheduleSessions & { close(id: string): Promise<unknown> };
}

export interface InboundDelivery {
  /** The raw request body, exactly as signed. */
  body: Uint8Array;
  /** X-Veil-Signature */
  signature: string | undefined;
  /** X-Veil-Delivery: the sender's id of this delivery, when it gives one. */
  deliveryId: string | undefined;
}

/** Longest X-Veil-Delivery id kept. */
const MAX_DELIVERY_ID = 200;

/**
 * `POST /webhooks/<name>`: a signed request starts a new session of the hook's agent with
 * its prompt, `{{body}}` replaced by the raw body. The request carries no bearer token; the
 * HMAC-SHA256 signature over the raw body with the hook's secret is its authentication. A
 * delivery id seen before (on any node, before a restart too) answers the session the
 * first delivery started and runs nothing.
 */
export class InboundWebhooks {
  constructor(private readonly deps: InboundWebhookDeps) {}

  /** The hook of `name`, or WEBHOOK_NOT_FOUND. */
  hook(name: string): InboundWebhook {
    const hooks = this.deps.hooks;
    if (!Object.hasOwn(hooks, name)) throw new VeilError("WEBHOOK_NOT_FOUND", `no inbound webhook "${name}" (settings.webhooks.in)`);
    return hooks[name]!;
  }

  /** Checks the signature and starts the hook's session (or answers the first delivery's). */
  async receive(name: string, delivery: InboundDelivery): Promise<{ sessionId: string; duplicate: boolean }> {
    const hook = this.hook(name);
    const secret = this.deps.env[hook.secretEnv];
    if (!secret) throw new VeilError("CONFIG_ERROR", `inbound webhook "${name}" cannot check signatures: its secretEnv ${hook.secretEnv} is not set`);
    if (!signatureMatches(delivery.signature, secret, delivery.body)) {
      throw new VeilError("UNAUTHORIZED", "missing or wrong X-Veil-Signature (sha256=<hex HMAC-SHA256 of the raw body with the webhook's secret>)");
    }
    const deliveryId = delivery.deliveryId?.trim() || undefined;
    if (deliveryId !== undefined && deliveryId.length > MAX_DELIVERY_ID) throw new VeilError("VALIDATION_ERROR", `X-Veil-Delivery is longer than ${MAX_DELIVERY_ID} characters`);
    const sessionId = this.deps.ids.next("sess");
    if (deliveryId !== undefined) {
      const first = await this.deps.store.claimWebhookReceipt(name, deliveryId, sessionId, new Date(this.deps.clock.now()).toISOString());
      if (first !== null) return { sessionId: first, duplicate: true };
    }
    try {
      await this.start(name, hook, sessionId, delivery.body, deliveryId);
    } catch (error) {
      // Nothing ran: a retry of this delivery may.
      if (deliveryId !== undefined) await this.deps.store.dropWebhookReceipt(name, deliveryId).catch(() => undefined);
      throw error;
    }
    return { sessionId, duplicate: false };
  }

  private async start(name: string, hook: InboundWebhook, sessionId: string, body: Uint8Array, deliveryId: string | undefined): Promise<void> {
    const { sessions, log } = this.deps;
    await sessions.create({ id: sessionId, agent: hook.agent, origin: "webhook" });
    const prompt = hook.prompt.split("{{body}}").join(Buffer.from(body).toString("utf8"));
    let receipt;
    try {
      receipt = await sessions.send(sessionId, prompt, { meta: { source: "webhook", webhook: name, ...(deliveryId ? { deliveryId } : {}) }, warmUp: false });
    } catch (error) {
      await sessions.close(sessionId).catch(() => undefined);
      throw error;
    }
    void receipt.result
      .then(() => sessions.release(sessionId))
      .catch((error: unknown) => log.warn("a webhook's session could not be let go of", { sessionId, error: String(error) }));
  }
}
