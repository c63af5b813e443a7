// sleuth view: the only script of the viewer, no library. Pages are complete HTML without it; it adds
// the three things a page does after it loads:
//   1. live figures: elements under [data-live] with [data-sweep=ID] [data-field=NAME] are refreshed
//      from /api/runs every 2 s (no page reload);
//   2. paging: a button[data-more] fetches the next fragment of its list (data-more is its URL) and
//      appends it to data-target; the response's X-Next header is the page after (absent: the end).
//      With data-auto it loads by itself when scrolled into view; a running game's timeline answers
//      X-Follow instead at its end, and the button (data-follow) asks it again every 2 s;
//   3. lazy parts: details[data-src] load their body when first opened (a model call, the
//      evaluation's answers), [data-load] elements as soon as the page is shown (the report).
"use strict";

(function () {
  // How often a running game's timeline asks for new events.
  const FOLLOW_MS = 2000;
  const fmtInt = (n) => (typeof n === "number" ? Math.round(n).toLocaleString("en-US") : String(n));
  const fmtUsd = (x) => (Math.abs(x) >= 1 ? "$" + x.toFixed(2) : "$" + x.toFixed(4));

  function stateLabel(s) {
    if (s.running_now) return "running now";
    if (s.status === "running") return "not running (its last run ended without a word: killed?)";
    return s.status;
  }

  function liveFields(s) {
    const sums = s.sums || {};
    return {
      state: stateLabel(s),
      games: fmtInt(s.games), done: fmtInt(s.done), failed: fmtInt(s.failed),
      running: fmtInt(s.running), pending: fmtInt(s.pending),
      live_calls: fmtInt(sums.live_calls || 0), cache_hits: fmtInt(sums.cache_hits || 0),
      retries: fmtInt(sums.retries || 0), tokens: fmtInt(s.tokens || 0), usd: fmtUsd(sums.usd || 0),
    };
  }

  async function pollLive(url) {
    try {
      const resp = await fetch(url, { headers: { Accept: "application/json" } });
      if (!resp.ok) return;
      const live = await resp.json();
      for (const s of live.sweeps || []) {
        const values = liveFields(s);
        for (const el of document.querySelectorAll('[data-sweep="' + CSS.escape(s.id) + '"]')) {
          for (const f of el.querySelectorAll("[data-field]")) {
            const v = values[f.dataset.field];
            if (v !== undefined && f.textContent !== v) f.textContent = v;
          }
        }
      }
      const stamp = document.querySelector("[data-live-updated]");
      if (stamp && live.updated_at) stamp.textContent = live.updated_at;
    } catch (e) {
      // The server may be restarting; the next poll tries again.
    }
  }

  async function loadMore(button) {
    if (button.dataset.loading) return;
    button.dataset.loading = "1";
    const target = document.querySelector(button.dataset.target);
    try {
      const resp = await fetch(button.dataset.more);
      if (!resp.ok) throw new Error(resp.status + " " + (await resp.text()));
      target.insertAdjacentHTML("beforeend", await resp.text());
      const next = resp.headers.get("X-Next");
      const follow = resp.headers.get("X-Follow");
      if (next) {
        button.dataset.more = next;
        if (button.dataset.follow !== undefined) {
          delete button.dataset.follow;
          button.textContent = "Load more events";
        }
        delete button.dataset.loading;
      } else if (follow) {
        // A running game caught up with: ask again for what it writes next.
        button.dataset.more = follow;
        button.dataset.follow = "";
        button.textContent = "The game is being played: waiting for new events…";
        delete button.dataset.loading;
        setTimeout(() => loadMore(button), FOLLOW_MS);
      } else {
        button.remove();
      }
    } catch (e) {
      button.textContent = "Could not load more (" + e.message + "): try again";
      delete button.dataset.loading;
    }
  }

  function moreButton(next, target) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "more";
    b.textContent = "Load more";
    b.dataset.more = next;
    b.dataset.target = target;
    b.addEventListener("click", () => loadMore(b));
    return b;
  }

  async function loadInto(el, url) {
    try {
      const resp = await fetch(url);
      el.innerHTML = await resp.text();
      const next = resp.headers.get("X-Next");
      if (next) {
        if (!el.id) el.id = "lazy-" + Math.random().toString(36).slice(2);
        el.after(moreButton(next, "#" + el.id));
      }
    } catch (e) {
      el.textContent = "Could not load: " + e.message;
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    const live = document.querySelector("[data-live]");
    if (live) {
      const url = live.dataset.live;
      pollLive(url);
      setInterval(() => pollLive(url), 2000);
    }
    const watcher = "IntersectionObserver" in window
      ? new IntersectionObserver((entries) => {
          for (const e of entries) if (e.isIntersecting) loadMore(e.target);
        }, { rootMargin: "400px" })
      : null;
    for (const b of document.querySelectorAll("button[data-more]")) {
      b.addEventListener("click", () => loadMore(b));
      if (watcher && b.hasAttribute("data-auto")) watcher.observe(b);
      if (b.hasAttribute("data-follow")) setTimeout(() => loadMore(b), FOLLOW_MS);
    }
    document.addEventListener("toggle", (ev) => {
      const d = ev.target;
      if (!(d instanceof HTMLDetailsElement) || !d.open || !d.dataset.src || d.dataset.loaded) return;
      d.dataset.loaded = "1";
      const body = d.querySelector(".body");
      if (body) loadInto(body, d.dataset.src);
    }, true);
    for (const el of document.querySelectorAll("[data-load]")) loadInto(el, el.dataset.load);
    for (const sel of document.querySelectorAll("select[data-autosubmit]")) {
      sel.addEventListener("change", () => sel.form.submit());
    }
  });
})();
