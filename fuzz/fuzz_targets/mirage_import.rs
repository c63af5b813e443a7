//! The MIRAGE importer on a folder made from the input. The input is split at 0xFF bytes into files:
//! 1. `<Title>/script.json`;
//! 2. `<Title>/clues.json`;
//! 3. `Truth.json` next to the folder;
//! 4. options: the first line is the folder name (the title; default "The Eastern Star Cruise Ship", whose
//!    culprit is built in), every further line a `--culprit` name.
//!
//! Missing parts are missing files.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sleuth::script::import::mirage::{self, MirageOptions};
use sleuth_fuzz::{check_import, safe_file_name, split_files, temp_dir, write};

const DEFAULT_TITLE: &str = "The Eastern Star Cruise Ship";

fuzz_target!(|data: &[u8]| {
    let files = split_files(data);
    let options = files
        .get(3)
        .map(|o| String::from_utf8_lossy(o).into_owned())
        .unwrap_or_default();
    let mut lines = options.lines();
    let title = match lines.next().map(str::trim) {
        Some(t) if safe_file_name(t) => t.to_string(),
        _ => DEFAULT_TITLE.to_string(),
    };
    let culprits: Vec<String> = lines.map(str::to_string).collect();

    let tmp = temp_dir();
    let dir = tmp.path().join(&title);
    std::fs::create_dir_all(&dir).expect("create folder");
    if let Some(script) = files.first() {
        write(&dir.join("script.json"), script);
    }
    if let Some(clues) = files.get(1) {
        write(&dir.join("clues.json"), clues);
    }
    if let Some(truth) = files.get(2) {
        write(&tmp.path().join("Truth.json"), truth);
    }
    let opts = MirageOptions {
        culprits,
        truth: None,
        suspects: Vec::new(),
    };
    check_import(mirage::import(&dir, &opts));
});
