//! Hashing helpers shared by codes, secrets, sessions and links.

use sha2::{Digest, Sha256};

pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
}

/// SHA-256 of `text`, as 64 lower-case hex digits.
pub fn sha256_hex(text: &str) -> String {
    hex(&Sha256::digest(text.as_bytes()))
}

/// A key for one purpose, derived from the service secret, so that a key leaking from one use
/// (say, the code permutation) reveals nothing about another (the session cookie).
pub fn derive_key(secret: &[u8], purpose: &[u8]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(purpose);
    hasher.update([0]);
    hasher.update(secret);
    hasher.finalize().into()
}
