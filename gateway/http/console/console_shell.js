// The operator console's shared state (tab, range, filters, the editor
// open), its signed-in fetch and the pieces every tab builds with: the range
// bar, form fields and editor panels.
import { h, ranges } from "./dom.js";

export const state = {
  tab: "overview",
  range: "24h",
  traceFilter: {},
  // Cursors of the trace pages before the one shown (`""`: the newest page).
  tracePages: [""],
};

let renderPage = () => {};
let fetcher = () => Promise.reject(new Error("Not signed in"));

/** Binds the page's `render()` (from `signedInPage`) and its signed-in fetch. */
export function bindPage(pageRender) {
  renderPage = pageRender;
}

/** Sets the fetch with the tab's credential, for the content being built. */
export function useFetcher(fetch) {
  fetcher = fetch;
}

/** Rebuilds the page after a change. */
export function render() {
  return renderPage();
}

/** Fetches JSON from the admin API with the tab's credential. */
export function call(path, init) {
  return fetcher(path, init);
}

export const get = (path) => call(path);

export function rangeBar(...extra) {
  return h(
    "div",
    { class: "toolbar" },
    ranges(state.range, (range) => {
      state.range = range;
      render();
    }),
    ...extra,
  );
}

/** A labelled form field. */
export function field(label, input) {
  return h("label", { class: "field" }, h("span", { text: label }), input);
}

/** An editor panel; the page does not auto-refresh while one is open. */
export function panel(title, testid, ...children) {
  return h(
    "section",
    { class: "panel", "data-editing": "", "data-testid": testid },
    h("h2", { text: title }),
    ...children,
  );
}

export function closeEditor() {
  state.editing = undefined;
  render();
}

export function formError() {
  return h("p", { class: "error", role: "alert", "data-testid": "form-error" });
}

/** Runs a change; shows its error in `message`, or closes the editor. */
export async function submit(message, change) {
  message.textContent = "";
  try {
    await change();
    closeEditor();
  } catch (error) {
    message.textContent = error.message;
  }
}
