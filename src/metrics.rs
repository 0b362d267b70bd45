//! Counters for `/metrics` (Prometheus text format). The redirect path pays an increment,
//! never a lock, and not even a shared cache line: see [`Counter`].

use crate::rules::Outcome;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

/// More than the threads that count at the same time (the HTTP workers, one per core, and the
/// writer); threads past that share stripes, which stays correct, only slower.
pub const STRIPES: usize = 16;

/// A counter split into one atomic per thread, each on its own cache line. One shared atomic
/// bumped by every worker on every redirect makes that line travel between the cores for each
/// request; a redirect bumps several. Reading sums the stripes.
pub struct Counter([Stripe; STRIPES]);

/// Two cache lines: adjacent-line prefetching pairs them on x86.
#[derive(Default)]
#[repr(align(128))]
struct Stripe(AtomicU64);

impl Default for Counter {
    fn default() -> Self {
        Self(std::array::from_fn(|_| Stripe::default()))
    }
}

impl Counter {
    pub fn add(&self, n: u64) {
        self.0[stripe()].0.fetch_add(n, Relaxed);
    }

    pub fn get(&self) -> u64 {
        self.0.iter().map(|stripe| stripe.0.load(Relaxed)).sum()
    }
}

/// This thread's stripe, given out in turn as threads first count.
pub fn stripe() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static STRIPE: usize = NEXT.fetch_add(1, Relaxed) % STRIPES;
    }
    STRIPE.with(|stripe| *stripe)
}

/// Upper bounds in seconds, as Prometheus histograms list them.
const BUCKETS: [f64; 14] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

#[derive(Default)]
pub struct Histogram {
    buckets: [Counter; BUCKETS.len()],
    count: Counter,
    sum_nanos: Counter,
}

impl Histogram {
    pub fn observe(&self, took: Duration) {
        let seconds = took.as_secs_f64();
        if let Some(i) = BUCKETS.iter().position(|bound| seconds <= *bound) {
            self.buckets[i].add(1);
        }
        self.count.add(1);
        self.sum_nanos.add(took.as_nanos() as u64);
    }

    fn render(&self, out: &mut String, name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        let mut cumulative = 0;
        for (bound, bucket) in BUCKETS.iter().zip(&self.buckets) {
            cumulative += bucket.get();
            let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {cumulative}");
        }
        let count = self.count.get();
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {count}");
        let sum = self.sum_nanos.get() as f64 / 1e9;
        let _ = writeln!(out, "{name}_sum {sum}\n{name}_count {count}");
    }
}

#[derive(Default)]
pub struct Metrics {
    /// Redirect requests, in the order of [`Outcome::ALL`].
    redirects: [Counter; Outcome::ALL.len()],
    pub redirect_latency: Histogram,
    pub events_queued: Counter,
    pub events_written: AtomicU64,
    pub events_spooled: AtomicU64,
    pub events_dropped: AtomicU64,
    /// Events the database refused (kept in the rejected file beside the spool).
    pub events_rejected: AtomicU64,
    /// Visits to unknown codes past the day's budget: counted here, not stored.
    pub unknown_not_stored: AtomicU64,
    /// Events waiting for the database (in memory or in the spool file).
    pub events_backlog: AtomicU64,
    /// Stored events this server's counting schedule added to the statistics: with
    /// `events_written`, how far the dashboards are behind what was stored.
    pub events_counted: AtomicU64,
    pub batch_latency: Histogram,
    /// Webhook messages a receiver accepted.
    pub webhooks_delivered: AtomicU64,
    /// Webhook attempts that failed (each is retried until the schedule ends).
    pub webhook_attempts_failed: AtomicU64,
    /// Batches of clicks dropped because a subscription's outbox was full.
    pub webhook_click_batches_dropped: AtomicU64,
}

pub struct Gauges {
    pub queue_depth: usize,
    pub cache_hits: u64,
    pub cache_misses: u64,
    pub lookup_queries: u64,
}

impl Metrics {
    /// Clicks this server queued and has not stored yet (in memory or in the spool), about:
    /// the writer's work still to do. Clicks spooled by an earlier run and stored now make it
    /// read low, never high.
    pub fn clicks_unstored(&self) -> u64 {
        let gone = self.events_written.load(Relaxed)
            + self.events_dropped.load(Relaxed)
            + self.events_rejected.load(Relaxed);
        self.events_queued.get().saturating_sub(gone)
    }

