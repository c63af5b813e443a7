//! PLAYER* Table A5 (cost per script and phase, per evaluation process) and its measures from other
//! protocols' games.

use super::*;
use sleuth_llm::Usage;

/// PLAYER* Table A5: each script's length, then USD, tokens and calls per phase, mean per game, per
/// script × method. The WellPlay protocol's games only ([`cost`]).
pub fn player_table_a5(g: &Grouping, lengths: &ScriptLengths) -> Option<Table> {
    cost(g, Protocol::WellPlay, lengths)
}

/// Table A5's measures for one protocol's games, titled by the protocol unless it is WellPlay
/// ([`papers`]). `lengths` gives the #Tokens column: the paper prints each script's length beside its
/// cost because the length drives it, so a reader can tell a dear method from a long script.
pub fn cost(g: &Grouping, protocol: Protocol, lengths: &ScriptLengths) -> Option<Table> {
    let arms: Vec<&Arm> = g
        .arms
        .iter()
        .filter(|a| g.conditions[a.condition].key.protocol == protocol.as_str())
        .collect();
    if arms.is_empty() {
        return None;
    }
    let heading = Measures::Cost.heading(protocol);
    let mut t = Table::new(
        heading.id,
        &heading.title,
        vec![
            Column::new("Script", "script", Kind::Text),
            Column::new("#Tokens", "tokens_per_character", Kind::Number(0)),
            Column::new("Method", "method", Kind::Text),
            Column::new("Games", "games", Kind::Number(0)),
            Column::new("Gameplay USD", "gameplay_usd", Kind::Number(4)),
            Column::new("Gameplay tokens", "gameplay_tokens", Kind::Number(0)),
            Column::new("Gameplay calls", "gameplay_calls", Kind::Number(0)),
            Column::new("Evaluation USD", "evaluation_usd", Kind::Number(4)),
            Column::new("Evaluation tokens", "evaluation_tokens", Kind::Number(0)),
            Column::new("Evaluation calls", "evaluation_calls", Kind::Number(0)),
            Column::new(
                "Evaluation USD (all runs)",
                "evaluation_usd_all_runs",
                Kind::Number(4),
            ),
            Column::new(
                "Evaluation tokens (all runs)",
                "evaluation_tokens_all_runs",
                Kind::Number(0),
            ),
            Column::new(
                "Evaluation calls (all runs)",
                "evaluation_calls_all_runs",
                Kind::Number(0),
            ),
            Column::new(
                "Cacheable prompt %",
                "cacheable_prompt_pct",
                Kind::Number(1),
            ),
        ],
    );
    t.note = format!(
        "Games played under the {protocol} protocol. #Tokens is the script's length as PLAYER* \
         prints it: the tokens of one character's private script averaged over the characters \
         (`sleuth script stats`' Tokens/player: cl100k, in the language the script was played in), \
         read from the script file the games' spec names (as given, from the working directory) \
         when its content digest is still the recorded one; — when it is not (see the notes) or the \
         games recorded no script file. Mean per game over the arm's repeats; \
         tokens are prompt + completion tokens. Gameplay is — for a game with no gameplay call (PP and OP outside WellPlay; under WellPlay their gameplay is the final vote). Evaluation \
         USD, tokens and calls are per evaluation process, as PLAYER* reports them: every question \
         asked once — the multiple-choice answers' calls (asked `--eval-repeats` times, \
         `choice.repeats` in result.json; 3 by default) divided by the repeats, what is asked once \
         (factual and inferential questions, MIRAGE's judge) whole; the (all runs) columns are the \
         undivided cost of every run. A result recorded before the answers' calls were kept apart \
         (`choice.usage`) that also holds questions asked once cannot be split: its per-process \
         cells are —. The last \
         rows sum each method's per-script means over scripts, #Tokens included, as the paper's \
         Overall row does. USD is \
         priced from the pricing table the games ran with (the simulated model is free). Cacheable \
         prompt % is the mean per game of the share of prompt tokens a provider's prefix cache could \
         serve (prefixes shared with an earlier call of the model in the run, from 1,024 tokens in \
         128-token steps: OpenAI's rule); — for games recorded before it was measured."
    );
    let scripts: BTreeSet<&str> = arms.iter().map(|a| a.script_label.as_str()).collect();
    let multi_script = scripts.len() > 1;
    // Per condition: #Tokens, then the nine cost cells.
    let mut totals: BTreeMap<usize, [Option<f64>; 10]> = BTreeMap::new();
    for arm in arms {
        let c = &g.conditions[arm.condition];
        let rs: Vec<&GameResult> = g.results(&arm.games).collect();
        // USD, tokens and calls of one phase, each game's share as `share` takes it (`None`: it
        // cannot be told).
        let phase = |f: fn(&GameResult) -> &Usage, share: Share| -> [Option<f64>; 3] {
            if rs.iter().all(|r| f(r).calls == 0) {
                return [None; 3];
            }
            let m = |v: fn(&Usage) -> f64| {
                let per_game: Option<Vec<f64>> = rs.iter().map(|r| share(r, f(r), v)).collect();
                stats::mean(&per_game?)
            };
            [
                m(|u| u.cost_usd),
                m(|u| (u.prompt_tokens + u.completion_tokens) as f64),
                m(|u| u.calls as f64),
            ]
        };
        let play = phase(|r| &r.usage_by_phase.gameplay, whole);
        let eval_one = phase(|r| &r.usage_by_phase.evaluation, one_process);
        let eval_all = phase(|r| &r.usage_by_phase.evaluation, whole);
        let length = lengths.tokens_per_character(arm);
        let values: Vec<Option<f64>> = play
            .iter()
            .chain(eval_one.iter())
            .chain(eval_all.iter())
            .copied()
            .collect();
        let total = totals.entry(arm.condition).or_insert([Some(0.0); 10]);
        for (acc, v) in total
            .iter_mut()
            .zip(std::iter::once(&length).chain(&values))
        {
            *acc = match (*acc, v) {
                (Some(a), Some(v)) => Some(a + v),
                _ => None,
            };
        }
        let mut cells = vec![
            Cell::Text(arm.script_label.clone()),
            Cell::Number(length),
            Cell::Text(c.method()),
            Cell::Number(Some(arm.games.len() as f64)),
        ];
        cells.extend(values.into_iter().map(Cell::Number));
        cells.push(Cell::Number(cacheable_percent(&rs)));
        t.push(cells, false);
    }
    if multi_script {
        for (ci, total) in totals {
            let c = &g.conditions[ci];
            let [length, costs @ ..] = total;
            let mut cells = vec![
                Cell::Text("All scripts (sum)".into()),
                Cell::Number(length),
                Cell::Text(c.method()),
                Cell::Number(Some(c.games.len() as f64)),
            ];
            cells.extend(costs.into_iter().map(Cell::Number));
            // A share does not add up over scripts.
            cells.push(Cell::Number(None));
            t.push(cells, true);
        }
    }
    Some(t)
}

