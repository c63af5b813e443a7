//! The CSV reading of the WellPlay importer, on the `csv` crate: RFC 4180 quoting (commas, `""` and line
//! breaks inside a quoted field), LF, CRLF or CR line ends, rows of any length (`flexible`: a short or long
//! row is the importer's to repair or refuse, not a syntax error). What this module adds: a UTF-8 BOM is
//! dropped, each record keeps the line it starts on (from `StringRecord::position()`), which every repair
//! and error names, and a quote left open at the end of the file is an error rather than a field that
//! swallows the rest of the file.
//!
//! The crate is lenient where the old hand-written reader refused: text after a closing quote joins the
//! field (`"x"y` reads `xy`), as spreadsheet programs read it.

/// One CSV record and the line it starts on (1-based).
#[derive(Debug, PartialEq)]
pub(super) struct Record {
    pub line: usize,
    pub fields: Vec<String>,
}

/// A CSV syntax error.
#[derive(Debug, PartialEq)]
pub(super) struct CsvError {
    pub line: usize,
    pub expected: String,
}

/// Parses `text` into records, the header row included (the caller reads it as one). Blank lines give
/// no record; no record follows the final line break.
pub(super) fn parse_csv(text: &str) -> Result<Vec<Record>, CsvError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let bytes = text.as_bytes();
    let mut records = Vec::new();
    // Line counting resumes where the previous record started: (byte offset, its line).
    let mut counted = (0usize, 1usize);
    let mut last_start = 0;
    for result in reader(text).records() {
        let record = result.map_err(|e| CsvError {
            line: e
                .position()
                .map_or(counted.1, |p| line_at(bytes, counted, p.byte() as usize)),
            expected: format!("CSV text ({e})"),
        })?;
        // The crate's position is where it began reading the record: line ends it skipped before the
        // record (a blank line, the `\n` of a CRLF) come first. It counts `\n` only, so the line is
        // counted here, where a lone CR (old Mac files) ends a line too.
        let mut start = record.position().map_or(0, |p| p.byte() as usize);
        while matches!(bytes.get(start), Some(b'\r' | b'\n')) {
            start += 1;
        }
        let line = line_at(bytes, counted, start);
        counted = (start, line);
        last_start = start;
        records.push(Record {
            line,
            fields: record.iter().map(str::to_string).collect(),
        });
    }
    if let Some(last) = records.last() {
        if quote_left_open(&text[last_start..], last.fields.len()) {
            return Err(CsvError {
                line: last.line,
                expected:
                    "a closing quote for a field of the record starting on this line (a quote \
                           left open reads the rest of the file as one field)"
                        .into(),
            });
        }
    }
    Ok(records)
}

/// The reader every parse uses: flexible rows, no header handling (the importer reads the first record).
fn reader(text: &str) -> ::csv::Reader<&[u8]> {
    ::csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes())
}

/// The line of byte offset `at`, counting line ends from a known `(offset, line)` before it: `\n`, `\r\n`
/// and a lone `\r` each end one line.
fn line_at(bytes: &[u8], (from, line): (usize, usize), at: usize) -> usize {
    let at = at.min(bytes.len());
    line + (from..at)
        .filter(|&i| match bytes[i] {
            b'\n' => true,
            b'\r' => bytes.get(i + 1) != Some(&b'\n'),
            _ => false,
        })
        .count()
}

