// Short messages to the person (an action done or refused), read out by screen readers.

let region = null;

/** Show `text` for a few seconds; `kind` "error" keeps it until dismissed. */
export function notify(text, kind = "info") {
  region = region || document.getElementById("notices");
  if (!region) return;
  const item = document.createElement("div");
  item.className = `notice notice-${kind}`;
  item.setAttribute("role", kind === "error" ? "alert" : "status");
  const words = document.createElement("span");
  words.textContent = text;
  const close = document.createElement("button");
  close.type = "button";
  close.className = "notice-close";
  close.setAttribute("aria-label", "Dismiss");
  close.textContent = "×";
  close.addEventListener("click", () => item.remove());
  item.append(words, close);
  region.append(item);
  if (kind !== "error") setTimeout(() => item.remove(), 4000);
  while (region.children.length > 4) region.firstElementChild.remove();
}