/// How much of a phase's usage a cell counts, for one game and one measure of a [`Usage`].
type Share = fn(&GameResult, &Usage, fn(&Usage) -> f64) -> Option<f64>;

/// All of it.
fn whole(_: &GameResult, usage: &Usage, v: fn(&Usage) -> f64) -> Option<f64> {
    Some(v(usage))
}

/// One evaluation process's share of a game's evaluation usage, as PLAYER* reports it: every
/// question asked once. The multiple-choice questions were asked `choice.repeats` times, so their
/// calls (`choice.usage`) count divided by the repeats, and what was asked once (factual and
/// inferential questions, MIRAGE's judge) counts whole. A result recorded before `choice.usage` was
/// kept can be split only when the choices were all it was asked: `None` otherwise.
fn one_process(r: &GameResult, evaluation: &Usage, v: fn(&Usage) -> f64) -> Option<f64> {
    let total = v(evaluation);
    let Some(c) = r.choice.as_ref().filter(|c| c.repeats > 1) else {
        return Some(total);
    };
    let repeats = f64::from(c.repeats);
    if c.usage.calls > 0 {
        let choices = v(&c.usage);
        return Some(total - choices + choices / repeats);
    }
    let asked_once = r.factual.counts.values().any(|&n| n > 0)
        || r.inferential_accuracy.is_some()
        || r.mirage_scores.is_some();
    (!asked_once).then(|| total / repeats)
}

/// The mean cacheable share of the games' prompts, in percent; `None` when no game recorded it.
fn cacheable_percent(rs: &[&GameResult]) -> Option<f64> {
    let shares: Vec<f64> = rs
        .iter()
        .filter_map(|r| r.usage.cacheable_share)
        .map(|s| s * 100.0)
        .collect();
    stats::mean(&shares)
}
