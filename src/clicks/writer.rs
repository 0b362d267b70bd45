//! The background writer: takes clicks off the queue and has them enriched and inserted in
//! batches (one transaction per batch) by its [`storer`], on a thread of lower priority.
//! While the database is away or behind it keeps them, first in memory, then in the spool
//! file, and has them written in order once it can. At shutdown it drains the queue before
//! the process exits.

mod storer;

use super::event::ClickEvent;
use super::journal::{Journal, Leftover, RECOVERED};
use super::spool::{Spool, Spooled};
use crate::clickstore::row::EventRow;
use crate::metrics::Metrics;
use sea_orm::DbErr;
use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

pub use crate::clickstore::insert::{BATCH, ClickStore};
use storer::Inserted;
pub use storer::Storer;
const RETRY_AFTER: Duration = Duration::from_secs(1);
/// How long a partial batch waits for more events.
const LINGER: Duration = Duration::from_millis(20);
/// While clicks keep coming, the writer collects them on this tick instead of being woken
/// for each one: a wake-up costs the sending worker a system call and the writer a context
/// switch, which at tens of thousands of clicks a second is more than the insert itself.
const DRAIN_TICK: Duration = Duration::from_millis(5);
/// How often a journal generation is closed, so that its files can go once it is stored.
const JOURNAL_CHECKPOINT: Duration = Duration::from_secs(1);

pub struct WriterConfig {
    /// Events held in memory while the database is away, before the spool takes over.
    pub memory_limit: usize,
    /// How long shutdown keeps trying to reach the database before spooling what is left.
    pub shutdown_grace: Duration,
    /// Where events the database refuses are kept (`inklink-rejected-<port>.jsonl`).
    pub rejected: PathBuf,
}

pub struct Writer {
    storer: Storer,
    metrics: Arc<Metrics>,
    /// Clicks not yet written, oldest first (as taken; enriched only where an insert failed);
    /// the spool continues it when full.
    memory: VecDeque<Spooled>,
    /// When the oldest event in `memory` arrived: a partial batch waits `LINGER` for more.
    memory_since: Option<Instant>,
    spool: Spool,
    /// The batch being inserted while the writer goes on taking events off the queue.
    in_flight: Option<InFlight>,
    config: WriterConfig,
    /// After a failed insert, nothing is tried before this.
    retry_at: Option<Instant>,
    outage_logged: bool,
    journal: Option<Arc<Journal>>,
    /// Journal generations not yet deleted: how many events each has (once closed) and how
    /// many of them are stored or spooled.
    generations: BTreeMap<u32, Generation>,
    /// The journals of a crashed process, deleted once what they held is stored.
    recovered: Vec<PathBuf>,
    /// Events were lost here (spool unwritable, insert task failed): the journals stay at
    /// shutdown, so that the next start writes them.
    keep_journal: bool,
}

#[derive(Default)]
struct Generation {
    total: Option<u64>,
    done: u64,
}

struct InFlight {
    /// Where the rows came from: the spool offset just past them, or memory.
    spool_offset: Option<u64>,
    count: usize,
    answer: oneshot::Receiver<Inserted>,
}

impl Writer {
    pub fn new(storer: Storer, metrics: Arc<Metrics>, spool: Spool, config: WriterConfig) -> Self {
        metrics.events_backlog.store(spool.pending(), Relaxed);
        Self {
            storer,
            metrics,
            memory: VecDeque::new(),
            memory_since: None,
            spool,
            in_flight: None,
            config,
            retry_at: None,
            outage_logged: false,
            journal: None,
            generations: BTreeMap::new(),
            recovered: Vec::new(),
            keep_journal: false,
        }
    }

    /// Keeps the journal's generations until their events are stored, after writing what
    /// a crashed process left in its journals.
    pub fn with_journal(mut self, journal: Arc<Journal>, leftover: Leftover) -> Self {
        self.journal = Some(journal);
        if !leftover.events.is_empty() {
            self.generations.insert(
                RECOVERED,
                Generation {
                    total: Some(leftover.events.len() as u64),
                    done: 0,
                },
            );
            let mut events = leftover.events;
            self.accept(&mut events);
        }
        self.recovered = leftover.files;
        self.release();
        self
    }

    /// Counts clicks as stored or spooled (or lost for good), by their journal generations.
    fn done(&mut self, generations: impl Iterator<Item = u32>) {
        if self.journal.is_none() {
            return;
        }
        for generation in generations {
            self.generations.entry(generation).or_default().done += 1;
        }
        self.release();
    }

