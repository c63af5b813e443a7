//! `GameSpec`: everything that decides what a game plays and answers, as one serialisable record.
//!
//! `result.json` carries it, `sleuth play --spec` replays from it, and its digest names a game (the
//! sweeps hash it for a stable id). Runtime handles — where the transcript goes, the progress bar, the
//! game's label, the API key — are not in it: they change nothing a player says.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{EmbedderChoice, GameConfig, JudgeChoice, ProtocolSettings};
use crate::agent::{AgentConfig, Framework, Modules};
use sleuth_script::{Language, Script};

/// Why a spec could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("not a game spec")]
    Json(#[from] serde_json::Error),
    #[error("unknown field `{0}` in the spec (a replay must play exactly what was recorded)")]
    UnknownField(String),
    #[error("a result.json without a `spec` (written before games recorded their spec)")]
    NotRecorded,
}

/// The script a game was played on: the path as the user gave it (to find it again), and the digest
/// and title of what it held then (to notice that it changed since).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptRef {
    /// `None` for a script that never was a file (an import played in memory): such a spec names the
    /// script but cannot be replayed alone.
    pub path: Option<String>,
    /// sha256 (hex) of the script's canonical serialisation ([`ScriptRef::digest_of`]).
    pub digest: String,
    pub title: String,
}

impl ScriptRef {
    /// The reference to `script`, read from `path`.
    pub fn new(script: &Script, path: Option<&std::path::Path>) -> ScriptRef {
        ScriptRef {
            path: path.map(|p| p.to_string_lossy().into_owned()),
            digest: ScriptRef::digest_of(script),
            title: script.title.clone(),
        }
    }

    /// sha256 of the script's JSON (fields in declaration order, maps sorted): the same content gives
    /// the same digest whatever its file's comments and layout.
    pub fn digest_of(script: &Script) -> String {
        sha256_json(script)
    }
}

/// The model endpoint behind the agents' model name. The API key is never recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSpec {
    /// `simulated` or `openai`.
    pub name: String,
    /// The OpenAI-compatible base URL, without any user, password or key it was given with
    /// (`sleuth_base::redact`); `None` for the in-process simulated model.
    pub base_url: Option<String>,
}

/// One model's endpoint, for games whose models live at different endpoints. The API key is never
/// recorded, only the name of the variable that holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointSpec {
    /// `simulated` or `openai`.
    pub provider: String,
    pub base_url: Option<String>,
    /// The model id the endpoint knows; the name itself when `None`.
    pub model: Option<String>,
    /// The environment variable holding the key.
    pub api_key_env: Option<String>,
}

/// serde's mirror of [`AgentConfig`], which lives with the agents: it lists every agent setting so the
/// compiler refuses a new one until the spec records it.
#[derive(Serialize, Deserialize)]
#[serde(remote = "AgentConfig", deny_unknown_fields)]
struct AgentSettings {
    modules: Modules,
    top_k: usize,
    model: String,
    temperature: f32,
    top_p: f32,
    max_tokens: u32,
    eval_max_tokens: u32,
}

/// Everything that decides what a game plays and answers: script, protocol, frameworks, agent and
/// model settings, seed, judges, evaluation settings. Field order is the serialisation order and is
/// part of the digest: append new settings, never reorder.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GameSpec {
    pub script: ScriptRef,
    pub seed: u64,
    pub protocol: ProtocolSettings,
    pub framework: Framework,
    pub murderer_framework: Option<Framework>,
    #[serde(with = "AgentSettings")]
    pub agent: AgentConfig,
    pub judge: JudgeChoice,
    pub judge_overrides: BTreeMap<String, String>,
    pub eval_repeats: u32,
    pub rationale_threshold: u8,
    pub embedder: EmbedderChoice,
    /// Prompt language; the script's own when `None`.
    pub language: Option<Language>,
    /// Prompt templates replacing the built-in ones, as the user named the directory.
    pub prompts_dir: Option<String>,
    pub provider: ProviderSpec,
    /// The murderers' model, when it differs (absent from specs that have none, so their digests
    /// are those of specs written before the field existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub murderer_model: Option<String>,
    /// Model name → endpoint, when models live at different endpoints (a sweep's models table).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub endpoints: BTreeMap<String, EndpointSpec>,
    /// The characters people play (character → the player's name; `human:NAME` in the result),
    /// absent when agents play every seat. A game with a person at the table is not the game without
    /// one, so it has its own digest and id: a sweep's arm with a seat plays games of its own.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub human_seats: BTreeMap<String, String>,
}

/// Two specs are equal when they record the same settings, i.e. when their canonical JSON (what the
/// digest hashes) is the same. (The agents' `AgentConfig` has no `PartialEq` of its own.)
impl PartialEq for GameSpec {
    fn eq(&self, other: &GameSpec) -> bool {
        canonical_json(self) == canonical_json(other)
    }
}