/// Whether the last record (`tail`, from its first byte to the end of the file, read as `fields`
/// fields) ends inside a quoted field. The crate ends such a field at the end of input without saying
/// so; a comma appended tells: outside quotes it adds a field or a record, inside it is only text.
fn quote_left_open(tail: &str, fields: usize) -> bool {
    let probe = format!("{tail},");
    let records: Vec<::csv::StringRecord> =
        reader(&probe).records().filter_map(Result::ok).collect();
    matches!(records.as_slice(), [only] if only.len() == fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(text: &str) -> Vec<Vec<String>> {
        parse_csv(text)
            .unwrap()
            .into_iter()
            .map(|r| r.fields)
            .collect()
    }

    fn lines(text: &str) -> Vec<usize> {
        parse_csv(text)
            .unwrap()
            .into_iter()
            .map(|r| r.line)
            .collect()
    }

    fn row(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn csv_plain_rows_and_line_ends() {
        assert_eq!(
            fields("a,b,c\n1,2,3\n"),
            vec![row(&["a", "b", "c"]), row(&["1", "2", "3"])]
        );
        assert_eq!(
            fields("a,b\r\n1,2"),
            vec![row(&["a", "b"]), row(&["1", "2"])]
        );
        assert_eq!(fields("a\r1\r"), vec![row(&["a"]), row(&["1"])]);
        assert_eq!(fields(""), Vec::<Vec<String>>::new());
        // Rows of different lengths are read as they are.
        assert_eq!(
            fields("a,b,c\n1,2\n1,2,3,4\n"),
            vec![
                row(&["a", "b", "c"]),
                row(&["1", "2"]),
                row(&["1", "2", "3", "4"])
            ]
        );
    }

    #[test]
    fn csv_lines_are_where_records_start_whatever_the_line_ends() {
        assert_eq!(lines("a\n1\n2\n"), vec![1, 2, 3]);
        assert_eq!(lines("a\r\n1\r\n2\r\n"), vec![1, 2, 3]);
        assert_eq!(lines("a\r1\r2\r"), vec![1, 2, 3]);
        // Blank lines give no record but count.
        assert_eq!(lines("a\n\n1\r\n\r\n2\n"), vec![1, 3, 5]);
        // A BOM does not shift anything.
        assert_eq!(lines("\u{feff}a\n1\n"), vec![1, 2]);
        // Line breaks inside quotes count, in each style.
        assert_eq!(lines("a\n\"x\r\ny\rz\nw\",1\nnext\n"), vec![1, 2, 6]);
    }

    #[test]
    fn csv_quotes_commas_and_newlines() {
        assert_eq!(
            fields("q,t\n\"He said \"\"no\"\", then left\",b\n"),
            vec![row(&["q", "t"]), row(&["He said \"no\", then left", "b"])]
        );
        let recs = parse_csv("h1,h2\n\"line one\nline two\",x\nnext,y\n").unwrap();
        assert_eq!(recs[1].fields, row(&["line one\nline two", "x"]));
        assert_eq!(recs[1].line, 2);
        assert_eq!(
            recs[2].line, 4,
            "line numbers count the embedded line break"
        );
        assert_eq!(fields("\"\",\"a,b\",\"\"\n"), vec![row(&["", "a,b", ""])]);
        // A quote inside an unquoted field is kept as it is.
        assert_eq!(fields("5\" gun,x\n"), vec![row(&["5\" gun", "x"])]);
        // Text after a closing quote joins the field.
        assert_eq!(fields("\"x\"y,z\n"), vec![row(&["xy", "z"])]);
    }

    #[test]
    fn csv_bom_and_empty_trailing_columns() {
        assert_eq!(
            fields("\u{feff}value,a,b,c,d,e,truth\nb,x,y,,,,a\n"),
            vec![
                row(&["value", "a", "b", "c", "d", "e", "truth"]),
                row(&["b", "x", "y", "", "", "", "a"])
            ]
        );
        assert_eq!(fields("a,b,\n"), vec![row(&["a", "b", ""])]);
        assert_eq!(fields("a,\"b\"\n"), vec![row(&["a", "b"])]);
    }

    #[test]
    fn csv_quote_left_open_names_the_line_of_its_record() {
        let e = parse_csv("a\n\"open\nstill open").unwrap_err();
        assert_eq!(e.line, 2);
        let e = parse_csv("a,b\n1,2\nx,\"open, \"\"quoted\"\"\n").unwrap_err();
        assert_eq!(e.line, 3);
        // Closed quotes at the very end are fine, with or without a final line break.
        for ok in [
            "a,\"b\"",
            "a,\"b\"\n",
            "a,",
            "a,\"\"",
            "\"a\nb\"",
            "a,\"b\"\"\"\r\n",
        ] {
            assert!(parse_csv(ok).is_ok(), "{ok:?}");
        }
    }
}
