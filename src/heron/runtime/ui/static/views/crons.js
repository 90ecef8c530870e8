// Crons: their schedules and next firing, paused or not; pause, resume, run now.

import { get, post } from "../api.js";
import { h, replace, when } from "../dom.js";
import { notify } from "../notify.js";

/** Mount the crons view in `root`; returns its cleanup. */
export function mount(root) {
  const body = h("div", { id: "crons-list" });
  replace(root, h("section", { class: "crons", "aria-labelledby": "crons-title" }, h("h1", { id: "crons-title" }, "Crons"), body));

  const act = async (cron, what) => {
    try {
      await post(`/v1/crons/${encodeURIComponent(cron.cron_id)}/${what}`);
      notify(`${cron.name || cron.cron_id}: ${what === "run" ? "fired" : `${what}d`}`);
      load();
    } catch (error) {
      notify(`${what} failed: ${error.message}`, "error");
    }
  };

  const load = async () => {
    let crons;
    try {
      crons = await get("/v1/crons");
    } catch (error) {
      if (error.status !== 401) notify(`Could not read the crons: ${error.message}`, "error");
      return;
    }
    if (!crons.length) {
      replace(body, h("p", { class: "empty" }, "No crons. A node with the schedule scope, or `heron crons create`, makes one."));
      return;
    }
    replace(
      body,
      h(
        "table",
        { class: "table" },
        h("thead", {}, h("tr", {}, ["Name", "Schedule", "Next firing", "Last fired", "Fired", ""].map((t) => h("th", { scope: "col" }, t)))),
        h(
          "tbody",
          {},
          crons.map((cron) =>
            h(
              "tr",
              { dataset: { cronId: cron.cron_id } },
              h("td", {}, cron.name || cron.cron_id, cron.paused ? h("span", { class: "badge" }, "paused") : null),
              h("td", {}, h("code", {}, cron.schedule), ` ${cron.timezone}`),
              h("td", {}, cron.paused ? "—" : when(cron.next_fire_at)),
              h("td", {}, when(cron.last_fired_at), cron.last_node_id ? [" ", h("a", { href: `#/nodes/${encodeURIComponent(cron.last_node_id)}` }, "its node")] : null),
              h("td", {}, String(cron.fire_count)),
              h(
                "td",
                { class: "actions" },
                cron.paused
                  ? h("button", { type: "button", on: { click: () => act(cron, "resume") } }, "Resume")
                  : h("button", { type: "button", on: { click: () => act(cron, "pause") } }, "Pause"),
                h("button", { type: "button", on: { click: () => act(cron, "run") } }, "Run now"),
              ),
            ),
          ),
        ),
      ),
    );
  };
  load();
  const timer = setInterval(load, 30_000);
  return () => clearInterval(timer);
}
