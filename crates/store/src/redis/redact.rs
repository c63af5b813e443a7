//! Redis URLs as they may be shown: the password replaced, and the secrets to scrub from any message
//! the client library returns.
//!
//! The URL is read with the `url` crate, the parser the Redis client itself reads it with, so what is
//! hidden is exactly what the client takes for the password: the authority's password (sent
//! percent-decoded), or a `pass` query parameter of a `redis+unix://` URL (form-decoded, key and
//! value). A URL that does not parse, or that parses into something other than what its writer
//! probably meant (an `@` after the host: a password with a raw `/`, `?` or `#` in it), is hidden
//! conservatively instead: everything before its last `@` is secret.

use percent_encoding::percent_decode_str;
use url::form_urlencoded;
use url::Url;

/// What a password is shown as.
const MASK: &str = "***";

/// Query parameters that carry a password (`pass` is the client's; `password` is hidden too, in case
/// a later client reads it).
fn is_password_key(key: &str) -> bool {
    key == "pass" || key == "password"
}

/// `url` as it may be shown, and the secrets to scrub from any message: each password as written
/// and as decoded, longest first (so that a secret containing another is replaced whole).
pub(super) fn redact(raw: &str) -> (String, Vec<String>) {
    let mut secrets = Vec::new();
    let shown = match Url::parse(raw) {
        Ok(url) if !after_host_has_at(&url) => redact_parsed(url, &mut secrets),
        _ => redact_conservatively(raw, &mut secrets),
    };
    secrets.retain(|s| !s.is_empty());
    secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    secrets.dedup();
    (shown, secrets)
}

/// Whether an `@` follows the host: the writer's password held a raw `/`, `?` or `#`, so part of it
/// ended up in the path, query or fragment.
fn after_host_has_at(url: &Url) -> bool {
    url.path().contains('@') || url.fragment().is_some_and(|f| f.contains('@')) || {
        // A query's `@` is fine in a `pass` value (hidden anyway), not elsewhere.
        url.query_pairs()
            .any(|(k, v)| k.contains('@') || (!is_password_key(&k) && v.contains('@')))
    }
}

fn redact_parsed(mut url: Url, secrets: &mut Vec<String>) -> String {
    if let Some(pass) = url.password().map(str::to_string) {
        secrets.push(percent_decode_str(&pass).decode_utf8_lossy().into_owned());
        secrets.push(pass);
        // Only a URL that cannot carry a password refuses one, and this one carries one.
        let _ = url.set_password(Some(MASK));
    }
    let Some(query) = url.query().map(str::to_string) else {
        return url.to_string();
    };
    let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
    if !pairs.iter().any(|(k, _)| is_password_key(k)) {
        return url.to_string();
    }
    // The values as written, too: a message may quote the URL's text.
    for written in query.split('&') {
        let (k, v) = written.split_once('=').unwrap_or((written, ""));
        let key: String = form_urlencoded::parse(format!("{k}=").as_bytes())
            .map(|(k, _)| k.into_owned())
            .next()
            .unwrap_or_default();
        if is_password_key(&key) {
            secrets.push(v.to_string());
        }
    }
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (k, v) in &pairs {
        if is_password_key(k) {
            secrets.push(v.clone());
            query.append_pair(k, MASK);
        } else {
            query.append_pair(k, v);
        }
    }
    url.set_query(Some(&query.finish()));
    url.to_string()
}

/// `scheme://***@rest`, with everything between `://` and the last `@` secret (whole, and each part
/// after a `:`, as written and percent-decoded).
fn redact_conservatively(raw: &str, secrets: &mut Vec<String>) -> String {
    let (scheme, rest) = raw.split_once("://").unwrap_or(("", raw));
    let Some((userinfo, host)) = rest.rsplit_once('@') else {
        return raw.to_string();
    };
    let mut parts = vec![userinfo];
    if let Some((_, pass)) = userinfo.split_once(':') {
        parts.push(pass);
    }
    for p in parts {
        secrets.push(p.to_string());
        secrets.push(percent_decode_str(p).decode_utf8_lossy().into_owned());
    }
    if scheme.is_empty() {
        format!("{MASK}@{host}")
    } else {
        format!("{scheme}://{MASK}@{host}")
    }
}

/// `message` with every secret replaced by `***`.
pub(super) fn scrub(message: &str, secrets: &[String]) -> String {
    secrets
        .iter()
        .fold(message.to_string(), |m, s| m.replace(s.as_str(), MASK))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_is_redacted_from_urls() {
        let (at, secrets) = redact("redis://:hunter2@cache.internal:6379/0");
        assert_eq!(at, "redis://:***@cache.internal:6379/0");
        assert_eq!(secrets, ["hunter2"]);

        let (at, secrets) = redact("rediss://worker:p%40ss@host:6380");
        assert_eq!(at, "rediss://worker:***@host:6380");
        assert!(secrets.contains(&"p%40ss".to_string()));
        assert!(secrets.contains(&"p@ss".to_string()));

        // A raw `@` or `/` in the password: everything up to the last `@` is hidden.
        let (at, secrets) = redact("redis://u:a@b/c@host:1/2");
        assert_eq!(at, "redis://***@host:1/2");
        assert!(secrets.contains(&"a@b/c".to_string()), "{secrets:?}");

        let (at, secrets) = redact("redis+unix:///run/redis.sock?db=1&pass=sekrit");
        assert_eq!(at, "redis+unix:///run/redis.sock?db=1&pass=***");
        assert_eq!(secrets, ["sekrit"]);
        let (_, secrets) = redact("unix:///s.sock?pass=two+words%21");
        assert!(secrets.contains(&"two words!".to_string()), "{secrets:?}");

        let (at, secrets) = redact("redis://127.0.0.1:6379");
        assert_eq!(at, "redis://127.0.0.1:6379");
        assert!(secrets.is_empty());

        let (at, secrets) = redact("redis://user@host");
        assert_eq!(at, "redis://user@host");
        assert!(secrets.is_empty());
    }

    /// The client form-decodes a unix URL's query keys too: `%70ass` is `pass` to it, so it is the
    /// password here as well (the hand-written reader compared the key as written, and showed it).
    #[test]
    fn a_query_password_is_hidden_however_its_key_is_encoded() {
        let (at, secrets) = redact("redis+unix:///run/redis.sock?%70ass=hunter2&db=3");
        assert!(!at.contains("hunter2"), "{at}");
        assert!(secrets.contains(&"hunter2".to_string()), "{secrets:?}");
        // What the client reads, to be sure the key is the password to it.
        let info: ::redis::ConnectionInfo = "redis+unix:///run/redis.sock?%70ass=hunter2&db=3"
            .parse()
            .expect("the client reads the URL");
        assert_eq!(info.redis_settings().password(), Some("hunter2"));
    }

    #[test]
    fn secrets_are_scrubbed_from_messages() {
        let (_, secrets) = redact("redis://:p%2Fw@h");
        let m = scrub("auth p/w failed (p%2Fw)", &secrets);
        assert_eq!(m, "auth *** failed (***)");
    }

    #[test]
    fn percent_decoding_leaves_bad_escapes_alone() {
        let (_, secrets) = redact("redis://:a%20b%zz%4@h");
        assert!(secrets.contains(&"a b%zz%4".to_string()), "{secrets:?}");
    }
}
