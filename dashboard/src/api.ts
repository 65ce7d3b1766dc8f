/** The public HTTP API (the routes of src/server/routes), with the bearer secret the user typed in. */

export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
  }
}

export interface Api {
  get<T>(path: string): Promise<T>;
  post<T>(path: string, body?: unknown): Promise<T>;
  put<T>(path: string, text: string): Promise<T>;
  patch<T>(path: string, body: unknown): Promise<T>;
  del<T>(path: string): Promise<T>;
  /** A raw request (for the event-log probe and the non-blocking chat send). */
  fetch(path: string, init?: RequestInit): Promise<Response>;
}

/**
 * `onUnauthorized` runs when the server answers 401 (the secret was changed or the
 * server restarted with another one): the page goes back to the login form.
 */
export function createApi(secret: string, onUnauthorized: () => void): Api {
  const raw = async (path: string, init: RequestInit = {}): Promise<Response> => {
    const headers = new Headers(init.headers);
    headers.set("authorization", `Bearer ${secret}`);
    const response = await fetch(path, { ...init, headers, cache: "no-store", credentials: "omit" });
    if (response.status === 401) onUnauthorized();
    return response;
  };
  const json = async <T>(path: string, init: RequestInit = {}): Promise<T> => {
    const response = await raw(path, init);
    if (!response.ok) throw await errorOf(response);
    return (await response.json()) as T;
  };
  const withBody = (method: string, body: unknown): RequestInit =>
    body === undefined ? { method } : { method, body: JSON.stringify(body), headers: { "content-type": "application/json" } };
  return {
    get: (path) => json(path),
    post: (path, body) => json(path, withBody("POST", body ?? {})),
    put: (path, text) => json(path, { method: "PUT", body: text, headers: { "content-type": "text/plain; charset=utf-8" } }),
    patch: (path, body) => json(path, withBody("PATCH", body)),
    del: (path) => json(path, { method: "DELETE" }),
    fetch: raw,
  };
}

/** `{ error: { code, message } }` (or the remote methods' `{ error: "not_found" }`) → ApiError. */
export async function errorOf(response: Response): Promise<ApiError> {
  let code = `HTTP_${response.status}`;
  let message = response.statusText || `request failed with status ${response.status}`;
  try {
    const body = (await response.json()) as { error?: { code?: string; message?: string } | string };
    if (typeof body.error === "string") code = message = body.error;
    else if (body.error) {
      code = body.error.code ?? code;
      message = body.error.message ?? message;
    }
  } catch {
    // not JSON: keep the status text
  }
  return new ApiError(response.status, code, message);
}

/** Checks a secret without keeping it: the status decides what the login form says. */
export async function probeSecret(secret: string): Promise<"ok" | "wrong" | "unreachable"> {
  try {
    const response = await fetch("/sessions?status=running", { headers: { authorization: `Bearer ${secret}` }, cache: "no-store", credentials: "omit" });
    if (response.status === 401) return "wrong";
    return response.ok ? "ok" : "unreachable";
  } catch {
    return "unreachable";
  }
}
