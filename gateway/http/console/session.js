// Sign-in kept for this tab only (sessionStorage: never a URL, never a
// cookie), fetches with that credential, and the signed-in page around each
// page's content.
import { h } from "./dom.js";

/** A credential kept in this tab's sessionStorage. */
export function credential(name) {
  return {
    get: () => sessionStorage.getItem(name),
    set: (value) => sessionStorage.setItem(name, value),
    clear: () => sessionStorage.removeItem(name),
  };
}

/** Thrown for a 401: the page signs out. */
export class Unauthorized extends Error {}

/** Fetches JSON with `Authorization: Bearer <token>`. */
export async function api(token, path, init = {}) {
  const response = await fetch(path, {
    ...init,
    headers: {
      authorization: `Bearer ${token}`,
      ...(init.body ? { "content-type": "application/json" } : {}),
      ...init.headers,
    },
  });
  const body = await response.json().catch(() => ({}));
  if (response.status === 401) throw new Unauthorized(body?.error?.message);
  if (!response.ok) {
    throw new Error(
      body?.error?.message ?? `${response.status} ${response.statusText}`,
    );
  }
  return body;
}

/** The sign-in form; `check(token)` resolves when the token works. */
export function signIn(root, { title, label, hint, check, onSignedIn }) {
  const input = h("input", {
    id: "signin-token",
    type: "password",
    autocomplete: "off",
    "data-testid": "signin-token",
  });
  const message = h("p", {
    class: "error",
    role: "alert",
    "data-testid": "signin-error",
  });
  const form = h(
    "form",
    {
      class: "signin",
      onsubmit: async (event) => {
        event.preventDefault();
        message.textContent = "";
        const token = input.value.trim();
        if (!token) return;
        try {
          await check(token);
          onSignedIn(token);
        } catch (error) {
          message.textContent = error instanceof Unauthorized
            ? `Wrong ${label.toLowerCase()}: it was not accepted.`
            : error.message;
        }
      },
    },
    h("h1", { text: title }),
    h("p", { class: "muted", text: hint }),
    h("label", { for: "signin-token", text: label }),
    input,
    h("button", {
      class: "primary",
      type: "submit",
      "data-testid": "signin-submit",
    }, "Sign in"),
    message,
  );
  root.replaceChildren(form);
  input.focus();
}

const REFRESH_MS = 10_000;

/**
 * A signed-in page: the sign-in form until a credential works, then a header
 * (title, `nav`, auto-refresh, sign-out) over what `content(call)` builds,
 * where `call(path, init)` fetches with the credential. A 401 signs out.
 * Auto-refresh (off by default, remembered for the tab) rebuilds the content
 * every 10 s in place, except while a field has the focus or an editor is
 * open (`[data-editing]`), so it never eats what someone is typing.
 *
 * @returns `render()`, to rebuild the page after a change.
 */
export function signedInPage(
  { storageKey, signInOptions, title, nav, content },
) {
  const root = document.getElementById("app");
  const stored = credential(storageKey);
  const autoRefresh = credential(`${storageKey}.refresh`);
  const call = (path, init) => api(stored.get(), path, init);
  let timer;
  let main;
  const start = () => {
    if (stored.get()) return render();
    clearInterval(timer);
    signIn(root, {
      ...signInOptions,
      onSignedIn: (value) => {
        stored.set(value);
        render();
      },
    });
  };
  const signOut = () => {
    stored.clear();
    start();
  };
  const fill = async (target) => {
    target.setAttribute("aria-busy", "true");
    try {
      const parts = (await content(call)).filter((part) =>
        part !== null && part !== undefined && part !== false
      );
      if (target === main) target.replaceChildren(...parts);
    } catch (error) {
      if (error instanceof Unauthorized) return signOut();
      target.replaceChildren(
        h("p", { class: "error", role: "alert", text: error.message }),
      );
    } finally {
      target.removeAttribute("aria-busy");
    }
  };
  const refresh = () => {
    const busy = document.activeElement?.matches?.("input, select, textarea") ||
      main?.querySelector("[data-editing]");
    if (main?.isConnected && !busy) fill(main);
  };
  const setTimer = () => {
    clearInterval(timer);
    if (autoRefresh.get() === "on") timer = setInterval(refresh, REFRESH_MS);
  };
  async function render() {
    // What was shown stays until its replacement is ready (no flash, and the
    // scroll position holds); `aria-busy` marks the wait.
    const shown = main?.isConnected ? [...main.childNodes] : [];
    main = h(
      "main",
      { "data-testid": "page" },
      shown.length ? shown : h("p", { class: "muted", text: "Loading…" }),
    );
    const toggle = h("input", {
      type: "checkbox",
      id: "auto-refresh",
      "data-testid": "auto-refresh",
      checked: autoRefresh.get() === "on",
      onchange: (event) => {
        if (event.target.checked) autoRefresh.set("on");
        else autoRefresh.clear();
        setTimer();
      },
    });
    root.replaceChildren(
      h(
        "header",
        {},
        h("h1", { text: title }),
        nav ? nav() : null,
        h(
          "div",
          { class: "header-tools" },
          h(
            "label",
            { class: "toggle", for: "auto-refresh" },
            toggle,
            " Auto-refresh",
          ),
          h("button", {
            type: "button",
            onclick: signOut,
            "data-testid": "signout",
          }, "Sign out"),
        ),
      ),
      main,
    );
    setTimer();
    await fill(main);
  }
  // After the calling module has finished loading (its pages are defined below the call).
  queueMicrotask(start);
  return render;
}
