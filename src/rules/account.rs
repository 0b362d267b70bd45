//! People who sign in to the admin UI.

use crate::i18n::Text;
use std::fmt;
use std::str::FromStr;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Role {
    Admin,
    Operator,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Admin => "admin",
            Self::Operator => "operator",
        }
    }
}

impl Role {
    /// The role as people read it, translated.
    pub fn words(self) -> Text {
        match self {
            Self::Admin => t!("admin"),
            Self::Operator => t!("operator"),
        }
    }
}

impl PartialEq<&str> for Role {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl serde::Serialize for Role {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Role {
    type Err = AccountError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "admin" => Ok(Self::Admin),
            "operator" => Ok(Self::Operator),
            other => Err(AccountError::Role(other.to_owned())),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, crate::i18n::Says)]
pub enum AccountError {
    #[error("user names are 1 to 64 characters: letters, digits, '.', '_' and '-'")]
    Username,
    #[error("the password must be at least {MIN_PASSWORD_CHARS} characters long")]
    PasswordTooShort,
    #[error("the password must be at most {MAX_PASSWORD_CHARS} characters long")]
    PasswordTooLong,
    #[error(
        "a display name is at most {MAX_DISPLAY_NAME_CHARS} characters, without line breaks or other control characters"
    )]
    DisplayName,
    #[error("unknown role '{0}'; use admin or operator")]
    Role(String),
}

const MAX_DISPLAY_NAME_CHARS: usize = 50;

/// The name people know someone by, in any script (王小美, Zoë), shown beside the sign-in name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DisplayName(String);

impl DisplayName {
    /// An empty name is no display name.
    pub fn parse(input: &str) -> Result<Option<Self>, AccountError> {
        let name = input.trim();
        if name.is_empty() {
            return Ok(None);
        }
        if name.chars().count() > MAX_DISPLAY_NAME_CHARS || name.chars().any(char::is_control) {
            return Err(AccountError::DisplayName);
        }
        Ok(Some(Self(name.to_owned())))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

const MIN_PASSWORD_CHARS: usize = 8;
const MAX_PASSWORD_CHARS: usize = 1024;

/// Lower-case, so that `Alice` and `alice` are one person on every database (MySQL would
/// otherwise fold case where PostgreSQL and SQLite do not).
#[derive(Clone, PartialEq, Eq)]
pub struct Username(String);

impl Username {
    pub fn parse(input: &str) -> Result<Self, AccountError> {
        let name = input.trim();
        let valid = (1..=64).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if !valid {
            return Err(AccountError::Username);
        }
        Ok(Self(name.to_ascii_lowercase()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Username {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Username {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Username({})", self.0)
    }
}

/// A new password that meets the length rules. Never printed.
#[derive(Clone)]
pub struct Password(String);

impl Password {
    pub fn parse(input: &str) -> Result<Self, AccountError> {
        let chars = input.chars().count();
        if chars < MIN_PASSWORD_CHARS {
            return Err(AccountError::PasswordTooShort);
        }
        if chars > MAX_PASSWORD_CHARS {
            return Err(AccountError::PasswordTooLong);
        }
        Ok(Self(input.to_owned()))
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Password(…)")
    }
}
