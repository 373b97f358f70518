// The console's catalog tab: the models served with their prices and
// lifecycle, and the editor that puts or removes one at run time.
import { h, table } from "./dom.js";
import { count } from "./format.js";
import {
  call,
  closeEditor,
  field,
  formError,
  get,
  panel,
  render,
  state,
  submit,
} from "./console_shell.js";

/** The models served, and the editor open on one. */
export async function catalogTab() {
  const models = (await get("/admin/models")).data;
  const editing = state.editing;
  const editor = editing?.kind === "model"
    ? modelPanel(models.find((m) => m.id === editing.id))
    : null;
  const price = (value) => value === undefined ? "—" : `$${value}`;
  return [
    h(
      "div",
      { class: "toolbar" },
      h("p", {
        class: "muted",
        text:
          "Prices are USD per million tokens. A change reaches every gateway process within seconds; calls already running keep the price they reserved.",
      }),
      h("button", {
        type: "button",
        class: "primary",
        "data-testid": "add-model",
        onclick: () => {
          state.editing = { kind: "model" };
          render();
        },
      }, "Add model"),
    ),
    editor,
    table(
      [
        { label: "Model", value: (m) => m.id },
        { label: "Provider", value: (m) => m.provider },
        { label: "Upstream id", value: (m) => m.upstream },
        { label: "Routes", value: (m) => m.routes.join(", ") },
        { label: "Input", num: true, value: (m) => price(m.pricing.input) },
        {
          label: "Cached input",
          num: true,
          value: (m) => price(m.pricing.cachedInput),
        },
        { label: "Output", num: true, value: (m) => price(m.pricing.output) },
        {
          label: "Max output",
          num: true,
          value: (m) => count(m.maxOutputTokens),
        },
        {
          label: "Falls back to",
          value: (m) => m.alternates?.join(", ") ?? "",
        },
        { label: "Lifecycle", value: (m) => lifecycle(m) },
        {
          label: "Actions",
          value: (m) =>
            h(
              "span",
              { class: "actions" },
              h("button", {
                type: "button",
                "data-action": "edit-model",
                "data-model": m.id,
                onclick: () => {
                  state.editing = { kind: "model", id: m.id };
                  render();
                },
              }, "Edit"),
              h("button", {
                type: "button",
                "data-action": "remove-model",
                "data-model": m.id,
                onclick: async () => {
                  if (!confirm(`Remove "${m.id}" from the catalog?`)) return;
                  await call(modelPath(m.id), { method: "DELETE" });
                  await served((entry) => entry === undefined, m.id);
                  render();
                },
              }, "Remove"),
            ),
        },
      ],
      models,
      { testid: "catalog-table", empty: "The catalog is empty." },
    ),
  ];
}

/**
 * Waits (up to 10 s) until this process serves the change to model `id`:
 * the live catalog reaches every process within a few seconds, and the table
 * should show what is charged, not what was asked for.
 */
async function served(done, id) {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const models = (await get("/admin/models")).data;
    if (done(models.find((m) => m.id === id))) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(
    `Saved, but this gateway does not serve the change to "${id}" yet; reload in a moment`,
  );
}

function modelPath(id) {
  return `/admin/models/${id.split("/").map(encodeURIComponent).join("/")}`;
}

