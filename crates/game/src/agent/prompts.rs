//! Prompt templates: data, not code (ARCHITECTURE.md decision 9).
//!
//! Templates live in `prompts/<framework>/<lang>/<purpose>.j2`, are compiled into the binary, and can be
//! replaced wholesale with `--prompts-dir`. Rendering is strict: a variable the code does not pass is an
//! error, never an empty string, so a typo in a template cannot silently blank out an agent's script.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use minijinja::{Environment, UndefinedBehavior};
use serde::Serialize;

use sleuth_script::Language;

// Templates compiled into the binary: (framework, language, purpose, source), one row per file under
// `prompts/` (see build.rs).
include!(concat!(env!("OUT_DIR"), "/builtin_prompts.rs"));

/// Why prompts could not be loaded or rendered.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PromptError {
    #[error(
        "no prompt `{purpose}` for framework `{framework}` in language `{lang}` (expected {path})"
    )]
    Missing {
        framework: String,
        lang: String,
        purpose: String,
        path: String,
    },
    #[error("{path}: cannot read prompt template: {message}")]
    Read { path: PathBuf, message: String },
    #[error("prompt template {name}: {message}")]
    Template { name: String, message: String },
}

/// The templates one agent (or judge, or generator) renders, compiled once per run.
///
/// A set can hold several template groups (a framework's gameplay prompts and the shared evaluation
/// prompts); purposes are unique across the groups, so callers render by purpose alone.
#[derive(Debug)]
pub struct Prompts {
    env: Environment<'static>,
    /// Purpose → the file it came from (for error messages).
    paths: BTreeMap<String, String>,
    lang: String,
    /// Purposes rendered so far: lets tests prove that every template renders with what the code passes.
    rendered: Mutex<BTreeSet<String>>,
}

impl Prompts {
    /// Loads every template a framework needs, from `dir` if given (`DIR/<framework>/<lang>/*.j2`) or
    /// from the built-in set, and fails now if one is missing or does not compile.
    pub fn load(
        framework: &str,
        lang: Language,
        dir: Option<&Path>,
        purposes: &[&str],
    ) -> Result<Prompts, PromptError> {
        Prompts::load_groups(lang, dir, &[(framework, purposes)])
    }

    /// Loads several groups of templates, `(framework directory, purposes)`, into one set.
    pub fn load_groups(
        lang: Language,
        dir: Option<&Path>,
        groups: &[(&str, &[&str])],
    ) -> Result<Prompts, PromptError> {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_trim_blocks(false);
        let lang = lang.code();
        let mut paths = BTreeMap::new();
        for (framework, purposes) in groups {
            for purpose in *purposes {
                let rel = format!("{framework}/{lang}/{purpose}.j2");
                let src = match dir {
                    Some(d) => {
                        let path = d.join(&rel);
                        std::fs::read_to_string(&path).map_err(|e| PromptError::Read {
                            path,
                            message: e.to_string(),
                        })?
                    }
                    None => builtin(framework, lang, purpose)
                        .map(str::to_string)
                        .ok_or_else(|| PromptError::Missing {
                            framework: framework.to_string(),
                            lang: lang.into(),
                            purpose: purpose.to_string(),
                            path: format!("prompts/{rel}"),
                        })?,
                };
                env.add_template_owned(purpose.to_string(), src)
                    .map_err(|e| PromptError::Template {
                        name: rel.clone(),
                        message: e.to_string(),
                    })?;
                paths.insert(purpose.to_string(), rel);
            }
        }
        Ok(Prompts {
            env,
            paths,
            lang: lang.into(),
            rendered: Mutex::new(BTreeSet::new()),
        })
    }

    /// The language code of this set (`en`, `zh`).
    pub fn lang(&self) -> &str {
        &self.lang
    }

    /// Renders a template with the given variables.
    pub fn render<S: Serialize>(&self, purpose: &str, vars: S) -> Result<String, PromptError> {
        let name = self
            .paths
            .get(purpose)
            .cloned()
            .unwrap_or_else(|| format!("{purpose} (not loaded)"));
        let t = self
            .env
            .get_template(purpose)
            .map_err(|e| PromptError::Template {
                name: name.clone(),
                message: e.to_string(),
            })?;
        let out = t.render(vars).map_err(|e| PromptError::Template {
            name,
            message: e.to_string(),
        })?;
        if let Ok(mut r) = self.rendered.lock() {
            r.insert(purpose.to_string());
        }
        Ok(out.trim().to_string())
    }

    /// Purposes loaded into this set.
    pub fn purposes(&self) -> Vec<String> {
        self.paths.keys().cloned().collect()
    }

    /// Purposes rendered at least once so far.
    pub fn rendered(&self) -> BTreeSet<String> {
        self.rendered.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

/// The built-in source of a template, if the binary carries one.
pub fn builtin(framework: &str, lang: &str, purpose: &str) -> Option<&'static str> {
    BUILTIN
        .iter()
        .find(|(f, l, p, _)| *f == framework && *l == lang && *p == purpose)
        .map(|(_, _, _, s)| *s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_variable_is_an_error_not_an_empty_string() {
        let p = Prompts::load("thinkthrice", Language::En, None, &["sv_check"])
            .expect("built-in prompts load");
        assert!(p
            .render("sv_check", minijinja::context! { claim => "I saw Ada." })
            .expect("renders")
            .contains("I saw Ada."));
        let err = p
            .render("sv_check", minijinja::context! { wrong => 1 })
            .unwrap_err();
        assert!(err.to_string().contains("sv_check"), "{err}");
    }

    #[test]
    fn missing_language_is_reported_with_the_expected_path() {
        let err = Prompts::load("nosuch", Language::Zh, None, &["system"]).unwrap_err();
        assert!(
            err.to_string().contains("prompts/nosuch/zh/system.j2"),
            "{err}"
        );
    }
}
