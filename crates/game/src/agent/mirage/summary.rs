//! MIRAGE's Summarization module (MIRAGE §2.3): the script summarized when it passes its cap — part by
//! part when it is too long for the model's window — and the history folded into a running summary
//! when its verbatim part passes its cap. Both caps shrink to a quarter of a known context window.

use minijinja::context;
use serde_json::json;

use super::{text_of, text_schema, Mirage, THOUGHT_TOKENS};
use crate::agent::context::Context;
use crate::agent::AgentError;
use crate::memory::Recalled;
use sleuth_llm::{tokens, window};

/// A running history summary is never given less than this, whatever the cap.
const MIN_HISTORY_SUMMARY_TOKENS: u64 = 64;
/// With a model's context window known, the script summary and the verbatim history each get at most
/// this share of it (1/4), so that the brief, the history, the instructions and the reply fit together.
const WINDOW_SHARE: u32 = 4;
/// Tokens kept free in a summarizing call for its instructions and the format paragraph.
const INSTRUCTION_TOKENS: u64 = 600;
/// A part of a script too long for the window is summarized in no fewer tokens than this.
const MIN_PART_TOKENS: u32 = 150;

/// A summary cap (script or history) for a model with a context window of `window`: the setting, or a
/// quarter of the window if that is smaller. A cap of 0 (summaries off) stays off.
fn capped(cap: u32, window: Option<u32>) -> u32 {
    match window {
        Some(w) if cap > 0 => cap.min(w / WINDOW_SHARE).max(1),
        _ => cap,
    }
}

/// `text` cut into parts of at most `budget` tokens: whole paragraphs where they fit, else whole
/// sentences, else token boundaries. What a script too long for the model's window is summarized in.
fn parts_of(text: &str, budget: u64) -> Vec<String> {
    let budget = budget.max(1);
    let mut pieces: Vec<String> = Vec::new();
    for para in text.split("\n\n").filter(|p| !p.trim().is_empty()) {
        if tokens::count(para) <= budget {
            pieces.push(para.to_string());
            continue;
        }
        for sentence in sleuth_base::text::sentences(para) {
            let mut rest = sentence.as_str();
            while tokens::count(rest) > budget {
                let head = tokens::truncate(rest, budget);
                if head.is_empty() {
                    break;
                }
                pieces.push(head.clone());
                rest = &rest[head.len().min(rest.len())..];
            }
            if !rest.trim().is_empty() {
                pieces.push(rest.to_string());
            }
        }
    }
    let mut parts: Vec<String> = Vec::new();
    let mut current = String::new();
    for piece in pieces {
        let joined = if current.is_empty() {
            piece.clone()
        } else {
            format!("{current}\n\n{piece}")
        };
        if !current.is_empty() && tokens::count(&joined) > budget {
            parts.push(std::mem::replace(&mut current, piece));
        } else {
            current = joined;
        }
    }
    if !current.is_empty() {
        parts.push(current);
    }
    parts
}

/// `text` cut to at most `cap` tokens at a sentence boundary, so a summary never ends in half a sentence
/// (which the next prompt would read as part of whatever follows); a first sentence longer than the cap
/// is cut at a token boundary.
fn fit(text: &str, cap: u64) -> String {
    if tokens::count(text) <= cap {
        return text.to_string();
    }
    // Counted a sentence at a time, not the growing text again with each (that was quadratic in the
    // reply and most of a MIRAGE game's CPU, issue 32): sentences are trimmed, and a space between
    // two non-space characters is always a cut of cl100k's pre-tokenizer, so the tokens of
    // `out + " " + s` are out's followed by those of `" " + s`.
    let mut out = String::new();
    let mut used = 0;
    for s in sleuth_base::text::sentences(text) {
        let n = if out.is_empty() {
            tokens::count(&s)
        } else {
            tokens::count(&format!(" {s}"))
        };
        if used + n > cap {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&s);
        used += n;
    }
    if out.is_empty() {
        tokens::truncate(text, cap)
    } else {
        out
    }
}

/// Where to cut `records` so that the newest whole events after the cut fit in `keep` tokens: the
/// index of the first record kept (`records.len()` when even the newest event does not fit).
fn split_point(records: &[Recalled], sizes: &[u64], keep: u64) -> usize {
    let mut kept = 0;
    let mut cut = records.len();
    while cut > 0 {
        let event = records[cut - 1].event;
        let mut start = cut;
        let mut group = 0;
        while start > 0 && records[start - 1].event == event {
            group += sizes[start - 1];
            start -= 1;
        }
        if kept + group > keep {
            break;
        }
        kept += group;
        cut = start;
    }
    cut
}

