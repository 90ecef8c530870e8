// The inbox: open human requests, their questions and choices, answered on the page.
// An answered request stays on the page, following its node as it wakes.

import { post } from "../api.js";
import { h, label, replace, statusPill, when } from "../dom.js";
import { notify } from "../notify.js";
import { openTickets, store } from "../store.js";

const answered = new Map(); // ticket id → {ticket, at}

function questionField(question, index, ticketId) {
  const name = `${ticketId}-q${index}`;
  const choices = question.choices.map((choice) =>
    h("label", { class: "check" }, h("input", { type: question.multiple ? "checkbox" : "radio", name, value: choice }), " ", choice),
  );
  const text = question.free_text ? h("input", { type: "text", name: `${name}-text`, class: "answer-text", "aria-label": `Your answer to: ${question.question}`, placeholder: question.choices.length ? "or in your own words" : "your answer" }) : null;
  return h(
    "fieldset",
    { class: "question" },
    h("legend", {}, question.question),
    question.context ? h("p", { class: "hint" }, question.context) : null,
    choices,
    text,
  );
}

function answersOf(form, ticket) {
  return ticket.questions.map((question, index) => {
    const name = `${ticket.ticket_id}-q${index}`;
    const choices = [...form.querySelectorAll(`input[name="${CSS.escape(name)}"]:checked`)].map((box) => box.value);
    const text = form.querySelector(`input[name="${CSS.escape(`${name}-text`)}"]`);
    const answer = { choices };
    if (text && text.value.trim()) answer.text = text.value.trim();
    return answer;
  });
}

function ticketCard(ticket, onAnswered) {
  const card = store.cards.get(ticket.node_id);
  const form = h("form", { class: "ticket-form" }, ticket.questions.map((q, i) => questionField(q, i, ticket.ticket_id)));
  const submit = h("button", { type: "submit", class: "primary" }, "Answer");
  form.append(h("div", { class: "actions" }, submit));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    submit.disabled = true;
    try {
      await post(`/v1/human/inbox/${encodeURIComponent(ticket.ticket_id)}/respond`, {
        answers: answersOf(form, ticket),
        responded_by: "the web page",
        revision: ticket.revision,
      });
      answered.set(ticket.ticket_id, ticket);
      notify("Answered: the node is told");
      onAnswered();
    } catch (error) {
      submit.disabled = false;
      notify(`Could not answer: ${error.message}`, "error");
    }
  });
  return h(
    "article",
    { class: "ticket", dataset: { ticketId: ticket.ticket_id } },
    h(
      "header",
      {},
      h("h2", {}, ticket.title || ticket.questions[0].question),
      h("p", { class: "muted" }, "From ", h("a", { href: `#/nodes/${encodeURIComponent(ticket.node_id)}` }, card ? label(card) : (ticket.node && ticket.node.name) || ticket.node_id), " · ", when(ticket.created_at)),
    ),
    ticket.body ? h("div", { class: "msg-text" }, ticket.body) : null,
    form,
  );
}

function answeredCard(ticket) {
  const card = store.cards.get(ticket.node_id);
  const status = card ? card.status : "unknown";
  const woke = status === "running" ? "the node woke and is working" : status === "dormant" ? "the node is waiting" : `the node is ${status}`;
  return h(
    "article",
    { class: "ticket answered", dataset: { ticketId: ticket.ticket_id } },
    h("h2", {}, ticket.title || ticket.questions[0].question),
    h("p", { class: "woke" }, "Answered — ", woke, " ", statusPill(status), " · ", h("a", { href: `#/nodes/${encodeURIComponent(ticket.node_id)}` }, "open the node")),
  );
}

/** Mount the inbox in `root`; returns its cleanup. */
export function mount(root) {
  const list = h("div", { class: "tickets", id: "inbox-list" });
  const answeredList = h("div", { class: "tickets", id: "inbox-answered" });
  replace(root, h("section", { class: "inbox", "aria-labelledby": "inbox-title" }, h("h1", { id: "inbox-title" }, "Inbox"), list, answeredList));
  let tickets = [];

  const render = () => {
    const open = tickets.filter((t) => !answered.has(t.ticket_id));
    // Keep a form being filled in: re-render only tickets that came or went.
    const existing = new Map([...list.children].filter((el) => el.dataset.ticketId).map((el) => [el.dataset.ticketId, el]));
    const next = open.map((t) => existing.get(t.ticket_id) || ticketCard(t, read));
    if (next.length === 0) next.push(h("p", { class: "empty" }, "Nothing is waiting for you."));
    list.replaceChildren(...next);
    replace(answeredList, [...answered.values()].map(answeredCard));
  };
  const read = async () => {
    try {
      tickets = await openTickets();
      render();
    } catch (error) {
      if (error.status !== 401) notify(`Could not read the inbox: ${error.message}`, "error");
    }
  };
  store.addEventListener("inbox", read);
  store.addEventListener("change", render);
  read();
  return () => {
    store.removeEventListener("inbox", read);
    store.removeEventListener("change", render);
  };
}
