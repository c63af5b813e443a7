//! The host's procedural lines in each language. The host is not an LLM: its lines are pre-set
//! (ThinkThrice rule 5); the script's own host manual supplies the opening, clue and vote lines, and
//! these fill in the procedure around them.

use crate::Language;

/// Pre-set lines of the host in one language.
#[derive(Debug, Clone, Copy)]
pub struct HostLines(pub Language);

impl HostLines {
    /// Joins names: "A, B and C" / "A、B和C".
    pub fn join(&self, names: &[&str]) -> String {
        match (self.0, names) {
            (_, []) => String::new(),
            (_, [one]) => one.to_string(),
            (Language::En, [init @ .., last]) => format!("{} and {last}", init.join(", ")),
            (Language::Zh, [init @ .., last]) => format!("{}和{last}", init.join("、")),
        }
    }

    /// Handing a player their script.
    pub fn script_handed(&self, name: &str) -> String {
        match self.0 {
            Language::En => format!(
                "{name}, here is your character script. Read it carefully; nobody else can see it."
            ),
            Language::Zh => format!("{name}，这是你的角色剧本，请仔细阅读，其他人看不到它。"),
        }
    }

    /// The self-introduction request (ThinkThrice Appendix B's host line, in our words).
    pub fn introduce(&self, name: &str, victims: &str) -> String {
        match self.0 {
            Language::En => format!(
                "{name}, please introduce your role first. Then tell us what you know about {victims}: what kind of person they were and your relationship with them. Finally, describe your timeline on the day of the incident in detail: at what times you saw whom, and what you did."
            ),
            Language::Zh => format!(
                "{name}，请先介绍你的角色，再说说你对{victims}的了解：这是个怎样的人，你和其的关系如何。最后详细讲述你在案发当天的时间线：几点见到了谁，做了什么。"
            ),
        }
    }

    /// The start of an open-questioning round.
    pub fn open_round(&self, round: u32) -> String {
        match self.0 {
            Language::En => format!(
                "Round {round} of open questioning: each of you may now question one other player."
            ),
            Language::Zh => {
                format!("第{round}轮自由提问：每位玩家现在可以向另一位玩家提一个问题。")
            }
        }
    }

    /// A clue card as read out.
    pub fn clue(&self, title: &str, text: &str) -> String {
        match (self.0, title.trim().is_empty()) {
            (Language::En, false) => format!("Clue card \"{title}\": {text}"),
            (Language::En, true) => format!("Clue card: {text}"),
            (Language::Zh, false) => format!("线索卡「{title}」：{text}"),
            (Language::Zh, true) => format!("线索卡：{text}"),
        }
    }

    /// The attribution a memory record carries, so a recalled chunk still says who said it to whom.
    pub fn memory_label(&self, kind: &str, speaker: &str, to: Option<&str>) -> String {
        match (self.0, kind, to) {
            (Language::En, "question", Some(to)) => format!("[{speaker} asked {to}] "),
            (Language::En, "answer", Some(to)) => format!("[{speaker} answered {to}] "),
            (Language::En, "introduction", _) => format!("[{speaker} introduced themself] "),
            (Language::En, "accusation", Some(to)) => format!("[{speaker} accused {to}] "),
            (Language::En, "investigation", _) => format!("[{speaker} investigating] "),
            (Language::Zh, "question", Some(to)) => format!("[{speaker}问{to}] "),
            (Language::Zh, "accusation", Some(to)) => format!("[{speaker}指控{to}] "),
            (Language::Zh, "investigation", _) => format!("[{speaker}调查] "),
            (Language::Zh, "answer", Some(to)) => format!("[{speaker}回答{to}] "),
            (Language::Zh, "introduction", _) => format!("[{speaker}自我介绍] "),
            (Language::Zh, _, _) if speaker == "host" => "[主持人] ".to_string(),
            (_, _, _) => format!("[{speaker}] "),
        }
    }

    /// What an agent searches its memory with before questioning `target`.
    pub fn query_about(&self, target: &str, victims: &str) -> String {
        match self.0 {
            Language::En => format!("{target} timeline movements {victims}"),
            Language::Zh => format!("{target} 时间 行踪 {victims}"),
        }
    }

    /// What an agent searches its memory with before choosing whom to question.
    pub fn query_suspects(&self, victims: &str) -> String {
        match self.0 {
            Language::En => format!("{victims} death suspicious timeline motive contradiction"),
            Language::Zh => format!("{victims} 死亡 可疑 时间 动机 矛盾"),
        }
    }

    /// What an agent searches its memory with before voting.
    pub fn query_vote(&self, victims: &str) -> String {
        match self.0 {
            Language::En => format!("who killed {victims} motive opportunity weapon lied"),
            Language::Zh => format!("谁杀了{victims} 动机 时机 凶器 说谎"),
        }
    }

