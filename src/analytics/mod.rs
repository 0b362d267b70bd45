//! Click analytics: capture on the redirect path, enrichment and batched writing in the
//! background, daily aggregation, and the reports that dashboards read.
//!
//! The flow: `capture` builds a [`ClickEvent`] and hands it to the [`queue::ClickSink`]
//! (never waiting); the `writer` task enriches events (`enrich`, `geoip`) into
//! [`event::EventRow`]s and inserts them in batches, keeping them in memory and then in the
//! `spool` while the database is away; `aggregate` turns a day of events into
//! `visit_statistics` rows; `report` reads those for dashboards and the API.

pub mod agent;
pub mod aggregate;
mod background;
pub mod capture;
pub mod days;
pub mod daysets;
pub mod dictionary;
pub mod enrich;
pub mod event;
pub mod geoip;
pub mod insert;
pub mod journal;
pub mod kept;
pub mod metrics;
pub mod queue;
pub mod report;
pub mod retention;
pub mod spool;
pub mod stored;
pub mod tally;
pub mod upgrade;
pub mod visits;
pub mod writer;

pub use event::{ClickEvent, Outcome};

use crate::config::Settings;
use metrics::Metrics;
use queue::ClickSink;
use sea_orm::DatabaseConnection;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The running pipeline of one server: the sink handlers record into, the writer and the
/// statistics schedule behind it.
pub struct Analytics {
    sink: ClickSink,
    metrics: Arc<Metrics>,
    stop: Mutex<Option<oneshot::Sender<()>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    counting: Counting,
    retention: Option<JoinHandle<()>>,
}

impl Analytics {
    /// Starts the writer on the current runtime and the statistics schedule on a thread of
    /// its own (see [`Counting`]). `port` names
    /// this instance's spool file, so that a restart on the same port finds it again.
    pub fn start(
        settings: &Settings,
        db: DatabaseConnection,
        visitor_key: [u8; 16],
        port: u16,
    ) -> std::io::Result<Self> {
        let metrics = Arc::new(Metrics::default());
        let mut instance = [0u8; 8];
        getrandom::fill(&mut instance).map_err(std::io::Error::other)?;
        let instance = u64::from_le_bytes(instance);
        // Read before this process journals anything: all there is belongs to a dead one.
        let leftover = journal::leftover(&settings.spool_dir, port)?;
        let journal = Arc::new(journal::Journal::new(&settings.spool_dir, port, instance));
        let (sink, queue) = queue::channel(
            settings.click_queue as usize,
            metrics.clone(),
            journal.clone(),
            settings.unknown_visits_per_day,
        );
        let spool = spool::Spool::open(
            &settings
                .spool_dir
                .join(format!("inklink-spool-{port}.jsonl")),
        )?;
        let geo = geoip::GeoIp::open(settings.geoip_db.as_deref(), &settings.geoip_lang);
        let enricher = enrich::Enricher::new(geo, visitor_key, instance)
            .keep_networks_only(settings.keep_addresses == crate::config::KeepAddresses::Network);
        let storer = writer::Storer::start(db.clone(), settings.database_url.clone(), enricher)?;
        let retention_db = db.clone();
        let writer_config = writer::WriterConfig {
            memory_limit: settings.click_buffer as usize,
            shutdown_grace: Duration::from_secs(10),
            rejected: settings
                .spool_dir
                .join(format!("inklink-rejected-{port}.jsonl")),
        };
        let writer_metrics = metrics.clone();
        let (stop, stopped) = oneshot::channel();
        let writer = tokio::spawn(
            writer::Writer::new(storer, writer_metrics, spool, writer_config)
                .with_journal(journal, leftover)
                .run(queue, stopped),
        );
        let counting = Counting::start(
            db,
            settings.database_url.clone(),
            settings.timezone,
            Duration::from_secs(settings.stats_interval),
        )?;
        let retention = settings.event_retention_days.map(|days| {
            tokio::spawn(retention::run_retention(
                retention_db,
                settings.timezone,
                days,
            ))
        });
        Ok(Self {
            sink,
            metrics,
            stop: Mutex::new(Some(stop)),
            writer: Mutex::new(Some(writer)),
            counting,
            retention,
        })
    }

    pub fn sink(&self) -> &ClickSink {
        &self.sink
    }

    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Call after the server stopped accepting requests: writes every queued click (or spools
    /// it when the database is away) and returns when that is done.
    pub async fn shutdown(&self) {
        self.counting.stop().await;
        if let Some(retention) = &self.retention {
            retention.abort();
        }
        if let Some(stop) = self.stop.lock().expect("stop").take() {
            let _ = stop.send(());
        }
        let writer = self.writer.lock().expect("writer").take();
        if let Some(writer) = writer
            && let Err(err) = writer.await
        {
            tracing::error!(error = %err, "the click writer failed");
        }
    }
}

/// The statistics schedule, on a thread of lower priority with a runtime and a database
/// connection of its own (see `background`): SQLite's connection worker threads, where
/// counting spends most of its time, are started from that thread and inherit its priority.
struct Counting {
    stop: Mutex<Option<oneshot::Sender<()>>>,
    done: Mutex<Option<oneshot::Receiver<()>>>,
}

impl Counting {
    fn start(
        db: DatabaseConnection,
        url: String,
        tz: chrono_tz::Tz,
        every: Duration,
    ) -> std::io::Result<Self> {
        let (stop, stopped) = oneshot::channel::<()>();
        let (finished, done) = oneshot::channel();
        let (ready, started) = std::sync::mpsc::channel();
        background::spawn("inklink-count", move || async move {
            tokio::select! {
                () = count(db, &url, tz, every, ready) => {}
                _ = stopped => {}
            }
            let _ = finished.send(());
        })?;
        // The server starts once counting has connected and caught up (the recount after an
        // upgrade must not run over clicks of the new start); a database that is not there
        // yet does not hold the start up for long.
        if started.recv_timeout(Duration::from_secs(30)).is_err() {
            tracing::warn!(
                "counting statistics is still connecting or recounting after an upgrade; the server starts meanwhile"
            );
        }
        Ok(Self {
            stop: Mutex::new(Some(stop)),
            done: Mutex::new(Some(done)),
        })
    }

    /// Ends the schedule (a turn under way is rolled back, as at a crash) and waits a moment
    /// for the thread to let go of its connection.
    async fn stop(&self) {
        if let Some(stop) = self.stop.lock().expect("stop").take() {
            let _ = stop.send(());
        }
        let done = self.done.lock().expect("done").take();
        if let Some(done) = done {
            let _ = tokio::time::timeout(Duration::from_secs(5), done).await;
        }
    }
}

impl Drop for Counting {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.lock().expect("stop").take() {
            let _ = stop.send(());
        }
    }
}

/// The schedule on a connection of the counting thread's own (see
/// [`crate::db::own_connection`]).
async fn count(
    shared: DatabaseConnection,
    url: &str,
    tz: chrono_tz::Tz,
    every: Duration,
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
    tally::catch_up(&db, tz).await;
    let _ = ready.send(());
    tally::run_schedule(db, tz, every).await
}
