// Every node the canvas knows, kept live from the daemon-wide feed (GET /v1/events).
//
// The snapshot (GET /v1/canvas/snapshot) gives the cards, attention and counts; the
// feed then says what changed. The feed has no resume, so each time it (re)connects
// the snapshot is read again. One EventSource for the whole canvas: a browser allows
// only ~6 connections per origin.

import { events, get, query } from "./api.js";

const SETTLED = new Set(["completed", "failed", "cancelled"]);
const DEADLINE_NEAR_MS = 5 * 60 * 1000;
const TOKENS_REFRESH_MS = 750;
const ATTENTION_REFRESH_MS = 300;
const ROSTER_REFRESH_MS = 30_000;

export const isSettled = (status) => SETTLED.has(status);

/** The node fields a canvas card has, from a full node (GET /v1/nodes/{id}). */
function cardOf(node) {
  return {
    node_id: node.node_id,
    name: node.name,
    kind: node.kind,
    mode: node.mode,
    status: node.status,
    root: node.root,
    parent: node.parent,
    creator: node.creator,
    profile: node.profile,
    created_at: node.created_at,
    updated_at: node.updated_at,
    turns: node.turns,
    input_tokens: node.input_tokens,
    output_tokens: node.output_tokens,
    outcome_kind: null,
    outcome_reason: null,
  };
}

class Store extends EventTarget {
  constructor() {
    super();
    /** node id → card */
    this.cards = new Map();
    /** node id → list of attention reasons */
    this.attention = new Map();
    this.attentionItems = [];
    /** node id → deadline (ms since epoch) for live nodes that have one */
    this.deadlines = new Map();
    this.connected = false;
    this.loaded = false;
    /** node id → the number of its last event the store has applied */
    this.seqs = new Map();
    /** node id → its events that came while it was first read */
    this._fetching = new Map();
    /** reads of the snapshot in flight, and the events that came meanwhile */
    this._reloading = 0;
    this._held = [];
    this._tokenTimers = new Map();
    this._attentionTimer = 0;
    this._changedTimer = 0;
    this._source = null;
  }

  /** Read the snapshot and open the feed (which reads it again each time it connects:
   * what happened before the feed was listening is in the later snapshot). */
  start() {
    if (this._source) return;
    // Not waiting for the feed to open: its headers may come only with its first record.
    this.reload().catch(() => {});
    const handlers = {};
    for (const type of [
      "node.status.changed",
      "node.settled",
      "node.turn.started",
      "node.turn.completed",
      "node.tool_call.started",
      "node.tool_call.completed",
      "node.output_text.done",
      "node.report.pushed",
      "node.human_request.filed",
      "node.human_request.resolved",
    ]) {
      handlers[type] = (data) => this._onEvent(type, data);
    }
    this._source = events("/v1/events", handlers, {
      onOpen: () => {
        this.connected = true;
        this._emit("connection");
        this.reload().catch(() => {});
      },
    });
    this._source.addEventListener("error", () => {
      this.connected = false;
      this._emit("connection");
    });
    setInterval(() => this._readRoster(), ROSTER_REFRESH_MS);
  }

  /** Read the whole snapshot again.
   *
   * Events that come while it is read are held, then applied over it unless the
   * snapshot covers them already (its event_sequences): a snapshot read before an
   * event never hides it, and one read after never has it applied twice. */
  async reload() {
    this._reloading += 1;
    try {
      const snapshot = await get("/v1/canvas/snapshot");
      this.cards = new Map(snapshot.nodes.map((card) => [card.node_id, card]));
      this.seqs = new Map(Object.entries(snapshot.event_sequences || {}));
      this._setAttention(snapshot.attention);
      this.loaded = true;
      for (const [type, data] of this._held) this._apply(type, data);
    } finally {
      this._reloading -= 1;
      if (this._reloading === 0) this._held = [];
    }
    this._changed();
    this._readRoster();
  }

  _onEvent(type, data) {
    if (!data.node_id) return;
    this.dispatchEvent(new CustomEvent("event", { detail: { type, data } }));
    if (this._reloading) this._held.push([type, data]);
    else this._apply(type, data);
  }

  /** Apply one feed event to its card (once: the numbers the store has seen are kept). */
  _apply(type, data) {
    const id = data.node_id;
    const pending = this._fetching.get(id);
    if (pending) {
      pending.push([type, data]); // applied once the node is read
      return;
    }
    const seq = data.sequence_number;
    if (typeof seq === "number") {
      if (seq <= (this.seqs.get(id) ?? 0)) return;
      this.seqs.set(id, seq);
    }
    const card = this.cards.get(id);
    if (!card) {
      this.seqs.delete(id);
      this._fetchNode(id, [type, data]);
      return;
    }
    if (type === "node.status.changed" && data.status) {
      card.status = data.status;
      this._changed();
      this._refreshAttention();
    } else if (type === "node.settled") {
      const outcome = data.outcome || {};
      card.outcome_kind = outcome.kind || null;
      card.outcome_reason = outcome.reason || null;
      this._refreshTokens(id);
      this._refreshAttention();
    } else if (type === "node.turn.completed") {
      this._refreshTokens(id);
    } else if (type.startsWith("node.human_request.")) {
      this._refreshAttention();
      this._emit("inbox");
    }
  }

