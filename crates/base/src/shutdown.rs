//! The process's one shutdown signal, made in `main` and handed down to every long-running part (the
//! way mini-redis passes its shutdown down to each connection), instead of each command catching
//! Ctrl-C itself and aborting tasks that hold state.
//!
//! Stopping has two steps, as a user presses Ctrl-C once or twice (SIGTERM counts as a press):
//!
//! 1. **drain**: take no new work; finish each unit in flight (a game, a request, a batch round)
//!    and write what it produced;
//! 2. **now**: give up units in flight at their next checkpoint, recording them so they can be
//!    resumed (a game is marked interrupted and continues from the cache next run), then return.
//!
//! Each part selects on [`Shutdown::draining`] or [`Shutdown::stopping_now`] where it waits, and
//! returns on its own; the caller then awaits it. `main` gives the whole process a bounded time
//! after "now" ([`Shutdown::GRACE`]) before it exits regardless.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// One shutdown signal, cheap to clone; every clone sees the same requests.
#[derive(Clone, Debug, Default)]
pub struct Shutdown {
    drain: CancellationToken,
    now: CancellationToken,
}

impl Shutdown {
    /// How long after "now" a process may take to finish its checkpoints before `main` exits
    /// without them.
    pub const GRACE: Duration = Duration::from_secs(10);

    pub fn new() -> Self {
        Self::default()
    }

    /// Asks every part to take no new work and finish what it holds.
    pub fn drain(&self) {
        self.drain.cancel();
    }

    /// Asks every part to give up its work in flight at the next checkpoint (and to drain).
    pub fn now(&self) {
        self.drain.cancel();
        self.now.cancel();
    }

    /// Whether a drain (or more) was asked for.
    pub fn is_draining(&self) -> bool {
        self.drain.is_cancelled()
    }

    /// Whether "now" was asked for.
    pub fn is_stopping_now(&self) -> bool {
        self.now.is_cancelled()
    }

    /// Resolves when a drain (or more) is asked for.
    pub async fn draining(&self) {
        self.drain.cancelled().await
    }

    /// Resolves when "now" is asked for.
    pub async fn stopping_now(&self) {
        self.now.cancelled().await
    }

    /// A signal of its own that also stops when this one does: for a part that must be stopped
    /// alone as well (one sweep among several, a test's server).
    pub fn child(&self) -> Shutdown {
        Shutdown {
            drain: self.drain.child_token(),
            now: self.now.child_token(),
        }
    }

    /// Turns SIGINT (Ctrl-C) and SIGTERM into this signal: the first asks for a drain, the second
    /// for "now". `first` is printed to stderr at the first (what is being finished, and that a
    /// second press stops at once); nothing is printed when it is empty. Listens from the moment it
    /// is called, so a signal sent right after (a test that reads an address and stops the process)
    /// is not lost. Ends when "now" is asked for, by a signal or otherwise.
    pub fn listen_for_signals(&self, first: &'static str) -> tokio::task::JoinHandle<()> {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).ok();
        let mut int = signal(SignalKind::interrupt()).ok();
        let me = self.clone();
        tokio::spawn(async move {
            let mut presses = 0;
            loop {
                let got = tokio::select! {
                    s = recv(&mut int) => s,
                    s = recv(&mut term) => s,
                    _ = me.stopping_now() => return,
                };
                if !got {
                    return;
                }
                presses += 1;
                if presses == 1 {
                    if !first.is_empty() {
                        eprintln!("\n{first}");
                    }
                    me.drain();
                } else {
                    me.now();
                    return;
                }
            }
        })
    }
}

/// The next delivery of a signal; pending for ever when it could not be listened for.
async fn recv(s: &mut Option<tokio::signal::unix::Signal>) -> bool {
    match s {
        Some(s) => s.recv().await.is_some(),
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn now_implies_drain_and_children_follow_their_parent() {
        let s = Shutdown::new();
        let child = s.child();
        assert!(!child.is_draining());
        s.drain();
        child.draining().await;
        assert!(!child.is_stopping_now());
        s.now();
        child.stopping_now().await;
        assert!(s.is_draining() && s.is_stopping_now());
    }

    #[tokio::test]
    async fn a_child_stops_alone() {
        let s = Shutdown::new();
        let child = s.child();
        child.now();
        assert!(child.is_stopping_now());
        assert!(!s.is_draining());
    }
}
