//! The canonical loader: bytes → UTF-8 (lossy) → `Script::parse_unchecked`, then validation (`problems`)
//! and serialisation of every script that parsed.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use sleuth::script::Script;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match Script::parse_unchecked(&text, Path::new("fuzz.toml")) {
        Ok(script) => sleuth_fuzz::check_script(&script),
        Err(e) => drop(e.to_string()),
    }
});
