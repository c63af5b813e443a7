//! The seat hub: where a game's moves for people wait (the game's side is
//! [`SeatDesk`](sleuth_game::agent::SeatDesk)), and what the seat page reads and answers.
//!
//! A move is written to the run's store before it is shown, and a reply before it is handed to the
//! game, so the store always knows at least what the person was told. In memory the hub keeps only
//! the moves open now (each with the one-shot channel its agent waits on) and each seat's latest
//! view: what it holds does not grow while a person thinks, however long, and an idle game is a few
//! parked futures. The page waits on a version number that every change bumps (a `watch` channel),
//! so a long-poll costs nothing until something happens.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

use futures::future::{ready, BoxFuture, FutureExt};
use serde_json::Value;
use tokio::sync::{oneshot, watch};

use sleuth_game::agent::{Move, MoveAnswer, SeatDesk, SeatError};
use sleuth_store::seats::SeatBook;

/// (character, move key, attempt).
type MoveId = (String, String, u32);

/// Why a reply was not taken.
#[derive(Debug, thiserror::Error)]
pub enum ReplyError {
    #[error("this move is no longer open (answered already, or the game moved on)")]
    NotOpen,
    #[error("the reply could not be saved: {0}")]
    Store(#[from] sleuth_store::StoreError),
}

/// One game's seats: the store and the moves open now.
pub struct SeatHub {
    game: String,
    book: Arc<SeatBook>,
    state: Mutex<Open>,
    changed: watch::Sender<u64>,
}

/// What is open now.
#[derive(Default)]
struct Open {
    /// The moves waiting for a reply, in the order asked (`seq`), with the channel their agent waits
    /// on.
    moves: BTreeMap<MoveId, (u64, Move, oneshot::Sender<MoveAnswer>)>,
    /// Each seat's view as last shown with a move.
    shown: BTreeMap<String, Value>,
    /// Each seat's language (`en`, `zh`: its script's), as its moves say: the page's own words.
    langs: BTreeMap<String, &'static str>,
    seq: u64,
    /// The game is over: nothing more will be asked.
    finished: bool,
    /// The seats whose page has been told that the game is over.
    told_over: BTreeSet<String>,
}

impl SeatHub {
    pub fn new(game: &str, book: Arc<SeatBook>) -> Arc<SeatHub> {
        Arc::new(SeatHub {
            game: game.to_string(),
            book,
            state: Mutex::default(),
            changed: watch::Sender::new(0),
        })
    }

    pub fn game(&self) -> &str {
        &self.game
    }

    pub fn book(&self) -> &SeatBook {
        &self.book
    }

    fn state(&self) -> MutexGuard<'_, Open> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn bump(&self) {
        self.changed.send_modify(|v| *v += 1);
    }

    /// A receiver of the hub's version, to wait for the next change.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// The game is over (or failed): the page stops waiting; open moves are dropped, which ends
    /// whatever still waits on them.
    pub fn finish(&self) {
        let mut st = self.state();
        st.finished = true;
        st.moves.clear();
        drop(st);
        self.bump();
    }

    /// `character`'s page has been answered that the game is over.
    pub fn told_over(&self, character: &str) {
        self.state().told_over.insert(character.to_string());
    }

    /// Whether every one of `characters`' pages has been told that the game is over: until then,
    /// the command that serves them waits a little before it stops the server.
    pub fn all_told_over(&self, characters: &[String]) -> bool {
        let st = self.state();
        characters.iter().all(|c| st.told_over.contains(c))
    }

    /// `character`'s open moves (oldest first), its latest view, and whether the game is over.
    pub fn snapshot(&self, character: &str) -> (Vec<Move>, Option<Value>, bool) {
        let st = self.state();
        let mut moves: Vec<(u64, Move)> = st
            .moves
            .iter()
            .filter(|((who, _, _), _)| who == character)
            .map(|(_, (seq, m, _))| (*seq, m.clone()))
            .collect();
        moves.sort_by_key(|(seq, _)| *seq);
        let moves = moves.into_iter().map(|(_, m)| m).collect();
        (moves, st.shown.get(character).cloned(), st.finished)
    }

    /// Sets `character`'s language before any move is posted (the opener knows the game's), so a page
    /// opened early speaks it from the start; the moves then agree.
    pub fn set_language(&self, character: &str, lang: &'static str) {
        self.state().langs.insert(character.to_string(), lang);
    }

