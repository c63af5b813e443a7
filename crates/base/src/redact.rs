//! Credentials taken out of what sleuth writes down. A base URL may carry a user and password
//! (`http://user:secret@host/v1`) or a key in its query string (`?api-key=…`, as some gateways take
//! it); sleuth records base URLs in every game's spec, its `result.json` and the sweep store, where
//! the key must never be (the key's *variable name* is recorded instead). The URL itself still goes
//! to the provider as given: only what is written is redacted.

/// What replaces a query value that looks like a credential.
pub const REDACTED: &str = "REDACTED";

/// Query keys whose values are credentials: any key containing one of these (case-insensitive).
const SECRET_KEYS: &[&str] = &[
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "sig",
    "auth",
    "credential",
    "session",
];

/// `raw` without a user or password in its authority and with the values of credential-like query
/// keys replaced by [`REDACTED`]. A URL with nothing to take out comes back byte for byte, so specs
/// without credentials are unchanged; a text that does not parse as a URL loses anything up to an
/// `@` after its `://`.
pub fn url(raw: &str) -> String {
    let Ok(mut u) = url::Url::parse(raw) else {
        return userinfo_out(raw);
    };
    let has_user = !u.username().is_empty() || u.password().is_some();
    let secret_query = u.query_pairs().any(|(k, _)| is_secret(&k));
    if !has_user && !secret_query {
        return raw.to_string();
    }
    if has_user {
        let _ = u.set_username("");
        let _ = u.set_password(None);
    }
    if secret_query {
        let pairs: Vec<(String, String)> = u
            .query_pairs()
            .map(|(k, v)| {
                let v = if is_secret(&k) {
                    REDACTED.to_string()
                } else {
                    v.into_owned()
                };
                (k.into_owned(), v)
            })
            .collect();
        u.query_pairs_mut().clear().extend_pairs(pairs);
    }
    u.to_string()
}

/// Every URL in a text (a sweep file as stored) passed through [`url`]: its user and password taken
/// out, its credential-like query values replaced; the rest of the text unchanged.
pub fn urls_in_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        // The scheme before `://`, and the URL's end: a quote, a backslash or a space.
        let start = rest[..i]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |j| j + 1);
        let end = rest[i + 3..]
            .find(|c: char| matches!(c, '"' | '\'' | '\\' | '<' | '>') || c.is_whitespace())
            .map_or(rest.len(), |j| i + 3 + j);
        out.push_str(&rest[..start]);
        out.push_str(&url(&rest[start..end]));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Without parsing: anything up to an `@` after `://`, up to the authority's end.
fn userinfo_out(raw: &str) -> String {
    let Some(i) = raw.find("://") else {
        return raw.to_string();
    };
    let (head, tail) = raw.split_at(i + 3);
    let end = tail
        .find(|c: char| matches!(c, '/' | '?' | '#') || c.is_whitespace())
        .unwrap_or(tail.len());
    match tail[..end].rfind('@') {
        Some(at) => format!("{head}{}", &tail[at + 1..]),
        None => raw.to_string(),
    }
}

fn is_secret(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    SECRET_KEYS.iter().any(|s| k.contains(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_taken_out_and_clean_urls_are_left_alone() {
        assert_eq!(
            url("http://user:s3cret@host:8000/v1"),
            "http://host:8000/v1"
        );
        assert_eq!(url("https://s3cret@host/v1"), "https://host/v1");
        let q = url("https://host/v1?api-version=2024-06-01&api-key=s3cret");
        assert_eq!(q, "https://host/v1?api-version=2024-06-01&api-key=REDACTED");
        for clean in [
            "http://127.0.0.1:8080/v1",
            "https://api.openai.com/v1",
            "http://host",
            "https://host/v1?api-version=2024-06-01",
        ] {
            assert_eq!(url(clean), clean, "unchanged byte for byte");
        }
        assert_eq!(url("bad_scheme://user:pw@host/x"), "bad_scheme://host/x");
    }

    #[test]
    fn a_text_loses_the_userinfo_of_every_url_in_it() {
        let text = "[models.a]\nbase_url = \"http://u:s3cret@h1/v1\"\n[models.b]\nbase_url = \"https://h2/v1\"\n[models.c]\nbase_url = 'https://h3/v1?key=s3cret'\nnote = \"mail me@x\"\n";
        let out = urls_in_text(text);
        assert!(!out.contains("s3cret"), "{out}");
        assert!(out.contains("'https://h3/v1?key=REDACTED'"), "{out}");
        assert!(out.contains("\"http://h1/v1\"") && out.contains("\"https://h2/v1\""));
        assert!(out.contains("me@x"), "an @ outside a URL stays: {out}");
    }
}
