// The console's callers tab: each caller with balance, spend and limits, and
// the editors to create one, top it up, set its limits or revoke it.
import { h, table } from "./dom.js";
import { count, limitLines, percent, usd } from "./format.js";
import {
  call,
  closeEditor,
  field,
  formError,
  get,
  panel,
  rangeBar,
  render,
  state,
  submit,
} from "./console_shell.js";

/** The callers, and the editor open on one. */
export async function callersTab() {
  const [keys, report] = await Promise.all([
    get("/admin/keys"),
    get(`/admin/usage?range=${state.range}`),
  ]);
  const usage = new Map(report.byCaller.map((row) => [row.callerId, row]));
  const editing = state.editing;
  const editor = editing?.kind === "topup"
    ? topUpPanel(keys.data.find((c) => c.id === editing.id))
    : editing?.kind === "limits"
    ? limitsPanel(keys.data.find((c) => c.id === editing.id))
    : editing?.kind === "revoke"
    ? revokePanel(keys.data.find((c) => c.id === editing.id))
    : null;
  return [
    rangeBar(),
    createdKey(),
    createCallerForm(),
    editor,
    table(
      [
        { label: "Name", value: (c) => c.name },
        { label: "Id", value: (c) => c.id },
        { label: "Balance", num: true, value: (c) => usd(c.balance) },
        {
          label: `Requests (${state.range})`,
          num: true,
          value: (c) => count(usage.get(c.id)?.requests),
        },
        {
          label: `Spend (${state.range})`,
          num: true,
          value: (c) => usd(usage.get(c.id)?.costUsd ?? 0),
        },
        {
          label: "Errors",
          num: true,
          value: (c) =>
            percent(usage.get(c.id)?.errorRate, usage.get(c.id)?.requests),
        },
        {
          label: "Limits",
          value: (c) =>
            h(
              "span",
              { class: "limits", "data-limits": c.id },
              limitLines(c.limits).map((line) => h("span", { text: line })),
            ),
        },
        {
          label: "Actions",
          value: (c) =>
            h(
              "span",
              { class: "actions" },
              h("button", {
                type: "button",
                "data-action": "topup",
                "data-caller": c.id,
                onclick: () => {
                  state.editing = { kind: "topup", id: c.id };
                  render();
                },
              }, "Top up"),
              h("button", {
                type: "button",
                "data-action": "limits",
                "data-caller": c.id,
                onclick: () => {
                  state.editing = { kind: "limits", id: c.id };
                  render();
                },
              }, "Limits"),
              h("button", {
                type: "button",
                "data-action": "revoke",
                "data-caller": c.id,
                onclick: () => {
                  state.editing = { kind: "revoke", id: c.id };
                  render();
                },
              }, "Revoke"),
            ),
        },
      ],
      keys.data,
      { testid: "callers-table", empty: "No callers yet." },
    ),
  ];
}

function createdKey() {
  if (!state.created) return null;
  const { name, key } = state.created;
  state.created = undefined;
  const status = h("span", { class: "muted", role: "status" });
  return h(
    "div",
    { class: "notice", "data-testid": "created-key" },
    h("p", {
      text: `Created "${name}". Its key is shown this once; copy it now:`,
    }),
    h(
      "div",
      { class: "copy" },
      h("code", { "data-testid": "created-key-value", text: key }),
      h("button", {
        type: "button",
        "data-testid": "copy-key",
        onclick: async () => {
          try {
            await navigator.clipboard.writeText(key);
            status.textContent = "Copied.";
          } catch {
            // No clipboard (a page not served over HTTPS or localhost): select it.
            getSelection().selectAllChildren(
              document.querySelector("[data-testid=created-key-value]"),
            );
            status.textContent = "Selected: press Ctrl+C to copy.";
          }
        },
      }, "Copy key"),
      status,
    ),
  );
}

function createCallerForm() {
  const name = h("input", {
    name: "name",
    required: true,
    maxlength: "200",
    "data-testid": "new-caller-name",
  });
  const credits = h("input", {
    name: "credits",
    type: "number",
    min: "0",
    step: "any",
    value: "10",
    "data-testid": "new-caller-credits",
  });
  const message = formError();
  return h(
    "form",
    {
      class: "inline",
      "data-testid": "create-caller-form",
      onsubmit: async (event) => {
        event.preventDefault();
        message.textContent = "";
        try {
          const made = await call("/admin/keys", {
            method: "POST",
            body: JSON.stringify({
              name: name.value,
              credits: Number(credits.value),
            }),
          });
          state.created = { name: made.name, key: made.key };
          render();
        } catch (error) {
          message.textContent = error.message;
        }
      },
    },
    field("New caller's name", name),
    field("Opening credit (USD)", credits),
    h("button", {
      class: "primary",
      type: "submit",
      "data-testid": "create-caller",
    }, "Create caller"),
    message,
  );
}

