//! Adding kept questions to a script file: `[[factual]]` tables after the existing ones, the rest of
//! the file untouched, the result validated and written atomically.

use std::path::Path;

use super::GenerateError;
use sleuth_script::{FactualQuestion, QuestionReview, Script};

/// Appends `[[factual]]` tables to a script file, keeping the rest of the file (comments, layout)
/// byte for byte. New tables follow the file's last `[[factual]]` (or end the file if it has none),
/// each character's group under a `# generated factual questions: <name>` comment.
///
/// The result is checked with [`Script::parse`] before anything is written; it is then written to a
/// temporary file in the same directory and renamed over the original, so a failure never leaves a
/// broken file.
pub fn append_to_file(path: &Path, questions: &[FactualQuestion]) -> Result<(), GenerateError> {
    let original = std::fs::read_to_string(path).map_err(|source| GenerateError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    if questions.is_empty() {
        return Ok(());
    }
    let updated = append_to_text(&original, questions).map_err(|message| GenerateError::Parse {
        path: path.to_path_buf(),
        message,
    })?;
    Script::parse(&updated, path).map_err(|e| GenerateError::Invalid(Box::new(e)))?;
    write_atomically(path, &updated)
}

/// The file text with the questions appended (see [`append_to_file`]).
pub fn append_to_text(original: &str, questions: &[FactualQuestion]) -> Result<String, String> {
    let mut doc: toml_edit::DocumentMut = original
        .parse()
        .map_err(|e: toml_edit::TomlError| e.to_string().trim().replace('\n', " "))?;
    let root = doc.as_table_mut();
    if !root.contains_key("factual") {
        root.insert(
            "factual",
            toml_edit::Item::ArrayOfTables(toml_edit::ArrayOfTables::new()),
        );
    }
    let item = root.get_mut("factual").expect("just inserted");
    let mut previous: Option<&str> = None;
    match item {
        toml_edit::Item::ArrayOfTables(tables) => {
            for q in questions {
                let mut t = toml_edit::Table::new();
                t.insert("character", toml_edit::value(q.character.as_str()));
                t.insert("question", toml_edit::value(q.question.as_str()));
                t.insert("answer", toml_edit::value(q.answer.as_str()));
                t.insert("source", toml_edit::value(q.source.as_str()));
                if let Some(r) = &q.review {
                    t.insert("review", toml_edit::value(review_table(r)));
                }
                if previous != Some(q.character.as_str()) {
                    let comment = q.character.replace(['\n', '\r'], " ");
                    t.decor_mut()
                        .set_prefix(format!("\n# generated factual questions: {comment}\n\n"));
                }
                previous = Some(q.character.as_str());
                tables.push(t);
            }
        }
        toml_edit::Item::Value(toml_edit::Value::Array(array)) => {
            for q in questions {
                let mut t = toml_edit::InlineTable::new();
                t.insert("character", q.character.as_str().into());
                t.insert("question", q.question.as_str().into());
                t.insert("answer", q.answer.as_str().into());
                t.insert("source", q.source.as_str().into());
                if let Some(r) = &q.review {
                    t.insert("review", review_table(r).into());
                }
                array.push(t);
            }
        }
        _ => return Err("`factual` is not an array of tables".into()),
    }
    Ok(doc.to_string())
}

/// A question's review as one inline table (`review = { campaign = …, item = …, … }`), the fields in
/// [`QuestionReview`]'s order and empty ones left out, as serde would write them: an inline table
/// keeps each `[[factual]]` a block of plain keys, however the file lays out its questions.
fn review_table(r: &QuestionReview) -> toml_edit::InlineTable {
    let mut t = toml_edit::InlineTable::new();
    t.insert("campaign", r.campaign.as_str().into());
    t.insert("item", i64::from(r.item).into());
    for (key, people) in [
        ("accepted", &r.accepted),
        ("edited", &r.edited),
        ("rejected", &r.rejected),
    ] {
        if people.is_empty() {
            continue;
        }
        let mut list = toml_edit::Array::new();
        for p in people {
            let mut one = toml_edit::InlineTable::new();
            one.insert("name", p.name.as_str().into());
            one.insert("at", p.at.as_str().into());
            list.push(one);
        }
        t.insert(key, list.into());
    }
    if let Some(g) = &r.generated {
        let mut before = toml_edit::InlineTable::new();
        before.insert("question", g.question.as_str().into());
        before.insert("answer", g.answer.as_str().into());
        t.insert("generated", before.into());
    }
    t.insert("applied_at", r.applied_at.as_str().into());
    t
}

/// Writes `text` over `path` whole or not at all, keeping its permissions (`sleuth_base::fs`).
fn write_atomically(path: &Path, text: &str) -> Result<(), GenerateError> {
    sleuth_base::fs::write_atomic(path, text.as_bytes()).map_err(|source| GenerateError::Write {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_tables_after_the_last_factual_and_keeps_the_rest() {
        let original = "# a comment\ntitle = \"x\" # trailing\n\n[[factual]]\ncharacter = \"A\"\nquestion = \"q\"\nanswer = \"a\"\nsource = \"s\"\n\n# inferential next\n[[inferential]]\nquestion = \"i\"\n";
        let q = FactualQuestion {
            character: "B".into(),
            question: "Who said \"hi\"?".into(),
            answer: "Ben".into(),
            source: "Ben said \"hi\".".into(),
            review: None,
        };
        let out = append_to_text(original, &[q.clone(), q]).expect("appends");
        let cut = original.find("\n# inferential").expect("marker");
        assert!(out.starts_with(&original[..cut]), "{out}");
        assert!(out.ends_with(&original[cut..]), "{out}");
        assert_eq!(out.matches("[[factual]]").count(), 3, "{out}");
        assert_eq!(out.matches("# generated factual questions: B").count(), 1);
        let v: toml::Value = toml::from_str(&out).expect("valid TOML");
        assert_eq!(
            v["factual"][1]["question"].as_str(),
            Some("Who said \"hi\"?")
        );
        // A file without factual questions gets them at the end.
        let out = append_to_text(
            "title = \"x\"\n",
            &[FactualQuestion {
                character: "B".into(),
                question: "q".into(),
                answer: "a".into(),
                source: "s".into(),
                review: None,
            }],
        )
        .expect("appends");
        assert!(out.starts_with("title = \"x\"\n"), "{out}");
        assert_eq!(
            toml::from_str::<toml::Value>(&out).expect("toml")["factual"][0]["answer"].as_str(),
            Some("a")
        );
    }

    #[test]
    fn a_review_is_written_inline_and_reads_back_whole() {
        use sleuth_script::{GeneratedText, Reviewer};
        let at = |name: &str, t: &str| Reviewer {
            name: name.into(),
            at: t.into(),
        };
        let q = FactualQuestion {
            character: "B".into(),
            question: "Who said \"hi\"?".into(),
            answer: "Ben".into(),
            source: "Ben said \"hi\".".into(),
            review: Some(Box::new(QuestionReview {
                campaign: "ferry-q".into(),
                item: 3,
                accepted: vec![at("ann", "2026-11-29T10:00:00Z")],
                edited: vec![at("bob", "2026-11-29T10:01:00Z")],
                rejected: Vec::new(),
                generated: Some(GeneratedText {
                    question: "Who spoke?".into(),
                    answer: "B".into(),
                }),
                applied_at: "2026-11-29T11:00:00Z".into(),
            })),
        };
        for original in [
            "title = \"x\"\n",
            "title = \"x\"\nfactual = [{ character = \"A\", question = \"q\", answer = \"a\", source = \"s\" }]\n",
        ] {
            let out = append_to_text(original, std::slice::from_ref(&q)).expect("appends");
            #[derive(serde::Deserialize)]
            struct File {
                factual: Vec<FactualQuestion>,
            }
            let back: File = toml::from_str(&out).expect("reads back");
            let last = back.factual.last().expect("appended");
            assert_eq!(last.review, q.review, "{out}");
            assert!(!out.contains("rejected"), "empty lists are left out: {out}");
        }
    }
}
