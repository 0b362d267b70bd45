//! Statistics: what is counted and how it is read. `tally` counts each stored click once into
//! the daily rows (`dimension`: what a breakdown is), `numbers` gives visitors and addresses
//! their numbers, `daysets` keeps the sets of them behind distinct counts, `kept` the finished
//! days' bitmaps for ranges, `dayvalues` a link's day's breakdown values in one row, `report`
//! reads them for dashboards, exports and the API, and `retention` purges raw clicks without
//! changing a figure. Clicks are read and purged through the click store
//! (`crate::clickstore`); ingest is not known here.

pub mod days;
pub mod daysets;
pub mod dayvalues;
pub mod dimension;
pub mod frozen;
pub mod funnel;
pub mod kept;
pub mod recount;
pub mod report;
pub mod retention;
pub mod schedule;
pub mod tally;
pub mod visits;

use crate::config::Settings;
use crate::metrics::Metrics;
use sea_orm::DatabaseConnection;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

/// The statistics of one server: counting on its schedule, and the retention of raw clicks
/// when configured.
pub struct Statistics {
    counting: Counting,
    retention: Option<JoinHandle<()>>,
}

impl Statistics {
    /// Starts counting on a thread of its own (see [`Counting`]) and, with
    /// `INKLINK_EVENT_RETENTION_DAYS`, the hourly purge on the current runtime. What the
    /// schedule counts is added to `metrics`.
    pub fn start(
        settings: &Settings,
        db: DatabaseConnection,
        metrics: Arc<Metrics>,
    ) -> std::io::Result<Self> {
        let counting = Counting::start(
            db.clone(),
            settings.database_url.clone(),
            settings.timezone,
            Duration::from_secs(settings.stats_interval),
            metrics,
        )?;
        let retention = settings
            .event_retention_days
            .map(|days| tokio::spawn(retention::run_retention(db, settings.timezone, days)));
        Ok(Self {
            counting,
            retention,
        })
    }

    /// Ends counting (a turn under way is rolled back, as at a crash) and the purge.
    pub async fn stop(&self) {
        self.counting.stop().await;
        if let Some(retention) = &self.retention {
            retention.abort();
        }
    }
}

/// The statistics schedule, on a thread of lower priority with a runtime and a database
/// connection of its own (see `background`): SQLite's connection worker threads, where
/// counting spends most of its time, are started from that thread and inherit its priority.
struct Counting(crate::background::Stoppable);

impl Counting {
    fn start(
        db: DatabaseConnection,
        url: String,
        tz: chrono_tz::Tz,
        every: Duration,
        metrics: Arc<Metrics>,
    ) -> std::io::Result<Self> {
        let (ready, started) = std::sync::mpsc::channel();
        let work = crate::background::start(
            "inklink-count",
            crate::background::Priority::Lower,
            move || async move {
                count(db, &url, tz, every, metrics, ready).await;
            },
        )?;
        // The server starts once counting has connected and caught up (the recount after an
        // upgrade must not run over clicks of the new start); a database that is not there
        // yet does not hold the start up for long.
        if started.recv_timeout(Duration::from_secs(30)).is_err() {
            tracing::warn!(
                "counting statistics is still connecting or recounting after an upgrade; the server starts meanwhile"
            );
        }
        Ok(Self(work))
    }

    /// Ends the schedule (a turn under way is rolled back, as at a crash) and waits a moment
    /// for the thread to let go of its connection.
    async fn stop(&self) {
        self.0.stop().await;
    }
}

/// The schedule on a connection of the counting thread's own (see
/// [`crate::db::own_connection`]).
async fn count(
    shared: DatabaseConnection,
    url: &str,
    tz: chrono_tz::Tz,
    every: Duration,
    metrics: Arc<Metrics>,
    ready: std::sync::mpsc::Sender<()>,
) {
    let db = loop {
        match crate::db::own_connection(&shared, url, 2).await {
            Ok(own) => break own,
            Err(err) => {
                tracing::warn!(error = %err, "cannot connect for counting statistics; will retry");
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
        }
    };
    drop(shared);
    schedule::catch_up(&db, tz).await;
    let _ = ready.send(());
    schedule::run_schedule(db, tz, every, &metrics).await
}
