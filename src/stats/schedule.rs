//! When counting runs: every `INKLINK_STATS_INTERVAL`, and in larger turns with short rests
//! while a burst waits.

use super::tally::{BATCH, Counted, tally_counted};
use chrono_tz::Tz;
use sea_orm::{DatabaseConnection, DbBackend};
use std::time::Duration;

/// Events counted per turn while more are waiting (a burst): the rows a turn writes hardly
/// grow with its clicks (a link's day, its values, its sets are written once a turn), so a
/// backlog is counted in fewer, larger turns. On SQLite a turn holds the write lock the click
/// writer needs, so its turns stay shorter.
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

/// The next turn of a burst, after one that counted `last`: as many clicks as fall on about
/// [`BURST_LINK_DAYS`] links' days at the last turn's rate, between a quiet turn's
/// [`BATCH`] and [`burst_batch`].
fn burst_turn(backend: DbBackend, last: Counted) -> u64 {
    let per_link_day = last.clicks as f64 / last.link_days.max(1) as f64;
    ((per_link_day * BURST_LINK_DAYS as f64) as u64).clamp(BATCH, burst_batch(backend))
}

/// The rest after a turn of a burst. On SQLite a quarter of the turn's length, and at least
/// [`MIN_REST`] (SQLite's busy wait polls every 100 ms at most), so that the writer gets the
/// write lock in between. PostgreSQL and MySQL let the writer store while counting runs, and
/// a longer rest there only keeps a burst longer off the dashboard (bench/README.md).
fn burst_rest(backend: DbBackend, turn: Duration) -> Duration {
    match backend {
        DbBackend::Sqlite => (turn / 4).max(MIN_REST),
        _ => MIN_REST,
    }
}
const MIN_REST: Duration = Duration::from_millis(100);

/// Whether a turn that counted `counted` clicks of its `limit` leaves counting in a burst.
/// On PostgreSQL and MySQL a turn that found more than a quiet second's batch is (the writer
/// stores the burst as counting goes; falling back to a second's pause and a small turn kept
/// a burst a second or two longer off the dashboard). On SQLite only a full turn is: a short
/// one means the writer, waiting for the write lock, is behind, and a second's pause lets it
/// store (staying in the burst there showed a burst 5.0–5.5 s late instead of 4.2).
fn in_burst(backend: DbBackend, counted: u64, limit: u64) -> bool {
    match backend {
        DbBackend::Sqlite => counted == limit,
        _ => counted >= BATCH,
    }
}

/// What a server does once before its schedule: on the first start after the upgrade to
/// counting as clicks are stored, yesterday and today are counted again.
pub async fn catch_up(db: &DatabaseConnection, tz: Tz) {
    if let Err(err) = super::recount::recount_after_upgrade(db, tz).await {
        tracing::warn!(error = %err, "cannot recount yesterday and today; statistics go on from here");
    }
}

/// Keeps the statistics current: every `every`, the clicks stored since are counted (none
/// waiting costs one indexed look); the first count is `every` after the start.
pub async fn run_schedule(db: DatabaseConnection, tz: Tz, every: Duration) {
    let backend = db.get_database_backend();
    let mut limit = BATCH;
    let mut pause = every;
    loop {
        tokio::time::sleep(pause).await;
        pause = every;
        match crate::clickstore::waiting::any_waiting(&db).await {
            Ok(false) => {}
            Ok(true) => {
                let started = std::time::Instant::now();
                match tally_counted(&db, tz, limit).await {
                    // A burst: count on in larger turns, with a short rest after each (see
                    // `burst_rest`).
                    Ok(counted) if in_burst(backend, counted.clicks, limit) => {
                        pause = burst_rest(backend, started.elapsed());
                        limit = burst_turn(backend, counted);
                    }
                    Ok(_) => limit = BATCH,
                    Err(err) => {
                        tracing::warn!(error = %err, "cannot update daily statistics; will retry")
                    }
                }
            }
            Err(err) => tracing::debug!(error = %err, "cannot look for clicks to count"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_spread_over_many_links_is_counted_in_smaller_turns() {
        let turn = |clicks, link_days| Counted { clicks, link_days };
        // Every click another link's day: turns of about 10,000 links' days.
        assert_eq!(burst_turn(DbBackend::Sqlite, turn(50_000, 50_000)), 10_000);
        assert_eq!(burst_turn(DbBackend::Sqlite, turn(20_000, 10_000)), 20_000);
        // Clicks on a few links: the whole turn.
        assert_eq!(burst_turn(DbBackend::Sqlite, turn(50_000, 1_000)), 50_000);
        assert_eq!(burst_turn(DbBackend::Postgres, turn(100_000, 30)), 100_000);
        assert_eq!(burst_turn(DbBackend::MySql, turn(100_000, 0)), 100_000);
        // Never below a quiet turn.
        assert_eq!(burst_turn(DbBackend::Sqlite, turn(10_000, 90_000)), BATCH);
    }
}