  /** A node first heard of on the feed (just created): read it, then show it, then
   * apply its events (the first, and those that came while it was read). */
  async _fetchNode(id, first) {
    const pending = [first];
    this._fetching.set(id, pending);
    try {
      const node = await get(`/v1/nodes/${encodeURIComponent(id)}`);
      this.cards.set(id, { ...cardOf(node), ...(this.cards.get(id) || {}), status: node.status });
      if (node.deadline_at) this.deadlines.set(id, Date.parse(node.deadline_at));
    } catch {
      // pruned already, or the session ended (the page says so)
    } finally {
      this._fetching.delete(id);
    }
    if (this.cards.has(id)) for (const [type, data] of pending) this._apply(type, data);
    this._changed();
  }

  /** A node's tokens and turns, read again soon (at most once per interval per node). */
  _refreshTokens(id) {
    if (this._tokenTimers.has(id)) return;
    this._tokenTimers.set(
      id,
      setTimeout(async () => {
        this._tokenTimers.delete(id);
        try {
          const node = await get(`/v1/nodes/${encodeURIComponent(id)}`);
          this.upsert(node);
        } catch {
          // gone
        }
      }, TOKENS_REFRESH_MS),
    );
  }

  /** Put a node read elsewhere (the node page, a create) into the store. */
  upsert(node) {
    const card = this.cards.get(node.node_id);
    const fresh = cardOf(node);
    if (card) {
      fresh.outcome_kind = card.outcome_kind;
      fresh.outcome_reason = card.outcome_reason;
    }
    this.cards.set(node.node_id, { ...card, ...fresh });
    if (node.deadline_at && !isSettled(node.status)) this.deadlines.set(node.node_id, Date.parse(node.deadline_at));
    else this.deadlines.delete(node.node_id);
    this._changed();
  }

  _refreshAttention() {
    clearTimeout(this._attentionTimer);
    this._attentionTimer = setTimeout(async () => {
      try {
        this._setAttention(await get("/v1/canvas/attention"));
        this._changed();
      } catch {
        // the next event tries again
      }
    }, ATTENTION_REFRESH_MS);
  }

  _setAttention(items) {
    this.attentionItems = items;
    this.attention = new Map();
    for (const item of items) {
      if (!item.node_id) continue;
      const reasons = this.attention.get(item.node_id) || [];
      if (!reasons.includes(item.reason)) reasons.push(item.reason);
      this.attention.set(item.node_id, reasons);
    }
    this._emit("attention");
  }

  async _readRoster() {
    try {
      const roster = await get("/v1/canvas/roster");
      this.deadlines = new Map(
        roster.filter((entry) => entry.deadline_at).map((entry) => [entry.node_id, Date.parse(entry.deadline_at)]),
      );
      this._changed();
    } catch {
      // kept as it was
    }
  }

  /** Whether a live node's deadline is less than five minutes away. */
  deadlineNear(id) {
    const at = this.deadlines.get(id);
    return at !== undefined && at - Date.now() < DEADLINE_NEAR_MS;
  }

  /** The badges a node shows: "asking", "failed", "deadline" ... */
  badges(id) {
    const reasons = [...(this.attention.get(id) || [])];
    const card = this.cards.get(id);
    if (card && !isSettled(card.status) && this.deadlineNear(id) && !reasons.includes("deadline_near")) {
      reasons.push("deadline_near");
    }
    return reasons;
  }

  /** Totals over every node. */
  totals() {
    let input = 0;
    let output = 0;
    const counts = {};
    for (const card of this.cards.values()) {
      input += card.input_tokens || 0;
      output += card.output_tokens || 0;
      counts[card.status] = (counts[card.status] || 0) + 1;
    }
    return { nodes: this.cards.size, input, output, counts };
  }

  /** Listeners get one "change" per animation frame at most, however many events came. */
  _changed() {
    if (this._changedTimer) return;
    this._changedTimer = requestAnimationFrame(() => {
      this._changedTimer = 0;
      this._emit("change");
    });
  }

  _emit(type) {
    this.dispatchEvent(new Event(type));
  }
}

/** The page's one store. */
export const store = new Store();

/** The open inbox tickets (for the badge in the header and the inbox view). */
export async function openTickets(params = {}) {
  return get(`/v1/human/inbox${query(params)}`);
}
