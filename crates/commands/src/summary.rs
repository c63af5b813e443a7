//! What `sleuth play` prints when a game is over.

use std::path::Path;

use sleuth_game::game::GameResult;

fn pct(x: Option<f64>) -> String {
    x.map(|v| format!("{:5.1}%", v * 100.0))
        .unwrap_or_else(|| "    —".into())
}

/// The outcome, the scores and the cost, in a few lines.
pub(super) fn print_summary(r: &GameResult, out: &Path) {
    let framework = match (&r.murderer_framework, r.modules.is_empty()) {
        (Some(m), _) => format!("{} (murderers: {m})", r.framework),
        (None, false) => format!("{} ({})", r.framework, r.modules),
        (None, true) => r.framework.clone(),
    };
    println!(
        "{} · {} · {} · seed {} · {}/{}",
        r.script, r.protocol, framework, r.seed, r.provider, r.model
    );
    if let Some(winner) = r.winner {
        let got: u32 = r
            .murderers
            .iter()
            .filter_map(|m| r.vote_counts.get(m))
            .sum();
        println!(
            "Winner: {}   (murderer {} got {} of {} votes; detection accuracy {:.2})",
            winner.as_str(),
            r.murderers.join(" and "),
            got,
            r.votes.len(),
            r.murderer_detection_accuracy
        );
        let votes: Vec<String> = r.votes.iter().map(|(v, t)| format!("{v} → {t}")).collect();
        println!("Votes: {}", votes.join("; "));
    } else {
        println!("No game was played ({}): evaluation only.", r.framework);
    }
    if let Some(m) = &r.majority {
        println!(
            "Elimination rule: eliminated {} → {}; plurality rule → {}",
            if m.eliminated.is_empty() {
                "nobody".to_string()
            } else {
                m.eliminated.join(" and ")
            },
            m.majority_winner.as_str(),
            m.plurality_winner.as_str()
        );
    }
    if let Some(m) = &r.mirage {
        let investigated: usize = m.investigated.values().map(Vec::len).sum();
        println!(
            "MIRAGE: Victory (reciprocal rank of the culprit) {:.3}; {} clues investigated of {}",
            m.victory, investigated, m.clues_available
        );
    }
    println!();
    println!("Factual QA ({})", r.factual.judge);
    println!("  {:<8} {:>7} {:>6}", "", "acc", "n");
    for (label, key, v) in [
        ("Own", "own", r.factual.own),
        ("CQ", "cq", r.factual.cq),
        ("MQ", "mq", r.factual.mq),
        ("Others", "", r.factual.others),
    ] {
        let n = if key.is_empty() {
            r.factual.counts.get("cq").copied().unwrap_or(0)
                + r.factual.counts.get("mq").copied().unwrap_or(0)
        } else {
            r.factual.counts.get(key).copied().unwrap_or(0)
        };
        println!("  {label:<8} {:>7} {n:>6}", pct(v));
    }
    println!(
        "Inferential accuracy: {}   informed: {}   (rationales judged by {})",
        pct(r.inferential_accuracy).trim(),
        pct(r.informed_accuracy).trim(),
        r.judges.get("rationale").map(String::as_str).unwrap_or("—")
    );
    if let Some(c) = &r.choice {
        println!();
        println!("Multiple choice (10/5/2 points)");
        println!(
            "  {:<10} {:>7} {:>6} {:>9}",
            "category", "acc", "n", "points"
        );
        for (cat, t) in &c.by_category {
            println!(
                "  {cat:<10} {:>7} {:>6} {:>4}/{:<4}",
                pct(t.accuracy()),
                t.questions,
                t.points,
                t.possible
            );
        }
        println!(
            "  {:<10} {:>7} {:>6} {:>4}/{:<4}  score {}",
            "overall",
            pct(c.overall.accuracy()),
            c.overall.questions,
            c.overall.points,
            c.overall.possible,
            pct(c.overall.score()).trim()
        );
        if let Some((m, sd)) = c.score_mean_std() {
            println!(
                "  score over {} repeats: {:.3} ± {:.3} (mean ± std)",
                c.repeats, m, sd
            );
        }
    }
    if let Some(m) = &r.mirage_scores {
        let f = |x: Option<f64>| x.map(|v| format!("{v:.3}")).unwrap_or_else(|| "—".into());
        println!();
        println!(
            "MIRAGE metrics: TII (suspicion share) {}  TII (trust share, Eq. 1) {}  CIC {}  CIC (key) {}  ICI {}  SCI {}   (ICI/SCI judge: {})",
            f(m.tii_suspicion_share),
            f(m.tii_trust_share),
            f(m.cic),
            f(m.cic_key),
            f(m.ici),
            f(m.sci),
            r.judges.get("mirage").map(String::as_str).unwrap_or("—")
        );
    }
    let u = &r.usage;
    println!();
    println!(
        "Usage: {} calls, {} prompt + {} completion tokens, ${:.4}, {} retries, {} parse failures",
        u.calls, u.prompt_tokens, u.completion_tokens, u.cost_usd, u.retries, u.parse_failures
    );
    if let (Some(c), Some(share)) = (u.cacheable_prompt_tokens, u.cacheable_share) {
        println!(
            "Prompt caching: {c} prompt tokens cacheable ({:.1}%: prefixes shared with an earlier call, OpenAI's rule)",
            share * 100.0
        );
    }
    println!(
        "Wrote {} and {}",
        sleuth_store::rundir::GameFiles::in_dir(out)
            .transcript
            .display(),
        sleuth_store::rundir::GameFiles::in_dir(out)
            .result
            .display()
    );
}
