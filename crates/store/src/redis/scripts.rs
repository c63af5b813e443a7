//! The Lua scripts behind every write that touches more than one key (see "Atomicity" in the
//! module documentation of [`super`]).

use std::sync::LazyLock;

use ::redis::Script;

/// The ledger's append, shared by `cache_put` and `record_calls` (a script cannot call another, so
/// both include this text). Each entry is pushed to its run's list, its run joins the sweep's
/// ledger runs, and its group's running totals grow, all in the calling script's one step. An
/// entry with a name (the 9th argument) is recorded only if its run's set of names did not hold it
/// yet: a write whose answer was lost is made again by the gateway or the ledger's writer, and must
/// not count the call twice.
macro_rules! ledger_lua {
    () => {
        "
local function record(P, from)
  for i = from, #ARGV, 9 do
    local run, sweep, group, id = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 8]
    if id == '' or redis.call('SADD', P .. 'run-ledger-ids:' .. run, id) == 1 then
      redis.call('RPUSH', P .. 'run-ledger:' .. run, ARGV[i + 7])
      redis.call('SADD', P .. 'sweep-ledger-runs:' .. sweep, run)
      local t = P .. 'sweep-totals:' .. sweep
      redis.call('HINCRBY', t, 'calls:' .. group, 1)
      redis.call('HINCRBY', t, 'prompt_tokens:' .. group, ARGV[i + 3])
      redis.call('HINCRBY', t, 'completion_tokens:' .. group, ARGV[i + 4])
      redis.call('HINCRBY', t, 'cached_tokens:' .. group, ARGV[i + 5])
      redis.call('HINCRBYFLOAT', t, 'cost_usd:' .. group, ARGV[i + 6])
    end
  end
end
"
    };
}

/// KEYS[1] = the sweep; ARGV = prefix, id, then the record's fields and values. Writes the sweep only
/// if it is new; returns it as stored.
pub(super) static OPEN_SWEEP: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "
local key = KEYS[1]
if redis.call('EXISTS', key) == 0 then
  redis.call('HSET', key, unpack(ARGV, 3))
  redis.call('SADD', ARGV[1] .. 'sweeps', ARGV[2])
end
return redis.call('HGETALL', key)
",
    )
});

/// KEYS[1] = the sweep; ARGV = prefix, status, has note (`1`/`0`), note.
pub(super) static SET_SWEEP_STATUS: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "
local key = KEYS[1]
if redis.call('EXISTS', key) == 1 then
  redis.call('HSET', key, 'status', ARGV[2])
  if ARGV[3] == '1' then
    redis.call('HSET', key, 'note', ARGV[4])
  else
    redis.call('HDEL', key, 'note')
  end
end
return 0
",
    )
});

/// KEYS[1] = the run; ARGV = prefix, id, sweep, then fields and values. Replaces a run of the same id
/// (as SQLite's `INSERT OR REPLACE` does), moving it to the end of its sweep's runs.
pub(super) static START_RUN: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "
local P, id, sweep = ARGV[1], ARGV[2], ARGV[3]
local key = KEYS[1]
local old = redis.call('HGET', key, 'sweep')
if old then
  redis.call('ZREM', P .. 'sweep-runs:' .. old, id)
end
redis.call('DEL', key)
local seq = redis.call('INCR', P .. 'seq')
redis.call('HSET', key, 'seq', seq, unpack(ARGV, 4))
redis.call('ZADD', P .. 'sweep-runs:' .. sweep, seq, id)
return 0
",
    )
});

/// KEYS[1] = the run; ARGV = prefix, ended_at, outcome.
pub(super) static END_RUN: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HSET', KEYS[1], 'ended_at', ARGV[2], 'outcome', ARGV[3])
end
return 0
",
    )
});

