//! What a webhook subscription is made of: the receiver's URL, the events it wants, the format
//! its messages take (Standard Webhooks, or a chat group's robot), and how a message is signed.

use crate::i18n::Text;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use std::fmt;

/// Longest receiver URL accepted.
pub const MAX_URL: usize = 2000;
/// Longest description.
pub const MAX_DESCRIPTION: usize = 200;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, crate::i18n::Says)]
pub enum WebhookError {
    #[error("the receiver's URL is empty")]
    UrlEmpty,
    #[error("the receiver's URL is longer than {MAX_URL} characters")]
    UrlTooLong,
    #[error("'{0}' is not a URL; write it as https://host/path")]
    UrlInvalid(String),
    #[error("the receiver's URL must start with http:// or https://")]
    UrlScheme,
    #[error("the receiver's URL must not carry a user name or password")]
    UrlCredentials,
    #[error("'{0}' is not an event; use one of {1}")]
    UnknownEvent(String, String),
    #[error("choose at least one event")]
    NoEvents,
    #[error("'{0}' is not a format; use standard, wecom, feishu or dingtalk")]
    UnknownFormat(String),
    #[error(
        "a chat group's robot cannot receive link.clicked (too many messages); choose other events"
    )]
    ClicksToRobot,
    #[error("the description is longer than {MAX_DESCRIPTION} characters")]
    DescriptionTooLong,
}

/// A receiver's URL: http or https, with a host, without credentials. Whether its host may be
/// reached is the outbound client's decision (it refuses internal networks by default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookUrl(url::Url);

impl WebhookUrl {
    pub fn parse(text: &str) -> Result<Self, WebhookError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(WebhookError::UrlEmpty);
        }
        if text.chars().count() > MAX_URL {
            return Err(WebhookError::UrlTooLong);
        }
        let url = url::Url::parse(text)
            .map_err(|_| WebhookError::UrlInvalid(text.chars().take(100).collect()))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(WebhookError::UrlScheme);
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(WebhookError::UrlInvalid(text.chars().take(100).collect()));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(WebhookError::UrlCredentials);
        }
        Ok(Self(url))
    }

    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    pub fn url(&self) -> &url::Url {
        &self.0
    }
}

impl fmt::Display for WebhookUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.as_str())
    }
}

/// What a subscription may be told about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventType {
    LinkCreated,
    LinkUpdated,
    LinkDeleted,
    LinkClicked,
    BatchCreated,
    BatchPurged,
    DomainSuspect,
    DomainBlocked,
    DomainRecovered,
    DomainRotated,
}

impl EventType {
    pub const ALL: [EventType; 10] = [
        Self::LinkCreated,
        Self::LinkUpdated,
        Self::LinkDeleted,
        Self::LinkClicked,
        Self::BatchCreated,
        Self::BatchPurged,
        Self::DomainSuspect,
        Self::DomainBlocked,
        Self::DomainRecovered,
        Self::DomainRotated,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::LinkCreated => "link.created",
            Self::LinkUpdated => "link.updated",
            Self::LinkDeleted => "link.deleted",
            Self::LinkClicked => "link.clicked",
            Self::BatchCreated => "batch.created",
            Self::BatchPurged => "batch.purged",
            Self::DomainSuspect => "domain.suspect",
            Self::DomainBlocked => "domain.blocked",
            Self::DomainRecovered => "domain.recovered",
            Self::DomainRotated => "domain.rotated",
        }
    }

    pub fn parse(text: &str) -> Result<Self, WebhookError> {
        let text = text.trim();
        Self::ALL
            .into_iter()
            .find(|event| event.as_str() == text)
            .ok_or_else(|| {
                WebhookError::UnknownEvent(
                    text.chars().take(40).collect(),
                    Self::ALL.map(Self::as_str).join(", "),
                )
            })
    }

    /// What the event means to a person (English; the UI translates it).
    pub fn words(self) -> Text {
        match self {
            Self::LinkCreated => t!("Link created"),
            Self::LinkUpdated => t!("Link changed"),
            Self::LinkDeleted => t!("Link deleted"),
            Self::LinkClicked => t!("Link clicked"),
            Self::BatchCreated => t!("Batch created"),
            Self::BatchPurged => t!("Batch's phone numbers deleted"),
            Self::DomainSuspect => t!("Domain suspected blocked"),
            Self::DomainBlocked => t!("Domain blocked"),
            Self::DomainRecovered => t!("Domain recovered"),
            Self::DomainRotated => t!("Domain rotated"),
        }
    }

    /// The event an audit entry's action announces, if any.
    pub fn of_action(action: &str) -> Option<Self> {
        Some(match action {
            "link.create" => Self::LinkCreated,
            "link.edit" | "link.tags" | "link.disable" | "link.enable" => Self::LinkUpdated,
            "link.delete" => Self::LinkDeleted,
            "batch.create" => Self::BatchCreated,
            "batch.purge" => Self::BatchPurged,
            "domain.rotate" => Self::DomainRotated,
            "domain.suspect" => Self::DomainSuspect,
            "domain.blocked" => Self::DomainBlocked,
            "domain.recovered" => Self::DomainRecovered,
            _ => return None,
        })
    }
}