    /// Deletes the journals of the generations whose every event is stored or spooled.
    fn release(&mut self) {
        let Some(journal) = &self.journal else {
            return;
        };
        let complete: Vec<u32> = self
            .generations
            .iter()
            .filter(|(generation, counts)| {
                counts
                    .total
                    .is_some_and(|total| counts.done + journal.dropped(**generation) >= total)
            })
            .map(|(generation, _)| *generation)
            .collect();
        // Their clicks that went to the spool go to disk before the journal that holds them
        // too is deleted.
        if !complete.is_empty() && !sync_spool(&mut self.spool) {
            return;
        }
        for generation in complete {
            self.generations.remove(&generation);
            if generation == RECOVERED {
                for path in self.recovered.drain(..) {
                    if let Err(err) = std::fs::remove_file(&path) {
                        tracing::warn!(error = %err, path = %path.display(), "cannot remove a replayed click journal");
                    }
                }
            } else {
                journal.remove_generation(generation);
            }
        }
        if self.recovered.is_empty() || self.generations.contains_key(&RECOVERED) {
            return;
        }
        // Journals that held nothing readable.
        for path in self.recovered.drain(..) {
            let _ = std::fs::remove_file(&path);
        }
    }

    fn checkpoint(&mut self) {
        // Once a second at most, whether or not a journal is deleted now.
        sync_spool(&mut self.spool);
        let Some(journal) = &self.journal else {
            return;
        };
        if let Some((generation, total)) = journal.close_generation() {
            self.generations.entry(generation).or_default().total = Some(total);
            self.release();
        }
    }

    /// Runs until `stop` fires (or every sender is gone), then drains and returns. Taking
    /// events off the queue never waits for the database: while a batch is being inserted,
    /// new events gather in memory (and beyond `memory_limit`, in the spool).
    pub async fn run(
        mut self,
        mut queue: mpsc::Receiver<ClickEvent>,
        mut stop: oneshot::Receiver<()>,
    ) {
        let mut events = Vec::with_capacity(BATCH);
        let mut checkpoint = tokio::time::interval(JOURNAL_CHECKPOINT);
        // Set while clicks are arriving: the next time the queue is drained without a wake-up.
        let mut drain_at: Option<Instant> = None;
        loop {
            self.start_insert(false);
            let wake = self.next_attempt();
            tokio::select! {
                received = queue.recv_many(&mut events, BATCH), if drain_at.is_none() => {
                    if received == 0 {
                        break;
                    }
                    self.accept(&mut events);
                    drain_at = Some(Instant::now() + DRAIN_TICK);
                }
                _ = sleep_until(drain_at), if drain_at.is_some() => {
                    let closed = drain(&mut queue, &mut events);
                    // A quiet tick returns to waiting for the next click.
                    drain_at = (!events.is_empty()).then(|| Instant::now() + DRAIN_TICK);
                    self.accept(&mut events);
                    if closed {
                        break;
                    }
                }
                done = in_flight(&mut self.in_flight) => self.inserted(done),
                _ = &mut stop => break,
                _ = sleep_until(wake), if wake.is_some() => {}
                _ = checkpoint.tick() => self.checkpoint(),
            }
        }
        self.finish(queue).await;
    }

    async fn finish(mut self, mut queue: mpsc::Receiver<ClickEvent>) {
        queue.close();
        let mut events = Vec::with_capacity(BATCH);
        while queue.recv_many(&mut events, BATCH).await > 0 {
            self.accept(&mut events);
        }
        let deadline = Instant::now() + self.config.shutdown_grace;
        loop {
            if self.in_flight.is_some() {
                let done = in_flight(&mut self.in_flight).await;
                self.inserted(done);
                continue;
            }
            if self.backlog() == 0 || Instant::now() >= deadline {
                break;
            }
            if let Some(at) = self.retry_at.filter(|at| *at > Instant::now()) {
                tokio::time::sleep_until(at.min(deadline).into()).await;
                continue;
            }
            self.start_insert(true);
        }
        if !self.memory.is_empty() {
            let rows: Vec<Spooled> = self.memory.drain(..).collect();
            match self.spool.prepend(&rows) {
                Ok(()) => {
                    self.metrics
                        .events_spooled
                        .fetch_add(rows.len() as u64, Relaxed);
                }
                Err(err) => {
                    tracing::error!(error = %err, events = rows.len(), "cannot spool click events at shutdown: they stay in the click journal for the next start");
                    self.keep_journal = true;
                }
            }
        }
        if !sync_spool(&mut self.spool) {
            self.keep_journal = true;
        }
        // Everything is stored or spooled: nothing is left to replay.
        if let Some(journal) = self.journal.as_ref().filter(|_| !self.keep_journal) {
            journal.remove_all();
            for path in self.recovered.drain(..) {
                let _ = std::fs::remove_file(&path);
            }
        }
        self.update_backlog();
        if self.spool.pending() > 0 {
            tracing::warn!(path = %self.spool.path().display(), events = self.spool.pending(), "click events not written before shutdown (the database was unreachable or behind) stay in the spool and are written at the next start");
        }
        tracing::info!(
            written = self.metrics.events_written.load(Relaxed),
            "click writer stopped"
        );
    }

