/**
 * What the eval command checks at the gateway before any task starts: that it
 * answers, knows and can serve the model, takes the key and the key has
 * credits; and the key's balance, for the cost line at the end.
 *
 * @module
 */
import { usdToMicros } from "../agents/agent.ts";
import { isObject } from "../agents/loop.ts";
import type { ModelFacts } from "../agents/model.ts";
import { modelFacts } from "../agents/convention.ts";
import { UsageError } from "./options.ts";

/**
 * The key's balance at the gateway, µUSD, or `undefined` when the gateway
 * does not say.
 *
 * @param gatewayUrl The gateway's base URL.
 * @param key The gateway key.
 * @returns The balance, or `undefined`.
 */
export async function balanceMicros(
  gatewayUrl: string,
  key: string,
): Promise<number | undefined> {
  const response = await fetch(`${gatewayUrl}/v1/credits`, {
    headers: { authorization: `Bearer ${key}` },
  }).catch(() => undefined);
  if (!response?.ok) {
    await response?.body?.cancel();
    return undefined;
  }
  const body = await response.json().catch(() => ({}));
  return usdToMicros(String(body.balance));
}

/**
 * Checks the gateway before any task starts: that it answers, that it knows
 * the model (and can serve it), and that it takes the key and the key has
 * credits. Each failure is one line.
 *
 * @param gatewayUrl The gateway's base URL.
 * @param key The gateway key.
 * @param model The model the runs use.
 * @returns What `GET /v1/models/{id}` says about the model: its convention, computer use and features.
 * @throws {UsageError} Naming what is wrong.
 */
export async function checkGateway(
  gatewayUrl: string,
  key: string,
  model: string,
): Promise<ModelFacts> {
  const get = async (path: string, auth: boolean) => {
    try {
      const response = await fetch(`${gatewayUrl}${path}`, {
        headers: auth ? { authorization: `Bearer ${key}` } : {},
        signal: AbortSignal.timeout(15_000),
      });
      const body = await response.json().catch(() => ({}));
      return { status: response.status, body: isObject(body) ? body : {} };
    } catch (error) {
      throw new UsageError(
        `Cannot reach the gateway at ${gatewayUrl}: ${
          (error as Error).name === "TimeoutError"
            ? "no answer within 15 s"
            : "nothing answers there"
        }`,
      );
    }
  };
  const reason = (body: Record<string, unknown>) => {
    const error = isObject(body.error) ? body.error : {};
    return typeof error.message === "string"
      ? error.message
      : "no reason given";
  };
  const credits = await get("/v1/credits", true);
  if (credits.status === 401 || credits.status === 403) {
    throw new UsageError(
      `The gateway at ${gatewayUrl} refused the key (${credits.status}): ${
        reason(credits.body)
      }`,
    );
  }
  if (credits.status !== 200) {
    throw new UsageError(
      `The gateway at ${gatewayUrl} did not answer GET /v1/credits (${credits.status}): is it an mcpkit gateway?`,
    );
  }
  if (usdToMicros(String(credits.body.balance)) <= 0) {
    throw new UsageError(
      `The key has no credits left at ${gatewayUrl} (balance $${
        String(credits.body.balance)
      })`,
    );
  }
  const info = await get(`/v1/models/${encodeURIComponent(model)}`, false);
  if (info.status === 404) {
    throw new UsageError(
      `The gateway at ${gatewayUrl} has no model "${model}": GET /v1/models lists them`,
    );
  }
  if (info.status !== 200) {
    throw new UsageError(
      `The gateway at ${gatewayUrl} did not answer GET /v1/models/${model} (${info.status}): ${
        reason(info.body)
      }`,
    );
  }
  if (info.body.available === false) {
    throw new UsageError(
      `The model "${model}" cannot be served: ${
        String(info.body.unavailable_reason ?? "its provider has no key")
      }`,
    );
  }
  return modelFacts(info.body);
}
