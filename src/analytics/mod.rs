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
pub mod capture;
pub mod days;
pub mod daysets;
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
pub mod tally;
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
    schedule: JoinHandle<()>,
    retention: Option<JoinHandle<()>>,
}

impl Analytics {
    /// Starts the writer and the statistics schedule on the current runtime. `port` names
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
        let shared_db = db.clone();
        let retention_db = db.clone();
        let database_url = settings.database_url.clone();
        let writer_config = writer::WriterConfig {
            memory_limit: settings.click_buffer as usize,
            shutdown_grace: Duration::from_secs(10),
            rejected: settings
                .spool_dir
                .join(format!("inklink-rejected-{port}.jsonl")),
        };
        let writer_metrics = metrics.clone();
        let (stop, stopped) = oneshot::channel();
        let writer = tokio::spawn(async move {
            let db = crate::db::click_writer_connection(&shared_db, &database_url).await;
            writer::Writer::new(db, enricher, writer_metrics, spool, writer_config)
                .with_journal(journal, leftover)
                .run(queue, stopped)
                .await
        });
        let schedule = tokio::spawn(tally::run_schedule(
            db,
            settings.timezone,
            Duration::from_secs(settings.stats_interval),
        ));
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
            schedule,
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
        self.schedule.abort();
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
