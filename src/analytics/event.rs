//! What one request to a short code leaves behind: the raw event taken on the hot path and
//! the enriched row that is stored.

use crate::rules::TargetRule;
use chrono::NaiveDateTime;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;
use std::sync::Arc;

/// How a request to a short code ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    /// Sent to the link's target.
    Redirected,
    /// Sent to the alternative target of this rule.
    RedirectedBy(TargetRule),
    Unknown,
    Disabled,
    Expired,
    /// The link had served its maximum number of visits.
    UsedUp,
    /// Before the link's valid-from time.
    NotYetOpen,
    /// Shown the "open in your browser" page of an in-app browser.
    InAppPage,
    /// Shown the password form.
    PasswordAsked,
    /// A wrong password (or one throttled).
    WrongPassword,
}

impl Outcome {
    /// Every outcome, for the metrics.
    pub const ALL: [Self; 13] = [
        Self::Redirected,
        Self::RedirectedBy(TargetRule::Ios),
        Self::RedirectedBy(TargetRule::Android),
        Self::RedirectedBy(TargetRule::Desktop),
        Self::RedirectedBy(TargetRule::WeChat),
        Self::Unknown,
        Self::Disabled,
        Self::Expired,
        Self::UsedUp,
        Self::NotYetOpen,
        Self::InAppPage,
        Self::PasswordAsked,
        Self::WrongPassword,
    ];

    /// `transform_status`: whether the visitor was sent on.
    pub fn status(self) -> &'static str {
        match self {
            Self::Redirected | Self::RedirectedBy(_) => SUCCESS,
            _ => FAILURE,
        }
    }

    /// `failure_reason`, for the requests that were not redirected (at most 16 characters:
    /// the column's width).
    pub fn reason(self) -> Option<&'static str> {
        match self {
            Self::Redirected | Self::RedirectedBy(_) => None,
            Self::Unknown => Some("unknown"),
            Self::Disabled => Some("disabled"),
            Self::Expired => Some("expired"),
            Self::UsedUp => Some("used_up"),
            Self::NotYetOpen => Some("not_yet_open"),
            Self::InAppPage => Some("in_app_page"),
            Self::PasswordAsked => Some("password_asked"),
            Self::WrongPassword => Some("wrong_password"),
        }
    }

    /// `target_rule`: the alternative target a visitor was sent to.
    pub fn target_rule(self) -> Option<TargetRule> {
        match self {
            Self::RedirectedBy(rule) => Some(rule),
            _ => None,
        }
    }

    /// The metrics label.
    pub fn label(self) -> &'static str {
        match self {
            Self::Redirected => "redirected",
            Self::RedirectedBy(TargetRule::Ios) => "redirected_ios",
            Self::RedirectedBy(TargetRule::Android) => "redirected_android",
            Self::RedirectedBy(TargetRule::Desktop) => "redirected_desktop",
            Self::RedirectedBy(TargetRule::WeChat) => "redirected_wechat",
            other => other.reason().expect("a failure has a reason"),
        }
    }

    /// The journal's one-letter code.
    pub fn letter(self) -> u8 {
        match self {
            Self::Redirected => b'R',
            Self::RedirectedBy(TargetRule::Ios) => b'i',
            Self::RedirectedBy(TargetRule::Android) => b'a',
            Self::RedirectedBy(TargetRule::Desktop) => b'd',
            Self::RedirectedBy(TargetRule::WeChat) => b'w',
            Self::Unknown => b'U',
            Self::Disabled => b'D',
            Self::Expired => b'E',
            Self::UsedUp => b'L',
            Self::NotYetOpen => b'N',
            Self::InAppPage => b'A',
            Self::PasswordAsked => b'P',
            Self::WrongPassword => b'W',
        }
    }

    pub fn from_letter(letter: u8) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|outcome| outcome.letter() == letter)
    }
}

pub const SUCCESS: &str = "success";
pub const FAILURE: &str = "failure";

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
