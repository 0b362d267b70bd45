//! How many clicks a counting turn takes: more while a backlog waits, fewer when they fall on
//! many links' days, and on SQLite no more than hold its write lock about a second.

use super::{BATCH, Counted};
use sea_orm::DbBackend;
use std::time::Duration;

/// Events counted per turn while more are waiting (a burst, a rebuild): the rows a turn writes
/// hardly grow with its clicks (a link's day, its values, its sets are written once a turn),
/// so a backlog is counted in fewer, larger turns. On SQLite a turn holds the write lock the
/// click writer needs, so its turns stay shorter.
fn burst_batch(backend: DbBackend) -> u64 {
    match backend {
        DbBackend::Sqlite => 50_000,
        _ => 100_000,
    }
}

/// Links' days a turn of a burst may touch, about: with clicks spread over many links (every
/// click another link's day), a turn of 50,000 held 120 MB or more while it worked them out
/// (bench/README.md, "Where the memory goes"), for no gain, as each link's day is written for
/// few clicks anyway. Clicks on fewer links than this keep the whole turn.
const BURST_LINK_DAYS: u64 = 10_000;

/// How long a turn may hold SQLite's write lock, about: the click writer and the webhooks'
/// hand-over wait that long to write. Under a load that keeps both cores busy, a turn of
/// 10,000 clicks over 100,000 links held it 1–9 s (counting runs at the background's
/// priority), and both gave up after SQLite's busy timeout (bench/README.md).
const SQLITE_HOLD: Duration = Duration::from_secs(1);

/// The smallest turn on SQLite, however slowly the last one went: each turn also rewrites
/// the day's rows for all links, and turns of 1,000 delivered a webhook burst later.
const SQLITE_MIN_TURN: u64 = 2_000;

/// The next turn of a burst, after one that counted `last`: as many clicks as fall on about
/// [`BURST_LINK_DAYS`] links' days at the last turn's rate, between a quiet turn's [`BATCH`]
/// and [`burst_batch`]. Over 1,000 links, turns of 50,000 instead of 10,000 cost counting
/// 15.9 µs of CPU a click instead of 37.3 on SQLite (bench/README.md). On SQLite, also no
/// more than would hold the write lock for [`SQLITE_HOLD`] at the last turn's pace (and then
/// as few as [`SQLITE_MIN_TURN`]).
pub fn burst_turn(backend: DbBackend, last: Counted) -> u64 {
    let per_link_day = last.clicks as f64 / last.link_days.max(1) as f64;
    let by_link_days = per_link_day * BURST_LINK_DAYS as f64;
    match backend {
        DbBackend::Sqlite => {
            let pace = last.clicks as f64 / last.held.as_secs_f64().max(0.001);
            let by_time = pace * SQLITE_HOLD.as_secs_f64();
            (by_link_days.min(by_time) as u64).clamp(SQLITE_MIN_TURN, burst_batch(backend))
        }
        _ => (by_link_days as u64).clamp(BATCH, burst_batch(backend)),
    }
}

/// The next turn after one that counted `last` and found no more waiting: a quiet turn's
/// [`BATCH`], or on SQLite less, when the last held the write lock longer than [`SQLITE_HOLD`]
/// (a burst's first turns, while the cores are busy).
pub fn quiet_turn(backend: DbBackend, last: Counted) -> u64 {
    match backend {
        DbBackend::Sqlite if last.held > SQLITE_HOLD => burst_turn(backend, last).min(BATCH),
        _ => BATCH,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_spread_over_many_links_is_counted_in_smaller_turns() {
        // Turns that held the lock for a tenth of a second.
        let turn = |clicks, link_days| Counted {
            clicks,
            link_days,
            held: Duration::from_millis(100),
            full: true,
            committed: None,
        };
        // Every click another link's day: turns of about 10,000 links' days.
        assert_eq!(burst_turn(DbBackend::Sqlite, turn(50_000, 50_000)), 10_000);
        assert_eq!(burst_turn(DbBackend::Sqlite, turn(20_000, 10_000)), 20_000);
        // Clicks on a few links: the whole turn.
        assert_eq!(burst_turn(DbBackend::Sqlite, turn(50_000, 1_000)), 50_000);
        assert_eq!(burst_turn(DbBackend::Postgres, turn(100_000, 30)), 100_000);
        assert_eq!(burst_turn(DbBackend::MySql, turn(100_000, 0)), 100_000);
        // Never below a quiet turn, on PostgreSQL and MySQL.
        assert_eq!(burst_turn(DbBackend::Postgres, turn(10_000, 90_000)), BATCH);
        assert_eq!(burst_turn(DbBackend::MySql, turn(10_000, 90_000)), BATCH);
    }

    #[test]
    fn a_turn_that_held_sqlites_write_lock_long_makes_the_next_smaller() {
        let turn = |clicks, millis| Counted {
            clicks,
            link_days: clicks / 10,
            held: Duration::from_millis(millis),
            full: true,
            committed: None,
        };
        // 10,000 clicks in 4 s: the next turn holds the lock about a second.
        assert_eq!(burst_turn(DbBackend::Sqlite, turn(10_000, 4_000)), 2_500);
        // Slower still: no smaller than SQLITE_MIN_TURN.
        assert_eq!(
            burst_turn(DbBackend::Sqlite, turn(10_000, 60_000)),
            SQLITE_MIN_TURN
        );
        // Quick turns grow again, up to the link-days' bound.
        assert_eq!(burst_turn(DbBackend::Sqlite, turn(2_500, 100)), 25_000);
        assert_eq!(burst_turn(DbBackend::Sqlite, turn(2_500, 10)), 50_000);
        // After a turn that found no more waiting: a quiet turn, unless it held the lock long.
        assert_eq!(quiet_turn(DbBackend::Sqlite, turn(9_000, 9_000)), 2_000);
        assert_eq!(quiet_turn(DbBackend::Sqlite, turn(9_000, 900)), BATCH);
        assert_eq!(quiet_turn(DbBackend::Postgres, turn(9_000, 9_000)), BATCH);
        // PostgreSQL and MySQL lock rows: how long a turn took does not matter.
        assert_eq!(
            burst_turn(DbBackend::Postgres, turn(10_000, 60_000)),
            100_000
        );
        assert_eq!(burst_turn(DbBackend::MySql, turn(10_000, 60_000)), 100_000);
    }
}
