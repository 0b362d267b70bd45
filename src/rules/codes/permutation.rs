//! A keyed bijection of `[0, n)`: a balanced Feistel network over the smallest even number of
//! bits that covers `n`, with cycle-walking to stay inside the domain. Sequential ids go in,
//! codes that look random and cannot be enumerated from one another come out, and no two ids
//! ever share a code, so no collision check is needed.

use siphasher::sip::SipHasher13;
use std::hash::Hasher;

const ROUNDS: u32 = 8;

#[derive(Clone, Debug)]
pub struct Permutation {
    domain: u128,
    half_bits: u32,
    half_mask: u128,
    k0: u64,
    k1: u64,
}

impl Permutation {
    /// `domain` is `n`, the size of the set permuted (at least 2, at most 2^126).
    pub fn new(domain: u128, key: [u8; 16]) -> Self {
        assert!((2..=1 << 126).contains(&domain), "domain out of range");
        let bits = 128 - (domain - 1).leading_zeros();
        let half_bits = bits.div_ceil(2);
        let (k0, k1) = key.split_at(8);
        Self {
            domain,
            half_bits,
            half_mask: (1u128 << half_bits) - 1,
            k0: u64::from_le_bytes(k0.try_into().expect("8 bytes")),
            k1: u64::from_le_bytes(k1.try_into().expect("8 bytes")),
        }
    }

    pub fn permute(&self, x: u128) -> u128 {
        assert!(x < self.domain, "{x} is outside the permutation's domain");
        let mut y = self.feistel(x);
        // Cycle-walking: the Feistel network permutes [0, 2^bits); following the cycle until
        // it re-enters [0, n) yields a permutation of [0, n). At most 4 steps on average.
        while y >= self.domain {
            y = self.feistel(y);
        }
        y
    }

    pub fn invert(&self, y: u128) -> u128 {
        assert!(y < self.domain, "{y} is outside the permutation's domain");
        let mut x = self.feistel_inverse(y);
        while x >= self.domain {
            x = self.feistel_inverse(x);
        }
        x
    }

    fn round(&self, round: u32, half: u128) -> u128 {
        let mut hasher = SipHasher13::new_with_keys(self.k0, self.k1);
        hasher.write_u32(round);
        hasher.write_u128(half);
        u128::from(hasher.finish()) & self.half_mask
    }

    fn feistel(&self, x: u128) -> u128 {
        let (mut left, mut right) = (x >> self.half_bits, x & self.half_mask);
        for round in 0..ROUNDS {
            let next = left ^ self.round(round, right);
            left = right;
            right = next;
        }
        (left << self.half_bits) | right
    }

    fn feistel_inverse(&self, y: u128) -> u128 {
        let (mut left, mut right) = (y >> self.half_bits, y & self.half_mask);
        for round in (0..ROUNDS).rev() {
            let previous = right ^ self.round(round, left);
            right = left;
            left = previous;
        }
        (left << self.half_bits) | right
    }
}
