//! Token buckets per caller, in memory (each instance counts its own requests).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

/// Over the limit: try again after this many seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryAfter(pub u64);

/// A token bucket per key: `per_minute` requests, refilled evenly, bursts up to the same.
pub struct RateLimits {
    per_minute: f64,
    buckets: Mutex<HashMap<i64, (f64, Instant)>>,
}

impl RateLimits {
    pub fn new(per_minute: u32) -> Self {
        Self {
            per_minute: f64::from(per_minute),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    pub fn take(&self, key: i64) -> Result<(), RetryAfter> {
        let now = Instant::now();
        let mut buckets = self.buckets.lock().expect("rate limits");
        let (tokens, at) = buckets.entry(key).or_insert((self.per_minute, now));
        let refill = now.duration_since(*at).as_secs_f64() * self.per_minute / 60.0;
        *tokens = (*tokens + refill).min(self.per_minute);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            return Ok(());
        }
        let wait = ((1.0 - *tokens) * 60.0 / self.per_minute).ceil().max(1.0);
        Err(RetryAfter(wait as u64))
    }
}
