//! The canonical script model: one shape that holds sleuth's own scripts, WellPlay (PLAYER\*) and MIRAGE
//! without loss, so that any framework can play any script.

use serde::{Deserialize, Serialize};

/// Language of every text in a script; chooses prompts and the simulated model's tokenization.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    #[default]
    En,
    Zh,
}

impl Language {
    /// The code used in prompt directory names (`prompts/<framework>/<code>/`).
    pub fn code(self) -> &'static str {
        match self {
            Language::En => "en",
            Language::Zh => "zh",
        }
    }
}

impl std::str::FromStr for Language {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "en" => Ok(Language::En),
            "zh" => Ok(Language::Zh),
            other => Err(format!(
                "unknown language `{other}` (expected `en` or `zh`)"
            )),
        }
    }
}

/// A character's side in the game.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Murderer,
    Civilian,
}

fn one() -> u32 {
    1
}

/// A whole script as written in the file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    pub format: u32,
    pub title: String,
    pub language: Language,
    /// Where the script came from (`wellplay`, `mirage`), for imported scripts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// What everyone knows at the start.
    #[serde(default)]
    pub premise: String,
    /// Number of acts (WellPlay) or stages (MIRAGE multi-stage scripts); 1 for a script read at once.
    #[serde(default = "one")]
    pub acts: u32,
    pub victims: Vec<Victim>,
    /// Whom the vote is among, when that is not simply the players: a script may have the players vote
    /// among people who do not play (MIRAGE "The Final Performance of a Big Star": two players, seven
    /// non-player suspects, the culprit among them). Empty: the players are the suspects.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suspects: Vec<Suspect>,
    /// The host's lines; language defaults when absent (imported scripts have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostManual>,
    pub characters: Vec<Character>,
    #[serde(default)]
    pub clues: Vec<Clue>,
    pub truth: Truth,
    /// ThinkThrice factual questions (question, answer, source sentence).
    #[serde(default)]
    pub factual: Vec<FactualQuestion>,
    /// ThinkThrice inferential multiple-choice questions.
    #[serde(default)]
    pub inferential: Vec<InferentialQuestion>,
    /// WellPlay multiple-choice questions, per character or for full script access.
    #[serde(default)]
    pub choice: Vec<ChoiceQuestion>,
}

/// A victim of the case (never a player).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Victim {
    pub name: String,
    #[serde(default)]
    pub description: String,
}

/// Someone the players may vote for. A player listed here is a suspect as the player they are (their
/// role says whether they are a culprit); anyone else is a non-player suspect, described for the players
/// and marked as a culprit here, since they have no role.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Suspect {
    pub name: String,
    /// Who they are, as every player may know it (non-player suspects).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// A non-player suspect who committed the murder.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub culprit: bool,
}

/// The host's pre-set lines; the host is not an LLM (ThinkThrice rule 5).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostManual {
    pub opening: String,
    pub clue_announcement: String,
    pub vote_call: String,
    #[serde(default)]
    pub manual: String,
}

impl HostManual {
    /// Generic lines for scripts that bring none (imported datasets).
    pub fn default_for(lang: Language) -> HostManual {
        match lang {
            Language::En => HostManual {
                opening: "Welcome. A murder has been committed, and one or more of you did it. Each of you has your own script; \
                          nobody else can read it. Talk, ask and answer, and at the end vote for the murderer."
                    .into(),
                clue_announcement: "New clue cards have been found. Read them carefully.".into(),
                vote_call: "It is time to vote. Name the player you believe is the murderer.".into(),
                manual: String::new(),
            },
            Language::Zh => HostManual {
                opening: "欢迎来到本局剧本杀。案件已经发生，凶手就在你们之中。每个人都有自己的剧本，别人无法看到。\
                          请互相交流、提问和回答，最后投票找出凶手。"
                    .into(),
                clue_announcement: "新的线索卡已经找到，请仔细阅读。".into(),
                vote_call: "现在开始投票。请说出你认为是凶手的玩家。".into(),
                manual: String::new(),
            },
        }
    }
}

/// One player's character and private script.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Character {
    pub name: String,
    pub role: Role,
    /// One or two sentences everyone sees in the cast list.
    #[serde(default)]
    pub public: String,
    /// Background: who they are, their history with the victim and the others.
    #[serde(default)]
    pub story: String,
    /// The day of the incident.
    #[serde(default)]
    pub timeline: String,
    /// Script text per act or stage (WellPlay `script`, MIRAGE `Script`), released act by act.
    #[serde(default)]
    pub acts: Vec<String>,
    /// Things kept back unless asked; for a murderer, what they must hide.
    #[serde(default)]
    pub secrets: Vec<String>,
    /// What the character wants (WellPlay goals per act and final goal, MIRAGE Purpose).
    #[serde(default)]
    pub goals: Vec<String>,
    #[serde(default)]
    pub relationships: Vec<String>,
    /// How to play the character: personality, speech style (WellPlay acts_performance, MIRAGE Performance).
    #[serde(default)]
    pub performance: Vec<String>,
    /// Rules the character must follow (MIRAGE Ability).
    #[serde(default)]
    pub abilities: Vec<String>,
    /// Victims this character killed (WellPlay `kill_by_me`).
    #[serde(default)]
    pub killed: Vec<String>,
}

