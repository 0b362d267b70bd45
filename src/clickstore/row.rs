//! A click as the store keeps it: its unique key and the enriched row that is stored (and
//! read back).

use chrono::NaiveDateTime;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// What makes a stored click unique: the high 64 bits name the process (random), the rest
/// count its events. Given when the click is journaled, so a replay stores it once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventKey(pub u128);

impl EventKey {
    pub fn new(instance: u64, stripe: usize, sequence: u64) -> Self {
        const SEQUENCE_BITS: u32 = 56;
        let sequence = u128::from(sequence) & ((1 << SEQUENCE_BITS) - 1);
        Self(u128::from(instance) << 64 | (stripe as u128) << SEQUENCE_BITS | sequence)
    }
}

/// Shared text: the enricher hands out one allocation per distinct user agent, address,
/// place or browser name, and every row that carries it holds a reference. Binding one to a
/// statement is a reference count too (sqlx copies `String`s, not `Arc<str>`s).
pub type Text = Arc<str>;

/// One `transform_event_record` row, ready to insert (and to spool as a JSON line; the line
/// format is the same as when these fields were `String`s, so older spools still replay).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventRow {
    pub event_key: Text,
    pub record_time: NaiveDateTime,
    pub compression_code: Text,
    pub url_map_id: Option<i64>,
    pub host: Option<Text>,
    pub client_ip: Text,
    pub unique_identity: Text,
    pub user_agent: Option<Text>,
    pub referer: Option<Text>,
    pub referer_host: Option<Text>,
    pub query_string: Option<Text>,
    pub country: Option<Text>,
    pub province: Option<Text>,
    pub city: Option<Text>,
    pub browser: Option<Text>,
    pub browser_version: Option<Text>,
    pub os: Option<Text>,
    pub os_version: Option<Text>,
    pub device: Option<Text>,
    pub is_bot: bool,
    pub transform_status: Text,
    pub failure_reason: Option<Text>,
    /// The alternative target the visitor was sent to (`ios`, `android`, `desktop`,
    /// `wechat`); `None` for the link's own target.
    #[serde(default)]
    pub target_rule: Option<Text>,
    /// The journal generation of the event (not stored, not spooled).
    #[serde(skip)]
    pub generation: u32,
}
