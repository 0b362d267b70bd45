//! The background writer: enriches queued clicks and inserts them in batches (one multi-row
//! statement, one transaction, per batch). While the database is away it keeps them, first in
//! memory, then in the spool file, and writes them in order once it is back. At shutdown it
//! drains the queue before the process exits.

use super::enrich::Enricher;
use super::event::{ClickEvent, EventRow};
use super::metrics::Metrics;
use super::spool::Spool;
use chrono::NaiveDate;
use chrono_tz::Tz;
use sea_orm::sea_query::{OnConflict, Query};
use sea_orm::{ConnectionTrait, DatabaseConnection, DbErr, TransactionTrait};
use std::collections::{BTreeSet, VecDeque};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// Rows per insert: 1,000 rows of 23 values stays under every backend's parameter limit
/// (SQLite's 32,766 is the lowest).
pub const BATCH: usize = 1000;
/// A batch that takes longer has met a stalled connection; it is retried (its event keys
/// make a late commit of the first attempt harmless).
const INSERT_TIMEOUT: Duration = Duration::from_secs(15);
const RETRY_AFTER: Duration = Duration::from_secs(1);
/// How long a partial batch waits for more events.
const LINGER: Duration = Duration::from_millis(20);
/// How often the GeoIP file is looked at (one `stat`) for a newer version.
const GEOIP_CHECK: Duration = Duration::from_secs(2);

/// Days (in the stats time zone) that received events after they ended, for the aggregator.
pub type DirtyDays = Arc<Mutex<BTreeSet<NaiveDate>>>;

pub struct WriterConfig {
    /// Events held in memory while the database is away, before the spool takes over.
    pub memory_limit: usize,
    /// How long shutdown keeps trying to reach the database before spooling what is left.
    pub shutdown_grace: Duration,
    pub timezone: Tz,
}

pub struct Writer {
    db: DatabaseConnection,
    enricher: Enricher,
    metrics: Arc<Metrics>,
    memory: VecDeque<EventRow>,
    spool: Spool,
    dirty: DirtyDays,
    config: WriterConfig,
    /// When the backlog may be tried again; `None` while there is none.
    retry_at: Option<Instant>,
    outage_logged: bool,
}

impl Writer {
    pub fn new(
        db: DatabaseConnection,
        enricher: Enricher,
        metrics: Arc<Metrics>,
        spool: Spool,
        dirty: DirtyDays,
        config: WriterConfig,
    ) -> Self {
        let retry_at = (spool.pending() > 0).then(Instant::now);
        metrics.events_backlog.store(spool.pending(), Relaxed);
        Self {
            db,
            enricher,
            metrics,
            memory: VecDeque::new(),
            spool,
            dirty,
            config,
            retry_at,
            outage_logged: false,
        }
    }

    /// Runs until `stop` fires (or every sender is gone), then drains and returns.
    pub async fn run(
        mut self,
        mut queue: mpsc::Receiver<ClickEvent>,
        mut stop: oneshot::Receiver<()>,
    ) {
        let mut events = Vec::with_capacity(BATCH);
        let mut geoip_check = tokio::time::interval(GEOIP_CHECK);
        loop {
            let retry = self.retry_at;
            tokio::select! {
                received = queue.recv_many(&mut events, BATCH) => {
                    if received == 0 {
                        break;
                    }
                    if events.len() < BATCH {
                        // A moment for more to arrive: under load, batches fill up and one
                        // statement (prepared once) carries a thousand events.
                        tokio::time::sleep(LINGER).await;
                        while events.len() < BATCH {
                            match queue.try_recv() {
                                Ok(event) => events.push(event),
                                Err(_) => break,
                            }
                        }
                    }
                    self.accept(&mut events).await;
                }
                _ = &mut stop => break,
                _ = sleep_until(retry), if retry.is_some() => self.drain_backlog_once().await,
                _ = geoip_check.tick() => self.enricher.refresh_geoip(),
            }
        }
        self.finish(queue).await;
    }

