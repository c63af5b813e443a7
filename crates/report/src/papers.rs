//! Which protocol each paper's tables and figures come from, and what a section is called when its
//! games were played under another protocol.
//!
//! A section named after a paper's table or figure promises that paper's setup. ThinkThrice Figure 4
//! counts a civilian win under ThinkThrice's plurality rule; PLAYER* Table A3's Voting counts it under
//! WellPlay's elimination rule; Table A5's costs are those of WellPlay's rounds. Pooling games of
//! another protocol into such a section — or printing them under the paper's name — compares unlike
//! things and misattributes them. So every section is built from the games of one protocol: the
//! paper's own under the paper's name ("ThinkThrice Figure 4 — …"), any other under a plain title
//! that names the protocol ("Win rate and murderer detection — wellplay protocol"), so what a run
//! measured is never dropped and never mislabelled.

use sleuth_game::game::Protocol;

/// What a protocol-scoped section measures. Each has one paper whose name it carries when built from
/// that paper's protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measures {
    /// Factual QA, civilian win rate and detection per condition (ThinkThrice Table 4).
    Factual,
    /// Civilian win rate and murderer detection per condition, as bars (ThinkThrice Figure 4).
    Votes,
    /// Multiple-choice scores by script and method (PLAYER* Table A3).
    Choice,
    /// Cost per script and phase (PLAYER* Table A5).
    Cost,
    /// Overall and informed accuracy on inferential questions, per condition grouped by model
    /// (ThinkThrice Figure 5). Any protocol's evaluation asks a script's inferential questions.
    Inferential,
}

/// A section's file stem and title.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heading {
    pub id: &'static str,
    pub title: String,
}

impl Measures {
    /// Every kind, in report order.
    pub const ALL: [Measures; 5] = [
        Measures::Factual,
        Measures::Votes,
        Measures::Inferential,
        Measures::Choice,
        Measures::Cost,
    ];

    /// The protocol of the paper whose name the section carries.
    pub fn paper_protocol(self) -> Protocol {
        match self {
            Measures::Factual | Measures::Votes | Measures::Inferential => Protocol::ThinkThrice,
            Measures::Choice | Measures::Cost => Protocol::WellPlay,
        }
    }

    /// Protocols in the order their sections appear: the paper's first, then the others.
    pub fn protocols(self) -> impl Iterator<Item = Protocol> {
        let paper = self.paper_protocol();
        std::iter::once(paper).chain(Protocol::ALL.into_iter().filter(move |p| *p != paper))
    }

    /// The heading of the section built from `protocol`'s games.
    pub fn heading(self, protocol: Protocol) -> Heading {
        let paper = protocol == self.paper_protocol();
        let id = match (self, protocol) {
            (Measures::Factual, Protocol::ThinkThrice) => "thinkthrice_table4",
            (Measures::Factual, Protocol::WellPlay) => "wellplay_factual",
            (Measures::Factual, Protocol::Mirage) => "mirage_factual",
            (Measures::Votes, Protocol::ThinkThrice) => "thinkthrice_figure4",
            (Measures::Votes, Protocol::WellPlay) => "wellplay_votes",
            (Measures::Votes, Protocol::Mirage) => "mirage_votes",
            (Measures::Choice, Protocol::WellPlay) => "player_table_a3",
            (Measures::Choice, Protocol::ThinkThrice) => "thinkthrice_choice",
            (Measures::Choice, Protocol::Mirage) => "mirage_choice",
            (Measures::Cost, Protocol::WellPlay) => "player_table_a5",
            (Measures::Cost, Protocol::ThinkThrice) => "thinkthrice_cost",
            (Measures::Cost, Protocol::Mirage) => "mirage_cost",
            (Measures::Inferential, Protocol::ThinkThrice) => "thinkthrice_figure5",
            (Measures::Inferential, Protocol::WellPlay) => "wellplay_inferential",
            (Measures::Inferential, Protocol::Mirage) => "mirage_inferential",
        };
        let (paper_title, what) = match self {
            Measures::Factual => (
                "ThinkThrice Table 4 — factual QA, civilian win rate and murderer detection",
                "Factual QA, civilian win rate and murderer detection",
            ),
            Measures::Votes => (
                "ThinkThrice Figure 4 — win rate and murderer detection",
                "Win rate and murderer detection",
            ),
            Measures::Choice => (
                "PLAYER* Table A3 — WellPlay scores by script and method",
                "Multiple-choice scores by script and method",
            ),
            Measures::Cost => (
                "PLAYER* Table A5 — cost per script and phase",
                "Cost per script and phase",
            ),
            Measures::Inferential => (
                "ThinkThrice Figure 5 — overall and informed accuracy on inferential questions",
                "Overall and informed accuracy on inferential questions",
            ),
        };
        Heading {
            id,
            title: if paper {
                paper_title.to_string()
            } else {
                format!("{what} — {protocol} protocol")
            },
        }
    }
}

/// How `protocol` decides who won, for the notes of sections that show a win rate.
pub fn win_rule(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::WellPlay => {
            "WellPlay's elimination rule: the civilians win when a murderer receives at least half \
             of the votes cast"
        }
        Protocol::ThinkThrice | Protocol::Mirage => {
            "the plurality rule: the civilians win when murderers alone have the most votes"
        }
    }
}

/// A protocol as `result.json` writes it; `None` for a name sleuth does not know (a result from
/// elsewhere), whose games no paper's section can hold.
pub fn protocol(name: &str) -> Option<Protocol> {
    Protocol::ALL.into_iter().find(|p| p.as_str() == name)
}

/// Every file stem a protocol-scoped section may write, so a rewrite removes what no longer applies.
pub fn all_ids() -> Vec<&'static str> {
    Measures::ALL
        .into_iter()
        .flat_map(|m| m.protocols().map(move |p| m.heading(p).id))
        .collect()
}
