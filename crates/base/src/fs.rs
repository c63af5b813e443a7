//! Files that are whole or absent: every file sleuth writes for a reader to trust (a game's
//! `result.json`, a script with new questions, the ledger's spill, a mirrored transcript) is written
//! to a temporary file beside it, synced, and renamed over it, so a process killed at any point leaves
//! the old file or the new one, never half of either.
//!
//! The temporary file is `tempfile`'s: unique in the target's directory (two writers never share one)
//! and removed if the write fails or is dropped before [`AtomicFile::commit`].

use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` whole or not at all (see the module documentation). A file it replaces
/// keeps its permissions.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = AtomicFile::create(path)?;
    file.write_all(bytes)?;
    file.commit()
}

/// A file being written that appears at its path only when [`AtomicFile::commit`] succeeds: for
/// contents that arrive in pieces (a transcript fetched in chunks).
pub struct AtomicFile {
    tmp: tempfile::NamedTempFile,
    path: PathBuf,
}

impl AtomicFile {
    /// Starts the file that will be `path`, in `path`'s directory (a rename across file systems would
    /// not be atomic).
    pub fn create(path: &Path) -> io::Result<Self> {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".tmp")
            .tempfile_in(dir)?;
        Ok(Self {
            tmp,
            path: path.to_path_buf(),
        })
    }

    /// Syncs the contents and renames the file to its path, replacing what was there.
    pub fn commit(self) -> io::Result<()> {
        let file = self.tmp.as_file();
        if let Ok(meta) = std::fs::metadata(&self.path) {
            file.set_permissions(meta.permissions())?;
        }
        file.sync_all()?;
        self.tmp.persist(&self.path).map_err(|e| e.error)?;
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.tmp.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.tmp.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_replaces_the_file_whole_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("result.json");
        write_atomic(&path, b"old").expect("first");
        write_atomic(&path, b"new").expect("second");
        assert_eq!(std::fs::read(&path).expect("read"), b"new");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("result.json")]);
    }

    #[test]
    fn a_file_dropped_before_commit_never_appears() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("transcript.jsonl");
        let mut f = AtomicFile::create(&path).expect("create");
        f.write_all(b"{\"seq\":0}\n").expect("write");
        drop(f);
        assert!(!path.exists());
        assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 0);
    }

    #[test]
    fn a_replaced_file_keeps_its_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("script.toml");
        std::fs::write(&path, "a").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        write_atomic(&path, b"b").expect("replace");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
    }
}
