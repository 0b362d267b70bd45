//! Short codes: the base62 alphabet, the sequence and hash generators, the optional check
//! character, and the rules for custom codes.

pub mod permutation;

use crate::digest::derive_key;
use permutation::Permutation;
use sha2::{Digest, Sha256};
use std::fmt;

pub const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
pub const MAX_CODE_LEN: usize = 64;
pub const MIN_GENERATED_LEN: u8 = 4;
pub const MAX_GENERATED_LEN: u8 = 12;

/// Paths the service answers itself (or will): never a code, in any letter case.
const RESERVED: &[&str] = &[
    "admin",
    "api",
    "static",
    "healthz",
    "health",
    "metrics",
    "favicon.ico",
    "robots.txt",
    "login",
    "logout",
    "assets",
    "public",
    ".well-known",
    "sitemap.xml",
];

pub fn is_reserved(code: &str) -> bool {
    RESERVED.iter().any(|word| word.eq_ignore_ascii_case(code))
}

fn digit_value(byte: u8) -> Option<u32> {
    match byte {
        b'0'..=b'9' => Some(u32::from(byte - b'0')),
        b'A'..=b'Z' => Some(u32::from(byte - b'A') + 10),
        b'a'..=b'z' => Some(u32::from(byte - b'a') + 36),
        _ => None,
    }
}

fn is_code_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-'
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, crate::i18n::Says)]
pub enum CodeError {
    #[error("the code is empty")]
    Empty,
    #[error("the code is {len} characters long; at most {MAX_CODE_LEN} are allowed")]
    TooLong { len: usize },
    #[error(
        "the code contains {0:?}; only letters A-Z and a-z, digits 0-9, '-' and '_' are allowed"
    )]
    InvalidCharacter(char),
    #[error("'{0}' is a reserved word (a path the service uses itself); choose another code")]
    Reserved(String),
    #[error(
        "with check characters on, a {len}-character code made only of letters and digits must end in its check character ('{expected}'); use another length or add '-' or '_'"
    )]
    CheckCharacter { len: usize, expected: char },
}

/// A code that can exist: 1–64 characters of `[A-Za-z0-9_-]`, not a reserved word. Case
/// matters: `abc` and `ABC` are two links.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShortCode(Box<str>);

impl ShortCode {
    pub fn parse(input: &str) -> Result<Self, CodeError> {
        let code = Self::to_find(input)?;
        if is_reserved(input) {
            return Err(CodeError::Reserved(input.to_owned()));
        }
        Ok(code)
    }

    /// A code to look a stored link up by: what [`ShortCode::parse`] accepts, and reserved
    /// words too, which a later version may have reserved after a link got one (its link must
    /// stay reachable, to be read, disabled or deleted).
    pub fn to_find(input: &str) -> Result<Self, CodeError> {
        if input.is_empty() {
            return Err(CodeError::Empty);
        }
        let len = input.chars().count();
        if len > MAX_CODE_LEN {
            return Err(CodeError::TooLong { len });
        }
        if let Some(bad) = input
            .chars()
            .find(|c| !c.is_ascii() || !is_code_byte(*c as u8))
        {
            return Err(CodeError::InvalidCharacter(bad));
        }
        Ok(Self(input.into()))
    }

    /// Codes the generators made: known to satisfy the rules already.
    fn generated(code: String) -> Self {
        Self(code.into_boxed_str())
    }

