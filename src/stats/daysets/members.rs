//! A set's members as a turn adds them: held inline while few.

use roaring::RoaringBitmap;

/// Numbers a set held inline before it becomes a bitmap.
const FEW: usize = 4;

/// The members of a set. A burst spread over many links makes most of a turn's sets new
/// ones of a visitor or two: held inline, such a set costs no allocation, where an empty
/// bitmap given its first member allocates about 150 bytes (bench/README.md, "What the
/// server holds at full speed").
pub(super) enum Members {
    Few { len: u8, numbers: [u32; FEW] },
    Many(RoaringBitmap),
}

impl Default for Members {
    fn default() -> Self {
        Members::Few {
            len: 0,
            numbers: [0; FEW],
        }
    }
}

impl Members {
    /// Adds `number`; true when it was not there.
    pub(super) fn insert(&mut self, number: u32) -> bool {
        match self {
            Members::Few { len, numbers } => {
                if numbers[..usize::from(*len)].contains(&number) {
                    return false;
                }
                if usize::from(*len) < FEW {
                    numbers[usize::from(*len)] = number;
                    *len += 1;
                } else {
                    let mut set: RoaringBitmap = numbers.iter().copied().collect();
                    set.insert(number);
                    *self = Members::Many(set);
                }
                true
            }
            Members::Many(set) => set.insert(number),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        match self {
            Members::Few { len, .. } => *len == 0,
            Members::Many(set) => set.is_empty(),
        }
    }

    pub(super) fn into_bitmap(self) -> RoaringBitmap {
        match self {
            Members::Few { len, numbers } => numbers[..usize::from(len)].iter().copied().collect(),
            Members::Many(set) => set,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_held_inline_answers_as_a_bitmap_would() {
        let numbers = [7, 3, 7, 1 << 20, 3, 0, 9, 9, 1 << 31, 0, 12];
        let mut members = Members::default();
        let mut bitmap = RoaringBitmap::new();
        for number in numbers {
            assert_eq!(members.insert(number), bitmap.insert(number), "{number}");
        }
        assert!(matches!(members, Members::Many(_)));
        assert_eq!(members.into_bitmap(), bitmap);

        let mut few = Members::default();
        assert!(few.insert(5) && few.insert(2) && !few.insert(5));
        assert!(matches!(few, Members::Few { len: 2, .. }));
        assert_eq!(few.into_bitmap(), RoaringBitmap::from_iter([2, 5]));
    }
}