impl Mirage {
    /// Summarization of the script: measures the released script and, when it is over the cap, summarizes
    /// it and switches gameplay calls to a system prompt built on the summary. Runs once per release.
    pub(super) async fn prepare(&mut self, cx: &mut Context) -> Result<(), AgentError> {
        let acts = cx.view().acts_released();
        if self.prepared_for == Some(acts) {
            return Ok(());
        }
        self.prepared_for = Some(acts);
        self.brief = None;
        cx.set_brief(None);
        let window = cx.context_window().await;
        let cap = capped(cx.protocol().mirage.script_summary_tokens, window);
        let length = tokens::count(cx.system());
        if cap == 0 || length <= u64::from(cap) {
            return Ok(());
        }
        let summary = self.summarize_script(cx, cap, window).await?;
        cx.step(
            "summary",
            summary.clone(),
            Some(json!({
                "of": "script",
                "acts": acts,
                "script_tokens": length,
                "summary_tokens": tokens::count(&summary),
            })),
        );
        let view = cx.view();
        let victims: Vec<&str> = view.victims().iter().map(|v| v.name.as_str()).collect();
        let brief = cx.prompts().render(
        "system_summary",
        context! {
            name => view.name(), title => view.title(), murderer => view.is_murderer(),
            premise => view.premise(), victims => victims, cast => view.cast(), summary => summary,
            suspects => view.suspects(),
            force_expose => cx.protocol().mirage.force_expose,
        },
    )?;
        self.brief = Some(brief.clone());
        cx.set_brief(Some(brief));
        Ok(())
    }

    /// The script (the released system prompt) summarized in at most `cap` tokens: in one call, as
    /// the paper does; or, when the script does not fit the model's window, part by part, each part
    /// in its share of the cap, and the parts' notes joined in one more call if together they pass it.
    async fn summarize_script(
        &self,
        cx: &mut Context,
        cap: u32,
        window: Option<u32>,
    ) -> Result<String, AgentError> {
        let others: Vec<String> = cx.view().others().map(str::to_string).collect();
        let (name, victims) = (cx.name().to_string(), cx.victim_names());
        let max = cap + THOUGHT_TOKENS;
        let room = window.map(|w| {
            ((f64::from(w) * sleuth_llm::window::TARGET_SHARE) as u64)
                .saturating_sub(INSTRUCTION_TOKENS + u64::from(max))
        });
        let script = cx.system().to_string();
        if room.is_none_or(|r| tokens::count(&script) <= r) {
            let prompt = cx.prompts().render(
                "summarize_script",
                context! {
                    name => name, cap => cap, victims => victims, others => others,
                    notes => false, parts => 0,
                },
            )?;
            let v = self
                .sections_call(cx, "summarize_script", prompt, text_schema(), max)
                .await?;
            return Ok(fit(&text_of(&v), u64::from(cap)));
        }
        let parts = parts_of(&script, room.unwrap_or(0).max(256));
        let n = parts.len();
        let part_cap = (cap / n as u32).max(MIN_PART_TOKENS).min(cap);
        let mut notes = Vec::with_capacity(n);
        for (i, part) in parts.iter().enumerate() {
            let prompt = cx.prompts().render(
                "summarize_script",
                context! {
                    name => name, cap => part_cap, victims => victims, others => others,
                    part => i + 1, parts => n, notes => false,
                },
            )?;
            let v = Self::sections_call_with(
                cx,
                Some(part),
                "summarize_script",
                prompt,
                text_schema(),
                part_cap + THOUGHT_TOKENS,
            )
            .await?;
            notes.push(fit(&text_of(&v), u64::from(part_cap)));
        }
        let joined = notes.join("\n\n");
        if tokens::count(&joined) <= u64::from(cap) {
            return Ok(joined);
        }
        let prompt = cx.prompts().render(
            "summarize_script",
            context! { name => name, cap => cap, victims => victims, others => others, notes => true, parts => 0 },
        )?;
        let v = Self::sections_call_with(
            cx,
            Some(&joined),
            "summarize_script",
            prompt,
            text_schema(),
            max,
        )
        .await?;
        Ok(fit(&text_of(&v), u64::from(cap)))
    }

    /// The history block of a prompt: the running summary, then everything seen since, in order —
    /// summarizing the older part first when it is over the cap.
    pub(super) async fn history_block(&mut self, cx: &mut Context) -> Result<String, AgentError> {
        let records = cx.history(self.summarized_until).await?;
        let window = cx.context_window().await;
        let cap = u64::from(capped(cx.protocol().mirage.history_tokens, window));
        let sizes: Vec<u64> = records.iter().map(|r| tokens::count(&r.text)).collect();
        let total: u64 = sizes.iter().sum();
        let mut from = 0;
        if cap > 0 && total > cap {
            let budget = (cap / 2).max(MIN_HISTORY_SUMMARY_TOKENS);
            let cut = split_point(&records, &sizes, cap / 2);
            if cut > 0 {
                self.summarize_history(cx, &records[..cut], budget).await?;
                from = cut;
            }
        }
        // Marked as dialogue: a prompt still too long for the window loses the oldest lines first.
        let texts: Vec<String> = records[from..]
            .iter()
            .map(|r| window::dialogue(&r.text))
            .collect();
        Ok(cx.prompts().render(
            "history",
            context! { summary => self.history_summary, records => texts },
        )?)
    }