    /// A code read back from the database: it was checked when it was stored. (Checking again
    /// would make a link unreadable if a later version reserved its code.)
    pub fn stored(code: String) -> Self {
        Self(code.into_boxed_str())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ShortCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A code reads as the text it is wherever text is wanted.
impl std::ops::Deref for ShortCode {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for ShortCode {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for ShortCode {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for ShortCode {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl From<ShortCode> for String {
    fn from(code: ShortCode) -> String {
        code.0.into_string()
    }
}

impl serde::Serialize for ShortCode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl fmt::Debug for ShortCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ShortCode({})", self.0)
    }
}

/// The shape of generated codes: `length` base62 digits, plus one check character when on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodeFormat {
    pub length: u8,
    pub check_char: bool,
}

impl CodeFormat {
    pub fn new(length: u8, check_char: bool) -> Self {
        assert!(
            (1..=MAX_GENERATED_LEN).contains(&length),
            "code length {length} outside 1..=12"
        );
        Self { length, check_char }
    }

    /// How many distinct codes of this length exist: 62^length.
    pub fn space(&self) -> u128 {
        62u128.pow(u32::from(self.length))
    }

    /// Writes `value` (below `space()`) as exactly `length` base62 digits, then the check
    /// character if on.
    pub fn encode(&self, mut value: u128) -> String {
        let len = usize::from(self.length);
        let mut digits = vec![b'0'; len];
        for slot in digits.iter_mut().rev() {
            *slot = ALPHABET[(value % 62) as usize];
            value /= 62;
        }
        debug_assert_eq!(value, 0, "value outside the code space");
        if self.check_char {
            let check = check_character(&digits);
            digits.push(check);
        }
        String::from_utf8(digits).expect("alphabet is ASCII")
    }

    /// False for a code that has the generated shape but a wrong check character: a typo or a
    /// guess, answered without a lookup.
    pub fn admits(&self, code: &ShortCode) -> bool {
        let bytes = code.as_str().as_bytes();
        if !self.check_char || bytes.len() != usize::from(self.length) + 1 {
            return true;
        }
        if !bytes.iter().all(u8::is_ascii_alphanumeric) {
            return true;
        }
        let (body, check) = bytes.split_at(bytes.len() - 1);
        check_character(body) == check[0]
    }

    /// A custom code must not look like a generated one with a wrong check character, or the
    /// redirect path would turn it away.
    pub fn check_custom(&self, code: &ShortCode) -> Result<(), CodeError> {
        if self.admits(code) {
            return Ok(());
        }
        let bytes = code.as_str().as_bytes();
        Err(CodeError::CheckCharacter {
            len: bytes.len(),
            expected: char::from(check_character(&bytes[..bytes.len() - 1])),
        })
    }
}

/// Luhn mod N over base62: catches every single-character substitution and most adjacent
/// transpositions.
pub fn check_character(body: &[u8]) -> u8 {
    let mut sum = 0u32;
    for (position, byte) in body.iter().rev().enumerate() {
        let value = digit_value(*byte).expect("base62 digit");
        let addend = if position % 2 == 0 { value * 2 } else { value };
        sum += addend / 62 + addend % 62;
    }
    ALPHABET[((62 - sum % 62) % 62) as usize]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error, crate::i18n::Says)]
#[error(
    "all {space} codes of length {length} have been issued; choose a longer code length (or raise INKLINK_CODE_LENGTH)"
)]
pub struct CodeSpaceExhausted {
    pub length: u8,
    pub space: u128,
}

/// Turns allocator ids and URLs into codes, keyed by the service secret.
#[derive(Clone, Debug)]
pub struct CodeGenerator {
    format: CodeFormat,
    permutation: Permutation,
    hash_key: [u8; 32],
}

impl CodeGenerator {
    pub fn new(format: CodeFormat, secret: &[u8]) -> Self {
        let permutation_key = derive_key(secret, b"inklink/code-permutation");
        let mut key16 = [0u8; 16];
        key16.copy_from_slice(&permutation_key[..16]);
        Self {
            format,
            permutation: Permutation::new(format.space(), key16),
            hash_key: derive_key(secret, b"inklink/code-hash"),
        }
    }

    pub fn format(&self) -> CodeFormat {
        self.format
    }

    /// The sequence strategy: id → code. `Ok(None)` when the code would be a reserved word
    /// (the caller moves on to the next id).
    pub fn code_for_id(&self, id: u64) -> Result<Option<ShortCode>, CodeSpaceExhausted> {
        let id = u128::from(id);
        if id >= self.format.space() {
            return Err(CodeSpaceExhausted {
                length: self.format.length,
                space: self.format.space(),
            });
        }
        let code = self.format.encode(self.permutation.permute(id));
        Ok((!is_reserved(&code)).then(|| ShortCode::generated(code)))
    }

    /// The id a generated code came from, if it has the generated shape. For tests and
    /// diagnostics.
    pub fn id_for_code(&self, code: &str) -> Option<u64> {
        let bytes = code.as_bytes();
        let len = usize::from(self.format.length);
        let body = match (self.format.check_char, bytes.len()) {
            (false, n) if n == len => bytes,
            (true, n) if n == len + 1 => &bytes[..len],
            _ => return None,
        };
        let mut value = 0u128;
        for byte in body {
            value = value * 62 + u128::from(digit_value(*byte)?);
        }
        u64::try_from(self.permutation.invert(value)).ok()
    }

    /// The hash strategy: an endless, deterministic sequence of candidate codes for a URL.
    /// Each candidate is a keyed digest of (salt, URL) reduced with a true modulo; the salt
    /// grows with every candidate, so a taken candidate is followed by a fresh one rather than
    /// by failure.
    pub fn hash_candidates<'a>(&'a self, url: &'a str) -> impl Iterator<Item = ShortCode> + 'a {
        (0u32..).filter_map(move |salt| {
            let mut hasher = Sha256::new();
            hasher.update(self.hash_key);
            hasher.update(salt.to_le_bytes());
            hasher.update(url.as_bytes());
            let digest = hasher.finalize();
            let wide = u128::from_le_bytes(digest[..16].try_into().expect("16 bytes"));
            let code = self.format.encode(wide % self.format.space());
            (!is_reserved(&code)).then(|| ShortCode::generated(code))
        })
    }
}
