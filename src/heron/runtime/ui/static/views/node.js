// A node's page: its transcript streaming live, its outcome, config and reports, and
// the actions a person takes on it (message, interrupt, close, fork, revive).

import { events, get, patch, post, query } from "../api.js";
import { h, label, pretty, replace, statusPill, tokens, when } from "../dom.js";
import { notify } from "../notify.js";
import { isSettled, store } from "../store.js";
import { Transcript } from "./transcript.js";

const LIVE = new Set(["running", "dormant", "interrupted"]);
const REVIVABLE = new Set(["dormant", "interrupted", "failed"]); // as POST …/revive takes

/** Mount the page of node `id` in `root`; returns its cleanup. */
export function mount(root, { id }) {
  const path = `/v1/nodes/${encodeURIComponent(id)}`;
  const transcript = new Transcript(id);
  let node = null;
  let source = null;
  let disposed = false;

  const title = h("h1", { id: "node-title" }, id);
  const status = h("span", { id: "node-status" });
  const badges = h("span", { class: "badges" });
  const usage = h("span", { class: "tok", id: "node-tokens" });
  const actions = h("div", { class: "actions", role: "group", "aria-label": "Actions" });
  const outcome = h("section", { class: "panel", id: "node-outcome", "aria-label": "Outcome" });
  const config = h("section", { class: "panel", id: "node-config", "aria-label": "Config" });
  const reports = h("section", { class: "panel", id: "node-reports", "aria-label": "Reports" });
  const family = h("section", { class: "panel", id: "node-family", "aria-label": "Tree" });
  const asking = h("section", { class: "panel", id: "node-asking", hidden: true });

  const message = h("textarea", { id: "message-body", rows: 3, placeholder: "Send the node a message (Ctrl+Enter)", "aria-label": "Message" });
  const sendButton = h("button", { type: "submit", class: "primary", id: "send-message" }, "Send");
  const messageForm = h(
    "form",
    { class: "message-form", id: "message-form" },
    message,
    sendButton,
  );

  replace(
    root,
    h(
      "section",
      { class: "node-page", "aria-labelledby": "node-title" },
      h("p", { class: "crumbs" }, h("a", { href: "#/" }, "← Canvas")),
      h("header", { class: "node-head" }, title, status, badges, usage),
      actions,
      h(
        "div",
        { class: "node-body" },
        h("div", { class: "node-main" }, asking, transcript.el, messageForm),
        h("aside", { class: "node-side" }, outcome, config, reports, family),
      ),
    ),
  );

  const act = async (what, fn) => {
    try {
      const answer = await fn();
      notify(`${what}: done`);
      if (answer && answer.node_id && answer.status) show(answer);
      return answer;
    } catch (error) {
      notify(`${what} failed: ${error.message}`, "error");
      return null;
    }
  };

  const button = (text, idName, handler, enabled) =>
    h("button", { type: "button", id: idName, disabled: !enabled, on: { click: handler } }, text);

  const renderActions = () => {
    const s = node.status;
    replace(
      actions,
      button("Interrupt", "action-interrupt", () => act("Interrupt", () => post(`${path}/interrupt`)), s === "running"),
      button("Close", "action-close", () => {
        if (confirm(`Close ${label(node)} and the subtree it owns? This cannot be undone.`)) act("Close", () => post(`${path}/close`, { reason: "closed on the page" }));
      }, !isSettled(s)),
      button("Fork", "action-fork", async () => {
        // The message box, if filled, is the fork's first message (else it waits, dormant).
        const prompt = message.value.trim();
        const fork = await act("Fork", () => post(`${path}/fork`, prompt ? { prompt } : {}));
        if (fork) {
          message.value = "";
          location.hash = `#/nodes/${encodeURIComponent(fork.node_id)}`;
        }
      }, true),
      button("Revive", "action-revive", () => {
        const text = message.value.trim();
        act("Revive", () => post(`${path}/revive`, text ? { message: text } : {})).then((answer) => {
          if (answer) message.value = "";
          openStream();
        });
      }, REVIVABLE.has(s)),
    );
  };

  const renderConfig = () => {
    const rows = [
      ["Id", node.node_id],
      ["Kind", node.kind],
      ["Model", node.model],
      ["Profile", node.profile],
      ["Scopes", node.scopes === null ? "all" : node.scopes.join(", ") || "none"],
      ["Mode", node.mode],
      ["Lifecycle", node.root ? `root, ${node.root_lifecycle}` : "child"],
      ["Directory", node.cwd],
      ["Output schema", node.has_output_schema ? "yes" : "no"],
      ["Runs · turns", `${node.runs} · ${node.turns}`],
      ["Tokens", `${node.input_tokens} in · ${node.output_tokens} out`],
    ];
    const name = h("input", { id: "config-name", value: node.name || "", "aria-label": "Name" });
    const model = h("input", { id: "config-model", value: node.model || "", "aria-label": "Model" });
    const deadline = h("input", { id: "config-deadline", placeholder: "e.g. 30m", "aria-label": "Deadline from now" });
    const form = h(
      "form",
      { class: "config-form" },
      h("label", {}, "Name ", name),
      h("label", {}, "Model ", model),
      h("label", {}, "Deadline ", deadline),
      h("button", { type: "submit" }, "Save config"),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const change = {};
      if (name.value.trim() !== (node.name || "")) change.name = name.value.trim();
      if (model.value.trim() && model.value.trim() !== node.model) change.model = model.value.trim();
      if (deadline.value.trim()) change.deadline = deadline.value.trim();
      if (Object.keys(change).length) act("Save config", () => patch(`${path}/config`, change));
    });
    replace(
      config,
      h("h2", {}, "Config"),
      h("dl", { class: "facts" }, rows.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v === null || v === undefined || v === "" ? "—" : String(v))])),
      h("dl", { class: "facts" }, h("dt", {}, "Created"), h("dd", {}, when(node.created_at)), h("dt", {}, "Deadline"), h("dd", {}, when(node.deadline_at))),
      isSettled(node.status) ? null : form,
    );
  };

  const renderFamily = () => {
    const link = (nodeId) => {
      const card = store.cards.get(nodeId);
      return h("a", { href: `#/nodes/${encodeURIComponent(nodeId)}` }, card ? label(card) : nodeId);
    };
    const children = [...store.cards.values()].filter((card) => card.parent === id);
    replace(
      family,
      h("h2", {}, "Tree"),
      h(
        "dl",
        { class: "facts" },
        h("dt", {}, "Parent"),
        h("dd", {}, node.parent ? link(node.parent) : "— (a root)"),
        node.creator && node.creator !== node.parent ? [h("dt", {}, "Made by"), h("dd", {}, link(node.creator))] : null,
        node.forked_from ? [h("dt", {}, "Forked from"), h("dd", {}, link(node.forked_from))] : null,
      ),
      children.length ? h("ul", { class: "children" }, children.map((child) => h("li", {}, link(child.node_id), " ", statusPill(child.status)))) : null,
    );
  };

  const show = (fresh) => {
    node = fresh;
    store.upsert(fresh);
    title.textContent = label(node);
    replace(status, statusPill(node.status));
    usage.textContent = `${tokens(node.input_tokens)} in · ${tokens(node.output_tokens)} out`;
    replace(badges, store.badges(id).map((reason) => h("span", { class: `badge badge-${reason}` }, reason.replace("_", " "))));
    transcript.running = node.status === "running";
    message.placeholder = isSettled(node.status)
      ? REVIVABLE.has(node.status)
        ? "A message for Revive or Fork (optional)"
        : "A first message for a Fork (optional)"
      : "Send the node a message (Ctrl+Enter); Fork and Revive take it too";
    sendButton.disabled = isSettled(node.status);
    renderActions();
    renderConfig();
    renderFamily();
  };

  const readNode = async () => show(await get(path));

  let outcomeSettled = false;
  const readOutcome = async () => {
    const poll = await get(`${path}/outcome`);
    outcomeSettled = poll.state === "settled";
    if (poll.state !== "settled") {
      replace(outcome, h("h2", {}, "Outcome"), h("p", { class: "muted" }, `Not settled (${poll.node_status}).`));
      return;
    }
    const o = poll.outcome;
    if (o.kind === "result") {
      replace(
        outcome,
        h("h2", {}, "Result"),
        o.output_text ? h("div", { class: "msg-text", id: "outcome-text" }, o.output_text) : null,
        o.structured_result !== null && o.structured_result !== undefined ? pretty(o.structured_result) : null,
        o.final_report_path ? h("p", {}, "Final report: ", h("code", {}, o.final_report_path)) : null,
      );
    } else {
      const detail = o.detail || {};
      replace(
        outcome,
        h("h2", { class: "failure" }, "Failure"),
        h("p", { id: "outcome-reason" }, h("strong", {}, o.reason)),
        detail.message ? h("pre", { class: "failure-detail" }, detail.message) : null,
        o.declined ? pretty(o.declined) : null,
      );
    }
  };

  const readReports = async () => {
    const list = await get(`${path}/reports`);
    replace(
      reports,
      h("h2", {}, `Reports (${list.length})`),
      list.length
        ? h("ol", { class: "reports" }, list.map((r) => h("li", {}, h("strong", {}, r.title || r.tier), " ", h("span", { class: "muted" }, r.tier), h("div", { class: "msg-text" }, r.body))))
        : h("p", { class: "muted" }, "None."),
    );
  };

  const readAsking = async () => {
    const tickets = await get(`/v1/human/inbox${query({ node_id: id })}`);
    asking.hidden = tickets.length === 0;
    replace(
      asking,
      tickets.length ? [h("h2", {}, "Waiting for you"), h("p", {}, h("a", { href: "#/inbox" }, `${tickets.length} question${tickets.length > 1 ? "s" : ""} in the inbox`), ": ", tickets.map((t) => t.title || t.questions[0].question).join("; "))] : [],
    );
  };

  const everything = () =>
    Promise.all([readNode(), transcript.load(), readOutcome(), readReports(), readAsking()]).catch((error) => {
      if (error.status === 404) replace(root, h("section", {}, h("h1", {}, "No such node"), h("p", {}, `There is no node ${id} (pruned?). `, h("a", { href: "#/" }, "Back to the canvas"))));
      else if (error.status !== 401) notify(`Could not read the node: ${error.message}`, "error");
    });

  let readTimer = 0;
  const readSoon = () => {
    clearTimeout(readTimer);
    readTimer = setTimeout(() => readNode().catch(() => {}), 200);
  };

  // The number of the last event applied: the stream starts after what the transcript
  // shows, and a reconnect (which replays from there) applies no event twice.
  let applied = 0;
  const once = (handlers) =>
    Object.fromEntries(
      Object.entries(handlers).map(([type, fn]) => [
        type,
        (data, message) => {
          const seq = data.sequence_number;
          if (typeof seq === "number") {
            if (seq <= applied) return;
            applied = seq;
          }
          fn(data, message);
        },
      ]),
    );
  /** The node's own stream (only this page opens one: the canvas shares the feed). */
  const openStream = () => {
    if (source || disposed) return;
    applied = Math.max(applied, transcript.mark);
    source = events(`${path}/events${query({ after: applied })}`, once({
      "node.output_text.delta": (data) => transcript.delta(data.delta, data.sequence_number),
      "node.output_text.done": (data) => transcript.done(data.text, data.sequence_number),
      "node.tool_call.started": () => transcript.refresh(),
      "node.tool_call.completed": () => transcript.refresh(),
      "node.turn.completed": () => {
        transcript.refresh();
        readSoon();
      },
      "node.report.pushed": () => readReports().catch(() => {}),
      "node.human_request.filed": () => readAsking().catch(() => {}),
      "node.human_request.resolved": () => readAsking().catch(() => {}),
      "node.status.changed": (data) => {
        if (node) show({ ...node, status: data.status });
        transcript.running = data.status === "running";
        transcript.refresh();
        readSoon();
      },
      "node.settled": () => {
        // The stream ends after this; a reconnect would only replay it. Stop, and read
        // the outcome (a revive opens a new stream).
        closeStream();
        transcript.refresh(0);
        readOutcome().catch(() => {});
        readSoon();
      },
    }));
  };
  const closeStream = () => {
    if (source) source.close();
    source = null;
  };

  // A node revived elsewhere shows up on the feed: follow it again.
  const onFeed = (event) => {
    const { type, data } = event.detail;
    if (data.node_id !== id || source) return;
    if (type === "node.status.changed" && LIVE.has(data.status)) {
      openStream();
      readSoon();
      readOutcome().catch(() => {});
    }
  };
  store.addEventListener("event", onFeed);
  const onAttention = () => node && show(node);
  store.addEventListener("attention", onAttention);

  messageForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = message.value.trim();
    if (!body) return;
    const sent = await act("Message", () => post(`${path}/messages`, { body }));
    if (sent) {
      message.value = "";
      notify(sent.delivery === "woke" ? "Message sent: the node woke" : "Message queued: the node reads it next turn");
      openStream();
    }
  });
  message.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      messageForm.requestSubmit();
    }
  });

  everything().then(() => {
    if (!node) return;
    if (!isSettled(node.status)) openStream();
    else if (!outcomeSettled) {
      // It settled while the page read it: the outcome and transcript read are older.
      readOutcome().catch(() => {});
      transcript.refresh(0);
    }
  });

  return () => {
    disposed = true;
    closeStream();
    transcript.dispose();
    clearTimeout(readTimer);
    store.removeEventListener("event", onFeed);
    store.removeEventListener("attention", onAttention);
  };
}
