//! The hand-off between the redirect path and the writer: a bounded queue that the handler
//! fills with `try_send`, so a slow database can cost clicks (counted) but never latency.

use super::event::ClickEvent;
use super::metrics::Metrics;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use tokio::sync::mpsc;

#[derive(Clone)]
pub struct ClickSink {
    sender: mpsc::Sender<ClickEvent>,
    metrics: Arc<Metrics>,
}

pub fn channel(capacity: usize, metrics: Arc<Metrics>) -> (ClickSink, mpsc::Receiver<ClickEvent>) {
    let (sender, receiver) = mpsc::channel(capacity);
    (ClickSink { sender, metrics }, receiver)
}

impl ClickSink {
    pub fn record(&self, event: ClickEvent) {
        match self.sender.try_send(event) {
            Ok(()) => self.metrics.events_queued.add(1),
            Err(_) => {
                self.metrics.events_dropped.fetch_add(1, Relaxed);
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