    /// `character`'s language (`en`, `zh`): set when the seat was opened, or learned from its first
    /// move (the game tells the seat with each).
    pub fn language(&self, character: &str) -> Option<&'static str> {
        self.state().langs.get(character).copied()
    }

    /// The person's reply to an open move: saved, then handed to the agent waiting on it.
    pub fn reply(
        &self,
        character: &str,
        key: &str,
        attempt: u32,
        answer: MoveAnswer,
    ) -> Result<(), ReplyError> {
        let id = (character.to_string(), key.to_string(), attempt);
        let mut st = self.state();
        if !st.moves.contains_key(&id) {
            return Err(ReplyError::NotOpen);
        }
        let stored = serde_json::to_value(&answer).unwrap_or(Value::Null);
        if !self
            .book
            .answer((&self.game, character), (key, attempt), &stored)?
        {
            st.moves.remove(&id);
            return Err(ReplyError::NotOpen);
        }
        if let Some((_, _, tx)) = st.moves.remove(&id) {
            // The agent may be gone (the game failed meanwhile): the reply is stored all the same.
            let _ = tx.send(answer);
        }
        drop(st);
        self.bump();
        Ok(())
    }

    /// Posts a move: the stored reply if the person gave one before (a restarted game), else a
    /// future of the reply to come.
    fn post(&self, m: Move) -> Result<Option<MoveAnswer>, SeatError> {
        let shown = m.shown.clone();
        let mut request = serde_json::to_value(&m).map_err(|e| SeatError(e.to_string()))?;
        if let Some(o) = request.as_object_mut() {
            o.remove("shown");
        }
        let stored = self
            .book
            .post((&self.game, &m.seat), (&m.key, m.attempt), &request, &shown)
            .map_err(|e| SeatError(e.to_string()))?;
        match stored {
            None => Ok(None),
            Some(v) => serde_json::from_value(v)
                .map(Some)
                .map_err(|e| SeatError(format!("a stored reply does not read back: {e}"))),
        }
    }
}

impl SeatDesk for SeatHub {
    fn ask(&self, m: Move) -> BoxFuture<'static, Result<MoveAnswer, SeatError>> {
        // Learnt even from a move answered from the store: a restarted game's page speaks the
        // script's language from its first replayed move on.
        let lang = m.lang.code();
        self.state().langs.entry(m.seat.clone()).or_insert(lang);
        match self.post(m.clone()) {
            Err(e) => return ready(Err(e)).boxed(),
            Ok(Some(answer)) => return ready(Ok(answer)).boxed(),
            Ok(None) => {}
        }
        let (tx, rx) = oneshot::channel();
        let mut st = self.state();
        if st.finished {
            return ready(Err(SeatError("the game's seats are closed".into()))).boxed();
        }
        st.seq += 1;
        let seq = st.seq;
        st.shown.insert(m.seat.clone(), m.shown.clone());
        let id = (m.seat.clone(), m.key.clone(), m.attempt);
        // The view is kept once per seat (above), not once per open move.
        let m = Move {
            shown: Value::Null,
            ..m
        };
        st.moves.insert(id, (seq, m, tx));
        drop(st);
        self.bump();
        async move {
            rx.await
                .map_err(|_| SeatError("the seat was closed before the person answered".into()))
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use sleuth_game::agent::MoveKind;

    fn vote(attempt: u32) -> Move {
        Move {
            seat: "Ann".into(),
            key: "move/0".into(),
            attempt,
            kind: MoveKind::Vote,
            prompt: "Who did it?".into(),
            choices: vec!["Bo".into(), "Cy".into()],
            letters: Vec::new(),
            multiple: false,
            picks: None,
            clues: Vec::new(),
            scale: None,
            refused: None,
            shown: json!({"name": "Ann", "seen": []}),
            lang: Default::default(),
        }
    }

    #[tokio::test]
    async fn a_move_waits_for_its_reply_and_a_new_hub_reads_it_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("sleuth.db");
        let book = Arc::new(SeatBook::open(&db).expect("store"));
        book.open_seat("g", "Ann", "pat", "tok").expect("seat");
        let hub = SeatHub::new("g", Arc::clone(&book));
        let version = *hub.subscribe().borrow();
        assert_eq!(hub.language("Ann"), None, "not known before a move");
        let waiting = hub.ask(vote(0));
        assert_eq!(hub.language("Ann"), Some("en"));
        let (open, shown, finished) = hub.snapshot("Ann");
        assert_eq!(open.len(), 1);
        assert!(open[0].shown.is_null(), "the view is kept once per seat");
        assert_eq!(shown.expect("view")["name"], "Ann");
        assert!(!finished && *hub.subscribe().borrow() > version);
        assert!(
            hub.snapshot("Bo").0.is_empty(),
            "one seat's moves are its own"
        );
        assert!(matches!(
            hub.reply("Ann", "move/0", 1, MoveAnswer::default()),
            Err(ReplyError::NotOpen)
        ));
        let answer = MoveAnswer {
            target: Some("Cy".into()),
            ..MoveAnswer::default()
        };
        hub.reply("Ann", "move/0", 0, answer.clone())
            .expect("taken");
        assert_eq!(waiting.await.expect("reply"), answer);
        assert!(hub.snapshot("Ann").0.is_empty());
        assert!(matches!(
            hub.reply("Ann", "move/0", 0, answer.clone()),
            Err(ReplyError::NotOpen)
        ));
        let again = SeatHub::new("g", Arc::new(SeatBook::open(&db).expect("reopen")));
        assert_eq!(again.ask(vote(0)).await.expect("from the store"), answer);
        let closed = again.ask(vote(1));
        again.finish();
        assert!(closed.await.is_err(), "a finished hub ends what waits");
    }
}
