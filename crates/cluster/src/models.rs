//! Which models a cluster's workers serve, and where: a model's endpoint and key come from the
//! workers, never from a submission.
//!
//! A sweep file names each model's `base_url` and `api_key_env`. On one node that is the user's own
//! machine and keys; on a cluster it would let anyone holding the cluster token make every worker
//! send any of its environment variables, as a bearer header, to any URL. So each worker declares the
//! models it serves (`sleuth worker --models FILE`: name → provider, base URL, the NAME of its key's
//! variable, its own limits) and sends the declarations — never a key — when it registers. The
//! coordinator then refuses a submission that sets a declared model's `base_url` or `api_key_env`
//! to anything else, or uses a model no live worker declares, before anything is queued, and writes
//! the declared endpoint into the submission so the games' specs (and ids) record where they were
//! played. A worker plays a model only at the endpoint it declared itself, whatever it is sent.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::proto as pb;
use sleuth_llm::DEFAULT_KEY_ENV;
use sleuth_sweep::file::ModelEntry;
use sleuth_sweep::Plan;

/// The endpoint of the openai provider when none is given.
const OPENAI_URL: &str = "https://api.openai.com/v1";

/// Why a models file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ModelsFileError {
    #[error("cannot read the models file {path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("{path}: {key}: {message}")]
    Invalid {
        path: PathBuf,
        key: String,
        message: String,
    },
}

/// One model of a worker's models file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileEntry {
    provider: String,
    base_url: Option<String>,
    api_key_env: Option<String>,
    /// This worker's own limits for the model (a sweep's limits, shared by the cluster, come on top).
    rpm: Option<u32>,
    tpm: Option<u32>,
    max_concurrency: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    models: BTreeMap<String, FileEntry>,
}

/// A model as a worker serves it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Declared {
    pub provider: String,
    /// Empty for the simulated provider.
    pub base_url: String,
    /// The variable's name; empty for the simulated provider.
    pub api_key_env: String,
}

impl std::fmt::Display for Declared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.provider == "simulated" {
            write!(f, "simulated")
        } else {
            write!(f, "{} with the key in {}", self.base_url, self.api_key_env)
        }
    }
}

/// The models a worker serves, with its own limits for each.
#[derive(Debug, Clone, Default)]
pub struct WorkerModels {
    pub models: BTreeMap<String, (Declared, sleuth_llm::LimitSettings)>,
}

