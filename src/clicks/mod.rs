//! Ingest: a click from the redirect path to the click store. `capture` copies a request into
//! a [`ClickEvent`] and hands it to the [`queue::ClickSink`] (never waiting), which journals it
//! (`journal`, so that an answered click outlives a crash); the `writer` enriches events
//! (`enrich`: `geoip`, `agent`) into stored rows and hands them to the click store in batches,
//! keeping them in memory and then in the `spool` while the database is away.

pub mod agent;
pub mod capture;
pub mod carrier;
pub mod enrich;
pub mod event;
pub mod geoip;
pub mod journal;
pub mod queue;
pub mod spool;
pub mod writer;

pub use event::ClickEvent;

use crate::config::Settings;
use crate::metrics::Metrics;
use queue::ClickSink;
use sea_orm::DatabaseConnection;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The running ingest of one server: the sink handlers record into, and the writer behind it.
pub struct Ingest {
    sink: ClickSink,
    metrics: Arc<Metrics>,
    stop: Mutex<Option<oneshot::Sender<()>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
}

impl Ingest {
    /// Starts the writer on the current runtime. `port` names this instance's journal and
    /// spool files, so that a restart on the same port finds them again.
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
        let geo = geoip::GeoIp::open(settings.geoip_db.as_deref(), &settings.geoip_lang)
            .with_carriers(settings.carrier_db.as_deref());
        let enricher = enrich::Enricher::new(geo, visitor_key, instance)
            .keep_networks_only(settings.keep_addresses == crate::config::KeepAddresses::Network);
        let storer = writer::Storer::start(db.clone(), settings.database_url.clone(), enricher)?;
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
        Ok(Self {
            sink,
            metrics,
            stop: Mutex::new(Some(stop)),
            writer: Mutex::new(Some(writer)),
        })
    }

    pub fn sink(&self) -> &ClickSink {
        &self.sink
    }

    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The counters, for a task that outlives a borrow (the webhooks' dispatcher).
    pub fn shared_metrics(&self) -> Arc<Metrics> {
        self.metrics.clone()
    }

    /// Call after the server stopped accepting requests: writes every queued click (or spools
    /// it when the database is away) and returns when that is done.
    pub async fn shutdown(&self) {
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