    async fn finish(mut self, mut queue: mpsc::Receiver<ClickEvent>) {
        queue.close();
        let mut events = Vec::with_capacity(BATCH);
        while queue.recv_many(&mut events, BATCH).await > 0 {
            self.accept(&mut events).await;
        }
        let deadline = Instant::now() + self.config.shutdown_grace;
        while self.retry_at.is_some() && Instant::now() < deadline {
            sleep_until(self.retry_at.map(|at| at.min(deadline))).await;
            self.drain_backlog_once().await;
        }
        if !self.memory.is_empty() {
            let rows: Vec<EventRow> = self.memory.drain(..).collect();
            match self.spool.prepend(&rows) {
                Ok(()) => {
                    self.metrics
                        .events_spooled
                        .fetch_add(rows.len() as u64, Relaxed);
                }
                Err(err) => {
                    tracing::error!(error = %err, events = rows.len(), "cannot spool click events at shutdown: they are lost");
                    self.metrics
                        .events_dropped
                        .fetch_add(rows.len() as u64, Relaxed);
                }
            }
        }
        if self.spool.pending() > 0 {
            tracing::warn!(path = %self.spool.path().display(), events = self.spool.pending(), "the database is unreachable: click events stay in the spool and are written at the next start");
        }
        tracing::info!(
            written = self.metrics.events_written.load(Relaxed),
            "click writer stopped"
        );
    }

    async fn accept(&mut self, events: &mut Vec<ClickEvent>) {
        let rows: Vec<EventRow> = events.drain(..).map(|e| self.enricher.enrich(e)).collect();
        if self.retry_at.is_some() {
            // Older events are waiting: these go behind them, to keep the order.
            self.hold(rows);
            return;
        }
        if let Err(err) = self.store(&rows).await {
            self.outage(&err);
            self.hold(rows);
        }
    }

