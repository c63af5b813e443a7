//! People's seats at the table (`docs/seat.md`): a character given to a person, the moves the game
//! asked of them and their replies, in the run's `sleuth.db`, so that a game with a person survives
//! a restart — the agents replay from the model cache and the person's moves from here.
//!
//! | table | row |
//! |---|---|
//! | `seats` | (game, character) → the player's name, the SHA-256 of their token, the character's view as last shown |
//! | `seat_moves` | (game, character, move key, attempt) → the move as asked (JSON, without the view), when, the reply (JSON) and when |
//! | `seat_sessions` | SHA-256 of a browser's session secret → its seat |
//!
//! The tables are additive (created here when missing, outside the sweep's schema and its version),
//! like the annotation campaigns' (`annotations.rs`), and [`SeatBook`] is its own connection for the
//! same reasons: a game with a person may run where no sweep writes, or beside one (WAL and a busy
//! timeout). Every move and reply is committed before the call returns, so a killed process loses
//! nothing the person was told was taken. The view is kept once per seat, replaced at each move,
//! rather than per move: it holds the script and the dialogue so far, and a per-move copy would make
//! the file grow with the square of the game's length.

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use rusqlite::{params, Connection, OptionalExtension};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{backend, now};
use crate::error::StoreError;

/// The connection's settings and the seat tables, run at every open.
const SETUP: &str = "
PRAGMA busy_timeout = 5000;
PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
CREATE TABLE IF NOT EXISTS seats (game TEXT NOT NULL, character TEXT NOT NULL,
    player TEXT NOT NULL, token_sha256 TEXT NOT NULL UNIQUE, shown TEXT,
    created_at TEXT NOT NULL, PRIMARY KEY (game, character));
CREATE TABLE IF NOT EXISTS seat_moves (game TEXT NOT NULL, character TEXT NOT NULL,
    key TEXT NOT NULL, attempt INTEGER NOT NULL, request TEXT NOT NULL, asked_at TEXT NOT NULL,
    answer TEXT, answered_at TEXT, PRIMARY KEY (game, character, key, attempt));
CREATE TABLE IF NOT EXISTS seat_sessions (secret_sha256 TEXT PRIMARY KEY, game TEXT NOT NULL,
    character TEXT NOT NULL, created_at TEXT NOT NULL);
";

/// A seat: which character of which game, and who plays it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeatRow {
    pub game: String,
    pub character: String,
    pub player: String,
}

/// A move still waiting for the person's reply.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenMove {
    pub key: String,
    pub attempt: u32,
    /// The move as asked (`sleuth_game::agent::Move` without its view).
    pub request: Value,
}

/// The seat tables of a run's store: its own read-write connection, behind a mutex because a
/// connection serves one statement at a time.
pub struct SeatBook {
    conn: Mutex<Connection>,
}