    /// Handing out the next act of every script.
    pub fn act_released(&self, act: u32) -> String {
        match self.0 {
            Language::En => format!(
                "Act {act} begins. Each of you now receives the next part of your script; read it before we continue."
            ),
            Language::Zh => format!("第{act}幕开始。每位玩家现在拿到剧本的下一部分，请先阅读再继续。"),
        }
    }

    /// A player's next act, handed over privately.
    pub fn act_handed(&self, name: &str, act: u32) -> String {
        match self.0 {
            Language::En => format!("{name}, here is act {act} of your script."),
            Language::Zh => format!("{name}，这是你剧本的第{act}幕。"),
        }
    }

    /// The start of a WellPlay questioning round with `m` questions per player.
    pub fn questioning_round(&self, round: u32, m: u32) -> String {
        match (self.0, m) {
            (Language::En, 1) => format!(
                "Round {round} of questioning: each of you asks one question of another player, who must answer."
            ),
            (Language::En, _) => format!(
                "Round {round} of questioning: each of you asks {m} questions, each of a player of your choice, who must answer."
            ),
            (Language::Zh, 1) => {
                format!("第{round}轮提问：每位玩家向另一位玩家提一个问题，被问者必须回答。")
            }
            (Language::Zh, _) => format!(
                "第{round}轮提问：每位玩家提{m}个问题，每个问题可问任意一位玩家，被问者必须回答。"
            ),
        }
    }

    /// The outcome under the elimination rule (WellPlay).
    pub fn eliminated(&self, eliminated: &str, murderers: &str, civilians_won: bool) -> String {
        match (self.0, eliminated.is_empty(), civilians_won) {
            (Language::En, true, _) => format!(
                "Nobody received half of the votes, so nobody is eliminated. The murderer was {murderers}: the murderers win."
            ),
            (Language::En, false, true) => format!(
                "{eliminated} received at least half of the votes and is eliminated. The murderer was {murderers}: the civilians win."
            ),
            (Language::En, false, false) => format!(
                "{eliminated} received at least half of the votes and is eliminated. The murderer was {murderers}: the murderers win."
            ),
            (Language::Zh, true, _) => {
                format!("没有人得到半数选票，无人出局。凶手是{murderers}：凶手获胜。")
            }
            (Language::Zh, false, true) => {
                format!("{eliminated}得票过半，出局。凶手是{murderers}：平民获胜。")
            }
            (Language::Zh, false, false) => {
                format!("{eliminated}得票过半，出局。凶手是{murderers}：凶手获胜。")
            }
        }
    }

    /// What one ballot of a per-victim vote is about, appended to the script's vote call (WellPlay
    /// scripts with several victims: one vote per victim, PLAYER* rule 6).
    pub fn vote_case(&self, victim: &str) -> String {
        match self.0 {
            Language::En => {
                format!("This ballot is about the death of {victim}: name who killed {victim}.")
            }
            Language::Zh => format!("这一票关于{victim}之死：请说出杀害{victim}的人。"),
        }
    }

    /// One victim's case read out after per-victim votes: who was eliminated and who did it.
    pub fn case_outcome(&self, victim: &str, eliminated: &str, culprits: &str) -> String {
        match (self.0, eliminated.is_empty(), culprits.is_empty()) {
            (Language::En, _, true) => format!("{victim}: nobody among us killed {victim}; no vote was held."),
            (Language::En, true, false) => format!("{victim}: nobody received half of the votes. The murderer was {culprits}."),
            (Language::En, false, false) => format!("{victim}: {eliminated} received at least half of the votes and is eliminated. The murderer was {culprits}."),
            (Language::Zh, _, true) => format!("{victim}：凶手不在我们之中，不投票。"),
            (Language::Zh, true, false) => format!("{victim}：没有人得票过半。凶手是{culprits}。"),
            (Language::Zh, false, false) => format!("{victim}：{eliminated}得票过半，出局。凶手是{culprits}。"),
        }
    }

