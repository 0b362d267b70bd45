//! The writer's costly half: enriching clicks and inserting them, one batch at a time, on a
//! thread of its own at the background priority (see `background`), with a runtime and a
//! database connection of its own.
//!
//! Why apart from the writer: the writer takes clicks off the redirects' queue, which must
//! never fill (a full queue drops clicks), so it runs beside the HTTP workers at their
//! priority. Enriching and inserting cost more than that (user-agent parsing, GeoIP, the
//! dictionaries, SQLite's own work) and can wait: on cores the redirects keep busy the kernel
//! gives them the CPU first, the writer's backlog grows, and past its memory limit it goes to
//! the spool as the clicks were taken (see `spool`); once the burst is over, this thread
//! catches up at full speed. On a machine with CPU to spare nothing waits.

use super::super::enrich::Enricher;
use super::super::spool::Spooled;
use crate::background;
use crate::clickstore::insert::ClickStore;
use crate::clickstore::row::EventRow;
use futures_util::FutureExt;
use sea_orm::{DatabaseConnection, DbErr};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// A batch that takes longer has met a stalled connection; it is retried (its event keys
/// make a late commit of the first attempt harmless).
const INSERT_TIMEOUT: Duration = Duration::from_secs(15);
/// How often the GeoIP file is looked at (one `stat`, before a batch) for a newer version.
const GEOIP_CHECK: Duration = Duration::from_secs(2);

/// The rows of a batch as enriched, and what became of them: stored but for the rows the
/// database refused (see [`insert_batch`]), or not stored; and how long the insert took.
pub type Inserted = (Arc<[EventRow]>, Result<Vec<EventRow>, DbErr>, Duration);

struct Job {
    batch: Vec<Spooled>,
    done: oneshot::Sender<Inserted>,
}

/// The handle of the storing thread; the thread ends when this is dropped.
pub struct Storer {
    jobs: mpsc::UnboundedSender<Job>,
}

impl Storer {
    /// Starts the thread. It connects to `url` on its first batch (and after a failure to
    /// connect, on the next); an in-memory SQLite database exists only in `shared`, which it
    /// then uses.
    pub fn start(
        shared: DatabaseConnection,
        url: String,
        enricher: Enricher,
    ) -> std::io::Result<Self> {
        let (jobs, queue) = mpsc::unbounded_channel();
        background::spawn("inklink-store", background::Priority::Lower, move || {
            serve(queue, shared, url, enricher)
        })?;
        Ok(Self { jobs })
    }

    /// Enriches and stores `batch`; the answer comes on the receiver (which fails if the
    /// thread is gone).
    pub fn store(&self, batch: Vec<Spooled>) -> oneshot::Receiver<Inserted> {
        let (done, answer) = oneshot::channel();
        // A thread that is gone drops the job, and with it `done`: the receiver says so.
        let _ = self.jobs.send(Job { batch, done });
        answer
    }
}

async fn serve(
    mut queue: mpsc::UnboundedReceiver<Job>,
    shared: DatabaseConnection,
    url: String,
    mut enricher: Enricher,
) {
    let store = ClickStore::new();
    let mut own: Option<DatabaseConnection> = None;
    let mut geoip_checked = Instant::now();
    while let Some(Job { batch, done }) = queue.recv().await {
        if geoip_checked.elapsed() >= GEOIP_CHECK {
            enricher.refresh_geoip();
            geoip_checked = Instant::now();
        }
        let stored = store_batch(batch, &mut enricher, &store, &mut own, &shared, &url);
        // A panic fails its batch (the writer hears `done` dropped), not every batch after it.
        match AssertUnwindSafe(stored).catch_unwind().await {
            Ok(inserted) => {
                let _ = done.send(inserted);
            }
            Err(_) => tracing::error!("storing a batch of clicks panicked"),
        }
    }
}

async fn store_batch(
    batch: Vec<Spooled>,
    enricher: &mut Enricher,
    store: &ClickStore,
    own: &mut Option<DatabaseConnection>,
    shared: &DatabaseConnection,
    url: &str,
) -> Inserted {
    let rows: Arc<[EventRow]> = batch
        .into_iter()
        .map(|held| match held {
            Spooled::Row(row) => *row,
            Spooled::Click(click) => enricher.enrich(click),
        })
        .collect();
    let started = Instant::now();
    let result = match connection(own, shared, url).await {
        Ok(db) => {
            let result = insert_batch(db, store, rows.clone()).await;
            name_places(db, enricher).await;
            result
        }
        Err(err) => Err(err),
    };
    (rows, result, started.elapsed())
}

/// Stores what the places first seen are called in the UI's languages. A failure costs only
/// the translation of a place's name (tried again with the next batch), never a click.
async fn name_places(db: &DatabaseConnection, enricher: &mut Enricher) {
    let names = enricher.take_place_names();
    if names.is_empty() {
        return;
    }
    if let Err(err) = crate::clickstore::places::remember(db, &names).await {
        tracing::warn!(error = %err, places = names.len(), "cannot store the names of places");
        enricher.give_back_place_names(names);
    }
}

/// This thread's own connection (see [`crate::db::own_connection`]), made on its first use
/// and after a failure to connect. On SQLite a connection of its own matters beyond the
/// runtime: in WAL mode a write by any other connection empties a connection's page cache, and
/// a pool hands out a different connection each time, so a writer sharing the pool would begin
/// every batch reading the table's pages afresh.
async fn connection<'a>(
    own: &'a mut Option<DatabaseConnection>,
    shared: &DatabaseConnection,
    url: &str,
) -> Result<&'a DatabaseConnection, DbErr> {
    if own.is_none() {
        *own = Some(crate::db::own_connection(shared, url, 1).await?);
    }
    Ok(own.as_ref().expect("connected"))
}

/// Inserts `rows` (within [`INSERT_TIMEOUT`]). When the database refuses a value of the batch
/// (a refusal that would repeat for ever and hold up every click behind it), the rows are
/// written one at a time and those refused are returned; any other failure fails the batch,
/// to be tried again (rows already stored are skipped by their event key).
async fn insert_batch(
    db: &DatabaseConnection,
    store: &ClickStore,
    rows: Arc<[EventRow]>,
) -> Result<Vec<EventRow>, DbErr> {
    let within = |rows: Arc<[EventRow]>| async move {
        match tokio::time::timeout(INSERT_TIMEOUT, store.insert(db, &rows)).await {
            Ok(result) => result,
            Err(_) => Err(DbErr::Custom("inserting click events timed out".into())),
        }
    };
    match within(rows.clone()).await {
        Ok(()) => return Ok(Vec::new()),
        Err(err) if !crate::db::is_refused_value(&err) => return Err(err),
        Err(err) => {
            tracing::warn!(error = %err, events = rows.len(), "the database refused a batch of click events; writing them one at a time")
        }
    }
    let mut refused = Vec::new();
    for row in rows.iter() {
        match within(Arc::from([row.clone()])).await {
            Ok(()) => {}
            Err(err) if crate::db::is_refused_value(&err) => {
                tracing::error!(error = %err, row = ?row, "the database refused a click event");
                refused.push(row.clone());
            }
            Err(err) => return Err(err),
        }
    }
    Ok(refused)
}
