//! What a run directory holds: a sweep's store (`sleuth.db`, with its games under `games/<id>/`), or
//! a plain folder of game directories (`sleuth play --out DIR`, `sleuth results`), each holding a
//! `result.json` and/or a `transcript.jsonl`.
//!
//! A game is named by its id in a store and by its path below the folder otherwise; either way the
//! name is checked before it becomes a path, and the path is resolved (links followed) and must stay
//! below the run directory's own resolved path, with its result and transcript: a link in the run
//! directory to `/` or to a file elsewhere serves nothing.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use super::db::Db;
use super::remote::Remote;
use super::ViewError;
use sleuth_report::load::{RESULT_FILE, TRANSCRIPT_FILE};

/// The run directory being viewed. Cheap to clone.
#[derive(Clone)]
pub struct Source {
    pub root: PathBuf,
    /// `root` resolved (links followed): what every game's resolved path must stay below.
    resolved_root: PathBuf,
    /// The store, when the directory is a sweep's.
    pub db: Option<Arc<Db>>,
    /// The cluster the directory mirrors (`sleuth view --coordinator`): the pages fetch a game's
    /// transcript from it when the mirror lacks the file, and take the live figures from it.
    pub remote: Option<Arc<Remote>>,
}

impl Source {
    /// Opens `root`: its store when it has one, else checks that it holds at least one game.
    pub fn open(root: &Path) -> Result<Source, ViewError> {
        if !root.is_dir() {
            return Err(ViewError::NotADirectory {
                path: root.to_path_buf(),
            });
        }
        let resolved_root = root.canonicalize().map_err(|_| ViewError::NotADirectory {
            path: root.to_path_buf(),
        })?;
        let store = sleuth_store::RunDir::new(root).store();
        // A store without a sweep (a game played with a person's seat, a run of annotation
        // campaigns only) leaves the directory a folder of games.
        let has_store = store.is_file();
        if has_store && Db::holds_sweeps(&store)? {
            let db = Db::open(&store)?;
            return Ok(Source {
                root: root.to_path_buf(),
                resolved_root,
                db: Some(Arc::new(db)),
                remote: None,
            });
        }
        let mut games = Vec::new();
        find_games(root, root, &mut games, 1);
        // A store with campaigns but no game yet (questions under review) is still worth opening.
        if games.is_empty() && !has_store {
            return Err(ViewError::Empty {
                path: root.to_path_buf(),
            });
        }
        Ok(Source {
            root: root.to_path_buf(),
            resolved_root,
            db: None,
            remote: None,
        })
    }

    /// The directory of the game named `id`, if the name is well formed (it need not exist yet: a
    /// pending game of a sweep has no directory).
    pub fn game_dir(&self, id: &str) -> Option<PathBuf> {
        if self.db.is_some() {
            let ok = !id.is_empty()
                && id.len() <= 128
                && id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            let dir = sleuth_store::RunDir::new(&self.root).game(id).dir;
            return (ok && self.confined(&dir)).then_some(dir);
        }
        let rel = Path::new(id);
        if id.is_empty()
            || id.len() > 1024
            || !rel
                .components()
                .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return None;
        }
        let dir = self.root.join(rel);
        self.confined(&dir).then_some(dir)
    }

    /// Whether a game's directory, and its result and transcript where they exist, resolve to paths
    /// below the resolved root. A path that does not exist yet (a pending game) passes: there is
    /// nothing to read there.
    fn confined(&self, dir: &Path) -> bool {
        [
            dir.to_path_buf(),
            dir.join(RESULT_FILE),
            dir.join(TRANSCRIPT_FILE),
        ]
        .iter()
        .all(|p| match p.canonicalize() {
            Ok(real) => real.starts_with(&self.resolved_root),
            // Missing (or a dangling link): nothing would be read through it.
            Err(_) => std::fs::symlink_metadata(p).is_err(),
        })
    }

    /// Every game of a folder (not a store), as names relative to the root, sorted.
    pub fn folder_games(&self) -> Vec<String> {
        let mut games = Vec::new();
        find_games(&self.root, &self.root, &mut games, usize::MAX);
        games.sort();
        games
    }
}

/// Collects directories below `dir` (or `dir` itself) that hold a result or a transcript, as paths
/// relative to `root` ("." for the root itself), stopping after `limit`. Links to directories are not
/// followed, so a link back up the tree cannot loop.
fn find_games(root: &Path, dir: &Path, out: &mut Vec<String>, limit: usize) {
    if out.len() >= limit {
        return;
    }
    if dir.join(RESULT_FILE).is_file() || dir.join(TRANSCRIPT_FILE).is_file() {
        let rel = dir.strip_prefix(root).unwrap_or(dir);
        let name = rel.to_string_lossy().to_string();
        out.push(if name.is_empty() { ".".into() } else { name });
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            find_games(root, &entry.path(), out, limit);
            if out.len() >= limit {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folder_names_cannot_leave_the_root() {
        let tmp = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(tmp.path().join("a/g1")).expect("mkdir");
        std::fs::write(tmp.path().join("a/g1").join(RESULT_FILE), "{}").expect("write");
        let s = Source::open(tmp.path()).expect("a folder with a game");
        assert_eq!(s.folder_games(), vec!["a/g1".to_string()]);
        assert!(s.game_dir("a/g1").is_some());
        assert!(s.game_dir("../etc").is_none());
        assert!(s.game_dir("a/../../x").is_none());
        assert!(s.game_dir("/etc").is_none());
        assert!(s.game_dir("").is_none());
    }

    #[test]
    fn links_out_of_the_root_serve_nothing() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let outside = tempfile::tempdir().expect("temp dir");
        std::fs::write(outside.path().join(RESULT_FILE), "{}").expect("write");
        std::fs::create_dir_all(tmp.path().join("g1")).expect("mkdir");
        std::fs::write(tmp.path().join("g1").join(RESULT_FILE), "{}").expect("write");
        // A link to a directory outside, and a game whose result is a link to a file outside.
        std::os::unix::fs::symlink(outside.path(), tmp.path().join("rootlink")).expect("link");
        std::fs::create_dir_all(tmp.path().join("g2")).expect("mkdir");
        std::os::unix::fs::symlink(
            outside.path().join(RESULT_FILE),
            tmp.path().join("g2").join(RESULT_FILE),
        )
        .expect("link");
        // A link that stays inside is fine.
        std::os::unix::fs::symlink(tmp.path().join("g1"), tmp.path().join("inside")).expect("link");
        let s = Source::open(tmp.path()).expect("a folder with a game");
        assert!(s.game_dir("g1").is_some());
        assert!(s.game_dir("inside").is_some());
        assert!(s.game_dir("rootlink").is_none(), "a link out of the root");
        assert!(s.game_dir("g2").is_none(), "a result linked from outside");
    }

    #[test]
    fn an_empty_folder_is_refused() {
        let tmp = tempfile::tempdir().expect("temp dir");
        assert!(matches!(
            Source::open(tmp.path()),
            Err(ViewError::Empty { .. })
        ));
    }
}