    /// The verdict after per-victim votes: the civilians win only if every solvable case was solved.
    pub fn cases_verdict(&self, civilians_won: bool) -> &'static str {
        match (self.0, civilians_won) {
            (Language::En, true) => "Every murderer was voted out: the civilians win.",
            (Language::En, false) => "A murderer escaped: the murderers win.",
            (Language::Zh, true) => "每一位凶手都被投出：平民获胜。",
            (Language::Zh, false) => "有凶手逃脱：凶手获胜。",
        }
    }

    /// The LLM judge's system line.
    pub fn judge_persona(&self) -> &'static str {
        match self.0 {
            Language::En => "You are a strict, fair grader of quiz answers.",
            Language::Zh => "你是一位严格而公正的答题评分员。",
        }
    }

    /// The reveal after the vote.
    pub fn reveal(&self, tally: &[(String, u32)], murderers: &str, civilians_won: bool) -> String {
        match self.0 {
            Language::En => {
                let t = tally
                    .iter()
                    .map(|(p, n)| format!("{p}: {n}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let verdict = if civilians_won {
                    "A murderer received the most votes: the civilians win."
                } else {
                    "The murderer escaped: the murderers win."
                };
                format!("The votes are: {t}. The murderer was {murderers}. {verdict}")
            }
            Language::Zh => {
                let t = tally
                    .iter()
                    .map(|(p, n)| format!("{p}{n}票"))
                    .collect::<Vec<_>>()
                    .join("，");
                let verdict = if civilians_won {
                    "凶手得票最多：平民获胜。"
                } else {
                    "凶手逃脱了：凶手获胜。"
                };
                format!("投票结果：{t}。凶手是{murderers}。{verdict}")
            }
        }
    }

    /// MIRAGE forced exposure (Table 3): the culprit's announcement, made in their name at the start.
    pub fn mirage_exposure(&self, name: &str, victims: &str) -> String {
        match self.0 {
            Language::En => format!(
                "I am {name}, and before anything else I must tell you the truth: I am the one who killed {victims}."
            ),
            Language::Zh => format!("我是{name}。在一切开始之前，我必须说出真相：{victims}是我杀的。"),
        }
    }

    /// MIRAGE: the start of an open-conversation phase.
    pub fn mirage_conversation(&self, iteration: u32) -> String {
        match self.0 {
            Language::En => format!(
                "Open conversation, round {iteration}: each of you speaks once, in turn. Say what you know, what you make of it and whom you suspect."
            ),
            Language::Zh => format!(
                "第{iteration}轮自由交流：每人依次发言一次。说说你知道什么、你怎么看，以及你怀疑谁。"
            ),
        }
    }

    /// MIRAGE: the start of an interaction phase.
    pub fn mirage_interaction(&self, iteration: u32) -> String {
        match self.0 {
            Language::En => format!(
                "Interaction, round {iteration}: each of you either asks one player a question, which they must answer, or investigates one clue, which is then shown to everyone."
            ),
            Language::Zh => format!(
                "第{iteration}轮互动：每人可以向一位玩家提问（对方必须回答），或者调查一条线索（线索随后向所有人公开）。"
            ),
        }
    }

    /// MIRAGE: a clue disclosed to everyone by an investigation.
    pub fn mirage_clue_found(&self, investigator: &str, place: &str, text: &str) -> String {
        match self.0 {
            Language::En => {
                format!("{investigator} investigated {place} and found this clue: {text}")
            }
            Language::Zh => format!("{investigator}调查了{place}，发现了这条线索：{text}"),
        }
    }

    /// MIRAGE multi-stage scripts: the next stage begins.
    pub fn mirage_stage_released(&self, stage: u32) -> String {
        match self.0 {
            Language::En => format!(
                "Stage {stage} begins. Each of you now receives the next part of your script, and new places may be searched."
            ),
            Language::Zh => {
                format!("第{stage}阶段开始。每位玩家拿到剧本的下一部分，也有新的地点可以调查了。")
            }
        }
    }

    /// MIRAGE: a player's next stage, handed over privately.
    pub fn mirage_stage_handed(&self, name: &str, stage: u32) -> String {
        match self.0 {
            Language::En => format!("{name}, here is stage {stage} of your script."),
            Language::Zh => format!("{name}，这是你剧本的第{stage}阶段。"),
        }
    }

    /// MIRAGE: the call for accusations before the vote.
    pub fn mirage_accusation_call(&self) -> String {
        match self.0 {
            Language::En => "The time for talking is over. Each of you, accuse one other player of being the culprit and say why.".into(),
            Language::Zh => "交流到此结束。请每位玩家指控另一位玩家是凶手，并说明理由。".into(),
        }
    }

    /// MIRAGE: the vote is on the accused only.
    pub fn mirage_accused(&self, accused: &str) -> String {
        match self.0 {
            Language::En => format!(
                "Accused: {accused}. Vote for one of the accused; nobody may vote for themselves."
            ),
            Language::Zh => format!("被指控的人：{accused}。请在被指控者中投票，不能投给自己。"),
        }
    }

    /// MIRAGE: one line of a character's private trust and suspicion record (scores in 0..=1).
    pub fn mirage_scores(&self, name: &str, trust: f64, suspicion: f64) -> String {
        match self.0 {
            Language::En => format!("{name}: trust {trust:.2}, suspicion {suspicion:.2}"),
            Language::Zh => format!("{name}：信任 {trust:.2}，怀疑 {suspicion:.2}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_names_per_language() {
        assert_eq!(HostLines(Language::En).join(&["A", "B", "C"]), "A, B and C");
        assert_eq!(
            HostLines(Language::Zh).join(&["甲", "乙", "丙"]),
            "甲、乙和丙"
        );
        assert_eq!(HostLines(Language::En).join(&["A"]), "A");
    }
}
