//! Where a bundle is written: into `DIR.tmp-PID` beside `DIR`, renamed to `DIR` when the last
//! file is in, so that `DIR` is only ever a whole bundle (a bundle killed half-way leaves its
//! temporary directory, never half a bundle under the name asked for). `DIR` may be new, empty,
//! or a bundle written before (it holds [`MARKER`]), which the new one replaces; anything else is
//! refused before a page is written.

use std::path::{Path, PathBuf};

use super::BundleError;

/// The file every bundle holds, saying what it is of.
pub const MARKER: &str = "sleuth-bundle.json";

/// A bundle being written.
pub struct Out {
    dest: PathBuf,
    tmp: PathBuf,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BundleError + '_ {
    move |source| BundleError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// `dir` with `suffix` added to its last component.
fn beside(dir: &Path, suffix: &str) -> Result<PathBuf, BundleError> {
    let name = dir
        .file_name()
        .ok_or_else(|| BundleError::BadPath {
            path: dir.to_path_buf(),
        })?
        .to_string_lossy();
    let parent = dir.parent().filter(|p| !p.as_os_str().is_empty());
    Ok(parent
        .unwrap_or(Path::new("."))
        .join(format!("{name}.{suffix}-{}", std::process::id())))
}

impl Out {
    /// Checks `dest` (see the module's notes) and makes the temporary directory.
    pub fn prepare(dest: &Path) -> Result<Out, BundleError> {
        if dest.exists() {
            let refused = || BundleError::NotABundle {
                path: dest.to_path_buf(),
            };
            if !dest.is_dir() {
                return Err(refused());
            }
            let mut entries = std::fs::read_dir(dest).map_err(io(dest))?;
            if entries.next().is_some() && !dest.join(MARKER).is_file() {
                return Err(refused());
            }
        }
        let tmp = beside(dest, "tmp")?;
        if tmp.exists() {
            std::fs::remove_dir_all(&tmp).map_err(io(&tmp))?;
        }
        std::fs::create_dir_all(&tmp).map_err(io(&tmp))?;
        Ok(Out {
            dest: dest.to_path_buf(),
            tmp,
        })
    }

    /// Writes `file` (a path relative to the bundle's root, `/`-separated) with `bytes`.
    pub fn write(&self, file: &str, bytes: &[u8]) -> Result<u64, BundleError> {
        let path = file
            .split('/')
            .fold(self.tmp.clone(), |p, part| p.join(part));
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        std::fs::write(&path, bytes).map_err(io(&path))?;
        Ok(bytes.len() as u64)
    }

    /// Writes the marker, then puts the bundle in place of `dest` (a bundle there before is
    /// removed once the new one is in).
    pub fn finish(self, marker: &serde_json::Value) -> Result<PathBuf, BundleError> {
        let text = serde_json::to_vec_pretty(marker).unwrap_or_default();
        self.write(MARKER, &text)?;
        let old = if self.dest.exists() {
            let old = beside(&self.dest, "old")?;
            std::fs::rename(&self.dest, &old).map_err(io(&self.dest))?;
            Some(old)
        } else {
            None
        };
        std::fs::rename(&self.tmp, &self.dest).map_err(io(&self.dest))?;
        if let Some(old) = old {
            std::fs::remove_dir_all(&old).map_err(io(&old))?;
        }
        Ok(self.dest.clone())
    }

    /// Removes what was written (the bundle failed).
    pub fn abandon(self) {
        let _ = std::fs::remove_dir_all(&self.tmp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_that_is_not_a_bundle_is_refused_and_a_bundle_replaced() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let dest = tmp.path().join("site");
        std::fs::create_dir_all(&dest).expect("dir");
        std::fs::write(dest.join("paper.tex"), "x").expect("write");
        let e = Out::prepare(&dest).err().expect("refused");
        assert!(e.to_string().contains(&dest.display().to_string()), "{e}");
        std::fs::remove_file(dest.join("paper.tex")).expect("rm");
        let out = Out::prepare(&dest).expect("empty is fine");
        out.write("a/b.html", b"1").expect("write");
        out.finish(&serde_json::json!({})).expect("finish");
        assert!(dest.join("a/b.html").is_file());
        let out = Out::prepare(&dest).expect("a bundle is replaced");
        out.write("c.html", b"2").expect("write");
        out.finish(&serde_json::json!({})).expect("finish");
        assert!(dest.join("c.html").is_file() && !dest.join("a").exists());
    }
}
