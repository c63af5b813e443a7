//! The RFC 4180 CSV reader of the WellPlay importer. Hand-written rather than a dependency: it keeps the
//! line each record starts on, which every repair warning and error names.

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

/// Parses RFC 4180 CSV: comma-separated fields; a field in double quotes may hold commas, line breaks and
/// `""` for a quote. Accepts a UTF-8 BOM and LF, CRLF or CR line ends. A blank line gives a record with
/// one empty field; no record follows the final line break.
pub(super) fn parse_csv(text: &str) -> Result<Vec<Record>, CsvError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut records = Vec::new();
    let mut fields: Vec<String> = Vec::new();
    let mut field = String::new();
    let mut line = 1;
    let mut record_line = 1;
    let mut chars = text.chars().peekable();
    // Whether anything of the current record has been read (so that a final line break ends no record).
    let mut in_record = false;
    while let Some(c) = chars.next() {
        in_record = true;
        match c {
            '"' if field.is_empty() => {
                let open_line = line;
                loop {
                    match chars.next() {
                        None => {
                            return Err(CsvError {
                                line: open_line,
                                expected: "a closing quote for the field opened on this line"
                                    .into(),
                            })
                        }
                        Some('"') if chars.peek() == Some(&'"') => {
                            chars.next();
                            field.push('"');
                        }
                        Some('"') => break,
                        Some(ch) => {
                            if ch == '\n' || (ch == '\r' && chars.peek() != Some(&'\n')) {
                                line += 1;
                            }
                            field.push(ch);
                        }
                    }
                }
                match chars.peek() {
                    None | Some(',') | Some('\n') | Some('\r') => {}
                    Some(_) => {
                        return Err(CsvError {
                            line,
                            expected: "a comma or line end after a closing quote".into(),
                        })
                    }
                }
            }
            ',' => fields.push(std::mem::take(&mut field)),
            '\r' | '\n' => {
                if c == '\r' && chars.peek() == Some(&'\n') {
                    chars.next();
                }
                fields.push(std::mem::take(&mut field));
                records.push(Record {
                    line: record_line,
                    fields: std::mem::take(&mut fields),
                });
                line += 1;
                record_line = line;
                in_record = false;
            }
            _ => field.push(c),
        }
    }
    if in_record {
        fields.push(field);
        records.push(Record {
            line: record_line,
            fields,
        });
    }
    Ok(records)
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
    }

    #[test]
    fn csv_errors_name_the_line() {
        let e = parse_csv("a\n\"open\nstill open").unwrap_err();
        assert_eq!(e.line, 2);
        let e = parse_csv("a\n\"x\"y,z\n").unwrap_err();
        assert_eq!(e.line, 2);
    }
}