impl GameSpec {
    /// sha256 (hex) of the spec's canonical JSON: the same settings give the same digest on any
    /// machine, and any setting that changes moves it.
    pub fn digest(&self) -> String {
        sha256_json(self)
    }

    /// Reads a spec from JSON: a bare spec, or the `spec` of a `result.json`. Unknown fields are
    /// refused at any depth — also inside the protocol and module settings, whose types accept them —
    /// so a misspelt setting cannot silently fall back to its default.
    pub fn from_json(text: &str) -> Result<GameSpec, SpecError> {
        let mut value: Value = serde_json::from_str(text)?;
        let value = match value.as_object_mut() {
            Some(o) if o.contains_key("spec") => o.remove("spec").unwrap_or(Value::Null),
            Some(o) if o.contains_key("game_id") => return Err(SpecError::NotRecorded),
            _ => value,
        };
        if value.is_null() {
            return Err(SpecError::NotRecorded);
        }
        let spec: GameSpec = serde_json::from_value(value.clone())?;
        if let Some(path) = unknown_field(&value, &serde_json::to_value(&spec)?, "") {
            return Err(SpecError::UnknownField(path));
        }
        Ok(spec)
    }
}

/// Writes [`GameSpec::config`] and [`GameConfig::spec`] from one list: the settings both structs hold
/// under the same name and type, which cross over unchanged. The few that differ (the script, the prompt
/// directory, the provider) and the runtime handles a spec leaves out are written once in each direction
/// below. Each conversion takes its source apart field by field with nothing left over, so a setting
/// added to either struct does not compile until it is listed here or converted by hand.
macro_rules! conversions {
    ($($shared:ident),* $(,)?) => {
        impl GameSpec {
            /// The game's configuration; the runtime fields (`game_id`, `transcript_path`,
            /// `progress`) are left empty for the caller to set.
            pub fn config(&self) -> GameConfig {
                // The seats are opened by whoever plays the game (`sleuth play --human`, a sweep's
                // runner): a handle to a person is not something a spec can hold.
                let GameSpec { $($shared,)* script, prompts_dir, provider, human_seats: _ } =
                    self.clone();
                GameConfig {
                    $($shared,)*
                    prompts_dir: prompts_dir.map(PathBuf::from),
                    script_path: script.path.map(PathBuf::from),
                    base_url: provider.base_url,
                    ..GameConfig::default()
                }
            }
        }

        impl GameConfig {
            /// The spec of a game played with this configuration on `script`, through a gateway
            /// whose provider is `provider`.
            pub fn spec(&self, script: &Script, provider: &str) -> GameSpec {
                let GameConfig {
                    $($shared,)*
                    script_path,
                    prompts_dir,
                    base_url,
                    game_id: _,
                    transcript_path: _,
                    progress: _,
                    call_concurrency: _,
                    seats,
                    #[cfg(feature = "test-hooks")]
                    inject_panic: _,
                } = self.clone();
                GameSpec {
                    $($shared,)*
                    script: ScriptRef::new(script, script_path.as_deref()),
                    prompts_dir: prompts_dir.map(|p| p.to_string_lossy().into_owned()),
                    provider: ProviderSpec {
                        name: provider.to_string(),
                        // Recorded without credentials (`sleuth_base::redact`).
                        base_url: base_url.map(|u| sleuth_base::redact::url(&u)),
                    },
                    human_seats: seats
                        .iter()
                        .map(|(character, seat)| (character.clone(), seat.player.clone()))
                        .collect(),
                }
            }
        }
    };
}

conversions!(
    seed,
    protocol,
    framework,
    murderer_framework,
    agent,
    judge,
    judge_overrides,
    eval_repeats,
    rationale_threshold,
    embedder,
    language,
    murderer_model,
    endpoints,
);

/// A value's compact JSON: fields in declaration order, maps sorted by key.
fn canonical_json<T: Serialize>(value: &T) -> Vec<u8> {
    // Specs and scripts hold strings, numbers, booleans and string-keyed maps only, which JSON always
    // represents; a failure here is a programming error, not bad input.
    serde_json::to_vec(value).expect("specs and scripts serialise to JSON")
}

/// sha256 (hex) of a value's canonical JSON.
fn sha256_json<T: Serialize>(value: &T) -> String {
    hex::encode(Sha256::digest(canonical_json(value)))
}

/// The first field (dotted path) of `input` that `known` — the same value read and written back —
/// does not have.
fn unknown_field(input: &Value, known: &Value, at: &str) -> Option<String> {
    let join = |k: &str| {
        if at.is_empty() {
            k.to_string()
        } else {
            format!("{at}.{k}")
        }
    };
    match (input, known) {
        (Value::Object(i), Value::Object(k)) => i.iter().find_map(|(key, v)| match k.get(key) {
            Some(kv) => unknown_field(v, kv, &join(key)),
            None => Some(join(key)),
        }),
        (Value::Array(i), Value::Array(k)) => i
            .iter()
            .zip(k)
            .enumerate()
            .find_map(|(n, (v, kv))| unknown_field(v, kv, &join(&n.to_string()))),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
