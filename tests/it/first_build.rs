//! The first build stays short: one TLS crypto library, and not the one that needs cmake.
//!
//! A newcomer's first command compiles every dependency (`docs/benchmarks.md`, *First build*). aws-lc
//! (`aws-lc-sys`, built through cmake) was most of that time, and came in through the default TLS features
//! of reqwest, async-openai and tonic although sleuth already had a provider. This reads `Cargo.lock`,
//! which lists every package any build of the crate can compile, so a dependency line or feature that
//! brings aws-lc back fails here rather than in a newcomer's first 10 minutes.

use std::path::Path;

fn locked_packages() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.lock");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let lock: toml::Value =
        toml::from_str(&text).unwrap_or_else(|e| panic!("{} is not TOML: {e}", path.display()));
    lock["package"]
        .as_array()
        .expect("Cargo.lock has [[package]] tables")
        .iter()
        .map(|p| p["name"].as_str().expect("a package name").to_string())
        .collect()
}

#[test]
fn one_tls_crypto_library_and_no_cmake() {
    let packages = locked_packages();
    let has = |name: &str| packages.iter().any(|p| p == name);
    assert!(has("ring"), "ring is the TLS crypto provider (src/tls.rs)");
    for heavy in ["aws-lc-sys", "aws-lc-rs", "cmake"] {
        assert!(
            !has(heavy),
            "Cargo.lock has `{heavy}`: a dependency's TLS feature brings aws-lc back \
             (`cargo tree -i {heavy} -e features` shows which); use its ring or no-provider feature"
        );
    }
}
