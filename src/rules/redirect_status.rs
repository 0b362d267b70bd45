//! The HTTP status a short link answers with.

use std::fmt;
use std::str::FromStr;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedirectStatus {
    MovedPermanently,
    Found,
    TemporaryRedirect,
    PermanentRedirect,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, crate::i18n::Says)]
#[error("the redirect status must be 301, 302, 307 or 308 (got '{0}')")]
pub struct RedirectStatusError(pub String);

impl RedirectStatus {
    pub const ALL: [Self; 4] = [
        Self::MovedPermanently,
        Self::Found,
        Self::TemporaryRedirect,
        Self::PermanentRedirect,
    ];

    pub fn code(self) -> u16 {
        match self {
            Self::MovedPermanently => 301,
            Self::Found => 302,
            Self::TemporaryRedirect => 307,
            Self::PermanentRedirect => 308,
        }
    }

    pub fn from_code(code: u16) -> Result<Self, RedirectStatusError> {
        Self::ALL
            .into_iter()
            .find(|status| status.code() == code)
            .ok_or_else(|| RedirectStatusError(code.to_string()))
    }

    /// Temporary redirects must reach us on every click, so browsers must not cache them.
    pub fn is_temporary(self) -> bool {
        matches!(self, Self::Found | Self::TemporaryRedirect)
    }
}

impl FromStr for RedirectStatus {
    type Err = RedirectStatusError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.trim()
            .parse::<u16>()
            .map_err(|_| RedirectStatusError(s.to_owned()))
            .and_then(Self::from_code)
    }
}

impl fmt::Display for RedirectStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.code())
    }
}
