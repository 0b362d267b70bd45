//! The hand-off between the redirect path and the writer: a bounded queue that the handler
//! fills with `try_send`, so a slow database can cost clicks (counted) but never latency.
//! Each click is journaled first, so that one whose redirect was answered outlives a crash.

use super::event::ClickEvent;
use super::journal::Journal;
use crate::metrics::Metrics;
use crate::rules::Outcome;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use tokio::sync::mpsc;

#[derive(Clone)]
pub struct ClickSink {
    sender: mpsc::Sender<ClickEvent>,
    metrics: Arc<Metrics>,
    journal: Arc<Journal>,
    unknown: Arc<UnknownBudget>,
}

pub fn channel(
    capacity: usize,
    metrics: Arc<Metrics>,
    journal: Arc<Journal>,
    unknown_per_day: u32,
) -> (ClickSink, mpsc::Receiver<ClickEvent>) {
    let (sender, receiver) = mpsc::channel(capacity);
    let sink = ClickSink {
        sender,
        metrics,
        journal,
        unknown: Arc::new(UnknownBudget {
            per_day: unknown_per_day,
            used: AtomicU64::new(0),
        }),
    };
    (sink, receiver)
}

/// How many visits to unknown codes are stored per (UTC) day: the day's number in the high
/// half of `used`, the visits stored so far in the low half.
struct UnknownBudget {
    per_day: u32,
    used: AtomicU64,
}

impl UnknownBudget {
    fn take(&self, at: chrono::NaiveDateTime) -> bool {
        let day = at.and_utc().timestamp().div_euclid(86_400) as u64 & u64::from(u32::MAX);
        self.used
            .fetch_update(Relaxed, Relaxed, |used| {
                let (used_day, count) = (used >> 32, used & u64::from(u32::MAX));
                match (used_day == day, count < u64::from(self.per_day)) {
                    (false, _) if self.per_day > 0 => Some(day << 32 | 1),
                    (true, true) => Some(used + 1),
                    _ => None,
                }
            })
            .is_ok()
    }
}

impl ClickSink {
    pub fn record(&self, mut event: ClickEvent) {
        if event.outcome == Outcome::Unknown && !self.unknown.take(event.at) {
            self.metrics.unknown_not_stored.fetch_add(1, Relaxed);
            return;
        }
        self.journal.append(&mut event);
        match self.sender.try_send(event) {
            Ok(()) => self.metrics.events_queued.add(1),
            Err(err) => {
                self.metrics.events_dropped.fetch_add(1, Relaxed);
                self.journal.forget(err.into_inner().generation);
            }
        }
    }

    pub fn depth(&self) -> usize {
        self.sender.max_capacity() - self.sender.capacity()
    }

    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }
}