/// The events of a subscription: at least one, each once, in a fixed order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Events(Vec<EventType>);

impl Events {
    pub fn parse<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Self, WebhookError> {
        let mut events = names
            .into_iter()
            .filter(|name| !name.trim().is_empty())
            .map(EventType::parse)
            .collect::<Result<Vec<_>, _>>()?;
        events.sort();
        events.dedup();
        if events.is_empty() {
            return Err(WebhookError::NoEvents);
        }
        Ok(Self(events))
    }

    /// Events as stored: names separated by commas.
    pub fn from_stored(text: &str) -> Self {
        Self(
            text.split(',')
                .filter_map(|name| EventType::parse(name).ok())
                .collect(),
        )
    }

    pub fn to_stored(&self) -> String {
        self.names().join(",")
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.0.iter().map(|e| e.as_str()).collect()
    }

    pub fn contains(&self, event: EventType) -> bool {
        self.0.contains(&event)
    }

    pub fn iter(&self) -> impl Iterator<Item = EventType> + '_ {
        self.0.iter().copied()
    }
}

/// How messages are written for the receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON, signed as Standard Webhooks says (for programs: CRMs, BI tools, scripts).
    Standard,
    /// A WeCom (企业微信) group robot: markdown.
    WeCom,
    /// A Feishu or Lark group robot: text.
    Feishu,
    /// A DingTalk group robot: markdown.
    DingTalk,
}

impl Format {
    pub const ALL: [Format; 4] = [Self::Standard, Self::WeCom, Self::Feishu, Self::DingTalk];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Standard => "standard",
            Self::WeCom => "wecom",
            Self::Feishu => "feishu",
            Self::DingTalk => "dingtalk",
        }
    }

    /// `None` or an empty text: the robot the URL's host belongs to, else `standard`.
    pub fn parse(text: Option<&str>, url: &WebhookUrl) -> Result<Self, WebhookError> {
        match text.map(str::trim).filter(|t| !t.is_empty()) {
            None => Ok(Self::of_host(url.url().host_str().unwrap_or(""))),
            Some(text) => Self::from_stored(&text.to_ascii_lowercase())
                .ok_or_else(|| WebhookError::UnknownFormat(text.chars().take(40).collect())),
        }
    }

    pub fn from_stored(text: &str) -> Option<Self> {
        match text {
            "standard" => Some(Self::Standard),
            "wecom" => Some(Self::WeCom),
            "feishu" | "lark" => Some(Self::Feishu),
            "dingtalk" => Some(Self::DingTalk),
            _ => None,
        }
    }

    fn of_host(host: &str) -> Self {
        match host {
            "qyapi.weixin.qq.com" => Self::WeCom,
            "open.feishu.cn" | "open.larksuite.com" => Self::Feishu,
            "oapi.dingtalk.com" => Self::DingTalk,
            _ => Self::Standard,
        }
    }

    /// A chat group's robot: messages for people, at most 20 a minute.
    pub fn is_robot(self) -> bool {
        self != Self::Standard
    }

    /// The name people know the receiver by (a product name: the same in every language).
    pub fn label(self) -> Text {
        match self {
            Self::Standard => t!("Standard Webhooks"),
            Self::WeCom => t!("WeCom 企业微信"),
            Self::Feishu => t!("Feishu / Lark 飞书"),
            Self::DingTalk => t!("DingTalk 钉钉"),
        }
    }
}

/// The description a person gave a subscription.
pub fn description(text: &str) -> Result<String, WebhookError> {
    let text = text.trim();
    if text.chars().count() > MAX_DESCRIPTION {
        return Err(WebhookError::DescriptionTooLong);
    }
    Ok(text.to_owned())
}

/// Checks that a robot is not asked for clicks.
pub fn check_format(format: Format, events: &Events) -> Result<(), WebhookError> {
    if format.is_robot() && events.contains(EventType::LinkClicked) {
        return Err(WebhookError::ClicksToRobot);
    }
    Ok(())
}

/// A subscription's signing secret, `whsec_` and the key in base64 (Standard Webhooks).
#[derive(Clone, PartialEq, Eq)]
pub struct SigningSecret(String);

impl SigningSecret {
    /// A secret around 24 random bytes.
    pub fn from_random(bytes: [u8; 24]) -> Self {
        Self(format!("whsec_{}", BASE64.encode(bytes)))
    }

    pub fn from_stored(text: String) -> Self {
        Self(text)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn key(&self) -> Vec<u8> {
        let encoded = self.0.strip_prefix("whsec_").unwrap_or(&self.0);
        BASE64
            .decode(encoded)
            .unwrap_or_else(|_| encoded.as_bytes().to_vec())
    }

    /// The `webhook-signature` header of message `id`, sent at `timestamp` (seconds since
    /// 1970) with `body`: `v1,` and the base64 of HMAC-SHA256 over `id.timestamp.body`.
    pub fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        let timestamp = timestamp.to_string();
        let mac = crate::digest::hmac_sha256(
            &self.key(),
            &[id.as_bytes(), b".", timestamp.as_bytes(), b".", body],
        );
        format!("v1,{}", BASE64.encode(mac))
    }
}

impl fmt::Debug for SigningSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SigningSecret(…)")
    }
}
