//! Helpers shared by the fuzz targets: splitting one fuzzer input into the files of a dataset folder,
//! writing them to a fresh temporary folder, and checking what an importer returns.

use std::path::Path;

use sleuth::script::import::ImportError;
use sleuth::script::Script;

/// Separates the files packed into one fuzzer input. 0xFF never occurs in UTF-8, so text files (and the
/// seeds) never contain it by accident, while the fuzzer can still insert and remove it.
pub const DELIMITER: u8 = 0xFF;

/// The files packed into `data`, in order.
pub fn split_files(data: &[u8]) -> Vec<&[u8]> {
    data.split(|&b| b == DELIMITER).collect()
}

/// A fresh temporary folder, in memory where `/dev/shm` exists (many thousand folders a second).
pub fn temp_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(dir) = tempfile::Builder::new()
            .prefix("sleuth-fuzz")
            .tempdir_in(shm)
        {
            return dir;
        }
    }
    tempfile::tempdir().expect("temporary folder")
}

/// Writes `bytes` to `path`, creating its folder.
pub fn write(path: &Path, bytes: &[u8]) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("create folder");
    }
    std::fs::write(path, bytes).expect("write file");
}

/// Whether `name` can be a file name inside the temporary folder (a character named `../x` is given to
/// the importer, which then reads a missing file, but nothing is written outside the folder for it).
pub fn safe_file_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() < 100
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\', '\0'])
}

/// What a caller does with an importer's result: errors are displayed; a script is validated, written
/// as TOML and read back, which must succeed (a saved import that cannot be loaded again is a bug).
pub fn check_import(result: Result<Script, ImportError>) {
    match result {
        Ok(script) => {
            check_script(&script);
            let toml = script.to_toml();
            if let Err(e) = Script::parse_unchecked(&toml, Path::new("imported.toml")) {
                panic!("imported script does not read back: {e}\n{toml}");
            }
        }
        Err(e) => drop(e.to_string()),
    }
}

/// Validation and serialisation of a script that parsed or was imported.
pub fn check_script(script: &Script) {
    for p in script.problems() {
        drop(p.to_string());
    }
    drop(script.to_toml());
}
