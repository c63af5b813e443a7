//! What the seat says to the person, in the script's language: the prompts of the moves the seat
//! words itself (the others are the host's lines and the script's questions, already in the
//! script's language) and the refusals of bad replies (`checks.rs`). Kept here side by side, one
//! `match` per line, as the host's lines are (`sleuth_script::rules::HostLines`), so that a wording
//! is changed in both languages at once. The English lines are the ones stored games and golden
//! transcripts hold: they must not change.

use sleuth_script::Language;

/// The seat's pre-set lines in one language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SeatLines(pub Language);

impl SeatLines {
    /// Names or options in a refusal's list: "A, B" / "A、B".
    fn list(self, items: &[String]) -> String {
        match self.0 {
            Language::En => items.join(", "),
            Language::Zh => items.join("、"),
        }
    }

    /// Clue offers (`id: place`, which may hold commas) in a refusal's list: "a; b" / "a；b".
    fn offers(self, items: &[String]) -> String {
        match self.0 {
            Language::En => items.join("; "),
            Language::Zh => items.join("；"),
        }
    }

    /// A score module's name: "trust" / "信任".
    fn module(self, module: &str) -> &str {
        match (self.0, module) {
            (Language::Zh, "trust") => "信任",
            (Language::Zh, "suspicion") => "怀疑",
            (_, m) => m,
        }
    }

    // --- Prompts ---

    /// ThinkThrice's first round (`round` 0): a question to the one who just introduced
    /// themselves; later rounds: a question to anyone.
    pub(super) fn ask(self, round: u32) -> String {
        match (self.0, round) {
            (Language::En, 0) => "Ask the player who just introduced themselves a question.".into(),
            (Language::En, r) => format!("Open questioning, round {r}: ask one player a question."),
            (Language::Zh, 0) => "请向刚做完自我介绍的这位玩家提一个问题。".into(),
            (Language::Zh, r) => format!("第{r}轮自由提问：请选一位玩家，向其提一个问题。"),
        }
    }

    /// A question put to the character.
    pub(super) fn asked(self, asker: &str, question: &str) -> String {
        match self.0 {
            Language::En => format!("{asker} asks you: {question}"),
            Language::Zh => format!("{asker}问你：{question}"),
        }
    }