/// KEYS[1] = the first game's sweep's game index; ARGV = prefix, now, then 8 per game: id, sweep,
/// arm, arm_label, script, repeat, seed, spec. Adds the games not there yet as pending; returns how
/// many were new.
pub(super) static ADD_GAMES: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "
local P, now = ARGV[1], ARGV[2]
local added = 0
for i = 3, #ARGV, 8 do
  local id, sweep = ARGV[i], ARGV[i + 1]
  local key = P .. 'game:' .. id
  if redis.call('EXISTS', key) == 0 then
    local seq = redis.call('INCR', P .. 'seq')
    redis.call('HSET', key, 'id', id, 'seq', seq, 'sweep', sweep, 'arm', ARGV[i + 2],
      'arm_label', ARGV[i + 3], 'script', ARGV[i + 4], 'repeat', ARGV[i + 5], 'seed', ARGV[i + 6],
      'spec', ARGV[i + 7], 'state', 'pending', 'attempts', 0, 'crashes', 0, 'updated_at', now)
    redis.call('ZADD', P .. 'sweep-games:' .. sweep, seq, id)
    redis.call('SADD', P .. 'sweep-state:pending:' .. sweep, id)
    added = added + 1
  end
end
return added
",
    )
});

/// KEYS[1] = the game; ARGV = prefix, id, state, now, counts an attempt (`1`/`0`), has reason,
/// reason, has stage, stage. Nothing happens to a missing game or a done one.
pub(super) static SET_GAME_STATE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "
local P, id, new = ARGV[1], ARGV[2], ARGV[3]
local g = KEYS[1]
local cur = redis.call('HGET', g, 'state')
if (not cur) or cur == 'done' then
  return 0
end
local sweep = redis.call('HGET', g, 'sweep')
if cur ~= new then
  redis.call('SREM', P .. 'sweep-state:' .. cur .. ':' .. sweep, id)
  redis.call('SADD', P .. 'sweep-state:' .. new .. ':' .. sweep, id)
end
redis.call('HSET', g, 'state', new, 'updated_at', ARGV[4])
if ARGV[5] == '1' then
  redis.call('HINCRBY', g, 'attempts', 1)
end
if ARGV[6] == '1' then
  redis.call('HSET', g, 'reason', ARGV[7])
else
  redis.call('HDEL', g, 'reason')
end
if ARGV[8] == '1' then
  redis.call('HSET', g, 'stage', ARGV[9])
else
  redis.call('HDEL', g, 'stage')
end
return 1
",
    )
});

/// KEYS[1] = the game; ARGV = prefix. The new crash count, or -1 for a missing game.
pub(super) static COUNT_CRASH: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
return redis.call('HINCRBY', KEYS[1], 'crashes', 1)
",
    )
});

/// KEYS[1] = the result; ARGV = prefix, game, result, now. The first result of a game is kept; the
/// game (if the store has it) is done either way. Returns 1 if this call wrote the result.
pub(super) static PUT_RESULT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "
local P, id, now = ARGV[1], ARGV[2], ARGV[4]
local inserted = redis.call('HSETNX', KEYS[1], 'result', ARGV[3])
if inserted == 1 then
  redis.call('HSET', KEYS[1], 'written_at', now)
  if ARGV[5] then
    redis.call('HSET', KEYS[1], 'transcript', ARGV[5])
  end
end
local g = P .. 'game:' .. id
local cur = redis.call('HGET', g, 'state')
if cur then
  if cur ~= 'done' then
    local sweep = redis.call('HGET', g, 'sweep')
    redis.call('SREM', P .. 'sweep-state:' .. cur .. ':' .. sweep, id)
    redis.call('SADD', P .. 'sweep-state:done:' .. sweep, id)
  end
  redis.call('HSET', g, 'state', 'done', 'updated_at', now)
  redis.call('HDEL', g, 'reason', 'stage')
end
return inserted
",
    )
});

/// KEYS[1] = the cache entry; ARGV = prefix, kind, model, value, now, then the ledger's 9 per entry.
/// The first value of a key stays; the entries are recorded either way.
pub(super) static CACHE_PUT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        ledger_lua!(),
        "
local P = ARGV[1]
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], 'kind', ARGV[2], 'model', ARGV[3], 'value', ARGV[4],
    'created_at', ARGV[5])
  redis.call('INCR', P .. 'cache-count')
end
record(P, 6)
return 0
"
    ))
});

/// KEYS[1] = the first entry's run's ledger; ARGV = prefix, then the ledger's 9 per entry.
pub(super) static RECORD_CALLS: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        ledger_lua!(),
        "
record(ARGV[1], 2)
return 0
"
    ))
});
