//! How many SMS segments a text costs, the way phones and carriers count them.
//!
//! - GSM-7, when every character is in the GSM 03.38 alphabet: 160 septets in a single
//!   message, 153 per part of a longer one; characters of the extension table (`^ { } \ [ ~ ]
//!   | €` and form feed) take two septets, and a pair is never split across parts.
//! - UCS-2 otherwise: 70 UTF-16 units in a single message, 67 per part; a character outside
//!   the Basic Multilingual Plane (most emoji) takes two, never split across parts.
//! - The mainland-China carrier rule: every character counts one (two outside the BMP),
//!   the 【signature】 included, 70 in a single message, 67 per part, whatever the alphabet.

use crate::i18n::Text;
use std::fmt;

/// The placeholder an operator writes where the short link goes.
pub const LINK_PLACEHOLDER: &str = "{link}";
/// The longest text the composer takes.
pub const MAX_MESSAGE_CHARS: usize = 2000;

const GSM_BASIC: &str = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà";
const GSM_EXTENSION: &str = "\u{c}^{}\\[~]|€";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Gsm7,
    Ucs2,
    /// Counted by the mainland-China carriers' rule.
    China,
}

impl Encoding {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Gsm7 => "GSM-7",
            Self::Ucs2 => "UCS-2",
            Self::China => "China",
        }
    }

    /// Its name as the UI shows it: the encodings' own names, and "China" in the reader's
    /// language.
    pub fn words(self) -> Text {
        match self {
            Self::Gsm7 => t!("GSM-7"),
            Self::Ucs2 => t!("UCS-2"),
            Self::China => t!("China"),
        }
    }

    /// Units in a single message, and per part of a longer one.
    pub fn capacity(self) -> (usize, usize) {
        match self {
            Self::Gsm7 => (160, 153),
            Self::Ucs2 | Self::China => (70, 67),
        }
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which rule counts the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CountRule {
    /// GSM-7 when the text allows it, else UCS-2 (the GSM standard, as phones count).
    #[default]
    Standard,
    /// The mainland-China carriers' rule.
    China,
}

impl CountRule {
    pub fn parse(input: &str) -> Option<Self> {
        match input.trim().to_ascii_lowercase().as_str() {
            "" | "standard" | "gsm" => Some(Self::Standard),
            "china" | "cn" => Some(Self::China),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Standard => "standard",
            Self::China => "china",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmsCount {
    pub encoding: Encoding,
    /// Units counted: septets, UTF-16 units or carrier characters.
    pub units: usize,
    pub segments: usize,
    /// Units a segment holds in this message (the single-message figure when it fits one).
    pub per_segment: usize,
    /// Units left in the last segment.
    pub remaining: usize,
}

fn gsm_units(c: char) -> Option<usize> {
    if GSM_BASIC.contains(c) {
        Some(1)
    } else if GSM_EXTENSION.contains(c) {
        Some(2)
    } else {
        None
    }
}

/// The first control character of a message's text that no SMS should carry (a line break is
/// text; a NUL, a bell, an escape or a tab pasted from elsewhere is not).
pub fn control_character(text: &str) -> Option<char> {
    text.chars()
        .find(|c| c.is_control() && !matches!(c, '\n' | '\r'))
}

/// The segments `text` costs under `rule`.
pub fn count(text: &str, rule: CountRule) -> SmsCount {
    let gsm: Option<Vec<usize>> = match rule {
        CountRule::Standard => text.chars().map(gsm_units).collect(),
        CountRule::China => None,
    };
    let (encoding, units): (Encoding, Vec<usize>) = match gsm {
        Some(units) => (Encoding::Gsm7, units),
        None => (
            match rule {
                CountRule::Standard => Encoding::Ucs2,
                CountRule::China => Encoding::China,
            },
            text.chars().map(char::len_utf16).collect(),
        ),
    };
    let total: usize = units.iter().sum();
    let (single, part) = encoding.capacity();
    if total <= single {
        return SmsCount {
            encoding,
            units: total,
            segments: 1,
            per_segment: single,
            remaining: single - total,
        };
    }
    // Fill parts greedily: a character's units are never split across two parts.
    let mut segments = 1;
    let mut used = 0;
    for unit in units {
        if used + unit > part {
            segments += 1;
            used = 0;
        }
        used += unit;
    }
    SmsCount {
        encoding,
        units: total,
        segments,
        per_segment: part,
        remaining: part - used,
    }
}

/// Whether a phone's SMS app would likely read `next`, written straight after a link, as part
/// of the link: anything but white space and the ASCII punctuation that autolinkers leave
/// out (full-width punctuation and CJK text are taken in).
pub fn joins_link(next: char) -> bool {
    !(next.is_whitespace() || matches!(next, '.' | ',' | '!' | ')' | ';' | ':' | '"' | '\''))
}