impl Character {
    /// The character's whole private script as one text: what factual questions are drawn from and
    /// what self-refinement and self-verification check against.
    pub fn script_text(&self) -> String {
        let mut parts: Vec<&str> = vec![&self.story, &self.timeline];
        parts.extend(self.acts.iter().map(String::as_str));
        parts.extend(self.secrets.iter().map(String::as_str));
        parts.extend(self.relationships.iter().map(String::as_str));
        parts
            .into_iter()
            .filter(|p| !p.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// True for a murderer.
    pub fn is_murderer(&self) -> bool {
        self.role == Role::Murderer
    }
}

/// A clue card: handed out (ThinkThrice) or found by investigating (MIRAGE).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Clue {
    pub id: String,
    #[serde(default)]
    pub title: String,
    pub text: String,
    /// The character the clue concerns, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub about: Option<String>,
    /// Where it is found (a room, "Corpse Information"), if not about a character.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// Bears on a murderer's identity or actions.
    #[serde(default)]
    pub key: bool,
    /// The act from which it is available (1-based); all acts when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub act: Option<u32>,
}

/// Who killed whom, and what really happened.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Truth {
    /// The murderer, for scripts with exactly one (sleuth's own format).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub murderer: Option<String>,
    /// Culprits per victim, for scripts with several victims or murderers.
    #[serde(default)]
    pub culprits: Vec<Culprits>,
    #[serde(default)]
    pub narrative: String,
}

/// The culprits of one victim.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Culprits {
    pub victim: String,
    pub by: Vec<String>,
}

/// A factual question about one character's script (ThinkThrice §5.1).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FactualQuestion {
    pub character: String,
    pub question: String,
    pub answer: String,
    pub source: String,
    /// The human review that kept a generated question (`sleuth annotate apply`, `docs/humans.md`):
    /// who vouched for it and when, so a question file says which questions people have seen. Absent
    /// on questions written by hand or generated without review; no game reads it, and an absent
    /// review is not serialised, so older files and their digests are unchanged. Boxed: most
    /// questions have none, and a question stays small where many are held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<Box<QuestionReview>>,
}

/// Provenance of a reviewed factual question: the *questions* campaign and item it was kept from,
/// who kept it (as generated, or with their edit) and who voted against it, each with the time of
/// their answer, and when it was written into the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuestionReview {
    pub campaign: String,
    pub item: u32,
    /// Kept it as generated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepted: Vec<Reviewer>,
    /// Edited it; the question's text is the edit most of them gave.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub edited: Vec<Reviewer>,
    /// Rejected it (outvoted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rejected: Vec<Reviewer>,
    /// The question and answer as the model wrote them, when the stored text is an edit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated: Option<GeneratedText>,
    /// When the review was written into the file (RFC 3339).
    pub applied_at: String,
}

/// One annotator's part in a review: their name and when they answered (RFC 3339).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reviewer {
    pub name: String,
    pub at: String,
}

/// A generated question's text before a reviewer's edit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratedText {
    pub question: String,
    pub answer: String,
}

/// An inferential multiple-choice question whose answer is in no single script.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InferentialQuestion {
    pub question: String,
    pub options: Vec<String>,
    pub answer: String,
    pub rationale: String,
}

/// WellPlay question categories and their points (PLAYER\* §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    /// A: who killed the victim — 10 points.
    Objective,
    /// B: how, why, where, when, relationships around the murder — 5 points.
    Reasoning,
    /// C: relations between characters — 2 points.
    Relations,
}

impl Category {
    /// The name in files and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Objective => "objective",
            Category::Reasoning => "reasoning",
            Category::Relations => "relations",
        }
    }

    /// Points a correct answer earns.
    pub fn points(self) -> u32 {
        match self {
            Category::Objective => 10,
            Category::Reasoning => 5,
            Category::Relations => 2,
        }
    }
}

/// A WellPlay multiple-choice question.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChoiceQuestion {
    /// The character whose player is asked; `None` for the full-script-access (omniscient) set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub character: Option<String>,
    pub category: Category,
    /// Multiple choice: the player may choose several options (how many: `picks`).
    #[serde(default)]
    pub multiple: bool,
    /// How many options the question asks for ("the two people you most suspect"): the player is asked
    /// for exactly that many. Multiple choice only; absent, one or more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub picks: Option<u32>,
    /// How an answer is judged against `truth`; absent, [`ChoiceRule::Exact`].
    #[serde(default, skip_serializing_if = "ChoiceRule::is_exact")]
    pub rule: ChoiceRule,
    pub question: String,
    /// Option texts, lettered A, B, C, … in order.
    pub options: Vec<String>,
    /// Correct letters.
    pub truth: Vec<String>,
    /// The full-script-access (omniscient) evaluation asks it too: its copy there was folded into this
    /// one, so a question is counted once (implied when `character` is `None`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub full_access: bool,
    /// Kept out of scoring (the source's question text was blank) but kept, so counts match the source.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unscored: bool,
}

