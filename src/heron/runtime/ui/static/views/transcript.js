// A node's transcript: its saved and in-progress messages (GET /v1/canvas/history/read),
// with the text being written right now appended live from its event stream.
//
// The history is the record (it holds tool arguments and results, which events never
// carry); events say when to read it again and bring the text as it is produced.

import { get, query } from "../api.js";
import { h, pretty, replace } from "../dom.js";

const PAGE = 500;

/** The node's whole transcript, and the number of its last event whose effect is in it
 * (stream after that number to see only what is new). */
export async function readHistory(nodeId) {
  const messages = [];
  let offset = 0;
  for (;;) {
    const page = await get(`/v1/canvas/history/read${query({ node_id: nodeId, offset, limit: PAGE })}`);
    messages.push(...page.messages);
    if (page.next_offset === null || page.next_offset === undefined) {
      return { messages, mark: page.event_sequence ?? 0 };
    }
    offset = page.next_offset;
  }
}

function toolBlock(call, result, running) {
  const status = result ? (result.is_error ? "error" : "ok") : running ? "running" : "no result";
  return h(
    "div",
    { class: `tool tool-${status.replace(" ", "-")}`, dataset: { toolCallId: call.id } },
    h("div", { class: "tool-head" }, h("span", { class: "tool-name" }, call.name), h("span", { class: `pill tool-status-${status.replace(" ", "-")}` }, status)),
    h("details", { class: "tool-args" }, h("summary", {}, "Arguments"), pretty(call.arguments)),
    result ? h("details", { class: "tool-result", open: result.is_error }, h("summary", {}, result.is_error ? "Error" : "Result"), h("pre", {}, result.text)) : null,
  );
}

function roleTitle(message, index) {
  if (message.role === "user") return index === 0 ? "Prompt" : "Message";
  if (message.role === "assistant") return "Assistant";
  return message.role;
}

/** The transcript's elements for `messages` (tool results are shown under their calls). */
export function renderMessages(messages, running) {
  const results = new Map();
  for (const message of messages) if (message.role === "tool" && message.tool_call_id) results.set(message.tool_call_id, message);
  const shown = [];
  let userCount = 0;
  for (const message of messages) {
    if (message.role === "tool" && message.tool_call_id) {
      const hasCall = messages.some((m) => m.tool_calls && m.tool_calls.some((c) => c.id === message.tool_call_id));
      if (hasCall) continue;
    }
    if (message.role === "system") {
      shown.push(h("details", { class: "msg msg-system" }, h("summary", {}, "System instruction"), h("pre", {}, message.text)));
      continue;
    }
    const title = roleTitle(message, message.role === "user" ? userCount++ : 1);
    shown.push(
      h(
        "article",
        { class: `msg msg-${message.role}`, dataset: { index: message.index } },
        h("h3", { class: "msg-role" }, title),
        message.text ? h("div", { class: "msg-text" }, message.text) : null,
        (message.tool_calls || []).map((call) => toolBlock(call, results.get(call.id), running)),
      ),
    );
  }
  return shown;
}

/** The transcript pane: history plus the live tail. */
export class Transcript {
  constructor(nodeId) {
    this.nodeId = nodeId;
    this.el = h("div", { class: "transcript", id: "transcript", "aria-live": "off" });
    this.history = h("div", { class: "history" });
    this.liveText = h("div", { class: "msg-text" });
    this.live = h("article", { class: "msg msg-assistant streaming", id: "live-text", hidden: true }, h("h3", { class: "msg-role" }, "Assistant · writing"), this.liveText);
    this.el.append(this.history, this.live);
    this.partial = "";
    this.running = false;
    /** The number of the node's last event the history shown covers. */
    this.mark = 0;
    /** The number of the first delta of the text shown live. */
    this.partialFrom = 0;
    this._timer = 0;
    this._reading = null;
    this._again = false;
  }

  /** Read the history again soon (a burst of events reads it once). */
  refresh(delay = 120) {
    clearTimeout(this._timer);
    this._timer = setTimeout(() => this.load(), delay);
  }

  async load() {
    if (this._reading) {
      this._again = true;
      return this._reading;
    }
    this._reading = (async () => {
      try {
        const { messages, mark } = await readHistory(this.nodeId);
        this.mark = Math.max(this.mark, mark);
        const stick = this._atBottom();
        replace(this.history, renderMessages(messages, this.running));
        // The history has the text being shown live once it covers its first delta.
        if (this.partial && this.mark >= this.partialFrom) this.partial = "";
        if (!this.partial) this._hideLive();
        if (stick) this._scrollDown();
      } finally {
        this._reading = null;
      }
      if (this._again) {
        this._again = false;
        await this.load();
      }
    })();
    return this._reading;
  }

  /** Text being written (a delta); the first after a gap starts a new message. */
  delta(text, seq) {
    if (seq <= this.mark) return; // the history shown has its message already
    const stick = this._atBottom();
    if (!this.partial) this.partialFrom = seq;
    this.partial += text;
    this.liveText.textContent = this.partial;
    this.live.hidden = false;
    if (stick) this._scrollDown();
  }

  /** A message is complete: the history has it now. */
  done(text, seq) {
    this.partial = "";
    if (seq <= this.mark) this._hideLive(); // the history shown has it
    else this.liveText.textContent = text;
    this.refresh(0);
  }

  /** Hide the live tail, and empty it (no stale copy of a message stays in the page). */
  _hideLive() {
    this.live.hidden = true;
    this.liveText.textContent = "";
  }

  _atBottom() {
    const page = document.scrollingElement;
    return page.scrollHeight - page.scrollTop - page.clientHeight < 80;
  }

  _scrollDown() {
    this.live.scrollIntoView({ block: "end" });
  }

  dispose() {
    clearTimeout(this._timer);
  }
}
