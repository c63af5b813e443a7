//! The *New campaign* form of `/campaigns`: its fields as posted, how they read into the request
//! `sleuth annotate create` makes from its flags, and the proof a post must carry.
//!
//! **Why a proof.** The form is an owner's POST, and on loopback the viewer asks no token of the
//! owner: without more, any page the owner's browser opens could post a form to `127.0.0.1` and
//! make a campaign, with tokens it would never see but the owner would hand out. So a post needs,
//! as an annotator's answer does (`session.rs`), a same-origin request (`Sec-Fetch-Site`/`Origin`,
//! checked by the handler) and a proof only the page holds: a random value drawn once per viewer
//! process and put in the form as a hidden field. Another site can send the form but cannot read
//! the page, so it cannot know the value. Off loopback the owner's cookie is `SameSite=Strict` as
//! well. A page loaded before the viewer restarted holds an old proof: its post is refused with
//! "reload the page".

use std::sync::OnceLock;

use serde::Serialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use sleuth_report::campaign::{CampaignError, Field, Kind, Settings};

/// The form's fields as the researcher typed them, kept as text so that a refused form comes back
/// as it was sent. Field names are the command's flags without `--` ([`Field::name`]).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Values {
    pub id: String,
    pub kind: String,
    pub per_condition: String,
    pub annotators: String,
    pub stage: String,
    pub condition: String,
    pub seed: String,
}

impl Default for Values {
    /// The command's defaults, so that the form and `sleuth annotate create` draw the same campaign
    /// when nothing else is said.
    fn default() -> Values {
        Values {
            id: String::new(),
            kind: Kind::Responses.as_str().into(),
            per_condition: "20".into(),
            annotators: String::new(),
            stage: "introduction".into(),
            condition: String::new(),
            seed: "0".into(),
        }
    }
}

/// A posted form: its values and the proof it carried.
pub struct Posted {
    pub values: Values,
    pub proof: Option<String>,
}

/// What a checked form asks for: the arguments of `sleuth_report::campaign::create`.
pub struct Request {
    pub id: String,
    pub settings: Settings,
    /// As typed, split at commas (the check trims and sorts them).
    pub names: Vec<String>,
}

impl Posted {
    /// Reads an `application/x-www-form-urlencoded` body. A field sent twice keeps its first value,
    /// but `condition` keeps every one (the command's `--condition` repeats), each of which may
    /// itself list several, comma-separated. A missing field reads as empty.
    pub fn parse(body: &[u8]) -> Posted {
        let mut values = Values {
            id: String::new(),
            kind: String::new(),
            per_condition: String::new(),
            annotators: String::new(),
            stage: String::new(),
            condition: String::new(),
            seed: String::new(),
        };
        let mut seen: Vec<String> = Vec::new();
        let mut conditions: Vec<String> = Vec::new();
        let mut proof = None;
        for (key, value) in url::form_urlencoded::parse(body) {
            if key == "condition" {
                conditions.push(value.into_owned());
                continue;
            }
            if seen.iter().any(|k| *k == key) {
                continue;
            }
            seen.push(key.to_string());
            let slot = match key.as_ref() {
                "id" => &mut values.id,
                "kind" => &mut values.kind,
                "per-condition" => &mut values.per_condition,
                "annotators" => &mut values.annotators,
                "stage" => &mut values.stage,
                "seed" => &mut values.seed,
                "proof" => {
                    proof = Some(value.into_owned());
                    continue;
                }
                _ => continue,
            };
            *slot = value.into_owned();
        }
        values.condition = conditions.join(",");
        Posted { values, proof }
    }
}

fn invalid(field: Field, problem: &str) -> CampaignError {
    CampaignError::Invalid {
        field,
        problem: problem.into(),
    }
}