/// How a multiple-choice answer is judged against the true letters. WellPlay's reference scorer
/// (PLAYER\*) is not "the chosen letters are the true letters": its published numbers count a
/// multiple-choice answer right when the true letter is among the picks, and a single-choice answer right
/// when the letter chosen is one of the true letters (see `docs/metrics.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChoiceRule {
    /// The chosen letters are exactly the true letters: every one, and nothing else. With one true
    /// letter and one pick, simply the right letter (sleuth's own scripts, "choose all that apply").
    #[default]
    Exact,
    /// Single choice with several acceptable letters: one letter is chosen, and it is one of them.
    AnyOf,
    /// Multiple choice: every true letter is among the chosen ones, whatever else is chosen (how many
    /// the player may choose is bounded by `picks`).
    Includes,
}

impl ChoiceRule {
    /// For `skip_serializing_if`: the default rule is not written.
    pub fn is_exact(&self) -> bool {
        *self == ChoiceRule::Exact
    }

    /// The name in files.
    pub fn as_str(self) -> &'static str {
        match self {
            ChoiceRule::Exact => "exact",
            ChoiceRule::AnyOf => "any_of",
            ChoiceRule::Includes => "includes",
        }
    }
}

impl ChoiceQuestion {
    /// Whether the full-script-access evaluation asks this question.
    pub fn in_full_access(&self) -> bool {
        self.character.is_none() || self.full_access
    }
}

/// Option letters in order: A, B, C, …
pub fn option_letter(i: usize) -> String {
    char::from(b'A' + (i as u8 % 26)).to_string()
}

/// Index of an option letter (`"c"` or `"C"` → 2).
pub fn letter_index(letter: &str) -> Option<usize> {
    let l = letter.trim();
    let mut chars = l.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) if c.is_ascii_alphabetic() => {
            Some((c.to_ascii_uppercase() as u8 - b'A') as usize)
        }
        _ => None,
    }
}

impl InferentialQuestion {
    /// Index of the correct option, if the answer letter names one.
    pub fn answer_index(&self) -> Option<usize> {
        letter_index(&self.answer).filter(|&i| i < self.options.len())
    }
}

impl Script {
    /// The character with this name.
    pub fn character(&self, name: &str) -> Option<&Character> {
        self.characters.iter().find(|c| c.name == name)
    }

    /// Names of the murderers.
    pub fn murderers(&self) -> Vec<&str> {
        self.characters
            .iter()
            .filter(|c| c.is_murderer())
            .map(|c| c.name.as_str())
            .collect()
    }

    /// Whether the named character is a murderer.
    pub fn is_murderer(&self, name: &str) -> bool {
        self.character(name).is_some_and(|c| c.is_murderer())
    }

    /// Names the vote is among: the `suspects` list, or every player when the script has none.
    pub fn suspect_names(&self) -> Vec<&str> {
        if self.suspects.is_empty() {
            self.characters.iter().map(|c| c.name.as_str()).collect()
        } else {
            self.suspects.iter().map(|s| s.name.as_str()).collect()
        }
    }

    /// Suspects who are not players, in the order of the `suspects` list.
    pub fn non_player_suspects(&self) -> impl Iterator<Item = &Suspect> {
        self.suspects
            .iter()
            .filter(|s| self.character(&s.name).is_none())
    }

    /// Who committed the murder: the murderer players, then the non-player suspects marked as culprits.
    /// Votes, the winner rule, Victory and detection accuracy are about these names.
    pub fn culprits(&self) -> Vec<&str> {
        let mut out = self.murderers();
        out.extend(
            self.non_player_suspects()
                .filter(|s| s.culprit)
                .map(|s| s.name.as_str()),
        );
        out
    }

    /// Whether the named person (player or not) is a culprit.
    pub fn is_culprit(&self, name: &str) -> bool {
        self.culprits().contains(&name)
    }

    /// The host's lines, or the language's defaults. The default vote call asks for a suspect rather
    /// than a player when the vote is among people who do not all play.
    pub fn host(&self) -> HostManual {
        self.host.clone().unwrap_or_else(|| {
            let mut h = HostManual::default_for(self.language);
            if self.non_player_suspects().next().is_some() {
                h.vote_call = match self.language {
                    Language::En => {
                        "It is time to vote. Name the suspect you believe is the murderer.".into()
                    }
                    Language::Zh => "现在开始投票。请说出你认为是凶手的嫌疑人。".into(),
                };
            }
            h
        })
    }
}
