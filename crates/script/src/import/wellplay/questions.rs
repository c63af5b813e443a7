//! One `final_result` CSV (or the FSA file) read into choice questions.
//!
//! The columns are found by name in the header (`value`, `type`, `question`, the option letters,
//! `truth`), so a file whose columns come in another order reads the same. Rows the publisher's files
//! get wrong in known ways are repaired and each repair is logged ([`Log`]): a trailing empty field,
//! a truth written into an option column (after an empty option; in a row one field short; in a
//! full row whose last fields are shifted one column left), an empty option in the middle. Any
//! other fault is an error naming the file, the row and the column.

use std::path::Path;

use super::csv::{parse_csv, Record};
use super::repair::Log;
use super::truth::{parse_truth, scoring};
use super::{format_error, read_text};
use crate::import::{clean_text, ImportError};
use crate::{letter_index, Category, ChoiceQuestion};

/// Reads one `final_result` CSV into choice questions for `character` (`None` for FSA).
pub(super) fn read_questions(
    path: &Path,
    character: Option<&str>,
    log: &mut Log,
) -> Result<Vec<ChoiceQuestion>, ImportError> {
    let text = read_text(path)?;
    let records = parse_csv(&text)
        .map_err(|e| format_error(path, &format!("line {}", e.line), &e.expected))?;
    let mut records = records.into_iter();
    let Some(header) = records.next() else {
        return Ok(Vec::new());
    };
    let header: Vec<String> = header
        .fields
        .iter()
        .map(|h| h.trim().to_ascii_lowercase())
        .collect();
    let columns = Columns::find(&header, path)?;
    let mut out = Vec::new();
    for mut rec in records {
        if rec.fields.iter().all(|f| f.trim().is_empty()) {
            continue;
        }
        fit_to_header(&mut rec, header.len(), path, log)?;
        let row = Row {
            rec: &rec,
            width: header.len(),
            path,
        };
        out.push(row.question(&columns, character, log)?);
    }
    Ok(out)
}

/// Where each column is, by the header's names.
struct Columns<'h> {
    value: usize,
    kind: usize,
    question: usize,
    truth: usize,
    /// Option columns: single letters, in header order.
    options: Vec<(usize, &'h str)>,
}

impl<'h> Columns<'h> {
    fn find(header: &'h [String], path: &Path) -> Result<Columns<'h>, ImportError> {
        let column = |name: &str| -> Result<usize, ImportError> {
            header.iter().position(|h| h == name).ok_or_else(|| {
                format_error(
                    path,
                    &format!("header, column {name}"),
                    &format!("a column `{name}` (columns: value, type, question, a..e, truth)"),
                )
            })
        };
        Ok(Columns {
            value: column("value")?,
            kind: column("type")?,
            question: column("question")?,
            truth: column("truth")?,
            options: header
                .iter()
                .enumerate()
                .filter(|(_, h)| h.len() == 1 && h.as_bytes()[0].is_ascii_lowercase())
                .map(|(i, h)| (i, h.as_str()))
                .collect(),
        })
    }
}

/// Drops one trailing empty field beyond the header (logged); refuses a row still wider than it.
fn fit_to_header(
    rec: &mut Record,
    width: usize,
    path: &Path,
    log: &mut Log,
) -> Result<(), ImportError> {
    let line = rec.line;
    if rec.fields.len() == width + 1 && rec.fields.last().is_some_and(|f| f.trim().is_empty()) {
        log.repair(
            path,
            Some(line),
            &(width + 1).to_string(),
            format!("dropped one trailing empty field beyond the header's {width}"),
            &format!(
                "at most {width} fields, as in the header (found {})",
                rec.fields.len()
            ),
        )?;
        rec.fields.pop();
    }
    if rec.fields.len() > width {
        return Err(format_error(
            path,
            &format!("row {line}"),
            &format!(
                "at most {width} fields, as in the header (found {}; an unquoted comma?)",
                rec.fields.len()
            ),
        ));
    }
    Ok(())
}

/// One row of the file, being read.
struct Row<'a> {
    rec: &'a Record,
    /// The header's number of columns.
    width: usize,
    path: &'a Path,
}

/// An option's column letter and its text.
type Options<'h> = Vec<(&'h str, String)>;

