//! How a request to a short code ended: what the redirect path decides, the metrics count,
//! the journal and the click store keep, and the statistics tell apart.

use super::TargetRule;
use serde::{Deserialize, Serialize};

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

    /// The outcome that [`Outcome::status`], [`Outcome::reason`] and [`Outcome::target_rule`]
    /// wrote down, as the click store keeps them.
    pub fn from_stored(status: &str, reason: Option<&str>, rule: Option<&str>) -> Option<Self> {
        Self::ALL.into_iter().find(|outcome| {
            outcome.status() == status
                && outcome.reason() == reason
                && outcome.target_rule().map(TargetRule::as_str) == rule
        })
    }

    pub fn from_letter(letter: u8) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|outcome| outcome.letter() == letter)
    }
}

pub const SUCCESS: &str = "success";
pub const FAILURE: &str = "failure";
