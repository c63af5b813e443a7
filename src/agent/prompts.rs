//! Prompt templates: data, not code (ARCHITECTURE.md decision 9).
//!
//! Templates live in `prompts/<framework>/<lang>/<purpose>.j2`, are compiled into the binary, and can be
//! replaced wholesale with `--prompts-dir`. Rendering is strict: a variable the code does not pass is an
//! error, never an empty string, so a typo in a template cannot silently blank out an agent's script.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use minijinja::{Environment, UndefinedBehavior};
use serde::Serialize;

use crate::script::Language;

/// Templates compiled into the binary: (framework, language, purpose, source).
const BUILTIN: &[(&str, &str, &str, &str)] = &[
    (
        "thinkthrice",
        "en",
        "system",
        include_str!("../../prompts/thinkthrice/en/system.j2"),
    ),
    (
        "thinkthrice",
        "en",
        "memory",
        include_str!("../../prompts/thinkthrice/en/memory.j2"),
    ),
    (
        "thinkthrice",
        "en",
        "introduce",
        include_str!("../../prompts/thinkthrice/en/introduce.j2"),
    ),
    (
        "thinkthrice",
        "en",
        "ask",
        include_str!("../../prompts/thinkthrice/en/ask.j2"),
    ),
    (
        "thinkthrice",
        "en",
        "answer",
        include_str!("../../prompts/thinkthrice/en/answer.j2"),
    ),
    (
        "thinkthrice",
        "en",
        "sr_decompose",
        include_str!("../../prompts/thinkthrice/en/sr_decompose.j2"),
    ),
    (
        "thinkthrice",
        "en",
        "sr_refine",
        include_str!("../../prompts/thinkthrice/en/sr_refine.j2"),
    ),
    (
        "thinkthrice",
        "en",
        "sv_check",
        include_str!("../../prompts/thinkthrice/en/sv_check.j2"),
    ),
    (
        "thinkthrice",
        "en",
        "vote",
        include_str!("../../prompts/thinkthrice/en/vote.j2"),
    ),
    (
        "thinkthrice",
        "en",
        "eval_factual",
        include_str!("../../prompts/thinkthrice/en/eval_factual.j2"),
    ),
    (
        "thinkthrice",
        "en",
        "eval_inferential",
        include_str!("../../prompts/thinkthrice/en/eval_inferential.j2"),
    ),
    (
        "thinkthrice",
        "en",
        "judge_factual",
        include_str!("../../prompts/thinkthrice/en/judge_factual.j2"),
    ),
    (
        "thinkthrice",
        "zh",
        "system",
        include_str!("../../prompts/thinkthrice/zh/system.j2"),
    ),
    (
        "thinkthrice",
        "zh",
        "memory",
        include_str!("../../prompts/thinkthrice/zh/memory.j2"),
    ),
    (
        "thinkthrice",
        "zh",
        "introduce",
        include_str!("../../prompts/thinkthrice/zh/introduce.j2"),
    ),
    (
        "thinkthrice",
        "zh",
        "ask",
        include_str!("../../prompts/thinkthrice/zh/ask.j2"),
    ),
    (
        "thinkthrice",
        "zh",
        "answer",
        include_str!("../../prompts/thinkthrice/zh/answer.j2"),
    ),
    (
        "thinkthrice",
        "zh",
        "sr_decompose",
        include_str!("../../prompts/thinkthrice/zh/sr_decompose.j2"),
    ),
    (
        "thinkthrice",
        "zh",
        "sr_refine",
        include_str!("../../prompts/thinkthrice/zh/sr_refine.j2"),
    ),
    (
        "thinkthrice",
        "zh",
        "sv_check",
        include_str!("../../prompts/thinkthrice/zh/sv_check.j2"),
    ),
    (
        "thinkthrice",
        "zh",
        "vote",
        include_str!("../../prompts/thinkthrice/zh/vote.j2"),
    ),
    (
        "thinkthrice",
        "zh",
        "eval_factual",
        include_str!("../../prompts/thinkthrice/zh/eval_factual.j2"),
    ),
    (
        "thinkthrice",
        "zh",
        "eval_inferential",
        include_str!("../../prompts/thinkthrice/zh/eval_inferential.j2"),
    ),
    (
        "thinkthrice",
        "zh",
        "judge_factual",
        include_str!("../../prompts/thinkthrice/zh/judge_factual.j2"),
    ),
    (
        "generate",
        "en",
        "factual",
        include_str!("../../prompts/generate/en/factual.j2"),
    ),
    (
        "generate",
        "zh",
        "factual",
        include_str!("../../prompts/generate/zh/factual.j2"),
    ),
];

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

/// The templates of one framework and language, compiled once per run.
#[derive(Debug)]
pub struct Prompts {
    env: Environment<'static>,
    framework: String,
    lang: String,
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
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_trim_blocks(false);
        let lang = lang.code();
        let mut sources = BTreeMap::new();
        for purpose in purposes {
            let rel = format!("{framework}/{lang}/{purpose}.j2");
            let src = match dir {
                Some(d) => {
                    let path = d.join(&rel);
                    std::fs::read_to_string(&path).map_err(|e| PromptError::Read {
                        path,
                        message: e.to_string(),
                    })?
                }
                None => BUILTIN
                    .iter()
                    .find(|(f, l, p, _)| *f == framework && *l == lang && p == purpose)
                    .map(|(_, _, _, s)| s.to_string())
                    .ok_or_else(|| PromptError::Missing {
                        framework: framework.into(),
                        lang: lang.into(),
                        purpose: purpose.to_string(),
                        path: format!("prompts/{rel}"),
                    })?,
            };
            sources.insert(purpose.to_string(), src);
        }
        for (name, src) in sources {
            env.add_template_owned(name.clone(), src)
                .map_err(|e| PromptError::Template {
                    name: format!("{framework}/{lang}/{name}.j2"),
                    message: e.to_string(),
                })?;
        }
        Ok(Prompts {
            env,
            framework: framework.into(),
            lang: lang.into(),
        })
    }

    /// Renders a template with the given variables.
    pub fn render<S: Serialize>(&self, purpose: &str, vars: S) -> Result<String, PromptError> {
        let name = format!("{}/{}/{purpose}.j2", self.framework, self.lang);
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
        Ok(out.trim().to_string())
    }
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
