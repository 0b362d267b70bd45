//! When counting runs: every `INKLINK_STATS_INTERVAL`, and in larger turns with short rests
//! while a burst waits.

use super::tally::{BATCH, Counted, Counter, burst_turn, quiet_turn};
use crate::metrics::Metrics;
use chrono_tz::Tz;
use sea_orm::{DatabaseConnection, DbBackend};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

/// The rest after a turn of a burst. On SQLite, while this server's click writer has clicks
/// to store, a quarter of the turn's length, and at least [`MIN_REST`], so that the writer gets
/// the write lock in between; once it has stored everything, [`MIN_REST`] (a writer of another
/// process on the file, the CLI, polls for the lock every 100 ms at most), and resting longer
/// only kept the burst off the dashboards a fifth longer (bench/README.md). When no click
/// came in either while the turn ran (after a burst), that least rest is counted from the
/// turn's commit: a turn worked out ahead spends longer than it after its commit working out
/// the next one, without the lock, and resting anyway took a tenth of each turn while a burst
/// was counted (bench/README.md). PostgreSQL and MySQL let the writer store while counting
/// runs, and a longer rest there only keeps a burst longer off the dashboard.
fn burst_rest(backend: DbBackend, turn: Duration, clicks: Clicks) -> Duration {
    match (backend, clicks) {
        (DbBackend::Sqlite, Clicks::Storing) => (turn / 4).max(MIN_REST),
        (DbBackend::Sqlite, Clicks::Quiet { since_commit }) => {
            MIN_REST.saturating_sub(since_commit)
        }
        _ => MIN_REST,
    }
}

/// What the click path did while a counting turn ran.
#[derive(Clone, Copy)]
enum Clicks {
    /// The writer has clicks to store.
    Storing,
    /// It has stored them all, but clicks came in.
    Coming,
    /// None came in; the turn committed this long ago.
    Quiet { since_commit: Duration },
}
const MIN_REST: Duration = Duration::from_millis(100);

/// Whether a turn that counted `counted` leaves counting in a burst.
/// On PostgreSQL and MySQL a turn that found more than a quiet second's batch is (the writer
/// stores the burst as counting goes; falling back to a second's pause and a small turn kept
/// a burst a second or two longer off the dashboard). On SQLite only a full turn is: a short
/// one means the writer, waiting for the write lock, is behind, and a second's pause lets it
/// store (staying in the burst there showed a burst 5.0–5.5 s late instead of 4.2).
fn in_burst(backend: DbBackend, counted: Counted) -> bool {
    match backend {
        DbBackend::Sqlite => counted.full,
        _ => counted.clicks >= BATCH,
    }
}

/// The statistics of the tables counting reads and writes, refreshed (PostgreSQL only).
async fn refresh_statistics(db: &DatabaseConnection) {
    let refreshed = async {
        crate::clickstore::refresh_statistics(db).await?;
        super::tally::refresh_statistics(db).await
    };
    if let Err(err) = refreshed.await {
        tracing::warn!(error = %err, "cannot refresh the database's statistics of the click tables");
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
/// waiting costs one indexed look); the first count is `every` after the start. The clicks
/// counted are added to `metrics` as each turn commits.
pub async fn run_schedule(db: DatabaseConnection, tz: Tz, every: Duration, metrics: &Metrics) {
    let backend = db.get_database_backend();
    let mut limit = BATCH;
    let mut pause = every;
    let mut refresh = crate::db::sql::Refresh::new();
    let mut counter = Counter::default();
    loop {
        tokio::time::sleep(pause).await;
        pause = every;
        match crate::clickstore::waiting::any_waiting(&db).await {
            Ok(false) => {}
            Ok(true) => {
                let started = std::time::Instant::now();
                let queued = metrics.events_queued.get();
                let turn = counter.turn(&db, tz, limit).await;
                if let Ok(counted) = &turn {
                    tracing::debug!(
                        clicks = counted.clicks,
                        link_days = counted.link_days,
                        held_ms = counted.held.as_millis() as u64,
                        limit,
                        "counting turn"
                    );
                    metrics.events_counted.fetch_add(counted.clicks, Relaxed);
                    if refresh.due(counted.clicks) {
                        refresh_statistics(&db).await;
                    }
                }
                match turn {
                    // A burst: count on in larger turns, with a short rest after each (see
                    // `burst_rest`).
                    Ok(counted) if in_burst(backend, counted) => {
                        let clicks = if metrics.clicks_unstored() > 0 {
                            Clicks::Storing
                        } else if let Some(at) = counted.committed
                            && metrics.events_queued.get() == queued
                        {
                            Clicks::Quiet {
                                since_commit: at.elapsed(),
                            }
                        } else {
                            Clicks::Coming
                        };
                        pause = burst_rest(backend, started.elapsed(), clicks);
                        limit = burst_turn(backend, counted);
                    }
                    Ok(counted) => limit = quiet_turn(backend, counted),
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
    fn sqlite_rests_longer_only_while_the_writer_has_clicks_to_store() {
        let turn = Duration::from_secs(2);
        assert_eq!(
            burst_rest(DbBackend::Sqlite, turn, Clicks::Storing),
            Duration::from_millis(500)
        );
        assert_eq!(
            burst_rest(DbBackend::Sqlite, turn, Clicks::Coming),
            MIN_REST
        );
        let short = Duration::from_millis(40);
        assert_eq!(
            burst_rest(DbBackend::Sqlite, short, Clicks::Storing),
            MIN_REST
        );
        assert_eq!(
            burst_rest(DbBackend::Postgres, turn, Clicks::Storing),
            MIN_REST
        );
        assert_eq!(
            burst_rest(DbBackend::MySql, turn, Clicks::Storing),
            MIN_REST
        );
    }

    #[test]
    fn once_no_click_comes_sqlite_leaves_the_lock_free_for_the_least_rest_from_the_commit() {
        let turn = Duration::from_secs(1);
        let quiet = |ms| Clicks::Quiet {
            since_commit: Duration::from_millis(ms),
        };
        let rest = |clicks| burst_rest(DbBackend::Sqlite, turn, clicks);
        assert_eq!(rest(quiet(30)), Duration::from_millis(70));
        assert_eq!(rest(quiet(1_000)), Duration::ZERO);
        assert_eq!(
            burst_rest(DbBackend::Postgres, turn, quiet(1_000)),
            MIN_REST
        );
    }
}
