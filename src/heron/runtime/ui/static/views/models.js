// Models: which providers have a key installed (never the key itself), whether each is
// ready, and the default model.

import { get } from "../api.js";
import { h, replace, when } from "../dom.js";
import { notify } from "../notify.js";

/** Mount the models view in `root`; returns its cleanup. */
export function mount(root) {
  const body = h("div", { id: "models-body" });
  replace(root, h("section", { class: "models", "aria-labelledby": "models-title" }, h("h1", { id: "models-title" }, "Models"), body));
  Promise.all([get("/v1/model-auth"), get("/v1/model-auth/readiness"), get("/v1/model-config")])
    .then(([keys, readiness, config]) => {
      const keyOf = new Map(keys.map((k) => [k.provider, k]));
      replace(
        body,
        h(
          "p",
          { id: "models-default" },
          "Default model: ",
          h("code", {}, config.effective_default || "none"),
          ` (${config.source}) `,
          h("span", { class: `pill ${config.ready ? "ok" : "bad"}` }, config.ready ? "ready" : "not ready"),
        ),
        h(
          "table",
          { class: "table" },
          h("thead", {}, h("tr", {}, ["Provider", "Key", "Ready", "Detail"].map((t) => h("th", { scope: "col" }, t)))),
          h(
            "tbody",
            {},
            readiness.providers.map((p) => {
              const key = keyOf.get(p.provider);
              return h(
                "tr",
                {},
                h("td", {}, p.provider),
                h("td", {}, key ? (key.installed ? ["installed", key.source ? ` (${key.source})` : "", " ", when(key.installed_at)] : key.source ? `set (${key.source})` : "not set") : "no key needed"),
                h("td", {}, h("span", { class: `pill ${p.ready ? "ok" : "bad"}` }, p.ready ? "ready" : "not ready")),
                h("td", { class: "detail" }, p.detail),
              );
            }),
          ),
        ),
      );
    })
    .catch((error) => {
      if (error.status !== 401) notify(`Could not read the models: ${error.message}`, "error");
    });
  return () => {};
}
