//! A semaphore fair between groups: the concurrency limit of a model (`limits.rs`, `adaptive.rs`).
//!
//! Written here because no well-kept crate offers a semaphore that is fair *between groups*: tokio's
//! semaphore is first-come-first-served, so an arm with 900 games in flight would take 90 % of a
//! model's slots from an arm with 100. Waiters queue per arm, and a released slot goes to the next arm
//! in turn (round robin), so each arm that wants a slot gets an equal share whatever its number of
//! games. Its number of slots can change while it is in use: the adaptive limit moves it with what
//! the endpoint shows.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

/// A counting semaphore whose waiters are served round robin by group (see the module
/// documentation), and whose number of slots can change while it is in use (the adaptive limit).
#[derive(Clone)]
pub struct FairSemaphore {
    inner: Arc<Mutex<FairState>>,
}

struct FairState {
    /// Slots in all; lowering it below `in_use` takes effect as slots come back.
    limit: usize,
    in_use: usize,
    /// Group → its waiters in arrival order.
    queues: BTreeMap<Arc<str>, VecDeque<oneshot::Sender<Permit>>>,
    /// The group served last; the next slot goes to the first group after it.
    last: Option<Arc<str>>,
}

/// One slot of a [`FairSemaphore`]; dropping it hands the slot on.
pub struct Permit {
    sem: Option<Arc<Mutex<FairState>>>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(sem) = self.sem.take() {
            if let Ok(mut st) = sem.lock() {
                st.in_use = st.in_use.saturating_sub(1);
                dispatch(&sem, &mut st);
            }
        }
    }
}

/// Hands free slots to waiting groups in turn while there are both.
fn dispatch(sem: &Arc<Mutex<FairState>>, st: &mut FairState) {
    while st.in_use < st.limit {
        let next = {
            let after = st.last.clone();
            let first = st.queues.keys().next().cloned();
            match after {
                Some(a) => st
                    .queues
                    .range::<str, _>((std::ops::Bound::Excluded(&*a), std::ops::Bound::Unbounded))
                    .next()
                    .map(|(k, _)| k.clone())
                    .or(first),
                None => first,
            }
        };
        let Some(group) = next else { return };
        let waiter = st.queues.get_mut(&group).and_then(VecDeque::pop_front);
        if st.queues.get(&group).is_some_and(VecDeque::is_empty) {
            st.queues.remove(&group);
        }
        st.last = Some(group);
        if let Some(tx) = waiter {
            st.in_use += 1;
            let permit = Permit {
                sem: Some(sem.clone()),
            };
            if let Err(mut p) = tx.send(permit) {
                // The waiter gave up. The permit came back inside the error: forget it without
                // running its drop (which would take this lock again) and try the next waiter.
                p.sem = None;
                st.in_use -= 1;
            }
        }
    }
}

impl FairSemaphore {
    pub fn new(permits: usize) -> FairSemaphore {
        FairSemaphore {
            inner: Arc::new(Mutex::new(FairState {
                limit: permits,
                in_use: 0,
                queues: BTreeMap::new(),
                last: None,
            })),
        }
    }

    /// A slot for `group`, waiting for its turn when none is free.
    pub async fn acquire(&self, group: &str) -> Permit {
        let rx = {
            let Ok(mut st) = self.inner.lock() else {
                // A poisoned lock means a thread panicked inside it; without limits the run goes on.
                return Permit { sem: None };
            };
            if st.in_use < st.limit && st.queues.is_empty() {
                st.in_use += 1;
                return Permit {
                    sem: Some(self.inner.clone()),
                };
            }
            let (tx, rx) = oneshot::channel();
            st.queues.entry(Arc::from(group)).or_default().push_back(tx);
            rx
        };
        // A slot is always sent before its sender is dropped, unless the semaphore itself is gone.
        rx.await.unwrap_or(Permit { sem: None })
    }

    /// Changes the number of slots: more wake waiters at once; fewer take effect as slots come back
    /// (a call in flight is never cut short).
    pub fn set_limit(&self, permits: usize) {
        if let Ok(mut st) = self.inner.lock() {
            st.limit = permits;
            dispatch(&self.inner, &mut st);
        }
    }

    /// Slots free now (for tests and status).
    pub fn available(&self) -> usize {
        self.inner
            .lock()
            .map(|s| s.limit.saturating_sub(s.in_use))
            .unwrap_or(0)
    }

    /// Calls waiting for a slot now.
    pub fn waiting(&self) -> usize {
        self.inner
            .lock()
            .map(|s| s.queues.values().map(VecDeque::len).sum())
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn slots_go_round_robin_between_groups() {
        let sem = FairSemaphore::new(1);
        let first = sem.acquire("a").await;
        // Group a queues five waiters before group b queues one: b must not wait behind all of a.
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for (i, g) in ["a", "a", "a", "a", "a", "b"].into_iter().enumerate() {
            let (sem, order) = (sem.clone(), order.clone());
            tasks.push(tokio::spawn(async move {
                let p = sem.acquire(g).await;
                order.lock().expect("lock").push(format!("{g}{i}"));
                tokio::task::yield_now().await;
                drop(p);
            }));
            tokio::task::yield_now().await;
        }
        drop(first);
        for t in tasks {
            t.await.expect("task");
        }
        let order = order.lock().expect("lock").clone();
        let b = order.iter().position(|x| x == "b5").expect("b served");
        assert!(b <= 1, "b was served at position {b}: {order:?}");
        assert_eq!(sem.available(), 1, "every slot came back");
    }

    #[tokio::test]
    async fn a_waiter_that_gives_up_does_not_keep_its_slot() {
        let sem = FairSemaphore::new(1);
        let held = sem.acquire("a").await;
        let waiting = sem.acquire("b");
        let gave_up = tokio::time::timeout(std::time::Duration::from_millis(10), waiting).await;
        assert!(gave_up.is_err());
        drop(held);
        assert_eq!(sem.available(), 1);
        let _again = sem.acquire("c").await;
        assert_eq!(sem.available(), 0);
    }
}