    /// Queues clicks behind everything not yet written, as they were taken: in memory while
    /// there is room and nothing is spooled, else at the end of the spool.
    fn accept(&mut self, events: &mut Vec<ClickEvent>) {
        if events.is_empty() {
            return;
        }
        if self.spool.pending() == 0 && self.memory.len() + events.len() <= self.config.memory_limit
        {
            self.memory_since.get_or_insert_with(Instant::now);
            self.memory.extend(events.drain(..).map(Spooled::Click));
            return self.update_backlog();
        }
        let count = events.len() as u64;
        match self.spool.append_clicks(events) {
            Ok(()) => {
                self.metrics.events_spooled.fetch_add(count, Relaxed);
                self.done(events.iter().map(|event| event.generation));
            }
            Err(err) => {
                tracing::error!(error = %err, path = %self.spool.path().display(), events = count, "cannot spool click events: they are written from the journal at the next start");
                self.metrics.events_dropped.fetch_add(count, Relaxed);
                self.keep_journal = true;
            }
        }
        events.clear();
        self.update_backlog();
    }

    fn backlog(&self) -> u64 {
        self.memory.len() as u64 + self.spool.pending()
    }

    /// When the loop should look again without news: a retry falling due, or a partial
    /// batch that has waited long enough.
    fn next_attempt(&self) -> Option<Instant> {
        if self.in_flight.is_some() {
            return None;
        }
        if let Some(at) = self.retry_at {
            return Some(at);
        }
        if self.spool.pending() > 0 {
            return Some(Instant::now());
        }
        self.memory_since.map(|since| since + LINGER)
    }

    /// Starts inserting the oldest batch, if one is due: a full batch, anything from the
    /// spool, or a partial batch that has lingered (or at once, when `now`).
    fn start_insert(&mut self, now: bool) {
        if self.in_flight.is_some() || self.retry_at.is_some_and(|at| at > Instant::now()) {
            return;
        }
        let (rows, spool_offset) = if !self.memory.is_empty() {
            let lingered = self
                .memory_since
                .is_some_and(|since| since.elapsed() >= LINGER);
            if !(now || lingered || self.memory.len() >= BATCH) {
                return;
            }
            let take = self.memory.len().min(BATCH);
            let rows: Vec<Spooled> = self.memory.drain(..take).collect();
            self.memory_since = (!self.memory.is_empty()).then(Instant::now);
            (rows, None)
        } else if self.spool.pending() > 0 {
            match self.spool.peek(BATCH) {
                Ok((rows, offset)) => (rows, Some(offset)),
                Err(err) => {
                    tracing::error!(error = %err, path = %self.spool.path().display(), "cannot read the spool");
                    self.retry_at = Some(Instant::now() + RETRY_AFTER);
                    return;
                }
            }
        } else {
            return;
        };
        let count = rows.len();
        self.in_flight = Some(InFlight {
            spool_offset,
            count,
            answer: self.storer.store(rows),
        });
        self.update_backlog();
    }

