//! The hand-off between the redirect path and the writer: a bounded queue that the handler
//! fills with `try_send`, so a slow database can cost clicks (counted) but never latency.
//! Each click is journaled first, so that one whose redirect was answered outlives a crash.

use super::event::ClickEvent;
use super::journal::Journal;
use super::metrics::Metrics;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use tokio::sync::mpsc;

#[derive(Clone)]
pub struct ClickSink {
    sender: mpsc::Sender<ClickEvent>,
    metrics: Arc<Metrics>,
    journal: Arc<Journal>,
}

pub fn channel(
    capacity: usize,
    metrics: Arc<Metrics>,
    journal: Arc<Journal>,
) -> (ClickSink, mpsc::Receiver<ClickEvent>) {
    let (sender, receiver) = mpsc::channel(capacity);
    let sink = ClickSink {
        sender,
        metrics,
        journal,
    };
    (sink, receiver)
}

impl ClickSink {
    pub fn record(&self, mut event: ClickEvent) {
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
