/**
 * Entry: the login form, then the dashboard. The secret lives in sessionStorage only
 * (gone when the tab closes; never in a URL, a cookie or localStorage); event streams
 * use short-lived tokens minted with it.
 */
import "./styles.css";
import { createApi, probeSecret } from "./api.js";
import { startApp, type AppHandle } from "./app.js";
import { h } from "./dom.js";
import { applyStoredTheme } from "./theme.js";

const SECRET_KEY = "veil.secret";
const root = document.getElementById("app")!;
let app: AppHandle | null = null;

function showLogin(message = ""): void {
  app?.stop();
  app = null;
  const secret = h("input", { testid: "login-secret", id: "login-secret", type: "password", autocomplete: "current-password", required: true, "aria-describedby": "login-error" });
  const error = h("p", { id: "login-error", class: "login-error", role: "alert" }, message);
  const submit = h("button", { testid: "login-submit", type: "submit", class: "primary" }, "Sign in");
  const form = h(
    "form",
    { class: "login-card" },
    h("h1", null, "Veil"),
    h("p", { class: "hint" }, "Enter the server secret: the one printed by ", h("code", null, "veil serve"), " on its first start (stored in ", h("code", null, ".veil/secret"), "), or the ", h("code", null, "--secret"), " / ", h("code", null, "VEIL_SECRET"), " it was started with; or an API key (", h("code", null, "veil_sk_…"), "), which shows only its own sessions."),
    h("label", { for: "login-secret" }, "Server secret or API key"),
    secret,
    submit,
    error,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const value = secret.value.trim();
    if (!value) return;
    submit.disabled = true;
    error.textContent = "";
    const verdict = await probeSecret(value);
    submit.disabled = false;
    if (verdict === "wrong") {
      error.textContent = "Wrong secret: the server refused it (401 Unauthorized). Nothing was saved.";
      secret.select();
      return;
    }
    if (verdict === "unreachable") {
      error.textContent = "Cannot reach the Veil server. Is `veil serve` running?";
      return;
    }
    sessionStorage.setItem(SECRET_KEY, value);
    enter(value);
  });
  root.replaceChildren(h("main", { class: "login" }, form));
  secret.focus();
}

function enter(secret: string): void {
  const api = createApi(secret, () => {
    sessionStorage.removeItem(SECRET_KEY);
    showLogin("The server no longer accepts this secret (401 Unauthorized). Sign in again.");
  });
  app = startApp(root, api, () => {
    sessionStorage.removeItem(SECRET_KEY);
    showLogin();
  });
}

applyStoredTheme();
const stored = sessionStorage.getItem(SECRET_KEY);
if (stored) enter(stored);
else showLogin();
// The bench reads this: time from navigation start until the page answers input.
performance.mark("veil:interactive");
