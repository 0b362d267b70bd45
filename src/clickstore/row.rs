//! A click as the store keeps it: its unique key and the enriched row that is stored (and
//! read back).

use crate::rules::Outcome;
use chrono::NaiveDateTime;
use sea_orm::{DbErr, QueryResult};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::IpAddr;
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
    pub event_key: Digest,
    pub record_time: NaiveDateTime,
    pub compression_code: Text,
    pub url_map_id: Option<i64>,
    pub host: Option<Text>,
    pub client_ip: Address,
    /// Empty when the click has none.
    pub unique_identity: Digest,
    pub user_agent: Option<Text>,
    pub referer: Option<Text>,
    pub referer_host: Option<Text>,
    pub query_string: Option<Text>,
    pub country: Option<Text>,
    pub province: Option<Text>,
    pub city: Option<Text>,
    /// The visitor's carrier (spools written before it have none).
    #[serde(default)]
    pub carrier: Option<Text>,
    /// What its user agent says (spooled as the six fields it has).
    #[serde(flatten)]
    pub agent: Agent,
    /// How the request ended; kept (and spooled) as `transform_status`, `failure_reason` and
    /// `target_rule`.
    #[serde(flatten, with = "outcome_fields")]
    pub outcome: Outcome,
    /// The journal generation of the event (not stored, not spooled).
    #[serde(skip)]
    pub generation: u32,
}

/// What a user agent says about the visitor's software (read by `clicks::agent`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Agent {
    pub browser: Option<Text>,
    pub browser_version: Option<Text>,
    pub os: Option<Text>,
    pub os_version: Option<Text>,
    pub device: Option<Text>,
    pub is_bot: bool,
}

/// What identifies a click and where it came from: each click table keeps these its own way
/// (bytes and microseconds in the click store, text in the old table it was upgraded from).
pub struct Identity {
    pub event_key: Digest,
    pub record_time: NaiveDateTime,
    pub client_ip: Address,
    /// Empty when the click has none.
    pub unique_identity: Digest,
}

impl EventRow {
    /// A row read by column name: every other column is selected under its field's name,
    /// from the click store's join or from the old table alike.
    pub fn read(row: &QueryResult, identity: Identity) -> Result<Self, DbErr> {
        let text = |column: &str| -> Result<Option<Text>, DbErr> {
            Ok(row.try_get::<Option<String>>("", column)?.map(Text::from))
        };
        Ok(Self {
            event_key: identity.event_key,
            record_time: identity.record_time,
            compression_code: text("compression_code")?.unwrap_or_default(),
            url_map_id: row.try_get("", "url_map_id")?,
            host: text("host")?,
            client_ip: identity.client_ip,
            unique_identity: identity.unique_identity,
            user_agent: text("user_agent")?,
            referer: text("referer")?,
            referer_host: text("referer_host")?,
            query_string: text("query_string")?,
            country: text("country")?,
            province: text("province")?,
            city: text("city")?,
            // The old wide table it is also read from had no carrier.
            carrier: text("carrier").ok().flatten(),
            agent: Agent {
                browser: text("browser")?,
                browser_version: text("browser_version")?,
                os: text("os")?,
                os_version: text("os_version")?,
                device: text("device")?,
                is_bot: row.try_get("", "is_bot")?,
            },
            outcome: {
                let (status, reason, rule) = (
                    text("transform_status")?.unwrap_or_default(),
                    text("failure_reason")?,
                    text("target_rule")?,
                );
                Outcome::from_stored(&status, reason.as_deref(), rule.as_deref()).ok_or_else(
                    || {
                        DbErr::Custom(format!(
                            "a stored click ended as '{status}' ({}, {}), which inklink does not know",
                            reason.as_deref().unwrap_or("no reason"),
                            rule.as_deref().unwrap_or("no rule"),
                        ))
                    },
                )?
            },
            generation: 0,
        })
    }
}

/// A short binary value: a key, a visitor or an address in as few bytes as hold it (an old
/// value that is not what it should be is kept as its text).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packed {
    len: u8,
    bytes: [u8; Packed::MAX],
}

impl Packed {
    /// The most bytes a packed value keeps (the old text columns held at most 64).
    pub const MAX: usize = 64;