    /// MIRAGE's interaction: investigating is offered only while clues are left.
    pub(super) fn interact(self, clues_left: bool) -> &'static str {
        match (self.0, clues_left) {
            (Language::En, false) => "Your turn: ask one player a question.",
            (Language::En, true) => "Your turn: ask one player a question, or investigate a clue.",
            (Language::Zh, false) => "轮到你了：请向一位玩家提一个问题。",
            (Language::Zh, true) => "轮到你了：向一位玩家提一个问题，或者调查一条线索。",
        }
    }

    /// MIRAGE's trust and suspicion, on a scale from 0 to `max`.
    pub(super) fn score(self, max: u32) -> String {
        match self.0 {
            Language::En => format!(
                "Score how much you trust, and how much you suspect, each other player, from 0 to \
                 {max}. Nobody else sees these scores."
            ),
            Language::Zh => format!(
                "请给其他每位玩家打两个分：你有多信任对方，又有多怀疑对方，都从0分到{max}分。\
                 这些分数只有你自己看得到。"
            ),
        }
    }

    /// MIRAGE's accusation.
    pub(super) fn accuse(self) -> &'static str {
        match self.0 {
            Language::En => {
                "Accuse the one you believe is the murderer, and say why: everyone hears it."
            }
            Language::Zh => "请指认你认为是凶手的人，并说出理由：在场的每个人都会听到。",
        }
    }

    // --- Refusals ---

    pub(super) fn empty(self) -> &'static str {
        match self.0 {
            Language::En => "Please write something: an empty reply is not a move.",
            Language::Zh => "请写点内容再发送：空白的回复不算一步。",
        }
    }

    /// A text over `max` characters; `has` is its length, when told.
    pub(super) fn too_long(self, max: usize, has: Option<usize>) -> String {
        match (self.0, has) {
            (Language::En, Some(n)) => {
                format!("Please keep it under {max} characters (this one has {n}).")
            }
            (Language::En, None) => format!("Please keep it under {max} characters."),
            (Language::Zh, Some(n)) => format!("请把字数控制在{max}字以内（这段有{n}字）。"),
            (Language::Zh, None) => format!("请把字数控制在{max}字以内。"),
        }
    }

    pub(super) fn reason_too_long(self, max: usize) -> String {
        match self.0 {
            Language::En => format!("Please keep the reason under {max} characters."),
            Language::Zh => format!("理由请控制在{max}字以内。"),
        }
    }

    /// Nobody named.
    pub(super) fn choose(self, choices: &[String]) -> String {
        match self.0 {
            Language::En => format!("Please choose one of: {}.", self.list(choices)),
            Language::Zh => format!("请从这几位中选一位：{}。", self.list(choices)),
        }
    }

    /// Someone named who is not among `choices`.
    pub(super) fn not_among(self, given: &str, choices: &[String]) -> String {
        match self.0 {
            Language::En => format!(
                "{given} is not among the choices; please choose one of: {}.",
                self.list(choices)
            ),
            Language::Zh => format!(
                "“{given}”不在可选的人当中，请从这几位中选一位：{}。",
                self.list(choices)
            ),
        }
    }

    /// A letter that is not an option's.
    pub(super) fn not_an_option(self, given: &str, letters: &[String]) -> String {
        match self.0 {
            Language::En => format!(
                "{given} is not an option; please choose among {}.",
                self.list(letters)
            ),
            Language::Zh => format!("没有“{given}”这个选项，请在{}中选择。", self.list(letters)),
        }
    }

    /// Too few or too many letters: exactly `least` when `least == most` (one, or the question's
    /// count), else at least one.
    pub(super) fn option_count(self, least: usize, most: usize) -> String {
        match (self.0, least, most) {
            (Language::En, 1, 1) => "Please choose exactly one option.".into(),
            (Language::En, l, m) if l == m => format!("Please choose exactly {l} options."),
            (Language::En, _, _) => "Please choose at least one option.".into(),
            (Language::Zh, 1, 1) => "请只选一个选项。".into(),
            (Language::Zh, l, m) if l == m => format!("请正好选{l}个选项。"),
            (Language::Zh, _, _) => "请至少选一个选项。".into(),
        }
    }

    /// An interaction that is neither asking nor investigating.
    pub(super) fn not_an_action(self, given: &str) -> String {
        match self.0 {
            Language::En => {
                format!("{given} is not an action; please ask someone or investigate a clue.")
            }
            Language::Zh => {
                format!("“{given}”不是可选的行动：请向某位玩家提问，或者调查一条线索。")
            }
        }
    }

    pub(super) fn no_clue_left(self) -> &'static str {
        match self.0 {
            Language::En => "No clue is left to investigate; please ask someone a question.",
            Language::Zh => "已经没有可以调查的线索了，请向某位玩家提一个问题。",
        }
    }

    /// An investigation without a clue.
    pub(super) fn choose_clue(self, offers: &[String]) -> String {
        match self.0 {
            Language::En => format!("Please choose a clue: {}.", self.offers(offers)),
            Language::Zh => format!("请选一条线索：{}。", self.offers(offers)),
        }
    }

    /// A clue that is not on offer.
    pub(super) fn not_on_offer(self, given: &str, offers: &[String]) -> String {
        match self.0 {
            Language::En => format!(
                "{given} is not on offer; please choose one of: {}.",
                self.offers(offers)
            ),
            Language::Zh => format!(
                "“{given}”不在可调查的线索当中，请从这些线索中选一条：{}。",
                self.offers(offers)
            ),
        }
    }

    /// A score given to someone who is not scored.
    pub(super) fn not_scored(self, stranger: &str, others: &[String]) -> String {
        match self.0 {
            Language::En => format!(
                "{stranger} is not among the players you score ({}).",
                self.list(others)
            ),
            Language::Zh => format!(
                "“{stranger}”不在你要打分的玩家当中（{}）。",
                self.list(others)
            ),
        }
    }

    /// A player left without a `module` score.
    pub(super) fn missing_score(self, who: &str, module: &str) -> String {
        match self.0 {
            Language::En => format!("Please give {who} a {module} score."),
            Language::Zh => format!("请给{who}打一个{}分。", self.module(module)),
        }
    }

    /// A score above the scale.
    pub(super) fn off_scale(self, who: &str, module: &str, given: u32, scale: u32) -> String {
        match self.0 {
            Language::En => {
                format!("{who}'s {module} score is {given}; scores go from 0 to {scale}.")
            }
            Language::Zh => format!(
                "你给{who}的{}分是{given}分，但分数只能在0到{scale}之间。",
                self.module(module)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `s` holds a CJK ideograph.
    fn chinese(s: &str) -> bool {
        s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
    }

    #[test]
    fn a_chinese_seat_is_prompted_in_chinese() {
        let (en, zh) = (SeatLines(Language::En), SeatLines(Language::Zh));
        let prompts = [
            (en.ask(0), zh.ask(0)),
            (en.ask(2), zh.ask(2)),
            (en.asked("Ann", "Why?"), zh.asked("沈墨卿", "你去哪了？")),
            (en.interact(true).into(), zh.interact(true).into()),
            (en.interact(false).into(), zh.interact(false).into()),
            (en.score(10), zh.score(10)),
            (en.accuse().into(), zh.accuse().into()),
        ];
        for (e, z) in &prompts {
            assert!(!chinese(e), "{e}");
            assert!(
                chinese(z) && !z.contains("Ask") && !z.contains("Your"),
                "{z}"
            );
        }
        assert_eq!(zh.ask(2), "第2轮自由提问：请选一位玩家，向其提一个问题。");
        assert_eq!(zh.asked("沈墨卿", "你去哪了？"), "沈墨卿问你：你去哪了？");
        assert!(zh.score(10).contains("0分到10分"));
    }

    #[test]
    fn the_english_lines_are_the_ones_stored_games_hold() {
        let en = SeatLines(Language::En);
        assert_eq!(
            en.ask(1),
            "Open questioning, round 1: ask one player a question."
        );
        assert_eq!(
            en.score(10),
            "Score how much you trust, and how much you suspect, each other player, from 0 to \
             10. Nobody else sees these scores."
        );
        let cast = ["Ann".to_string(), "Bo".to_string()];
        assert_eq!(
            en.not_among("Zed", &cast),
            "Zed is not among the choices; please choose one of: Ann, Bo."
        );
        assert_eq!(
            SeatLines(Language::Zh).not_among("Zed", &cast),
            "“Zed”不在可选的人当中，请从这几位中选一位：Ann、Bo。"
        );
    }
}