impl Values {
    /// The request the form makes, with the command's defaults for an empty number, stage or
    /// filter; a number that does not read, or a kind that is none, is refused naming its field.
    /// The rest (the id, the names, a *questions* kind) is checked by the library, as for the
    /// command.
    pub fn request(&self) -> Result<Request, CampaignError> {
        let kind = self
            .kind
            .trim()
            .parse::<Kind>()
            .map_err(|_| invalid(Field::Kind, "responses or rankings"))?;
        let per_condition = match self.per_condition.trim() {
            "" => 20,
            n => n
                .parse::<usize>()
                .map_err(|_| invalid(Field::PerCondition, "a whole number, at least 1"))?,
        };
        let seed = match self.seed.trim() {
            "" => 0,
            n => n.parse::<u64>().map_err(|_| {
                invalid(Field::Seed, "a whole number from 0 to 18446744073709551615")
            })?,
        };
        let stage = match self.stage.trim() {
            "" => "introduction".to_string(),
            s => s.to_string(),
        };
        let conditions = self
            .condition
            .split(',')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_string)
            .collect();
        let names = if self.annotators.trim().is_empty() {
            Vec::new()
        } else {
            self.annotators.split(',').map(str::to_string).collect()
        };
        Ok(Request {
            id: self.id.trim().to_string(),
            settings: Settings {
                kind,
                per_condition,
                stage,
                conditions,
                seed,
            },
            names,
        })
    }
}

/// Why a form was refused, as the page shows it: the field to change (when one is to blame) and
/// what it must be, and the draw's notes when nothing could be drawn.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Refusal {
    pub field: Option<&'static str>,
    pub message: String,
    pub notes: Vec<String>,
}

impl From<&CampaignError> for Refusal {
    fn from(e: &CampaignError) -> Refusal {
        match e {
            CampaignError::Invalid { field, problem } => Refusal {
                field: Some(field.name()),
                message: problem.clone(),
                notes: Vec::new(),
            },
            CampaignError::NothingDrawn { notes } => Refusal {
                field: None,
                message: e.to_string(),
                notes: notes.clone(),
            },
            other => Refusal {
                field: None,
                message: other.to_string(),
                notes: Vec::new(),
            },
        }
    }
}

/// The proof of this viewer process: 32 random bytes, hex, drawn when first asked for.
pub fn proof() -> &'static str {
    static PROOF: OnceLock<String> = OnceLock::new();
    PROOF.get_or_init(|| hex::encode(rand::random::<[u8; 32]>()))
}

/// Whether a post carries this process's proof, compared in constant time over digests (so not
/// even its length leaks).
pub fn proof_ok(given: Option<&str>) -> bool {
    let Some(given) = given else {
        return false;
    };
    let got: [u8; 32] = Sha256::digest(given.trim().as_bytes()).into();
    let want: [u8; 32] = Sha256::digest(proof().as_bytes()).into();
    got.ct_eq(&want).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_reads_as_the_commands_flags_with_their_defaults() {
        let p = Posted::parse(
            b"id=+intro+&kind=rankings&per-condition=&annotators=ann%2Cbob&stage=\
              &condition=ocot&condition=think%2C+&seed=&proof=abc&id=other",
        );
        assert_eq!(p.proof.as_deref(), Some("abc"));
        assert_eq!(p.values.condition, "ocot,think, ");
        let r = p.values.request().expect("a request");
        assert_eq!(r.id, "intro");
        assert_eq!(r.names, ["ann", "bob"]);
        assert_eq!(
            r.settings,
            Settings {
                kind: Kind::Rankings,
                per_condition: 20,
                stage: "introduction".into(),
                conditions: vec!["ocot".into(), "think".into()],
                seed: 0,
            }
        );
        assert!(Posted::parse(b"kind=responses&annotators=+")
            .values
            .request()
            .is_ok_and(|r| r.names.is_empty()));
    }

    #[test]
    fn numbers_and_kinds_that_do_not_read_name_their_field() {
        for (body, want) in [
            (&b"kind=votes"[..], Field::Kind),
            (b"kind=responses&per-condition=two", Field::PerCondition),
            (b"kind=responses&per-condition=-1", Field::PerCondition),
            (b"kind=responses&seed=x", Field::Seed),
        ] {
            match Posted::parse(body).values.request() {
                Err(CampaignError::Invalid { field, .. }) => assert_eq!(field, want),
                Err(e) => panic!("{e}"),
                Ok(_) => panic!("{body:?} was accepted"),
            }
        }
        let r = Refusal::from(&invalid(Field::Seed, "a number"));
        assert_eq!((r.field, r.message.as_str()), (Some("seed"), "a number"));
    }

    #[test]
    fn only_this_processs_proof_passes() {
        assert!(proof_ok(Some(proof())));
        assert!(!proof_ok(None));
        assert!(!proof_ok(Some("")));
        assert!(!proof_ok(Some(&proof()[1..])));
    }
}
