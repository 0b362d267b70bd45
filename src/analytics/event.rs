//! What one request to a short code leaves behind: the raw event taken on the hot path and
//! the enriched row that is stored.

use chrono::NaiveDateTime;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;

/// How a request to a short code ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    Redirected,
    Unknown,
    Disabled,
    Expired,
}

impl Outcome {
    /// `transform_status`: whether the visitor was sent on.
    pub fn status(self) -> &'static str {
        match self {
            Self::Redirected => SUCCESS,
            _ => FAILURE,
        }
    }

    /// `failure_reason`, for the requests that were not redirected.
    pub fn reason(self) -> Option<&'static str> {
        match self {
            Self::Redirected => None,
            Self::Unknown => Some("unknown"),
            Self::Disabled => Some("disabled"),
            Self::Expired => Some("expired"),
        }
    }
}

pub const SUCCESS: &str = "success";
pub const FAILURE: &str = "failure";

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
}

/// One `transform_event_record` row, ready to insert (and to spool as a JSON line).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventRow {
    pub event_key: String,
    pub record_time: NaiveDateTime,
    pub compression_code: String,
    pub url_map_id: Option<i64>,
    pub host: Option<String>,
    pub client_ip: String,
    pub unique_identity: String,
    pub user_agent: Option<String>,
    pub referer: Option<String>,
    pub referer_host: Option<String>,
    pub query_string: Option<String>,
    pub country: Option<String>,
    pub province: Option<String>,
    pub city: Option<String>,
    pub browser: Option<String>,
    pub browser_version: Option<String>,
    pub os: Option<String>,
    pub os_version: Option<String>,
    pub device: Option<String>,
    pub is_bot: bool,
    pub transform_status: String,
    pub failure_reason: Option<String>,
}