    /// Folds `old` (and the previous summary) into a new running summary of at most `budget` tokens.
    async fn summarize_history(
        &mut self,
        cx: &mut Context,
        old: &[Recalled],
        budget: u64,
    ) -> Result<(), AgentError> {
        let texts: Vec<String> = old.iter().map(|r| window::dialogue(&r.text)).collect();
        let players: Vec<&str> = cx.view().cast().iter().map(|c| c.name.as_str()).collect();
        // The part to fold, rendered exactly as the history block of the calls before it: the prompt
        // then starts with what those calls sent, and a provider's prefix cache serves all of it.
        let history = cx.prompts().render(
            "history",
            context! { summary => self.history_summary, records => texts },
        )?;
        let prompt = cx.prompts().render(
            "summarize_history",
            context! {
                history => history, previous => self.history_summary, cap => budget,
                players => players, victims => cx.victim_names(),
            },
        )?;
        let max = u32::try_from(budget)
            .unwrap_or(u32::MAX)
            .saturating_add(THOUGHT_TOKENS);
        let v = self
            .sections_call(cx, "summarize_history", prompt, text_schema(), max)
            .await?;
        let summary = fit(&text_of(&v), budget);
        let until = old.last().map(|r| r.event);
        self.history_summary = Some(summary.clone());
        self.summarized_until = until.or(self.summarized_until);
        cx.step(
            "summary",
            summary,
            Some(json!({ "of": "history", "until": until, "records": old.len() })),
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(event: u64) -> Recalled {
        Recalled {
            text: format!("record of event {event}"),
            score: 0.0,
            event,
        }
    }

    #[test]
    fn summaries_are_cut_between_sentences() {
        let text = "Ada left at nine. Ben stayed in the saloon until midnight. The cook slept.";
        assert_eq!(fit(text, 100), text);
        let two = "Ada left at nine. Ben stayed in the saloon until midnight.";
        let cap = tokens::count(two);
        assert_eq!(fit(text, cap), two);
        assert_eq!(fit(text, cap + 1), two, "not a half of the third sentence");
        assert_eq!(fit(text, 2), tokens::truncate(text, 2), "one long sentence");
    }

    #[test]
    fn fitting_by_sentence_counts_what_counting_the_whole_text_counts() {
        // The text as it grows, counted whole each time: what `fit` did before it counted by sentence.
        let whole = |text: &str, cap: u64| {
            let mut out = String::new();
            for s in sleuth_base::text::sentences(text) {
                let next = if out.is_empty() {
                    s
                } else {
                    format!("{out} {s}")
                };
                if tokens::count(&next) > cap {
                    break;
                }
                out = next;
            }
            out
        };
        let texts = [
            "Ada left at 9:40. \"Who?\" she asked... Ben's alibi isn't solid! It's 3.14, isn't it? \
             (Maybe.) The 1958 press — inked — stood still; nobody moved. Dr. Reed said: 'no'.",
            "他走了。她留下！谁在书房？“我不知道。”管家说：没有人。Then an English line. 最后一句。",
            "I saw the lantern.\nThe line breaks here.\n\nA new paragraph follows.   Spaces   too.",
        ];
        for text in texts {
            let n = tokens::count(text);
            for cap in 1..n {
                let expected = whole(text, cap);
                if !expected.is_empty() {
                    assert_eq!(fit(text, cap), expected, "cap {cap} of {text:?}");
                }
            }
        }
    }

    #[test]
    fn the_history_is_cut_between_whole_events() {
        // Events 1 (two chunks), 2, 3 (two chunks): sizes 5+5, 4, 3+3.
        let records = vec![rec(1), rec(1), rec(2), rec(3), rec(3)];
        let sizes = vec![5, 5, 4, 3, 3];
        assert_eq!(
            split_point(&records, &sizes, 6),
            3,
            "event 3 fits, 2 does not"
        );
        assert_eq!(split_point(&records, &sizes, 10), 2, "events 2 and 3");
        assert_eq!(split_point(&records, &sizes, 5), 5, "not even event 3");
        assert_eq!(split_point(&records, &sizes, 100), 0, "everything fits");
        assert_eq!(split_point(&[], &[], 10), 0);
    }
}