    fn inserted(&mut self, (spool_offset, count, joined): Finished) {
        let (rows, result, took) = match joined {
            Ok(done) => done,
            Err(_) => {
                // The storing thread failed on the batch. Rows from the spool stay there and
                // are tried again after a pause; rows from memory went with it, and stay in
                // the journal until a restart replays them (their generation never completes).
                self.retry_at = Some(Instant::now() + RETRY_AFTER);
                if spool_offset.is_some() {
                    tracing::error!(
                        events = count,
                        "a batch of clicks from the spool could not be stored (the storing thread failed): it is tried again"
                    );
                    return self.update_backlog();
                }
                tracing::error!(
                    events = count,
                    "a batch of clicks could not be stored (the storing thread failed): its events are written at the next start"
                );
                self.metrics.events_dropped.fetch_add(count as u64, Relaxed);
                self.keep_journal = true;
                return self.update_backlog();
            }
        };
        match result {
            Ok(refused) => {
                self.metrics.batch_latency.observe(took);
                self.metrics
                    .events_written
                    .fetch_add((rows.len() - refused.len()) as u64, Relaxed);
                self.set_aside(&refused);
                match spool_offset {
                    Some(offset) => {
                        if let Err(err) = self.spool.consume(offset, rows.len() as u64) {
                            tracing::error!(error = %err, "cannot update the spool");
                        }
                    }
                    // Spooled rows were counted when they were spooled.
                    None => self.done(rows.iter().map(|row| row.generation)),
                }
                self.retry_at = None;
                if self.outage_logged && self.backlog() == 0 {
                    tracing::info!("the database is back: every held click event is written");
                    self.outage_logged = false;
                }
            }
            Err(err) => {
                self.outage(&err);
                // Spooled rows stay in the spool; rows from memory go back to its front.
                if spool_offset.is_none() {
                    for row in rows.iter().rev() {
                        self.memory.push_front(Spooled::Row(Box::new(row.clone())));
                    }
                    self.memory_since.get_or_insert_with(Instant::now);
                }
            }
        }
        self.update_backlog();
    }

    /// Keeps the rows the database refused in `inklink-rejected-<port>.jsonl` beside the
    /// spool (the spool's line format), so that no click is lost without a trace and the
    /// writer goes on with the rows behind them.
    fn set_aside(&mut self, refused: &[EventRow]) {
        if refused.is_empty() {
            return;
        }
        self.metrics
            .events_rejected
            .fetch_add(refused.len() as u64, Relaxed);
        let path = &self.config.rejected;
        match super::spool::append_rows(path, refused) {
            Ok(()) => {
                tracing::error!(path = %path.display(), events = refused.len(), "the database refused click events (a value it does not accept); they are kept in this file and the writer goes on")
            }
            Err(err) => {
                tracing::error!(error = %err, path = %path.display(), events = refused.len(), rows = ?refused, "the database refused click events and they cannot be kept in a file: they are lost")
            }
        }
    }

    fn outage(&mut self, err: &DbErr) {
        if !self.outage_logged {
            tracing::warn!(error = %err, "cannot write click events; keeping them until the database is back");
            self.outage_logged = true;
        }
        self.retry_at = Some(Instant::now() + RETRY_AFTER);
    }

    fn update_backlog(&self) {
        let in_memory_flight = self
            .in_flight
            .as_ref()
            .filter(|flight| flight.spool_offset.is_none())
            .map_or(0, |flight| flight.count as u64);
        self.metrics
            .events_backlog
            .store(self.backlog() + in_memory_flight, Relaxed);
    }
}

/// (spool offset, rows, outcome) of a finished insert.
type Finished = (
    Option<u64>,
    usize,
    Result<Inserted, oneshot::error::RecvError>,
);

/// Waits for the batch in flight; never finishes when there is none (for `select!`).
async fn in_flight(slot: &mut Option<InFlight>) -> Finished {
    let Some(flight) = slot.as_mut() else {
        return std::future::pending().await;
    };
    let joined = (&mut flight.answer).await;
    let flight = slot.take().expect("a batch in flight");
    (flight.spool_offset, flight.count, joined)
}

/// Puts the clicks spooled since the last sync on disk; false (logged) when that failed.
fn sync_spool(spool: &mut Spool) -> bool {
    match spool.sync() {
        Ok(()) => true,
        Err(err) => {
            tracing::error!(error = %err, path = %spool.path().display(), "cannot sync the click spool; the click journal is kept until it can be");
            false
        }
    }
}

/// Takes what the queue holds without waiting (and without asking to be woken); true when
/// every sender is gone and the queue is empty.
fn drain(queue: &mut mpsc::Receiver<ClickEvent>, events: &mut Vec<ClickEvent>) -> bool {
    loop {
        match queue.try_recv() {
            Ok(event) => events.push(event),
            Err(mpsc::error::TryRecvError::Empty) => return false,
            Err(mpsc::error::TryRecvError::Disconnected) => return true,
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    if let Some(at) = at {
        tokio::time::sleep_until(at.into()).await;
    }
}
