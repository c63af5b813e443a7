// sleuth view: the script of the annotation pages, no library. The page (annotate.html) holds the
// item and any stored answer; this script makes it answerable from the keyboard and the mouse, posts
// the answer as JSON with the page's proof, and shows the server's refusal on the page.
//   [data-pick]        a choice of one value 1..data-max (a scale of a response, or a character's
//                      position on a criterion); data-value is the current one
//   digits             give the focused choice that value and move to the next choice
//   Tab, ↑ ↓           move between choices; ← → lower or raise the focused value
//   Enter              save and go to the next item; b or Backspace: back to the previous item
//   [data-review]      a *questions* item's decision: a accept, e edit (the question and answer
//                      fields open, prefilled), r reject (an optional reason); Enter in a field
//                      saves, Esc leaves it
"use strict";

(function () {
  const root = document.querySelector("[data-annotate]");
  if (!root) return;
  const form = document.getElementById("annotate");
  const message = document.getElementById("message");
  const picks = form ? Array.from(form.querySelectorAll("[data-pick]")) : [];
  const review = form ? form.querySelector("[data-review]") : null;
  let busy = false;

  function say(text) {
    if (!message) return;
    message.textContent = text;
    message.hidden = !text;
  }

  function value(pick) {
    const v = Number(pick.dataset.value);
    return v >= 1 ? v : null;
  }

  function set(pick, v) {
    if (!(v >= 1 && v <= Number(pick.dataset.max))) return false;
    pick.dataset.value = String(v);
    for (const b of pick.querySelectorAll("button[data-v]")) {
      b.setAttribute("aria-checked", String(Number(b.dataset.v) === v));
    }
    return true;
  }

  function move(pick, by) {
    const to = picks[picks.indexOf(pick) + by];
    if (to) to.focus();
  }

  function field(id) {
    const el = document.getElementById(id);
    return el ? el.value : "";
  }

  // A questions item's decision: marks the choice, opens its fields and puts the focus where the
  // next keys go (the question field of an edit, the reason of a rejection, else the decision).
  function choose(action) {
    review.dataset.action = action;
    for (const b of review.querySelectorAll("button[data-choice]")) {
      b.setAttribute("aria-checked", String(b.dataset.choice === action));
    }
    for (const [id, shown] of [["edit", action === "edit"], ["reject", action === "reject"]]) {
      const box = document.getElementById(id);
      if (box) box.hidden = !shown;
    }
    const to = document.getElementById(action === "edit" ? "edit-question" : action === "reject" ? "reject-reason" : "") || review;
    to.focus();
    if (to.setSelectionRange) to.setSelectionRange(to.value.length, to.value.length);
  }

  // The answer as docs/humans.md gives it; what is left unset is left out, for the server to name.
  function answer() {
    if (form.dataset.kind === "questions") {
      const action = review ? review.dataset.action : "";
      if (action === "edit") return { action, question: field("edit-question"), answer: field("edit-answer") };
      if (action === "reject") {
        const reason = field("reject-reason").trim();
        return reason ? { action, reason } : { action };
      }
      return action ? { action } : {};
    }
    if (form.dataset.kind === "responses") {
      const ratings = {};
      for (const p of picks) {
        const v = value(p);
        if (v === null) continue;
        (ratings[p.dataset.label] = ratings[p.dataset.label] || {})[p.dataset.key] = v;
      }
      return { ratings };
    }
    const out = {};
    for (const metric of ["ici", "sci"]) {
      const rows = picks.filter((p) => p.dataset.metric === metric && value(p) !== null);
      const at = new Map();
      for (const r of rows) {
        const v = value(r);
        if (at.has(v)) {
          throw new Error(`${metric.toUpperCase()}: ${at.get(v)} and ${r.dataset.name} are both at position ${v}; give each a different one`);
        }
        at.set(v, r.dataset.name);
      }
      rows.sort((a, b) => value(a) - value(b));
      out[metric] = rows.map((r) => r.dataset.name);
    }
    return out;
  }

  async function save() {
    if (!form || busy) return;
    let body;
    try {
      body = JSON.stringify({ item: Number(form.dataset.item), answer: answer() });
    } catch (e) {
      say(e.message);
      return;
    }
    busy = true;
    say("");
    try {
      const r = await fetch("/annotate/answer", {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-Sleuth-Proof": form.dataset.proof },
        body,
      });
      const reply = await r.json().catch(() => ({}));
      if (!r.ok) {
        say("Not saved: " + (reply.error || "the viewer answered HTTP " + r.status));
        busy = false;
        return;
      }
      window.location.href = form.dataset.next;
    } catch (e) {
      say("Not saved: " + e.message);
      busy = false;
    }
  }

  function back() {
    if (root.dataset.prev) window.location.href = root.dataset.prev;
  }

  for (const p of picks) {
    p.addEventListener("click", (e) => {
      const b = e.target.closest("button[data-v]");
      if (b && set(p, Number(b.dataset.v))) p.focus();
    });
  }
  if (review) {
    review.addEventListener("click", (e) => {
      const b = e.target.closest("button[data-choice]");
      if (b) choose(b.dataset.choice);
    });
  }
  for (const b of document.querySelectorAll("button[data-act]")) {
    b.addEventListener("click", () => (b.dataset.act === "save" ? save() : back()));
  }

  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const active = document.activeElement;
    const pick = active && active.closest ? active.closest("[data-pick]") : null;
    // Keys on a link, a button or a summary do what they do there.
    const native = active && active.matches && active.matches("a, button, summary, input, textarea, select");
    if (review) {
      // In a field the keys type; Enter saves from a field too, Esc leaves it.
      if (active && active.matches && active.matches("input, textarea")) {
        if (e.key === "Enter") {
          e.preventDefault();
          save();
        } else if (e.key === "Escape") {
          e.preventDefault();
          review.focus();
        }
        return;
      }
      const choice = { a: "accept", e: "edit", r: "reject" }[e.key];
      if (choice) {
        e.preventDefault();
        choose(choice);
        return;
      }
    }
    if (/^[1-9]$/.test(e.key) && pick) {
      e.preventDefault();
      if (set(pick, Number(e.key))) move(pick, 1);
      return;
    }
    switch (e.key) {
      case "ArrowDown":
      case "ArrowUp":
        if (native && !pick) return;
        e.preventDefault();
        if (pick) move(pick, e.key === "ArrowDown" ? 1 : -1);
        else if (picks.length) picks[0].focus();
        return;
      case "ArrowRight":
      case "ArrowLeft":
        if (!pick) return;
        e.preventDefault();
        set(pick, (value(pick) || (e.key === "ArrowRight" ? 0 : 2)) + (e.key === "ArrowRight" ? 1 : -1));
        return;
      case "Enter":
        if (native) return;
        e.preventDefault();
        save();
        return;
      case "Backspace":
      case "b":
        if (native && active.matches("input, textarea, select")) return;
        e.preventDefault();
        back();
        return;
    }
  });

  // Start where the work is: the first choice not made yet (a question's decision).
  const first = picks.find((p) => value(p) === null) || picks[0] || review;
  if (first) first.focus();
})();
