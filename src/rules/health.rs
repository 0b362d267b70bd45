//! A domain's health as probes see it, and what a default domain found blocked does.

use crate::i18n::Text;
use std::fmt;

/// What one check of a domain found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    Failed,
    /// Not a failure, but a sign (in-app visitors gone): suspect at most, never blocked.
    Suspicious,
    /// The probes could not tell (a checker that timed out or answered nonsense).
    Unknown,
}

impl Outcome {
    pub fn mark(self) -> char {
        match self {
            Self::Passed => 'o',
            Self::Failed => 'f',
            Self::Suspicious => 's',
            Self::Unknown => 'u',
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HealthState {
    Healthy,
    /// The last check failed, not yet enough of the recent ones to call it blocked.
    Suspect,
    Blocked,
    Unknown,
}

/// A fail-over policy that is none of inklink's (the first 20 characters of what was given).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, crate::i18n::Says)]
#[error("'{0}' is not a fail-over policy; use off, confirm or auto")]
pub struct FailoverError(pub String);

impl HealthState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Healthy => "healthy",
            Self::Suspect => "suspect",
            Self::Blocked => "blocked",
            Self::Unknown => "unknown",
        }
    }

    /// The state as people read it, translated.
    pub fn words(self) -> Text {
        match self {
            Self::Healthy => t!("healthy"),
            Self::Suspect => t!("suspect"),
            Self::Blocked => t!("blocked"),
            Self::Unknown => t!("unknown"),
        }
    }

    pub fn from_stored(text: &str) -> Self {
        match text {
            "healthy" => Self::Healthy,
            "suspect" => Self::Suspect,
            "blocked" => Self::Blocked,
            _ => Self::Unknown,
        }
    }
}

impl fmt::Display for HealthState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How many of the last checks must fail (`failures` of `window`) before a domain is blocked:
/// one timeout never rotates anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hysteresis {
    pub failures: usize,
    pub window: usize,
}

impl Hysteresis {
    /// The recent outcomes with `outcome` added (oldest dropped beyond the window).
    pub fn remember(&self, recent: &str, outcome: Outcome) -> String {
        let mut marks: Vec<char> = recent.chars().collect();
        marks.push(outcome.mark());
        let skip = marks.len().saturating_sub(self.window);
        marks.into_iter().skip(skip).collect()
    }

    /// The state after the checks `recent` (newest last), coming from `previous`: blocked
    /// while `failures` of the window failed, and until as many checks in a row passed;
    /// otherwise suspect when the last check failed, healthy when it passed; an unknown check
    /// changes nothing.
    pub fn state(&self, previous: HealthState, recent: &str) -> HealthState {
        let failed = recent.chars().filter(|c| *c == 'f').count();
        if failed >= self.failures {
            return HealthState::Blocked;
        }
        if previous == HealthState::Blocked {
            let last: Vec<char> = recent.chars().rev().take(self.failures).collect();
            if last.len() < self.failures || last.iter().any(|c| *c != 'o') {
                return HealthState::Blocked;
            }
        }
        match recent.chars().last() {
            Some('f' | 's') => HealthState::Suspect,
            Some('o') => HealthState::Healthy,
            _ => previous,
        }
    }
}

/// What a default domain found blocked does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failover {
    /// Alert only.
    Off,
    /// Alert, and offer the rotation to a standby on the Domains page.
    Confirm,
    /// Rotate to the first healthy standby, as a manual rotation does.
    Auto,
}

impl Failover {
    pub const ALL: [Failover; 3] = [Self::Off, Self::Confirm, Self::Auto];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Confirm => "confirm",
            Self::Auto => "auto",
        }
    }

    pub fn parse(text: &str) -> Result<Self, FailoverError> {
        match text.trim().to_ascii_lowercase().as_str() {
            "off" => Ok(Self::Off),
            "confirm" => Ok(Self::Confirm),
            "auto" => Ok(Self::Auto),
            other => Err(FailoverError(other.chars().take(20).collect())),
        }
    }

    pub fn from_stored(text: &str) -> Self {
        Self::parse(text).unwrap_or(Self::Off)
    }
}

/// Checks a checker URL template as configured: http or https, with `{url}` or `{host}`.
pub fn checker_template(text: &str) -> Result<String, String> {
    let text = text.trim();
    if !text.contains("{url}") && !text.contains("{host}") {
        return Err("the checker URL needs {url} or {host} where the domain goes".into());
    }
    let sample = text.replace("{url}", "x").replace("{host}", "example.com");
    match url::Url::parse(&sample) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => Ok(text.to_owned()),
        _ => Err(format!("'{text}' is not an http:// or https:// URL")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_failure_is_suspect_k_of_n_is_blocked_and_recovery_needs_the_window_clear() {
        let h = Hysteresis {
            failures: 2,
            window: 3,
        };
        let mut recent = String::new();
        let mut state = HealthState::Unknown;
        let mut seen = Vec::new();
        for outcome in [
            Outcome::Unknown,
            Outcome::Passed,
            Outcome::Failed,
            Outcome::Passed,
            Outcome::Failed,
            Outcome::Passed,
            Outcome::Passed,
            Outcome::Passed,
        ] {
            recent = h.remember(&recent, outcome);
            state = h.state(state, &recent);
            seen.push(state);
        }
        use HealthState::*;
        assert_eq!(
            seen,
            [
                Unknown, Healthy, Suspect, Healthy, Blocked, Blocked, Healthy, Healthy
            ]
        );
        assert_eq!(recent.len(), 3);
        // Signs alone never block.
        let mut recent = String::new();
        let mut state = HealthState::Healthy;
        for _ in 0..5 {
            recent = h.remember(&recent, Outcome::Suspicious);
            state = h.state(state, &recent);
        }
        assert_eq!(state, Suspect);
        assert_eq!(Failover::parse(" AUTO "), Ok(Failover::Auto));
        assert!(Failover::parse("sometimes").is_err());
    }
}
