//! What a domain carries that matters to Chinese senders: its ICP filing number (备案号), and
//! the carrier-approved SMS templates that embed the domain (their codes and texts), which must
//! be submitted again when the domain is rotated away.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, crate::i18n::Says)]
pub enum FilingError {
    #[error("an ICP filing number is at most 64 characters, without control characters")]
    Filing,
    #[error("the SMS templates are at most 4,000 characters, without control characters")]
    Templates,
}

/// An ICP filing number as the operator wrote it, such as `京ICP备12345678号-1`.
#[derive(Clone, PartialEq, Eq)]
pub struct IcpFiling(String);

impl IcpFiling {
    /// `None` for an empty input (no filing recorded).
    pub fn parse(input: &str) -> Result<Option<Self>, FilingError> {
        let text = input.trim();
        if text.is_empty() {
            return Ok(None);
        }
        if text.chars().count() > 64 || text.chars().any(char::is_control) {
            return Err(FilingError::Filing);
        }
        Ok(Some(Self(text.to_owned())))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for IcpFiling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for IcpFiling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IcpFiling({})", self.0)
    }
}

/// SMS templates that embed a domain, one per line (a template code, its text, or both); blank
/// lines dropped, each line trimmed.
#[derive(Clone, PartialEq, Eq)]
pub struct SmsTemplates(String);

impl SmsTemplates {
    /// `None` for an input with no template.
    pub fn parse(input: &str) -> Result<Option<Self>, FilingError> {
        if input.chars().count() > 4000 {
            return Err(FilingError::Templates);
        }
        let lines: Vec<&str> = input
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .collect();
        if lines.iter().any(|line| line.chars().any(char::is_control)) {
            return Err(FilingError::Templates);
        }
        Ok((!lines.is_empty()).then(|| Self(lines.join("\n"))))
    }

    /// The templates as stored (one per line), read back from the database.
    pub fn from_stored(text: &str) -> Option<Self> {
        Self::parse(text).ok().flatten()
    }

    pub fn lines(&self) -> impl Iterator<Item = &str> {
        self.0.lines()
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SmsTemplates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SmsTemplates({})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filings_and_templates_are_kept_as_written_and_bounded() {
        assert_eq!(
            IcpFiling::parse(" 京ICP备12345678号-1 ")
                .unwrap()
                .unwrap()
                .as_str(),
            "京ICP备12345678号-1"
        );
        assert_eq!(IcpFiling::parse("  ").unwrap(), None);
        assert_eq!(IcpFiling::parse("a\u{7}b"), Err(FilingError::Filing));
        assert_eq!(IcpFiling::parse(&"备".repeat(65)), Err(FilingError::Filing));
        let templates = SmsTemplates::parse("SMS_123: 【商城】双11 {link}\r\n\n  SMS_456  \n")
            .unwrap()
            .unwrap();
        assert_eq!(
            templates.lines().collect::<Vec<_>>(),
            ["SMS_123: 【商城】双11 {link}", "SMS_456"]
        );
        assert_eq!(SmsTemplates::parse("\n \n").unwrap(), None);
        assert_eq!(
            SmsTemplates::parse("a\u{1b}[31m"),
            Err(FilingError::Templates)
        );
    }
}