impl WorkerModels {
    /// Reads `sleuth worker --models FILE`: `[models.NAME]` tables of `provider` (`openai` or
    /// `simulated`), `base_url` (default the OpenAI API), `api_key_env` (default `OPENAI_API_KEY`),
    /// and optionally this worker's `rpm`, `tpm` and `max_concurrency`.
    pub fn load(path: &Path) -> Result<WorkerModels, ModelsFileError> {
        let text = std::fs::read_to_string(path).map_err(|e| ModelsFileError::Read {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        WorkerModels::parse(path, &text)
    }

    /// [`WorkerModels::load`] of `text`, read from `path`.
    pub fn parse(path: &Path, text: &str) -> Result<WorkerModels, ModelsFileError> {
        let bad = |key: String, message: String| ModelsFileError::Invalid {
            path: path.to_path_buf(),
            key,
            message,
        };
        let file: File = toml::from_str(text).map_err(|e| bad("(file)".into(), e.to_string()))?;
        let mut models = BTreeMap::new();
        for (name, e) in file.models {
            let at = |field: &str| format!("models.{name}.{field}");
            let declared = match e.provider.as_str() {
                "openai" => {
                    let base_url = e.base_url.clone().unwrap_or_else(|| OPENAI_URL.into());
                    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
                        return Err(bad(
                            at("base_url"),
                            format!("`{base_url}`: expected an http:// or https:// URL"),
                        ));
                    }
                    let var = e
                        .api_key_env
                        .clone()
                        .unwrap_or_else(|| DEFAULT_KEY_ENV.into());
                    if var.is_empty() {
                        return Err(bad(at("api_key_env"), "must not be empty".into()));
                    }
                    Declared {
                        provider: "openai".into(),
                        base_url,
                        api_key_env: var,
                    }
                }
                "simulated" => {
                    if e.base_url.is_some() || e.api_key_env.is_some() {
                        return Err(bad(
                            at("provider"),
                            "the simulated provider takes no base_url or api_key_env".into(),
                        ));
                    }
                    Declared {
                        provider: "simulated".into(),
                        base_url: String::new(),
                        api_key_env: String::new(),
                    }
                }
                other => {
                    return Err(bad(
                        at("provider"),
                        format!("unknown provider `{other}` (expected `openai` or `simulated`)"),
                    ))
                }
            };
            for (field, v) in [
                ("rpm", e.rpm),
                ("tpm", e.tpm),
                ("max_concurrency", e.max_concurrency),
            ] {
                if v == Some(0) {
                    return Err(bad(
                        at(field),
                        "must be at least 1 (leave it out for no limit)".into(),
                    ));
                }
            }
            let limits = sleuth_llm::LimitSettings {
                rpm: e.rpm,
                tpm: e.tpm,
                max_concurrency: e.max_concurrency,
                // A declared endpoint adapts like any other (`llm/gateway/adaptive.rs`).
                adaptive: true,
                initial_concurrency: None,
            };
            models.insert(name, (declared, limits));
        }
        Ok(WorkerModels { models })
    }

    /// The declarations as a registration carries them.
    pub fn to_proto(&self) -> Vec<pb::DeclaredModel> {
        self.models
            .iter()
            .map(|(name, (d, _))| pb::DeclaredModel {
                name: name.clone(),
                provider: d.provider.clone(),
                base_url: d.base_url.clone(),
                api_key_env: d.api_key_env.clone(),
            })
            .collect()
    }

    /// Puts this worker's endpoints and its own limits into a plan's models table, for every model
    /// the games use that is not simulated; `Err` names a model this worker does not serve as the
    /// plan has it (another worker will).
    pub fn apply(&self, plan: &mut Plan) -> Result<(), String> {
        for name in plan.used_models() {
            let Some(entry) = plan.models.get_mut(&name) else {
                continue;
            };
            if entry.provider == "simulated" {
                continue;
            }
            let Some((d, limits)) = self.models.get(&name) else {
                return Err(format!("this worker does not serve model `{name}`"));
            };
            if let Some(conflict) = conflict(&name, entry, d) {
                return Err(conflict);
            }
            entry.provider = d.provider.clone();
            entry.base_url = Some(d.base_url.clone()).filter(|u| !u.is_empty());
            entry.api_key_env = Some(d.api_key_env.clone()).filter(|v| !v.is_empty());
            entry.rpm = limits.rpm.or(entry.rpm);
            entry.tpm = limits.tpm.or(entry.tpm);
            entry.max_concurrency = limits.max_concurrency.or(entry.max_concurrency);
        }
        Ok(())
    }
}

/// A declaration as a registration carried it.
pub fn from_proto(m: &pb::DeclaredModel) -> (String, Declared) {
    (
        m.name.clone(),
        Declared {
            provider: m.provider.clone(),
            base_url: m.base_url.clone(),
            api_key_env: m.api_key_env.clone(),
        },
    )
}

/// Why a submission's entry for `name` cannot be played at the declared endpoint: it names another
/// provider, URL or key variable. Leaving `base_url` and `api_key_env` out is always fine.
fn conflict(name: &str, entry: &ModelEntry, d: &Declared) -> Option<String> {
    if entry.provider != d.provider {
        return Some(format!(
            "models.{name}.provider: `{}`, but the workers serve `{name}` as `{}`",
            entry.provider, d.provider
        ));
    }
    if let Some(url) = entry.base_url.as_deref().filter(|u| *u != d.base_url) {
        return Some(format!(
            "models.{name}.base_url: `{url}` is not the endpoint the workers declare for `{name}` \
             ({}); on a cluster a model's endpoint and key come from the workers' --models files: \
             leave base_url and api_key_env out",
            d.base_url
        ));
    }
    if let Some(var) = entry.api_key_env.as_deref().filter(|v| *v != d.api_key_env) {
        return Some(format!(
            "models.{name}.api_key_env: `{var}` is not the key variable the workers declare for \
             `{name}` ({}); on a cluster a model's endpoint and key come from the workers' --models \
             files: leave base_url and api_key_env out",
            d.api_key_env
        ));
    }
    None
}

/// What live workers declare, by model name: each (worker, declaration).
pub type Declarations = BTreeMap<String, Vec<(String, Declared)>>;

/// How a submission fails the workers' declarations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The submission sets an endpoint or key variable the workers do not declare (or the workers
    /// disagree among themselves).
    Conflict(String),
    /// The games use a model no live worker serves.
    Undeclared(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Conflict(m) | Refusal::Undeclared(m) => f.write_str(m),
        }
    }
}