impl Row<'_> {
    fn cell(&self, i: usize) -> &str {
        self.rec.fields.get(i).map(String::as_str).unwrap_or("")
    }

    fn error(&self, col: &str, expected: &str) -> ImportError {
        format_error(
            self.path,
            &format!("row {}, column {col}", self.rec.line),
            expected,
        )
    }

    fn question(
        &self,
        columns: &Columns<'_>,
        character: Option<&str>,
        log: &mut Log,
    ) -> Result<ChoiceQuestion, ImportError> {
        let category = match self
            .cell(columns.value)
            .trim()
            .to_ascii_lowercase()
            .as_str()
        {
            "a" => Category::Objective,
            "b" => Category::Reasoning,
            "c" => Category::Relations,
            other => {
                return Err(self.error(
                    "value",
                    &format!("a, b or c (the question's category), got \"{other}\""),
                ))
            }
        };
        let multiple = match self.cell(columns.kind).trim().to_ascii_lowercase().as_str() {
            "a" => false,
            "b" => true,
            other => {
                return Err(self.error(
                    "type",
                    &format!("a (single choice) or b (multiple choice), got \"{other}\""),
                ))
            }
        };
        let mut texts: Options<'_> = columns
            .options
            .iter()
            .map(|&(i, letter)| (letter, clean_text(self.cell(i))))
            .collect();
        drop_trailing_empty(&mut texts);
        let mut truth_cell = self.cell(columns.truth).to_string();
        if truth_cell.trim().is_empty() {
            if let Some(found) = self.truth_after_gap(&mut texts, log)? {
                truth_cell = found;
            }
        }
        if truth_cell.trim().is_empty() {
            if let Some(found) = self.truth_in_short_row(columns, &mut texts, log)? {
                truth_cell = found;
            }
        }
        if truth_cell.trim().is_empty() {
            if let Some(found) = self.truth_shifted_left(columns, &mut texts, log)? {
                truth_cell = found;
            }
        }
        let truth = parse_truth(&truth_cell).ok_or_else(|| {
            self.error(
                "truth",
                &format!(
                    "one or more option letters (\"a\", \"ab\", \"a,b\"), got \"{truth_cell}\""
                ),
            )
        })?;
        self.close_gap(&mut texts, &truth, log)?;
        let question = clean_text(self.cell(columns.question));
        let (rule, picks) = scoring(multiple, &truth, &question, texts.len());
        let unscored = question.is_empty();
        if unscored {
            log.repair(
                self.path,
                Some(self.rec.line),
                "question",
                "blank question text; kept, and out of scoring".to_string(),
                "a non-empty question text",
            )?;
        }
        Ok(ChoiceQuestion {
            character: character.map(str::to_string),
            category,
            multiple,
            picks,
            rule,
            question,
            options: texts.into_iter().map(|(_, t)| t).collect(),
            truth,
            full_access: false,
            unscored,
        })
    }

    /// A truth letter written into the option column after an empty one, with the truth column
    /// empty: the letters name options before the gap, so it can only be the truth. Moved (logged).
    fn truth_after_gap(
        &self,
        texts: &mut Options<'_>,
        log: &mut Log,
    ) -> Result<Option<String>, ImportError> {
        let Some(gap) = texts.iter().position(|(_, t)| t.is_empty()) else {
            return Ok(None);
        };
        let (letter, last) = texts
            .last()
            .map(|(l, t)| (*l, t.clone()))
            .unwrap_or_default();
        let names_before_gap = parse_truth(&last)
            .is_some_and(|t| t.iter().all(|l| letter_index(l).is_some_and(|k| k < gap)));
        if !names_before_gap {
            return Ok(None);
        }
        log.repair(
            self.path,
            Some(self.rec.line),
            letter,
            format!("truth \"{last}\" found in option column {letter} after an empty option; moved to column truth"),
            "the truth letters in column truth, not in an option column",
        )?;
        texts.pop();
        drop_trailing_empty(texts);
        Ok(Some(last))
    }

    /// A row one field short whose last field sits in the last option column, the truth column
    /// empty: the row left out its last (empty) option column, so that field is the truth. Read so
    /// only when it is a valid answer, letters naming non-empty options before it; otherwise the row
    /// is refused for its empty truth, as any row without one.
    fn truth_in_short_row(
        &self,
        columns: &Columns<'_>,
        texts: &mut Options<'_>,
        log: &mut Log,
    ) -> Result<Option<String>, ImportError> {
        let fields = self.rec.fields.len();
        let Some(&(col, letter)) = columns.options.last() else {
            return Ok(None);
        };
        if fields + 1 != self.width {
            return Ok(None);
        }
        let last = self.cell(col).trim().to_string();
        let before = texts.len().saturating_sub(1);
        let valid = col + 1 == fields
            && texts.last().is_some_and(|(l, _)| *l == letter)
            && parse_truth(&last).is_some_and(|t| {
                t.iter()
                    .all(|l| letter_index(l).is_some_and(|k| k < before && !texts[k].1.is_empty()))
            });
        if !valid {
            return Ok(None);
        }
        log.repair(
            self.path,
            Some(self.rec.line),
            letter,
            format!(
                "row one field short ({fields} of {}): its last field \"{last}\" is in option column \
                 {letter} and column truth is empty; read as the truth, option {letter} empty",
                self.width
            ),
            &format!(
                "{} fields, as in the header: the truth letters in column truth (found {fields})",
                self.width
            ),
        )?;
        texts.pop();
        drop_trailing_empty(texts);
        Ok(Some(last))
    }

    /// A full-width row whose fields after the options are shifted one column left: column truth is
    /// empty and the option column just before it holds only letters naming other options of the
    /// row — the truth, written one column early. Read as the truth (logged), that option empty.
    ///
    /// Read so only when no other reading is possible; otherwise `None`, and the row is refused for
    /// its empty truth as any row without one. So the letters must be written as a truth is ("a",
    /// "ac", "a,c": each letter once, in order — not a word such as "Dad" or "Bad", which could be an
    /// option's text), each naming a non-empty option before that column; no option before it may be
    /// empty (a gap makes the shift's extent unknown) nor itself made of option letters (options
    /// that are letters make the last one an option as likely as a truth); and the truth column must be the
    /// one right after the last option column, as the shift by one requires.
    fn truth_shifted_left(
        &self,
        columns: &Columns<'_>,
        texts: &mut Options<'_>,
        log: &mut Log,
    ) -> Result<Option<String>, ImportError> {
        let Some(&(col, letter)) = columns.options.last() else {
            return Ok(None);
        };
        if self.rec.fields.len() != self.width || col + 1 != columns.truth {
            return Ok(None);
        }
        let Some(((last_letter, _), before)) = texts.split_last() else {
            return Ok(None);
        };
        let cell = self.cell(col).trim().to_string();
        // An option that is itself option letters ("a", "B", "Dad") makes a letter cell after it
        // as likely another option as a truth.
        let columns_named = |t: &str| {
            parse_truth(t).is_some_and(|t| {
                t.iter()
                    .all(|l| letter_index(l).is_some_and(|k| k < columns.options.len()))
            })
        };
        let valid = *last_letter == letter
            && written_as_truth(&cell)
            && before
                .iter()
                .all(|(_, t)| !t.is_empty() && !columns_named(t))
            && parse_truth(&cell).is_some_and(|t| {
                t.iter()
                    .all(|l| letter_index(l).is_some_and(|k| k < before.len()))
            });
        if !valid {
            return Ok(None);
        }
        log.repair(
            self.path,
            Some(self.rec.line),
            letter,
            format!(
                "column truth empty and option column {letter} holds only \"{cell}\", letters of \
                 the row's options a..{}: the row's last fields are shifted one column left; \
                 read as the truth, option {letter} empty",
                before.last().map(|(l, _)| *l).unwrap_or("a")
            ),
            "the truth letters in column truth, not in an option column",
        )?;
        texts.pop();
        drop_trailing_empty(texts);
        Ok(Some(cell))
    }

    /// Options after an empty option column move back over the gap, when no truth letter names an
    /// option at or after the gap (so what the truth means does not depend on the reading).
    fn close_gap(
        &self,
        texts: &mut Options<'_>,
        truth: &[String],
        log: &mut Log,
    ) -> Result<(), ImportError> {
        let Some(gap) = texts.iter().position(|(_, t)| t.is_empty()) else {
            return Ok(());
        };
        let letter = texts[gap].0;
        let unambiguous = truth
            .iter()
            .all(|l| letter_index(l).is_some_and(|k| k < gap));
        if !unambiguous {
            return Err(self.error(
                letter,
                "a non-empty option (empty options may only follow the last non-empty one; \
                 the truth names an option after the gap, so the shift is ambiguous)",
            ));
        }
        log.repair(
            self.path,
            Some(self.rec.line),
            letter,
            format!(
                "option column {letter} empty; the options after it moved back one column each"
            ),
            "a non-empty option (empty options may only follow the last non-empty one)",
        )?;
        texts.retain(|(_, t)| !t.is_empty());
        Ok(())
    }
}

/// Whether `cell` is written as a truth cell is: option letters, each once and in order, alone or
/// separated ("a", "ac", "a,c", "A C") — so that a word made of option letters ("Bad", "Dad") is
/// not taken for one.
fn written_as_truth(cell: &str) -> bool {
    let letters: Vec<char> = cell
        .chars()
        .filter(char::is_ascii_alphabetic)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    parse_truth(cell).is_some() && letters.windows(2).all(|w| w[0] < w[1])
}

fn drop_trailing_empty(texts: &mut Options<'_>) {
    while texts.last().is_some_and(|(_, t)| t.is_empty()) {
        texts.pop();
    }
}