    async fn store(&mut self, rows: &[EventRow]) -> Result<(), DbErr> {
        let started = Instant::now();
        match tokio::time::timeout(INSERT_TIMEOUT, insert_rows(&self.db, rows)).await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => return Err(err),
            Err(_) => return Err(DbErr::Custom("inserting click events timed out".into())),
        }
        self.metrics.batch_latency.observe(started.elapsed());
        self.metrics
            .events_written
            .fetch_add(rows.len() as u64, Relaxed);
        self.mark_late_days(rows);
        Ok(())
    }

    fn outage(&mut self, err: &DbErr) {
        if !self.outage_logged {
            tracing::warn!(error = %err, "cannot write click events; keeping them until the database is back");
            self.outage_logged = true;
        }
        self.retry_at = Some(Instant::now() + RETRY_AFTER);
    }

    fn hold(&mut self, rows: Vec<EventRow>) {
        let count = rows.len() as u64;
        if self.retry_at.is_none() {
            self.retry_at = Some(Instant::now());
        }
        if self.spool.pending() == 0 && self.memory.len() + rows.len() <= self.config.memory_limit {
            self.memory.extend(rows);
        } else {
            match self.spool.append(&rows) {
                Ok(()) => {
                    self.metrics.events_spooled.fetch_add(count, Relaxed);
                }
                Err(err) => {
                    tracing::error!(error = %err, path = %self.spool.path().display(), events = count, "cannot spool click events: they are lost");
                    self.metrics.events_dropped.fetch_add(count, Relaxed);
                }
            }
        }
        self.update_backlog();
    }

    /// Writes one batch from the front of the backlog: memory first (older), then the spool.
    async fn drain_backlog_once(&mut self) {
        if !self.memory.is_empty() {
            let take = self.memory.len().min(BATCH);
            let rows: Vec<EventRow> = self.memory.range(..take).cloned().collect();
            match self.store(&rows).await {
                Ok(()) => {
                    self.memory.drain(..take);
                }
                Err(err) => return self.outage(&err),
            }
        } else if self.spool.pending() > 0 {
            let (rows, offset) = match self.spool.peek(BATCH) {
                Ok(read) => read,
                Err(err) => {
                    tracing::error!(error = %err, path = %self.spool.path().display(), "cannot read the spool");
                    self.retry_at = Some(Instant::now() + RETRY_AFTER);
                    return;
                }
            };
            if let Err(err) = self.store(&rows).await {
                return self.outage(&err);
            }
            if let Err(err) = self.spool.consume(offset, rows.len() as u64) {
                tracing::error!(error = %err, "cannot update the spool");
            }
        }
        self.update_backlog();
        if self.memory.is_empty() && self.spool.pending() == 0 {
            if self.outage_logged {
                tracing::info!("the database is back: every held click event is written");
            }
            self.retry_at = None;
            self.outage_logged = false;
        } else {
            self.retry_at = Some(Instant::now());
        }
    }

    fn update_backlog(&self) {
        self.metrics
            .events_backlog
            .store(self.memory.len() as u64 + self.spool.pending(), Relaxed);
    }

    /// Events of a day that has already ended (late after an outage, or around midnight)
    /// make that day's statistics stale.
    fn mark_late_days(&self, rows: &[EventRow]) {
        let today = crate::analytics::aggregate::today(self.config.timezone);
        let Some(today_start) = crate::analytics::aggregate::day_start(today, self.config.timezone)
        else {
            return;
        };
        let late: BTreeSet<NaiveDate> = rows
            .iter()
            .filter(|row| row.record_time < today_start)
            .map(|row| {
                crate::analytics::aggregate::local_day(row.record_time, self.config.timezone)
            })
            .collect();
        if !late.is_empty() {
            self.dirty.lock().expect("dirty days").extend(late);
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    if let Some(at) = at {
        tokio::time::sleep_until(at.into()).await;
    }
}

const COLUMNS: [&str; 22] = [
    "event_key",
    "record_time",
    "compression_code",
    "url_map_id",
    "host",
    "client_ip",
    "unique_identity",
    "user_agent",
    "referer",
    "referer_host",
    "query_string",
    "country",
    "province",
    "city",
    "browser",
    "browser_version",
    "os",
    "os_version",
    "device",
    "is_bot",
    "transform_status",
    "failure_reason",
];

/// Statement sizes: a batch is split into statements of these many rows, so that each
/// connection prepares at most four distinct statements and reuses them (SQLite spends
/// most of a small insert parsing a statement it has not seen).
const STATEMENT_ROWS: [usize; 4] = [BATCH, 100, 10, 1];

/// Inserts `rows` in one transaction; rows whose event key is already stored are skipped.
pub async fn insert_rows(db: &DatabaseConnection, rows: &[EventRow]) -> Result<(), DbErr> {
    if rows.is_empty() {
        return Ok(());
    }
    let txn = db.begin().await?;
    let mut rest = rows;
    let inserted = async {
        while !rest.is_empty() {
            let size = STATEMENT_ROWS
                .into_iter()
                .find(|size| *size <= rest.len())
                .unwrap_or(1);
            let (now, later) = rest.split_at(size);
            insert_statement(&txn, now).await?;
            rest = later;
        }
        Ok(())
    }
    .await;
    crate::db::finish(txn, inserted).await
}

async fn insert_statement(db: &impl ConnectionTrait, rows: &[EventRow]) -> Result<(), DbErr> {
    if rows.is_empty() {
        return Ok(());
    }
    let mut insert = Query::insert();
    insert
        .into_table("transform_event_record")
        .columns(COLUMNS)
        // MySQL has no DO NOTHING; this spells it as a no-op update of the key there.
        .on_conflict(
            OnConflict::column("event_key")
                .do_nothing_on(["event_key"])
                .to_owned(),
        );
    for row in rows {
        insert.values_panic([
            row.event_key.clone().into(),
            row.record_time.into(),
            row.compression_code.clone().into(),
            row.url_map_id.into(),
            row.host.clone().into(),
            row.client_ip.clone().into(),
            row.unique_identity.clone().into(),
            row.user_agent.clone().into(),
            row.referer.clone().into(),
            row.referer_host.clone().into(),
            row.query_string.clone().into(),
            row.country.clone().into(),
            row.province.clone().into(),
            row.city.clone().into(),
            row.browser.clone().into(),
            row.browser_version.clone().into(),
            row.os.clone().into(),
            row.os_version.clone().into(),
            row.device.clone().into(),
            row.is_bot.into(),
            row.transform_status.clone().into(),
            row.failure_reason.clone().into(),
        ]);
    }
    db.execute(&insert).await.map(drop)
}