/// The one declaration the workers agree on for `name`.
fn agreed<'a>(name: &str, decls: &'a [(String, Declared)]) -> Result<&'a Declared, Refusal> {
    let (_, first) = &decls[0];
    if let Some((other, d)) = decls.iter().find(|(_, d)| d != first) {
        return Err(Refusal::Conflict(format!(
            "the workers declare model `{name}` differently ({} declares {first}, {other} declares \
             {d}); make their --models files agree",
            decls[0].0
        )));
    }
    Ok(first)
}

/// The sweep file's text with every non-simulated model the workers declare set to the declared
/// provider, `base_url` and `api_key_env`; refused when the file sets one of them otherwise. The text
/// is returned unchanged when nothing needed setting.
pub fn pin_endpoints(sweep_toml: &str, declared: &Declarations) -> Result<String, Refusal> {
    let parsed: sleuth_sweep::file::SweepFile = match toml::from_str(sweep_toml) {
        Ok(f) => f,
        // The plan reports the file's own faults, with the file's name.
        Err(_) => return Ok(sweep_toml.to_string()),
    };
    let mut doc: toml_edit::DocumentMut = match sweep_toml.parse() {
        Ok(d) => d,
        Err(_) => return Ok(sweep_toml.to_string()),
    };
    let mut changed = false;
    for (name, entry) in &parsed.models {
        if entry.provider == "simulated" {
            continue;
        }
        let Some(decls) = declared.get(name).filter(|d| !d.is_empty()) else {
            continue;
        };
        let d = agreed(name, decls)?;
        if let Some(c) = conflict(name, entry, d) {
            return Err(Refusal::Conflict(c));
        }
        let Some(table) = doc
            .get_mut("models")
            .and_then(|m| m.as_table_like_mut())
            .and_then(|m| m.get_mut(name))
            .and_then(|e| e.as_table_like_mut())
        else {
            continue;
        };
        for (key, value) in [("base_url", &d.base_url), ("api_key_env", &d.api_key_env)] {
            if table.get(key).and_then(|v| v.as_str()) != Some(value.as_str()) {
                table.insert(key, toml_edit::value(value.as_str()));
                changed = true;
            }
        }
    }
    Ok(if changed {
        doc.to_string()
    } else {
        sweep_toml.to_string()
    })
}

