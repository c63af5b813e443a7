// The seat page (docs/seat.md): waits for the moves the game asks of this character (a long-poll
// of /seat/state), shows the character's view, and posts the person's replies. Text from the game
// is only ever set as textContent, never as markup.
"use strict";
(function () {
  const proof = document.querySelector('meta[name="seat-proof"]').content;
  let version = null;
  let shownKey = "";

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }

  function list(title, items) {
    const box = el("div");
    if (!items || items.length === 0) return box;
    box.appendChild(el("h3", title));
    const ul = el("ul");
    for (const i of items) ul.appendChild(el("li", typeof i === "string" ? i : (i.name + ": " + (i.public || i.description || ""))));
    box.appendChild(ul);
    return box;
  }

  function showView(v) {
    const key = JSON.stringify(v);
    if (!v || key === shownKey) return;
    shownKey = key;
    const s = document.getElementById("script");
    s.replaceChildren();
    s.appendChild(el("h3", v.title));
    if (v.murderer) s.appendChild(el("p", "You are the murderer: hide it.", "error"));
    s.appendChild(el("p", v.premise));
    s.appendChild(list("Victims", v.victims));
    s.appendChild(list("The other players", v.cast));
    s.appendChild(list("Other suspects", v.suspects));
    if (v.story) { s.appendChild(el("h3", "Your story")); s.appendChild(el("p", v.story)); }
    s.appendChild(list("Your acts", v.acts));
    if (v.timeline) { s.appendChild(el("h3", "Your timeline")); s.appendChild(el("p", v.timeline)); }
    s.appendChild(list("Relationships", v.relationships));
    s.appendChild(list("Goals", v.goals));
    s.appendChild(list("Secrets", v.secrets));
    s.appendChild(list("How to play", v.performance));
    s.appendChild(list("Abilities", v.abilities));
    const seen = document.getElementById("seen");
    seen.replaceChildren();
    for (const r of v.seen || []) seen.appendChild(el("li", r.text));
  }

  function field(form, label, input) {
    const l = el("label", label);
    l.appendChild(document.createElement("br"));
    l.appendChild(input);
    form.appendChild(l);
  }

  function moveForm(m) {
    const form = el("form", null, "move");
    form.dataset.key = m.key;
    form.dataset.attempt = m.attempt;
    form.dataset.kind = m.kind;
    form.appendChild(el("p", m.prompt, "prompt"));
    if (m.refused) form.appendChild(el("p", m.refused, "refused"));
    if (m.kind === "interact") {
      // Ask or investigate: the two actions MIRAGE offers (investigate only while clues are left).
      const box = el("fieldset", null, "action");
      const actions = m.clues && m.clues.length ? ["ask", "investigate"] : ["ask"];
      actions.forEach((a, i) => {
        const l = el("label");
        const input = document.createElement("input");
        input.type = "radio";
        input.name = "action";
        input.value = a;
        input.checked = i === 0;
        l.appendChild(input);
        l.appendChild(document.createTextNode(a === "ask" ? " Ask a player " : " Investigate a clue "));
        box.appendChild(l);
      });
      form.appendChild(box);
    }
    if (m.kind === "ask" || m.kind === "vote" || m.kind === "accuse" || m.kind === "interact") {
      const sel = el("select");
      sel.name = "target";
      for (const c of m.choices) { const o = el("option", c); o.value = c; sel.appendChild(o); }
      const label = { ask: "Whom you ask", vote: "Your vote", accuse: "Whom you accuse",
        interact: "Whom you ask" };
      field(form, label[m.kind], sel);
    }
    if (m.kind === "interact" && m.clues && m.clues.length) {
      const sel = el("select");
      sel.name = "clue";
      for (const c of m.clues) { const o = el("option", c); o.value = c; sel.appendChild(o); }
      field(form, "Or the clue you investigate", sel);
    }
    if (m.kind === "score") {
      // One row per player: trust and suspicion, integers from 0 to the move's scale.
      const table = el("table", null, "scores");
      const head = el("tr");
      for (const h of ["", "Trust", "Suspicion"]) head.appendChild(el("th", h));
      table.appendChild(head);
      for (const who of m.choices) {
        const row = el("tr");
        row.appendChild(el("td", who));
        for (const module of ["trust", "suspicion"]) {
          const cell = el("td");
          const input = document.createElement("input");
          input.type = "number";
          input.min = "0";
          input.max = String(m.scale || 10);
          input.step = "1";
          input.className = "score";
          input.dataset.module = module;
          input.dataset.who = who;
          input.setAttribute("aria-label", module + " of " + who);
          cell.appendChild(input);
          row.appendChild(cell);
        }
        table.appendChild(row);
      }
      form.appendChild(table);
    }
    if (m.kind === "inferential" || m.kind === "choice") {
      const box = el("fieldset");
      const type = m.kind === "choice" && m.multiple ? "checkbox" : "radio";
      m.choices.forEach((text, i) => {
        const l = el("label");
        const input = document.createElement("input");
        input.type = type;
        input.name = "choice";
        input.value = m.letters[i];
        l.appendChild(input);
        l.appendChild(document.createTextNode(" " + m.letters[i] + ". " + text));
        box.appendChild(l);
      });
      form.appendChild(box);
    }
    const labels = { introduce: "Your introduction", ask: "Your question", answer: "Your answer",
      vote: "Why (optional)", factual: "Your answer", inferential: "Why", choice: "Why",
      speak: "What you say", accuse: "Why: everyone hears it",
      interact: "Your question, or what you say as you search" };
    if (m.kind !== "score") {
      const text = el("textarea");
      text.name = "text";
      field(form, labels[m.kind] || "Your reply", text);
    }
    const send = el("button", "Send");
    send.type = "submit";
    form.appendChild(send);
    form.addEventListener("submit", (ev) => { ev.preventDefault(); submit(form, m); });
    return form;
  }

  async function submit(form, m) {
    const body = { key: m.key, attempt: m.attempt, choices: [] };
    if (form.elements.text) body.text = form.elements.text.value;
    if (form.elements.target) body.target = form.elements.target.value;
    if (form.elements.clue) body.clue = form.elements.clue.value;
    const action = form.querySelector('input[name="action"]:checked');
    if (action) body.action = action.value;
    if (m.kind === "score") {
      body.trust = {};
      body.suspicion = {};
      for (const input of form.querySelectorAll("input.score")) {
        // A blank or unreadable score is left out: the game then asks for it by name.
        const v = Number.parseInt(input.value, 10);
        if (Number.isInteger(v) && v >= 0) body[input.dataset.module][input.dataset.who] = v;
      }
    }
    for (const c of form.querySelectorAll('input[name="choice"]:checked')) body.choices.push(c.value);
    const r = await fetch("/seat/move", {
      method: "POST", credentials: "same-origin",
      headers: { "content-type": "application/json", "x-sleuth-proof": proof }, body: JSON.stringify(body),
    });
    if (!r.ok) {
      let msg = "the reply was not taken";
      try { msg = (await r.json()).error || msg; } catch (_) { msg = await r.text().catch(() => msg); }
      form.appendChild(el("p", msg, "error"));
      return;
    }
    form.querySelector("button").disabled = true;
  }

  function render(st) {
    showView(st.shown);
    const status = document.getElementById("status");
    const forms = document.getElementById("forms");
    const open = new Set(st.moves.map((m) => m.key + "#" + m.attempt));
    for (const f of Array.from(forms.children)) {
      if (!open.has(f.dataset.key + "#" + f.dataset.attempt)) f.remove();
    }
    const have = new Set(Array.from(forms.children).map((f) => f.dataset.key + "#" + f.dataset.attempt));
    for (const m of st.moves) if (!have.has(m.key + "#" + m.attempt)) forms.appendChild(moveForm(m));
    status.textContent = st.finished ? "The game is over. Thank you for playing."
      : st.moves.length ? "" : "The others are playing; your next move will appear here.";
  }

  async function loop() {
    for (;;) {
      try {
        const q = version === null ? "" : "?after=" + version;
        const r = await fetch("/seat/state" + q, { credentials: "same-origin" });
        if (!r.ok) {
          document.getElementById("status").textContent = await r.text();
          // No session: only a new link helps. Anything else (a busy store) passes: ask again.
          if (r.status === 403) return;
          await new Promise((ok) => setTimeout(ok, 2000));
          continue;
        }
        const st = await r.json();
        render(st);
        // Only a state that was drawn counts as seen: one that failed to draw is asked for again.
        version = st.version;
        if (st.finished) return;
      } catch (_) {
        await new Promise((ok) => setTimeout(ok, 2000));
      }
    }
  }
  loop();
})();