function modelPanel(entry) {
  const isNew = entry === undefined;
  const m = entry ?? {
    id: "",
    provider: "openai",
    upstream: "",
    routes: ["chat"],
    pricing: { input: 0, output: 0 },
    maxOutputTokens: 4096,
  };
  const text = (name, value, attrs = {}) =>
    h("input", {
      name,
      value: value ?? "",
      "data-model-field": name,
      ...attrs,
    });
  const money = (name, value) =>
    text(name, value, { type: "number", min: "0", step: "any" });
  const id = text("id", m.id, { required: true });
  const provider = text("provider", m.provider, { required: true });
  const upstream = text("upstream", m.upstream, { required: true });
  const routes = text("routes", m.routes.join(", "), { required: true });
  const input = money("input", m.pricing.input);
  const cached = money("cachedInput", m.pricing.cachedInput);
  const output = money("output", m.pricing.output);
  const maxOutput = text("maxOutputTokens", m.maxOutputTokens, {
    type: "number",
    min: "1",
    step: "1",
  });
  const alternates = text("alternates", m.alternates?.join(", "));
  const life = m.lifecycle ?? {};
  const deprecated = text("deprecated", life.deprecated?.slice(0, 10), {
    type: "date",
  });
  const retires = text("retires", life.retires?.slice(0, 10), { type: "date" });
  const successor = text("successor", life.successor);
  const reroute = h("input", {
    type: "checkbox",
    name: "reroute",
    checked: life.reroute === true,
    "data-model-field": "reroute",
  });
  const message = formError();
  const list = (value) =>
    value.split(",").map((part) => part.trim()).filter(Boolean);
  return panel(
    isNew ? "Add a model" : `Edit "${m.id}"`,
    "model-panel",
    h(
      "form",
      {
        class: "inline",
        onsubmit: (event) => {
          event.preventDefault();
          const { id: _id, ...rest } = m;
          const pricing = {
            ...m.pricing,
            input: Number(input.value),
            output: Number(output.value),
          };
          if (cached.value === "") delete pricing.cachedInput;
          else pricing.cachedInput = Number(cached.value);
          const body = {
            ...rest,
            provider: provider.value.trim(),
            upstream: upstream.value.trim(),
            routes: list(routes.value),
            pricing,
            maxOutputTokens: Number(maxOutput.value),
          };
          if (list(alternates.value).length) {
            body.alternates = list(alternates.value);
          } else delete body.alternates;
          // Dates as typed keep their time of day when unchanged.
          const keep = (typed, stored) =>
            typed === stored?.slice(0, 10) ? stored : typed;
          const lifecycle = {
            ...(deprecated.value &&
              { deprecated: keep(deprecated.value, life.deprecated) }),
            ...(retires.value &&
              { retires: keep(retires.value, life.retires) }),
            ...(successor.value.trim() &&
              { successor: successor.value.trim() }),
            ...(reroute.checked && { reroute: true }),
          };
          if (Object.keys(lifecycle).length) body.lifecycle = lifecycle;
          else delete body.lifecycle;
          const target = isNew ? id.value.trim() : m.id;
          submit(message, async () => {
            const saved = await call(modelPath(target), {
              method: "PUT",
              body: JSON.stringify(body),
            });
            message.textContent = "Saved; waiting for the gateway to serve it…";
            await served((entry) =>
              entry?.id === target &&
              JSON.stringify(entry) === JSON.stringify(saved), target);
          });
        },
      },
      isNew ? field("Model id", id) : null,
      field("Provider", provider),
      field("Upstream id", upstream),
      field("Routes (comma-separated)", routes),
      field("Input $/M tokens", input),
      field("Cached input $/M", cached),
      field("Output $/M tokens", output),
      field("Max output tokens", maxOutput),
      field("Falls back to", alternates),
      field("Deprecated from", deprecated),
      field("Retires on", retires),
      field("Successor", successor),
      h(
        "label",
        { class: "field checkbox" },
        h("span", { text: "After retirement" }),
        h("span", {}, reroute, " serve the successor"),
      ),
      h("button", {
        class: "primary",
        type: "submit",
        "data-testid": "model-save",
      }, "Save model"),
      h("button", { type: "button", onclick: closeEditor }, "Cancel"),
      message,
    ),
  );
}

/** A catalog entry's end of life: deprecated from, retires on, successor. */
function lifecycle(entry) {
  const life = entry.lifecycle;
  if (!life) return "";
  const day = (iso) => iso.slice(0, 10);
  const parts = [];
  if (life.deprecated) parts.push(`deprecated ${day(life.deprecated)}`);
  if (life.retires) parts.push(`retires ${day(life.retires)}`);
  if (life.successor) {
    parts.push(
      `${life.reroute ? "then served by" : "successor"} ${life.successor}`,
    );
  }
  return h("span", {
    class: "warn",
    "data-lifecycle": entry.id,
    text: parts.join(" · "),
  });
}