/// The SHA-256 of a token or secret, hex: all the store ever holds of one.
pub fn digest(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

fn corrupt(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt {
        what: what.to_string(),
        message: e.to_string(),
    }
}

fn json(text: Option<String>, what: &str) -> Result<Option<Value>, StoreError> {
    text.map(|t| serde_json::from_str(&t).map_err(|e| corrupt(what, e)))
        .transpose()
}

impl SeatBook {
    /// Opens (creating the tables if needed) the seat tables of the store file `db`.
    pub fn open(db: &Path) -> Result<SeatBook, StoreError> {
        let open_err = |e: rusqlite::Error| StoreError::Open {
            at: db.display().to_string(),
            message: e.to_string(),
        };
        let conn = Connection::open(db).map_err(open_err)?;
        conn.execute_batch(SETUP).map_err(open_err)?;
        Ok(SeatBook { conn: conn.into() })
    }

    /// A panic while the lock was held left no transaction open, so the connection is still good.
    fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Gives `character` of `game` to `player` with `token` (only its SHA-256 is kept). A seat that
    /// exists (a restarted game) keeps its moves and gets the new player's name and token: the old
    /// link stops working.
    pub fn open_seat(
        &self,
        game: &str,
        character: &str,
        player: &str,
        token: &str,
    ) -> Result<(), StoreError> {
        self.conn()
            .execute(
                "INSERT INTO seats (game, character, player, token_sha256, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (game, character)
                 DO UPDATE SET player = excluded.player, token_sha256 = excluded.token_sha256",
                params![game, character, player, digest(token), now()],
            )
            .map_err(backend)?;
        Ok(())
    }

    /// The seat a token opens, if any.
    pub fn seat_of_token(&self, token: &str) -> Result<Option<SeatRow>, StoreError> {
        self.seat_where("token_sha256 = ?1", &digest(token))
    }

    fn seat_where(&self, cond: &str, arg: &str) -> Result<Option<SeatRow>, StoreError> {
        self.conn()
            .query_row(
                &format!("SELECT game, character, player FROM seats WHERE {cond}"),
                params![arg],
                |r| {
                    Ok(SeatRow {
                        game: r.get(0)?,
                        character: r.get(1)?,
                        player: r.get(2)?,
                    })
                },
            )
            .optional()
            .map_err(backend)
    }

    /// Records a browser's session on a seat (only the secret's SHA-256 is kept).
    pub fn start_session(&self, secret: &str, seat: &SeatRow) -> Result<(), StoreError> {
        self.conn()
            .execute(
                "INSERT OR REPLACE INTO seat_sessions (secret_sha256, game, character, created_at)
                 VALUES (?1, ?2, ?3, ?4)",
                params![digest(secret), seat.game, seat.character, now()],
            )
            .map_err(backend)?;
        Ok(())
    }

    /// The seat a session secret belongs to, if it is still given to someone.
    pub fn seat_of_session(&self, secret: &str) -> Result<Option<SeatRow>, StoreError> {
        let conn = self.conn();
        conn.query_row(
            "SELECT s.game, s.character, s.player FROM seat_sessions x
             JOIN seats s ON s.game = x.game AND s.character = x.character
             WHERE x.secret_sha256 = ?1",
            params![digest(secret)],
            |r| {
                Ok(SeatRow {
                    game: r.get(0)?,
                    character: r.get(1)?,
                    player: r.get(2)?,
                })
            },
        )
        .optional()
        .map_err(backend)
    }

    /// Records a move as asked and the character's view shown with it; returns the person's reply
    /// if they gave one already. Asking the same move again (a restarted game) keeps the record and
    /// its reply; a move of the same key and attempt that asks something else (the agents played
    /// differently this time, as a model without a cache may) replaces the record and drops the
    /// reply, which answered another question: the person is asked anew.
    pub fn post(
        &self,
        seat: (&str, &str),
        (key, attempt): (&str, u32),
        request: &Value,
        shown: &Value,
    ) -> Result<Option<Value>, StoreError> {
        let (game, character) = seat;
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(backend)?;
        tx.execute(
            "INSERT INTO seat_moves (game, character, key, attempt, request, asked_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (game, character, key, attempt)
             DO UPDATE SET request = excluded.request, asked_at = excluded.asked_at,
                 answer = NULL, answered_at = NULL
             WHERE seat_moves.request <> excluded.request",
            params![game, character, key, attempt, request.to_string(), now()],
        )
        .map_err(backend)?;
        tx.execute(
            "UPDATE seats SET shown = ?3 WHERE game = ?1 AND character = ?2",
            params![game, character, shown.to_string()],
        )
        .map_err(backend)?;
        let answer: Option<String> = tx
            .query_row(
                "SELECT answer FROM seat_moves
                 WHERE game = ?1 AND character = ?2 AND key = ?3 AND attempt = ?4",
                params![game, character, key, attempt],
                |r| r.get(0),
            )
            .map_err(backend)?;
        tx.commit().map_err(backend)?;
        json(answer, "seat move answer")
    }

    /// Records the person's reply to an open move; false when the move is not open (answered
    /// already, or never asked).
    pub fn answer(
        &self,
        seat: (&str, &str),
        (key, attempt): (&str, u32),
        answer: &Value,
    ) -> Result<bool, StoreError> {
        let n = self
            .conn()
            .execute(
                "UPDATE seat_moves SET answer = ?5, answered_at = ?6
                 WHERE game = ?1 AND character = ?2 AND key = ?3 AND attempt = ?4
                   AND answer IS NULL",
                params![seat.0, seat.1, key, attempt, answer.to_string(), now()],
            )
            .map_err(backend)?;
        Ok(n == 1)
    }

    /// The seat's moves waiting for a reply, oldest first.
    pub fn open_moves(&self, seat: (&str, &str)) -> Result<Vec<OpenMove>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT key, attempt, request FROM seat_moves
                 WHERE game = ?1 AND character = ?2 AND answer IS NULL ORDER BY rowid",
            )
            .map_err(backend)?;
        let rows = stmt
            .query_map(params![seat.0, seat.1], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, u32>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .map_err(backend)?;
        let mut out = Vec::new();
        for row in rows {
            let (key, attempt, request) = row.map_err(backend)?;
            let request = serde_json::from_str(&request).map_err(|e| corrupt("seat move", e))?;
            out.push(OpenMove {
                key,
                attempt,
                request,
            });
        }
        Ok(out)
    }

    /// Moves the seat has been asked and has answered: (asked, answered).
    pub fn counts(&self, seat: (&str, &str)) -> Result<(u64, u64), StoreError> {
        let (asked, answered): (i64, i64) = self
            .conn()
            .query_row(
                "SELECT COUNT(*), COUNT(answer) FROM seat_moves WHERE game = ?1 AND character = ?2",
                params![seat.0, seat.1],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(backend)?;
        Ok((asked.max(0) as u64, answered.max(0) as u64))
    }

    /// The character's view as last shown with a move.
    pub fn shown(&self, seat: (&str, &str)) -> Result<Option<Value>, StoreError> {
        let text: Option<Option<String>> = self
            .conn()
            .query_row(
                "SELECT shown FROM seats WHERE game = ?1 AND character = ?2",
                params![seat.0, seat.1],
                |r| r.get(0),
            )
            .optional()
            .map_err(backend)?;
        json(text.flatten(), "seat view")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn moves_and_replies_survive_a_reopen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("sleuth.db");
        let seat = ("g1", "Ann");
        {
            let book = SeatBook::open(&db).expect("open");
            book.open_seat("g1", "Ann", "pat", "tok-1").expect("seat");
            let row = book.seat_of_token("tok-1").expect("read").expect("seat");
            assert_eq!(row.player, "pat");
            assert!(book.seat_of_token("tok-2").expect("read").is_none());
            let ask = json!({"kind": "vote"});
            let posted = book.post(seat, ("move/0", 0), &ask, &json!({"name": "Ann"}));
            assert_eq!(posted.expect("post"), None);
            assert_eq!(book.open_moves(seat).expect("open").len(), 1);
            assert!(book
                .answer(seat, ("move/0", 0), &json!({"target": "Bo"}))
                .expect("answer"));
            assert!(!book
                .answer(seat, ("move/0", 0), &json!({}))
                .expect("answer once"));
            book.start_session("secret", &row).expect("session");
        }
        let book = SeatBook::open(&db).expect("reopen");
        let ask = json!({"kind": "vote"});
        let again = book
            .post(seat, ("move/0", 0), &ask, &json!({}))
            .expect("post");
        assert_eq!(again, Some(json!({"target": "Bo"})));
        assert!(book.open_moves(seat).expect("open").is_empty());
        assert_eq!(book.counts(seat).expect("counts"), (1, 1));
        let other = book.post(seat, ("move/0", 0), &json!({"kind": "ask"}), &json!({}));
        assert_eq!(other.expect("post"), None, "a different move is asked anew");
        assert_eq!(book.counts(seat).expect("counts"), (1, 0));
        assert_eq!(
            book.seat_of_session("secret").expect("s").map(|s| s.player),
            Some("pat".into())
        );
        book.open_seat("g1", "Ann", "pat", "tok-3")
            .expect("new link");
        assert!(
            book.seat_of_token("tok-1").expect("read").is_none(),
            "the old link is closed"
        );
    }
}