function topUpPanel(caller) {
  if (!caller) return null;
  const amount = h("input", {
    name: "amount",
    type: "number",
    step: "any",
    required: true,
    value: "5",
    "data-testid": "topup-amount",
  });
  const message = formError();
  return panel(
    `Add credit to "${caller.name}" (balance ${usd(caller.balance)})`,
    "topup-panel",
    h(
      "form",
      {
        class: "inline",
        onsubmit: (event) => {
          event.preventDefault();
          submit(
            message,
            () =>
              call(`/admin/keys/${encodeURIComponent(caller.id)}/credits`, {
                method: "POST",
                body: JSON.stringify({ amount: Number(amount.value) }),
              }),
          );
        },
      },
      field("Amount (USD; negative takes credit away)", amount),
      h("button", {
        class: "primary",
        type: "submit",
        "data-testid": "topup-submit",
      }, "Add credit"),
      h("button", { type: "button", onclick: closeEditor }, "Cancel"),
      message,
    ),
  );
}

function revokePanel(caller) {
  if (!caller) return null;
  const message = formError();
  return panel(
    `Revoke "${caller.name}"?`,
    "revoke-panel",
    h("p", {
      text:
        "Its key stops working at once, on every gateway process. This cannot be undone: the caller needs a new key.",
    }),
    h(
      "div",
      { class: "toolbar" },
      h("button", {
        type: "button",
        class: "danger",
        "data-testid": "revoke-confirm",
        onclick: () =>
          submit(
            message,
            () =>
              call(`/admin/keys/${encodeURIComponent(caller.id)}`, {
                method: "DELETE",
              }),
          ),
      }, "Revoke the key"),
      h("button", { type: "button", onclick: closeEditor }, "Cancel"),
      message,
    ),
  );
}

/** `datetime-local` wants local time without a zone. */
function localInput(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  return new Date(date.getTime() - date.getTimezoneOffset() * 60_000)
    .toISOString().slice(0, 16);
}

function limitsPanel(caller) {
  if (!caller) return null;
  const limits = caller.limits ?? {};
  const number = (name, value, attrs = {}) =>
    h("input", {
      name,
      type: "number",
      min: "0",
      step: "1",
      value: value ?? "",
      "data-limit": name,
      ...attrs,
    });
  const rpm = number("rpm", limits.rpm);
  const tpm = number("tpm", limits.tpm);
  const budget = number("spend", limits.spend?.amount, { step: "any" });
  const period = h(
    "select",
    { name: "period", "data-limit": "period" },
    ["day", "week", "month"].map((p) =>
      h("option", { value: p, selected: limits.spend?.period === p }, p)
    ),
  );
  const models = h("input", {
    name: "models",
    value: limits.models?.join(", ") ?? "",
    placeholder: "every model",
    "data-limit": "models",
  });
  const expires = h("input", {
    name: "expiresAt",
    type: "datetime-local",
    value: localInput(limits.expiresAt),
    "data-limit": "expiresAt",
  });
  const message = formError();
  const save = (value) =>
    submit(message, () =>
      call(`/admin/keys/${encodeURIComponent(caller.id)}`, {
        method: "PATCH",
        body: JSON.stringify({ limits: value }),
      }));
  return panel(
    `Limits of "${caller.name}"`,
    "limits-panel",
    h("p", {
      class: "muted",
      text:
        "Leave a field empty for no limit. The budget is a spend cap per calendar period (UTC), on top of the balance.",
    }),
    h(
      "form",
      {
        class: "inline",
        onsubmit: (event) => {
          event.preventDefault();
          const next = {};
          if (rpm.value) next.rpm = Number(rpm.value);
          if (tpm.value) next.tpm = Number(tpm.value);
          if (budget.value) {
            next.spend = { amount: Number(budget.value), period: period.value };
          }
          const allowed = models.value.split(",").map((m) => m.trim())
            .filter(Boolean);
          if (allowed.length) next.models = allowed;
          if (expires.value) {
            next.expiresAt = new Date(expires.value).toISOString();
          }
          save(Object.keys(next).length ? next : null);
        },
      },
      field("Requests per minute", rpm),
      field("Tokens per minute", tpm),
      field("Budget (USD)", budget),
      field("Budget period", period),
      field("Allowed models (comma-separated)", models),
      field("Expires (local time)", expires),
      h("button", {
        class: "primary",
        type: "submit",
        "data-testid": "limits-save",
      }, "Save limits"),
      h("button", {
        type: "button",
        "data-testid": "limits-clear",
        onclick: () => save(null),
      }, "Remove all limits"),
      h("button", { type: "button", onclick: closeEditor }, "Cancel"),
      message,
    ),
  );
}