    fn of(raw: &[u8]) -> Self {
        let len = raw.len().min(Self::MAX);
        let mut bytes = [0; Self::MAX];
        bytes[..len].copy_from_slice(&raw[..len]);
        Self {
            len: len as u8,
            bytes,
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// A click's key, or its visitor: 16 bytes, written as 32 hex digits. Binary from the enricher
/// to the store and back; text only where a person or the spool file reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Digest {
    /// Big-endian, so that the stored bytes sort as the digits do.
    Value([u8; 16]),
    /// A value of an older version that was not 32 hex digits, kept as it was (empty: none).
    Other(Text),
}

impl Digest {
    /// As the click store keeps it.
    pub fn stored(bytes: &[u8]) -> Self {
        match <[u8; 16]>::try_from(bytes) {
            Ok(value) => Self::Value(value),
            Err(_) => Self::Other(String::from_utf8_lossy(bytes).into()),
        }
    }

    pub fn of(value: u128) -> Self {
        Self::Value(value.to_be_bytes())
    }

    pub fn parse(text: &str) -> Self {
        match crate::digest::from_hex128(text.as_bytes()) {
            Some(value) => Self::of(value),
            None => Self::Other(text.into()),
        }
    }

    /// What the click store keeps.
    pub fn packed(&self) -> Packed {
        match self {
            Self::Value(value) => Packed::of(value),
            Self::Other(text) => Packed::of(text.as_bytes()),
        }
    }

    pub fn is_empty(&self) -> bool {
        matches!(self, Self::Other(text) if text.is_empty())
    }
}

impl Default for Digest {
    fn default() -> Self {
        Self::Other(Text::from(""))
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Value(value) => {
                let digits = crate::digest::hex128(u128::from_be_bytes(*value));
                f.write_str(std::str::from_utf8(&digits).map_err(|_| fmt::Error)?)
            }
            Self::Other(text) => f.write_str(text),
        }
    }
}

/// A click's address (or network), from the enricher to the store and back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Address {
    Ip(IpAddr),
    /// Text of an older version that was no address, kept as it was.
    Other(Text),
}

impl Address {
    pub fn stored(bytes: &[u8]) -> Self {
        if let Ok(v4) = <[u8; 4]>::try_from(bytes) {
            return Self::Ip(IpAddr::from(v4));
        }
        if let Ok(v6) = <[u8; 16]>::try_from(bytes) {
            return Self::Ip(IpAddr::from(v6));
        }
        Self::Other(String::from_utf8_lossy(bytes).into())
    }

    pub fn parse(text: &str) -> Self {
        match text.parse::<IpAddr>() {
            Ok(ip) => Self::Ip(ip),
            Err(_) => Self::Other(text.into()),
        }
    }

    /// What the click store keeps: 4 or 16 bytes.
    pub fn packed(&self) -> Packed {
        match self {
            Self::Ip(IpAddr::V4(v4)) => Packed::of(&v4.octets()),
            Self::Ip(IpAddr::V6(v6)) => Packed::of(&v6.octets()),
            Self::Other(text) => Packed::of(text.as_bytes()),
        }
    }
}

impl Default for Address {
    fn default() -> Self {
        Self::Other(Text::from(""))
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ip(ip) => ip.fmt(f),
            Self::Other(text) => f.write_str(text),
        }
    }
}

/// The spool file's lines keep the text these were written as before they were binary.
macro_rules! as_text {
    ($type:ident) => {
        impl From<&str> for $type {
            fn from(text: &str) -> Self {
                Self::parse(text)
            }
        }

        impl From<String> for $type {
            fn from(text: String) -> Self {
                Self::parse(&text)
            }
        }

        impl Serialize for $type {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $type {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                Ok(Self::parse(&text))
            }
        }
    };
}

as_text!(Digest);
as_text!(Address);

/// An outcome as the three text fields of a spool line.
mod outcome_fields {
    use crate::rules::{Outcome, TargetRule};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize)]
    struct Written {
        transform_status: &'static str,
        failure_reason: Option<&'static str>,
        target_rule: Option<&'static str>,
    }

    #[derive(Deserialize)]
    struct Read {
        transform_status: String,
        #[serde(default)]
        failure_reason: Option<String>,
        #[serde(default)]
        target_rule: Option<String>,
    }

    pub fn serialize<S: Serializer>(outcome: &Outcome, serializer: S) -> Result<S::Ok, S::Error> {
        Written {
            transform_status: outcome.status(),
            failure_reason: outcome.reason(),
            target_rule: outcome.target_rule().map(TargetRule::as_str),
        }
        .serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Outcome, D::Error> {
        let read = Read::deserialize(deserializer)?;
        Outcome::from_stored(
            &read.transform_status,
            read.failure_reason.as_deref(),
            read.target_rule.as_deref(),
        )
        .ok_or_else(|| serde::de::Error::custom("an outcome inklink does not know"))
    }
}
