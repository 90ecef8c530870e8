// Create a node from the page: prompt, name, model, kind, scopes, output schema, deadline.

import { get, post } from "../api.js";
import { h, replace } from "../dom.js";
import { notify } from "../notify.js";
import { store } from "../store.js";

/** The scopes a node may be given (api.SCOPES). */
const SCOPES = [
  ["act", "files and shell in its directory"],
  ["ask", "ask a person (the inbox)"],
  ["memory:read", "read the profile's memory"],
  ["memory:write", "write the profile's memory"],
  ["net", "its commands reach the network"],
  ["schedule", "make crons"],
];

/** Mount the form in `root`; returns its cleanup. */
export function mount(root) {
  const prompt = h("textarea", { id: "create-prompt", rows: 6, required: true });
  const name = h("input", { id: "create-name", autocomplete: "off" });
  const model = h("input", { id: "create-model", list: "create-models", autocomplete: "off", placeholder: "the daemon's default" });
  const models = h("datalist", { id: "create-models" });
  const kind = h("select", { id: "create-kind" }, h("option", { value: "" }, "the default kind"));
  const deadline = h("input", { id: "create-deadline", placeholder: "e.g. 30m, 2h", autocomplete: "off" });
  const schema = h("textarea", { id: "create-schema", rows: 4, placeholder: '{"type": "object", "properties": {...}}' });
  const scopeMode = h("input", { type: "checkbox", id: "create-limit-scopes" });
  const scopeBoxes = SCOPES.map(([scope, what]) => {
    const box = h("input", { type: "checkbox", value: scope, disabled: true, dataset: { scope } });
    return h("label", { class: "check" }, box, " ", h("code", {}, scope), ` — ${what}`);
  });
  scopeMode.addEventListener("change", () => {
    for (const label of scopeBoxes) label.querySelector("input").disabled = !scopeMode.checked;
  });
  const error = h("p", { class: "form-error", role: "alert", hidden: true });
  const field = (text, input, hint) => h("div", { class: "field" }, h("label", { for: input.id }, text), input, hint ? h("p", { class: "hint" }, hint) : null);

  const form = h(
    "form",
    { class: "create-form", id: "create-form" },
    field("Prompt", prompt, "The node's first message: what to do."),
    field("Name", name, "Shown on the canvas."),
    field("Model", model, "A provider spec: openai:gpt-4.1, anthropic:..., local, scripted:FILE.json."),
    models,
    field("Kind", kind),
    h(
      "fieldset",
      { class: "field" },
      h("legend", {}, "Scopes"),
      h("label", { class: "check" }, scopeMode, " Limit the node to these scopes (unticked: its kind's tools)"),
      scopeBoxes,
    ),
    field("Output schema (JSON Schema, optional)", schema, "The node must submit a result matching it."),
    field("Deadline (optional)", deadline),
    error,
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary", id: "create-submit" }, "Create node"), h("a", { class: "button", href: "#/" }, "Cancel")),
  );

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.hidden = true;
    const body = { prompt: prompt.value };
    if (name.value.trim()) body.name = name.value.trim();
    if (model.value.trim()) body.model = model.value.trim();
    if (kind.value) body.kind = kind.value;
    if (deadline.value.trim()) body.deadline = deadline.value.trim();
    if (scopeMode.checked) body.scopes = scopeBoxes.map((l) => l.querySelector("input")).filter((b) => b.checked).map((b) => b.value);
    if (schema.value.trim()) {
      try {
        body.output_schema = JSON.parse(schema.value);
      } catch (problem) {
        error.textContent = `The output schema is not JSON: ${problem.message}`;
        error.hidden = false;
        schema.focus();
        return;
      }
    }
    try {
      const node = await post("/v1/nodes", body);
      store.upsert(node);
      notify(`Created ${node.name || node.node_id}`);
      location.hash = `#/nodes/${encodeURIComponent(node.node_id)}`;
    } catch (problem) {
      error.textContent = `The daemon refused it: ${problem.message}`;
      error.hidden = false;
    }
  });

  replace(root, h("section", { class: "create", "aria-labelledby": "create-title" }, h("h1", { id: "create-title" }, "New node"), form));
  prompt.focus();

  get("/v1/kinds")
    .then((answer) => {
      for (const k of answer.kinds) kind.append(h("option", { value: k.name }, `${k.name} — ${k.description || ""}`));
    })
    .catch(() => {});
  get("/v1/model-auth/readiness")
    .then((readiness) => {
      model.placeholder = `the daemon's default (${readiness.default_provider})`;
      for (const p of readiness.providers) if (p.ready) models.append(h("option", { value: p.provider }));
    })
    .catch(() => {});
  return () => {};
}