/// Refuses a plan whose games use a non-simulated model that no live worker declares.
pub fn check_served(plan: &Plan, declared: &Declarations) -> Result<(), Refusal> {
    for name in plan.used_models() {
        let simulated = plan
            .models
            .get(&name)
            .is_none_or(|e| e.provider == "simulated");
        if !simulated && declared.get(&name).is_none_or(|d| d.is_empty()) {
            return Err(Refusal::Undeclared(format!(
                "no live worker serves model `{name}`: on a cluster a model's endpoint and key come \
                 from the workers (`sleuth worker --models FILE` naming `{name}`); start one that \
                 declares it, or use the simulated provider"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared(url: &str, var: &str) -> Declarations {
        BTreeMap::from([(
            "m".to_string(),
            vec![(
                "w1".to_string(),
                Declared {
                    provider: "openai".into(),
                    base_url: url.into(),
                    api_key_env: var.into(),
                },
            )],
        )])
    }

    #[test]
    fn a_models_file_reads_with_defaults_and_names_its_faults() {
        let p = Path::new("/etc/sleuth/models.toml");
        let m = WorkerModels::parse(
            p,
            "[models.gpt]\nprovider = \"openai\"\nmax_concurrency = 5\n[models.sim]\nprovider = \"simulated\"\n",
        )
        .expect("reads");
        let (d, limits) = &m.models["gpt"];
        assert_eq!(d.base_url, OPENAI_URL);
        assert_eq!(d.api_key_env, DEFAULT_KEY_ENV);
        assert_eq!(limits.max_concurrency, Some(5));
        for (text, key) in [
            ("[models.x]\nprovider = \"acme\"\n", "models.x.provider"),
            (
                "[models.x]\nprovider = \"openai\"\nrpm = 0\n",
                "models.x.rpm",
            ),
            (
                "[models.x]\nprovider = \"openai\"\napi_key = \"sk\"\n",
                "api_key",
            ),
            (
                "[models.x]\nprovider = \"openai\"\nbase_url = \"ftp://h\"\n",
                "models.x.base_url",
            ),
        ] {
            let e = WorkerModels::parse(p, text).expect_err(text).to_string();
            assert!(
                e.contains("/etc/sleuth/models.toml") && e.contains(key),
                "{e}"
            );
        }
    }

    #[test]
    fn the_example_in_deploy_reads() {
        let m = WorkerModels::parse(
            Path::new("deploy/worker-models.example.toml"),
            include_str!("../../../deploy/worker-models.example.toml"),
        )
        .expect("the example reads");
        assert_eq!(m.models.len(), 2);
        assert!(m.to_proto().iter().all(|d| !d.api_key_env.is_empty()));
    }

    #[test]
    fn a_submission_cannot_choose_the_url_or_the_variable() {
        let d = declared("http://llm.internal/v1", "LLM_KEY");
        let url = "name = \"s\"\nscripts = [\"a\"]\n[models.m]\nprovider = \"openai\"\nbase_url = \"http://evil:1/v1\"\n";
        let e = pin_endpoints(url, &d).expect_err("a URL of its own");
        assert!(e.to_string().contains("models.m.base_url"), "{e}");
        let var = "name = \"s\"\nscripts = [\"a\"]\n[models.m]\nprovider = \"openai\"\napi_key_env = \"SLEUTH_REDIS\"\n";
        let e = pin_endpoints(var, &d).expect_err("a variable of its own");
        assert!(e.to_string().contains("SLEUTH_REDIS"), "{e}");
        // Left out: the declared ones are written in.
        let plain = "name = \"s\"\nscripts = [\"a\"]\n[models.m]\nprovider = \"openai\"\nrpm = 5\n";
        let pinned = pin_endpoints(plain, &d).expect("accepted");
        let f: sleuth_sweep::file::SweepFile = toml::from_str(&pinned).expect("still a sweep");
        assert_eq!(
            f.models["m"].base_url.as_deref(),
            Some("http://llm.internal/v1")
        );
        assert_eq!(f.models["m"].api_key_env.as_deref(), Some("LLM_KEY"));
        assert_eq!(f.models["m"].rpm, Some(5));
        // Pinned again: unchanged (a resubmission keeps its bytes).
        assert_eq!(pin_endpoints(&pinned, &d).expect("accepted"), pinned);
    }

    #[test]
    fn workers_that_disagree_are_named() {
        let mut d = declared("http://a/v1", "K");
        d.get_mut("m").expect("m").push((
            "w2".into(),
            Declared {
                provider: "openai".into(),
                base_url: "http://b/v1".into(),
                api_key_env: "K".into(),
            },
        ));
        let text = "name = \"s\"\nscripts = [\"a\"]\n[models.m]\nprovider = \"openai\"\n";
        let e = pin_endpoints(text, &d).expect_err("disagreement");
        assert!(
            e.to_string().contains("w1") && e.to_string().contains("w2"),
            "{e}"
        );
    }
}
