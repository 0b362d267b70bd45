//! Hashing helpers shared by codes, secrets, sessions and links, and the hex form of
//! 128-bit values (event keys, visitors) that the click pipeline writes and reads.

use sha2::{Digest, Sha256};

/// Whether `a` equals `b`, in a time that does not tell how much of them matched (tokens).
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

/// A 128-bit value (an event key, a visitor, an IPv6 address) as 32 lower-case hex digits,
/// without the formatting machinery: the click path writes two per click.
pub fn hex128(value: u128) -> [u8; 32] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 32];
    for (i, digit) in out.iter_mut().enumerate() {
        *digit = DIGITS[(value >> (124 - 4 * i) & 0xf) as usize];
    }
    out
}

/// 32 hex digits (either case) as the value they spell; `None` for anything else.
pub fn from_hex128(digits: &[u8]) -> Option<u128> {
    if digits.len() != 32 {
        return None;
    }
    digits.iter().try_fold(0u128, |value, &c| {
        Some(value << 4 | u128::from(hex_digit(c)?))
    })
}

/// Hex digits (either case, an even number of them) as the bytes they spell.
pub fn from_hex(digits: &[u8]) -> Option<Vec<u8>> {
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    let mut out = Vec::with_capacity(digits.len() / 2);
    for pair in digits.chunks_exact(2) {
        out.push(hex_digit(pair[0])? << 4 | hex_digit(pair[1])?);
    }
    Some(out)
}

fn hex_digit(c: u8) -> Option<u8> {
    // What each byte is worth as a hex digit (0xff: not one); exports read three hex values
    // a click.
    const VALUES: [u8; 256] = {
        let mut values = [0xff; 256];
        let mut i = 0;
        while i < 10 {
            values[b'0' as usize + i] = i as u8;
            i += 1;
        }
        let mut i = 0;
        while i < 6 {
            values[b'a' as usize + i] = 10 + i as u8;
            values[b'A' as usize + i] = 10 + i as u8;
            i += 1;
        }
        values
    };
    match VALUES[usize::from(c)] {
        0xff => None,
        value => Some(value),
    }
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

/// HMAC-SHA256 (RFC 2104) of `parts`, read as one message, under `key`. Written out here
/// because the `hmac` crate this build already has is of another `digest` generation than
/// `sha2`; the RFC 4231 vectors test it.
pub fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(block.map(|b| b ^ 0x36));
    for part in parts {
        inner.update(part);
    }
    let mut outer = Sha256::new();
    outer.update(block.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_sha256_meets_rfc_4231() {
        // Test cases 2 and 6 (a short key, and one longer than a block).
        assert_eq!(
            hex(&hmac_sha256(
                b"Jefe",
                &[b"what do ya want ", b"for nothing?"]
            )),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_eq!(
            hex(&hmac_sha256(
                &[0xaa; 131],
                &[b"Test Using Larger Than Block-Size Key - Hash Key First"]
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }
}