    /// One answered request to a short code.
    pub fn redirect(&self, outcome: Outcome, took: Duration) {
        let slot = Outcome::ALL
            .iter()
            .position(|known| *known == outcome)
            .expect("every outcome is listed");
        self.redirects[slot].add(1);
        self.redirect_latency.observe(took);
    }

    pub fn render(&self, gauges: &Gauges) -> String {
        let mut out = String::with_capacity(4096);
        let counter = |out: &mut String, name: &str, help: &str, value: u64| {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}"
            );
        };
        let gauge = |out: &mut String, name: &str, help: &str, value: u64| {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
            );
        };
        let _ = writeln!(
            out,
            "# HELP inklink_redirect_requests_total Requests to short codes, by outcome\n# TYPE inklink_redirect_requests_total counter"
        );
        for (outcome, count) in Outcome::ALL.iter().zip(&self.redirects) {
            let _ = writeln!(
                out,
                "inklink_redirect_requests_total{{outcome=\"{}\"}} {}",
                outcome.label(),
                count.get()
            );
        }
        self.redirect_latency.render(
            &mut out,
            "inklink_redirect_duration_seconds",
            "Time to answer a request to a short code",
        );
        counter(
            &mut out,
            "inklink_cache_hits_total",
            "Short-code lookups answered from the in-process cache",
            gauges.cache_hits,
        );
        counter(
            &mut out,
            "inklink_cache_misses_total",
            "Short-code lookups that went to the database",
            gauges.cache_misses,
        );
        counter(
            &mut out,
            "inklink_link_lookup_queries_total",
            "Database queries made for short-code lookups (misses are batched)",
            gauges.lookup_queries,
        );
        counter(
            &mut out,
            "inklink_click_events_queued_total",
            "Click events put on the in-memory queue",
            self.events_queued.get(),
        );
        counter(
            &mut out,
            "inklink_click_events_written_total",
            "Click events stored in the database",
            self.events_written.load(Relaxed),
        );
        counter(
            &mut out,
            "inklink_click_events_counted_total",
            "Stored click events counted into the statistics by this server's schedule",
            self.events_counted.load(Relaxed),
        );
        counter(
            &mut out,
            "inklink_click_events_spooled_total",
            "Click events written to the spool file while the database was unavailable",
            self.events_spooled.load(Relaxed),
        );
        counter(
            &mut out,
            "inklink_click_events_dropped_total",
            "Click events lost because the queue was full",
            self.events_dropped.load(Relaxed),
        );
        counter(
            &mut out,
            "inklink_click_events_rejected_total",
            "Click events the database refused (a value it does not accept), kept in inklink-rejected-<port>.jsonl beside the spool",
            self.events_rejected.load(Relaxed),
        );
        counter(
            &mut out,
            "inklink_unknown_code_visits_not_stored_total",
            "Visits to codes that match no link beyond INKLINK_UNKNOWN_VISITS_PER_DAY, counted only here",
            self.unknown_not_stored.load(Relaxed),
        );
        gauge(
            &mut out,
            "inklink_click_queue_depth",
            "Click events waiting on the in-memory queue",
            gauges.queue_depth as u64,
        );
        gauge(
            &mut out,
            "inklink_click_backlog",
            "Click events held (memory or spool) until the database is back",
            self.events_backlog.load(Relaxed),
        );
        self.batch_latency.render(
            &mut out,
            "inklink_click_batch_duration_seconds",
            "Time to insert one batch of click events",
        );
        counter(
            &mut out,
            "inklink_webhooks_delivered_total",
            "Webhook messages a receiver accepted (answered 2xx)",
            self.webhooks_delivered.load(Relaxed),
        );
        counter(
            &mut out,
            "inklink_webhook_attempts_failed_total",
            "Webhook delivery attempts that failed and will be retried, or were the last",
            self.webhook_attempts_failed.load(Relaxed),
        );
        counter(
            &mut out,
            "inklink_webhook_click_batches_dropped_total",
            "Batches of link.clicked dropped because a subscription's outbox was full (INKLINK_WEBHOOK_OUTBOX_LIMIT)",
            self.webhook_click_batches_dropped.load(Relaxed),
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clicks_unstored_are_those_queued_and_neither_stored_nor_lost() {
        let metrics = Metrics::default();
        metrics.events_queued.add(10);
        metrics.events_written.store(4, Relaxed);
        metrics.events_dropped.store(1, Relaxed);
        metrics.events_rejected.store(1, Relaxed);
        assert_eq!(metrics.clicks_unstored(), 4);
        // A spool left by an earlier run is stored without being queued by this one.
        metrics.events_written.store(12, Relaxed);
        assert_eq!(metrics.clicks_unstored(), 0);
    }
}
