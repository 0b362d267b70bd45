//! What one request to a short code leaves behind on the hot path: copies of what it carried,
//! nothing computed.

use crate::clickstore::row::EventKey;
use crate::rules::Outcome;
use chrono::NaiveDateTime;
use std::net::IpAddr;

/// Taken on the redirect path: only copies of what the request carried, nothing computed.
#[derive(Clone, Debug, PartialEq)]
pub struct ClickEvent {
    pub at: NaiveDateTime,
    pub code: Box<str>,
    pub link_id: Option<i64>,
    pub host: Option<Box<str>>,
    pub client_ip: IpAddr,
    pub user_agent: Option<Box<str>>,
    pub referer: Option<Box<str>>,
    pub query: Option<Box<str>>,
    pub outcome: Outcome,
    /// A `HEAD` request: answered like `GET`, but no browser sends one to follow a link, so
    /// it is counted as a bot's.
    pub head: bool,
    /// Given by the journal; an event without one gets it from the enricher.
    pub key: Option<EventKey>,
    /// The journal generation the event was written in (see `journal`).
    pub generation: u32,
}
