//! Recipients' phone numbers: read in any common spelling, kept in E.164 (`+8613812341234`),
//! shown masked.

use std::fmt;

/// E.164 allows at most 15 digits after the `+`.
const MAX_DIGITS: usize = 15;
/// The shortest numbers in use (some small countries) have 7 digits with their country code.
const MIN_DIGITS: usize = 7;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, crate::i18n::Says)]
pub enum PhoneError {
    #[error("the phone number is empty")]
    Empty,
    #[error(
        "the phone number contains {0:?}; use digits, with an optional leading + and spaces or dashes"
    )]
    InvalidCharacter(char),
    #[error("the phone number has {0} digits; a number has 7 to 15 with its country code")]
    Length(usize),
    #[error("{0} is not a mainland China mobile number (11 digits starting with 13 to 19)")]
    NotChinaMobile(String),
}

/// A phone number in E.164: `+`, the country code and the number, digits only.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Phone(String);

impl Phone {
    /// Reads `+86 138-1234-1234`, `0086 13812341234`, `8613812341234` or, with the default
    /// country code `country`, `13812341234`. A number of mainland China must be a mobile
    /// number: SMS go nowhere else.
    pub fn parse(input: &str, country: u16) -> Result<Self, PhoneError> {
        let input = input.trim();
        if input.is_empty() {
            return Err(PhoneError::Empty);
        }
        let mut digits = String::with_capacity(16);
        let mut plus = false;
        for c in input.chars() {
            match c {
                '0'..='9' => digits.push(c),
                '+' if digits.is_empty() && !plus => plus = true,
                ' ' | '-' | '(' | ')' | '.' | '\u{a0}' => {}
                other => return Err(PhoneError::InvalidCharacter(other)),
            }
        }
        if digits.is_empty() {
            return Err(PhoneError::Empty);
        }
        let country = country.to_string();
        let full = if plus {
            digits
        } else if let Some(rest) = digits.strip_prefix("00") {
            rest.to_owned()
        } else if country == "86" && digits.len() == 13 && digits.starts_with("861") {
            digits
        } else if country == "86" && digits.len() == 11 && digits.starts_with('1') {
            format!("86{digits}")
        } else {
            // A national number: its trunk prefix (a leading 0) is not dialled from abroad.
            format!("{country}{}", digits.strip_prefix('0').unwrap_or(&digits))
        };
        if !(MIN_DIGITS..=MAX_DIGITS).contains(&full.len()) {
            return Err(PhoneError::Length(full.len()));
        }
        if let Some(national) = full.strip_prefix("86") {
            let bytes = national.as_bytes();
            if bytes.len() != 11 || bytes[0] != b'1' || !(b'3'..=b'9').contains(&bytes[1]) {
                return Err(PhoneError::NotChinaMobile(format!("+{full}")));
            }
        }
        Ok(Self(format!("+{full}")))
    }

    /// A number as stored (already E.164).
    pub fn stored(value: String) -> Self {
        Self(value)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The number as people write it at home for mainland China (`13812341234`), else E.164.
    pub fn national(&self) -> &str {
        self.0.strip_prefix("+86").unwrap_or(&self.0)
    }

    /// The number with its middle hidden: `138****1234`, `+4477****0123`.
    pub fn masked(&self) -> String {
        let shown = self.national();
        let chars: Vec<char> = shown.chars().collect();
        let (head, tail) = match chars.len() {
            n if n >= 11 => (n - 8, 4),
            n => (
                n.saturating_sub(4).min(3),
                n.min(4).min(n.saturating_sub(3)),
            ),
        };
        let hidden = chars.len() - head - tail;
        let mut out: String = chars[..head].iter().collect();
        out.push_str(&"*".repeat(hidden));
        out.extend(&chars[chars.len() - tail..]);
        out
    }
}

impl fmt::Display for Phone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Phone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Personal data stays out of logs and panics.
        write!(f, "Phone({})", self.masked())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_of_one_number_are_one_number() {
        for input in [
            "13812341234",
            "+86 138 1234 1234",
            "0086-138-1234-1234",
            "8613812341234",
            " (+86)13812341234 ",
        ] {
            let phone = Phone::parse(input, 86).unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(phone.as_str(), "+8613812341234", "{input}");
        }
        assert_eq!(
            Phone::parse("13812341234", 86).unwrap().masked(),
            "138****1234"
        );
        assert_eq!(
            Phone::parse("07700 900123", 44).unwrap().as_str(),
            "+447700900123"
        );
        assert_eq!(
            Phone::parse("+447700900123", 86).unwrap().masked(),
            "+4477****0123"
        );
    }

    #[test]
    fn bad_numbers_say_why() {
        assert_eq!(Phone::parse(" ", 86), Err(PhoneError::Empty));
        assert_eq!(
            Phone::parse("138x", 86),
            Err(PhoneError::InvalidCharacter('x'))
        );
        assert_eq!(
            Phone::parse("1381234123", 86),
            Err(PhoneError::NotChinaMobile("+861381234123".into()))
        );
        assert_eq!(Phone::parse("+1234", 86), Err(PhoneError::Length(4)));
        assert!(matches!(
            Phone::parse("12812341234", 86),
            Err(PhoneError::NotChinaMobile(_))
        ));
    }
}
