//! API keys as clients present them: `ik_<prefix>_<secret>`. The prefix finds the key's row;
//! only a SHA-256 of the whole token is stored, so the database never holds a usable key.

use std::fmt;

pub const TOKEN_START: &str = "ik_";
pub const PREFIX_LEN: usize = 8;
pub const SECRET_LEN: usize = 40;
const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, crate::i18n::Says)]
pub enum KeyNameError {
    #[error("a key name is 1 to 64 characters: letters, digits, '.', '_' and '-'")]
    Invalid,
}

/// What a key is called in lists, the audit log and as the creator of its links. Lower-case,
/// so that `CRM` and `crm` are one name on every database (MySQL's collation folds case where
/// PostgreSQL and SQLite do not, and link ownership compares the name exactly).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyName(String);

impl KeyName {
    pub fn parse(input: &str) -> Result<Self, KeyNameError> {
        let name = input.trim();
        let valid = (1..=64).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if valid {
            Ok(Self(name.to_ascii_lowercase()))
        } else {
            Err(KeyNameError::Invalid)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for KeyName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A token in the shape we issue; says nothing about whether it is valid.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiToken {
    text: String,
}

impl fmt::Debug for ApiToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApiToken({}…)", self.prefix())
    }
}

impl ApiToken {
    pub fn parse(text: &str) -> Option<Self> {
        let rest = text.strip_prefix(TOKEN_START)?;
        let (prefix, secret) = rest.split_once('_')?;
        let base62 = |s: &str| s.bytes().all(|b| b.is_ascii_alphanumeric());
        (prefix.len() == PREFIX_LEN
            && secret.len() == SECRET_LEN
            && base62(prefix)
            && base62(secret))
        .then(|| Self {
            text: text.to_owned(),
        })
    }

    /// A new random token.
    pub fn generate() -> Self {
        let wanted = PREFIX_LEN + SECRET_LEN;
        let mut chars = String::with_capacity(wanted);
        while chars.len() < wanted {
            let mut pool = [0u8; 64];
            getrandom::fill(&mut pool).expect("the system random source");
            // Bytes of 248 and above are skipped, so that every character is equally likely.
            for b in pool.into_iter().filter(|b| *b < 248) {
                if chars.len() < wanted {
                    chars.push(char::from(ALPHABET[usize::from(b % 62)]));
                }
            }
        }
        Self {
            text: format!(
                "{TOKEN_START}{}_{}",
                &chars[..PREFIX_LEN],
                &chars[PREFIX_LEN..]
            ),
        }
    }

    pub fn prefix(&self) -> &str {
        &self.text[TOKEN_START.len()..TOKEN_START.len() + PREFIX_LEN]
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn digest(&self) -> String {
        crate::digest::sha256_hex(&self.text)
    }
}
