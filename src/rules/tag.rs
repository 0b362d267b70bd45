//! Tags: the campaigns a link belongs to.

use std::fmt;

pub const MAX_TAG_CHARS: usize = 32;
pub const MAX_TAGS_PER_LINK: usize = 10;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, crate::i18n::Says)]
pub enum TagError {
    #[error("a tag is empty")]
    Empty,
    #[error("the tag '{0}' is longer than {MAX_TAG_CHARS} characters")]
    TooLong(String),
    #[error(
        "the tag '{0}' contains {1:?}; tags are separated by commas and cannot contain , ; | or control characters"
    )]
    InvalidCharacter(String, char),
    #[error("a link has at most {MAX_TAGS_PER_LINK} tags")]
    TooMany,
    #[error("the tag '{0}' is only dots; a tag needs at least one other character")]
    OnlyDots(String),
}

/// A tag: 1–32 characters, no separators, letters in lower case (so that `Spring` and
/// `spring` are one campaign).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tag(Box<str>);

impl Tag {
    pub fn parse(input: &str) -> Result<Self, TagError> {
        let tag = input.trim();
        if tag.is_empty() {
            return Err(TagError::Empty);
        }
        if tag.chars().count() > MAX_TAG_CHARS {
            return Err(TagError::TooLong(tag.to_owned()));
        }
        if let Some(bad) = tag
            .chars()
            .find(|c| c.is_control() || matches!(c, ',' | ';' | '|'))
        {
            return Err(TagError::InvalidCharacter(tag.to_owned(), bad));
        }
        // `.` and `..` cannot be a segment of a URL's path (browsers resolve them even
        // percent-encoded), and the tag's pages are addressed by it.
        if tag.chars().all(|c| c == '.') {
            return Err(TagError::OnlyDots(tag.to_owned()));
        }
        Ok(Self(tag.to_lowercase().into_boxed_str()))
    }

    /// Tags separated by commas, semicolons, `|` or line breaks; repeats count once.
    pub fn parse_list(input: &str) -> Result<Vec<Self>, TagError> {
        let mut tags: Vec<Self> = Vec::new();
        for part in input
            .split([',', ';', '|', '\n', '，'])
            .filter(|p| !p.trim().is_empty())
        {
            let tag = Self::parse(part)?;
            if !tags.contains(&tag) {
                tags.push(tag);
            }
        }
        if tags.len() > MAX_TAGS_PER_LINK {
            return Err(TagError::TooMany);
        }
        Ok(tags)
    }

    /// Tags given one by one (the API's array, repeated CLI flags).
    pub fn parse_each<'a>(
        inputs: impl IntoIterator<Item = &'a str>,
    ) -> Result<Vec<Self>, TagError> {
        let mut tags: Vec<Self> = Vec::new();
        for input in inputs {
            let tag = Self::parse(input)?;
            if !tags.contains(&tag) {
                tags.push(tag);
            }
        }
        if tags.len() > MAX_TAGS_PER_LINK {
            return Err(TagError::TooMany);
        }
        Ok(tags)
    }

    /// A stored tag: it passed [`Tag::parse`] when it was stored.
    pub fn stored(text: String) -> Self {
        Self(text.into_boxed_str())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tag({})", self.0)
    }
}
