//! The WellPlay importer on a folder made from the input. The input is split at 0xFF bytes into files:
//! 1. `json/script_info.json`;
//! 2. `final_result/FSA.csv`;
//! 3. then, per character named in `character_name` of the first file (in order), `json/<Name>.json` and
//!    `final_result/<Name>.csv`.
//!
//! Missing parts are missing files.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sleuth::script::import::wellplay;
use sleuth_fuzz::{check_import, safe_file_name, split_files, temp_dir, write};

/// The character names of a `script_info.json`, as far as it has any.
fn names(info: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(info);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(v) => v
            .get("character_name")
            .and_then(|n| n.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default(),
        Err(_) => Vec::new(),
    }
}

fuzz_target!(|data: &[u8]| {
    let files = split_files(data);
    let tmp = temp_dir();
    let dir = tmp.path().join("Fuzz (4 people)");
    std::fs::create_dir_all(&dir).expect("create folder");
    let mut parts = files.iter();
    let Some(info) = parts.next() else { return };
    write(&dir.join("json/script_info.json"), info);
    if let Some(fsa) = parts.next() {
        write(&dir.join("final_result/FSA.csv"), fsa);
    }
    for name in names(info) {
        if !safe_file_name(&name) {
            continue;
        }
        if let Some(json) = parts.next() {
            write(&wellplay::character_json_path(&dir, &name), json);
        }
        if let Some(csv) = parts.next() {
            write(&dir.join("final_result").join(format!("{name}.csv")), csv);
        }
    }
    check_import(wellplay::import(&dir));
});
