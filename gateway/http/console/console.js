// The operator console: usage over time (overall, by caller, model and
// provider), callers with their limits, the model catalog, the provider key
// pool and a trace browser, all through the admin API with the admin token of
// this tab. Each tab is built by its own module; this one holds the tabs and
// the signed-in page around them.
import { api, signedInPage } from "./session.js";
import { h } from "./dom.js";
import { bindPage, state, useFetcher } from "./console_shell.js";
import { modelsTab, overviewTab, providersTab } from "./console_usage.js";
import { callersTab } from "./console_callers.js";
import { catalogTab } from "./console_catalog.js";
import { keysTab } from "./console_keys.js";
import { tracesTab } from "./console_traces.js";

const TABS = [
  ["overview", "Overview"],
  ["callers", "Callers"],
  ["models", "Models"],
  ["catalog", "Catalog"],
  ["providers", "Providers"],
  ["keys", "Provider keys"],
  ["traces", "Traces"],
];
const PAGES = {
  overview: overviewTab,
  callers: callersTab,
  models: modelsTab,
  catalog: catalogTab,
  providers: providersTab,
  keys: keysTab,
  traces: tracesTab,
};

const render = signedInPage({
  storageKey: "mcpkit.admin",
  signInOptions: {
    title: "mcpkit gateway console",
    label: "Admin token",
    hint: "Sign in with GATEWAY_ADMIN_TOKEN. It stays in this tab only.",
    check: (candidate) => api(candidate, "/admin/keys"),
  },
  title: "mcpkit gateway",
  nav: () =>
    h(
      "nav",
      { "aria-label": "Console pages" },
      TABS.map(([id, label]) =>
        h("button", {
          type: "button",
          "data-tab": id,
          "aria-current": state.tab === id ? "page" : undefined,
          onclick: () => {
            state.tab = id;
            state.editing = undefined;
            render();
          },
        }, label)
      ),
    ),
  content: (fetcher) => {
    useFetcher(fetcher);
    return PAGES[state.tab]();
  },
});
bindPage(render);
