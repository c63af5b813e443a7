// The seat page (docs/seat.md): waits for the moves the game asks of this character (a long-poll
// of /seat/state), shows the character's view, and posts the person's replies. Text from the game
// is only ever set as textContent, never as markup.
"use strict";
(function () {
  // The page's own words in each language a script may be in. The `data-t` words of seat.html are
  // the template's: keep the two in step.
  const LABELS = {
    en: {
      youAre: "You are ", playingAs: "Playing as ",
      whoRest: ". Everything below is what your character knows; nobody else's script is shown.",
      yourMove: "Your move", waiting: "Waiting for the game…", yourScript: "Your script",
      seenSoFar: "What you have seen",
      murderer: "You are the murderer: hide it.",
      sections: { victims: "Victims", cast: "The other players", suspects: "Other suspects",
        story: "Your story", acts: "Your acts", timeline: "Your timeline",
        relationships: "Relationships", goals: "Goals", secrets: "Secrets",
        performance: "How to play", abilities: "Abilities" },
      actions: { ask: " Ask a player ", investigate: " Investigate a clue " },
      targets: { ask: "Whom you ask", vote: "Your vote", accuse: "Whom you accuse",
        interact: "Whom you ask" },
      clue: "Or the clue you investigate",
      modules: { trust: "Trust", suspicion: "Suspicion" },
      scoreOf: (module, who) => module + " of " + who,
      texts: { introduce: "Your introduction", ask: "Your question", answer: "Your answer",
        vote: "Why (optional)", factual: "Your answer", inferential: "Why", choice: "Why",
        speak: "What you say", accuse: "Why: everyone hears it",
        interact: "Your question, or what you say as you search" },
      reply: "Your reply", send: "Send", colon: ": ",
      over: "The game is over. Thank you for playing.",
      others: "The others are playing; your next move will appear here.",
      // English shows the server's own words for a failed request; these stand in otherwise.
      notTaken: "the reply was not taken", server: null,
    },
    zh: {
      youAre: "你扮演的角色：", playingAs: "玩家：",
      whoRest: "。以下是你的角色知道的一切；别人的剧本不会显示在这里。",
      yourMove: "轮到你行动", waiting: "正在等待游戏……", yourScript: "你的剧本",
      seenSoFar: "你目前的所见所闻",
      murderer: "你就是凶手：千万别暴露。",
      sections: { victims: "死者", cast: "其他玩家", suspects: "其他嫌疑人",
        story: "你的故事", acts: "你的各幕剧本", timeline: "你的时间线",
        relationships: "人物关系", goals: "你的目标", secrets: "你的秘密",
        performance: "扮演提示", abilities: "特殊能力" },
      actions: { ask: " 向一位玩家提问 ", investigate: " 调查一条线索 " },
      targets: { ask: "你要问谁", vote: "你投给谁", accuse: "你指认谁", interact: "你要问谁" },
      clue: "或者，你要调查的线索",
      modules: { trust: "信任", suspicion: "怀疑" },
      scoreOf: (module, who) => "对" + who + "的" + (module === "trust" ? "信任" : "怀疑") + "分",
      texts: { introduce: "你的自我介绍", ask: "你的问题", answer: "你的回答",
        vote: "理由（可不填）", factual: "你的回答", inferential: "理由", choice: "理由",
        speak: "你要说的话", accuse: "理由：所有人都会听到",
        interact: "你的问题，或者调查时说的话" },
      reply: "你的回复", send: "发送", colon: "：",
      over: "游戏结束了，谢谢你来玩！",
      others: "其他人正在行动，轮到你时，你的下一步会出现在这里。",
      notTaken: "这条回复没有被接受",
      server: { 403: "这里没有你的座位，或者页面已失效：请重新打开发给你的链接。",
        409: "这一步已经不能再回答了（已经答过，或者游戏已经继续往下进行）。",
        other: "暂时连不上游戏，稍后会自动重试。" },
    },
  };

  const proof = document.querySelector('meta[name="seat-proof"]').content;
  let lang = LABELS[document.documentElement.lang] ? document.documentElement.lang : "en";
  let T = LABELS[lang];
  let version = null;
  let shownKey = "";

  // The state says the seat's language (known once the game has asked a move of it): a page that
  // was drawn in another takes its words, and the view and forms are drawn again.
  function speak(code) {
    if (!code || code === lang || !LABELS[code]) return;
    lang = code;
    T = LABELS[code];
    document.documentElement.lang = code;
    for (const e of document.querySelectorAll("[data-t]")) {
      if (typeof T[e.dataset.t] === "string") e.textContent = T[e.dataset.t];
    }
    shownKey = "";
    document.getElementById("forms").replaceChildren();
  }

  // What a failed request's answer says, in the seat's language.
  async function failure(r, fallback) {
    if (T.server) return T.server[r.status] || T.server.other;
    try { return (await r.clone().json()).error || fallback; } catch (_) { return await r.text().catch(() => fallback); }
  }

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
    for (const i of items) ul.appendChild(el("li", typeof i === "string" ? i : (i.name + T.colon + (i.public || i.description || ""))));
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
    const h = T.sections;
    if (v.murderer) s.appendChild(el("p", T.murderer, "error"));
    s.appendChild(el("p", v.premise));
    s.appendChild(list(h.victims, v.victims));
    s.appendChild(list(h.cast, v.cast));
    s.appendChild(list(h.suspects, v.suspects));
    if (v.story) { s.appendChild(el("h3", h.story)); s.appendChild(el("p", v.story)); }
    s.appendChild(list(h.acts, v.acts));
    if (v.timeline) { s.appendChild(el("h3", h.timeline)); s.appendChild(el("p", v.timeline)); }
    s.appendChild(list(h.relationships, v.relationships));
    s.appendChild(list(h.goals, v.goals));
    s.appendChild(list(h.secrets, v.secrets));
    s.appendChild(list(h.performance, v.performance));
    s.appendChild(list(h.abilities, v.abilities));
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
        l.appendChild(document.createTextNode(T.actions[a]));
        box.appendChild(l);
      });
      form.appendChild(box);
    }
    if (m.kind === "ask" || m.kind === "vote" || m.kind === "accuse" || m.kind === "interact") {
      const sel = el("select");
      sel.name = "target";
      for (const c of m.choices) { const o = el("option", c); o.value = c; sel.appendChild(o); }
      field(form, T.targets[m.kind], sel);
    }
    if (m.kind === "interact" && m.clues && m.clues.length) {
      const sel = el("select");
      sel.name = "clue";
      for (const c of m.clues) { const o = el("option", c); o.value = c; sel.appendChild(o); }
      field(form, T.clue, sel);
    }
    if (m.kind === "score") {
      // One row per player: trust and suspicion, integers from 0 to the move's scale.
      const table = el("table", null, "scores");
      const head = el("tr");
      for (const h of ["", T.modules.trust, T.modules.suspicion]) head.appendChild(el("th", h));
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
          input.setAttribute("aria-label", T.scoreOf(module, who));
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
    if (m.kind !== "score") {
      const text = el("textarea");
      text.name = "text";
      field(form, T.texts[m.kind] || T.reply, text);
    }
    const send = el("button", T.send);
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
      form.appendChild(el("p", await failure(r, T.notTaken), "error"));
      return;
    }
    form.querySelector("button").disabled = true;
  }

  function render(st) {
    speak(st.lang);
    showView(st.shown);
    const status = document.getElementById("status");
    const forms = document.getElementById("forms");
    const open = new Set(st.moves.map((m) => m.key + "#" + m.attempt));
    for (const f of Array.from(forms.children)) {
      if (!open.has(f.dataset.key + "#" + f.dataset.attempt)) f.remove();
    }
    const have = new Set(Array.from(forms.children).map((f) => f.dataset.key + "#" + f.dataset.attempt));
    for (const m of st.moves) if (!have.has(m.key + "#" + m.attempt)) forms.appendChild(moveForm(m));
    status.textContent = st.finished ? T.over : st.moves.length ? "" : T.others;
  }

  async function loop() {
    for (;;) {
      try {
        const q = version === null ? "" : "?after=" + version;
        const r = await fetch("/seat/state" + q, { credentials: "same-origin" });
        if (!r.ok) {
          document.getElementById("status").textContent = await failure(r, "");
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
