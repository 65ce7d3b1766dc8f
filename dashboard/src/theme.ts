/** Dark or light: the system's choice until the user picks one for this tab. */
import { h } from "./dom.js";

const KEY = "veil.theme";

export function applyStoredTheme(): void {
  const stored = sessionStorage.getItem(KEY);
  if (stored === "dark" || stored === "light") document.documentElement.dataset.theme = stored;
}

export function themeToggle(): HTMLButtonElement {
  const current = () => document.documentElement.dataset.theme ?? (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light");
  const button = h("button", { type: "button", class: "theme-toggle" });
  const label = () => {
    const next = current() === "dark" ? "light" : "dark";
    button.replaceChildren(next === "dark" ? "☾" : "☀", h("span", { class: "wide-only" }, next === "dark" ? " Dark" : " Light"));
    button.setAttribute("aria-label", `Switch to ${next} theme`);
  };
  button.addEventListener("click", () => {
    const next = current() === "dark" ? "light" : "dark";
    document.documentElement.dataset.theme = next;
    sessionStorage.setItem(KEY, next);
    label();
  });
  label();
  matchMedia("(prefers-color-scheme: dark)").addEventListener("change", label);
  return button;
}
