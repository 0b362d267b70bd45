//! Time-based one-time passwords (RFC 6238, as every authenticator app makes them: HMAC-SHA1,
//! 30-second steps, 6 digits), and the one-time recovery codes that stand in for a lost phone.

use hmac::{Hmac, KeyInit, Mac};
use std::fmt;

/// Seconds a code is valid for.
pub const STEP_SECONDS: i64 = 30;
/// Steps either side of now a code is accepted from: a phone's clock off by up to 30 s.
pub const SKEW_STEPS: i64 = 1;
/// Recovery codes made at enrolment.
pub const RECOVERY_CODES: usize = 10;
const DIGITS: u32 = 6;
const SECRET_BYTES: usize = 20;
/// RFC 4648 base32, as authenticator apps read secrets.
const BASE32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
/// Recovery codes avoid letters read as others (0/O, 1/I/L).
const RECOVERY_ALPHABET: &[u8; 31] = b"abcdefghjkmnpqrstuvwxyz23456789";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, crate::i18n::Says)]
pub enum CodeError {
    #[error("enter the 6-digit code from your authenticator app, or a recovery code")]
    Empty,
    #[error(
        "'{0}' is neither a 6-digit code nor a recovery code (10 letters and digits, as xxxxx-xxxxx)"
    )]
    Malformed(String),
}

/// What a person typed at the second step: a code from the app, or a recovery code.
#[derive(Clone, PartialEq, Eq)]
pub enum SecondFactor {
    Code(u32),
    Recovery(String),
}

impl SecondFactor {
    /// Spaces and dashes are ignored (`123 456`, `abcde-fghij`); letters in any case.
    pub fn parse(input: &str) -> Result<Self, CodeError> {
        let compact: String = input
            .chars()
            .filter(|c| !c.is_whitespace() && *c != '-')
            .collect::<String>()
            .to_ascii_lowercase();
        if compact.is_empty() {
            return Err(CodeError::Empty);
        }
        let malformed = || CodeError::Malformed(input.trim().chars().take(40).collect());
        if compact.len() == DIGITS as usize && compact.bytes().all(|b| b.is_ascii_digit()) {
            return compact.parse().map(Self::Code).map_err(|_| malformed());
        }
        if compact.len() == 10 && compact.bytes().all(|b| RECOVERY_ALPHABET.contains(&b)) {
            return Ok(Self::Recovery(compact));
        }
        Err(malformed())
    }
}

impl fmt::Debug for SecondFactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never in logs.
        f.write_str(match self {
            Self::Code(_) => "SecondFactor::Code(..)",
            Self::Recovery(_) => "SecondFactor::Recovery(..)",
        })
    }
}

/// An authenticator's shared secret.
#[derive(Clone, PartialEq, Eq)]
pub struct TotpSecret([u8; SECRET_BYTES]);

impl TotpSecret {
    pub fn random() -> Self {
        let mut bytes = [0u8; SECRET_BYTES];
        getrandom::fill(&mut bytes).expect("the system's random source");
        Self(bytes)
    }

    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        bytes.try_into().ok().map(Self)
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Base32 without padding, as people type it into an app that cannot scan.
    pub fn base32(&self) -> String {
        let mut out = String::with_capacity(32);
        let (mut buffer, mut bits) = (0u32, 0u32);
        for byte in self.0 {
            buffer = (buffer << 8) | u32::from(byte);
            bits += 8;
            while bits >= 5 {
                bits -= 5;
                out.push(BASE32[((buffer >> bits) & 31) as usize] as char);
            }
        }
        if bits > 0 {
            out.push(BASE32[((buffer << (5 - bits)) & 31) as usize] as char);
        }
        out
    }

    /// Reads [`TotpSecret::base32`] back (any case, spaces ignored).
    pub fn from_base32(text: &str) -> Option<Self> {
        let mut bytes = Vec::with_capacity(SECRET_BYTES);
        let (mut buffer, mut bits) = (0u32, 0u32);
        for c in text.chars().filter(|c| !c.is_whitespace()) {
            let value = BASE32
                .iter()
                .position(|b| *b as char == c.to_ascii_uppercase())? as u32;
            buffer = (buffer << 5) | value;
            bits += 5;
            if bits >= 8 {
                bits -= 8;
                bytes.push((buffer >> bits) as u8);
            }
        }
        Self::from_bytes(&bytes)
    }

    /// The `otpauth://` URI an authenticator app scans from the QR code.
    pub fn uri(&self, issuer: &str, account: &str) -> String {
        let encode = |text: &str| -> String {
            text.bytes()
                .map(|b| match b {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                        (b as char).to_string()
                    }
                    _ => format!("%{b:02X}"),
                })
                .collect()
        };
        format!(
            "otpauth://totp/{}:{}?secret={}&issuer={}&algorithm=SHA1&digits={DIGITS}&period={STEP_SECONDS}",
            encode(issuer),
            encode(account),
            self.base32(),
            encode(issuer)
        )
    }

    /// The code of time step `step` (seconds since 1970 ÷ 30).
    pub fn code_at(&self, step: i64) -> u32 {
        let mut mac =
            <Hmac<sha1::Sha1> as KeyInit>::new_from_slice(&self.0).expect("any key length");
        mac.update(&(step as u64).to_be_bytes());
        let hash = mac.finalize().into_bytes();
        let offset = (hash[hash.len() - 1] & 0x0f) as usize;
        let value = u32::from_be_bytes([
            hash[offset] & 0x7f,
            hash[offset + 1],
            hash[offset + 2],
            hash[offset + 3],
        ]);
        value % 10u32.pow(DIGITS)
    }

    /// The step whose code `code` is, within [`SKEW_STEPS`] of `now` (seconds since 1970).
    pub fn matching_step(&self, code: u32, now: i64) -> Option<i64> {
        let current = now.div_euclid(STEP_SECONDS);
        (current - SKEW_STEPS..=current + SKEW_STEPS).find(|step| {
            // Compared in constant time: the digits of a near miss say nothing.
            let expected = self.code_at(*step).to_be_bytes();
            let given = code.to_be_bytes();
            expected
                .iter()
                .zip(given)
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
        })
    }
}

impl fmt::Debug for TotpSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TotpSecret(..)")
    }
}

/// A new recovery code, `xxxxx-xxxxx` (50 random bits).
pub fn new_recovery_code() -> String {
    let mut bytes = [0u8; 10];
    getrandom::fill(&mut bytes).expect("the system's random source");
    let letters: String = bytes
        .iter()
        .map(|b| RECOVERY_ALPHABET[*b as usize % RECOVERY_ALPHABET.len()] as char)
        .collect();
    format!("{}-{}", &letters[..5], &letters[5..])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6238, appendix B (SHA-1, the 20-byte ASCII secret "12345678901234567890"; the
    /// RFC's codes have 8 digits, whose last 6 are ours).
    #[test]
    fn codes_are_those_of_rfc_6238() {
        let secret = TotpSecret::from_bytes(b"12345678901234567890").unwrap();
        for (time, eight_digits) in [
            (59, 94287082),
            (1111111109, 7081804),
            (1111111111, 14050471),
            (1234567890, 89005924),
            (2000000000, 69279037),
            (20000000000, 65353130),
        ] {
            assert_eq!(
                secret.code_at(time / STEP_SECONDS),
                eight_digits % 1_000_000,
                "{time}"
            );
        }
        assert_eq!(secret.base32(), "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ");
        assert_eq!(
            TotpSecret::from_base32("gezd gnbv gy3t qojq gezd gnbv gy3t qojq"),
            Some(secret)
        );
    }
}
