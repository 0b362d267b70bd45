//! A message a person reads, kept as its structure until it is shown: a text of the catalog and
//! its values, each value data (a code, a tag, a name, a URL: shown as it is in every language),
//! a word of the UI (translated by its text) or a message itself. Shown in the reader's
//! language by putting the values into the text's translation: nothing is parsed back out of a
//! finished sentence, so nobody's link `Edit` or tag `Disabled` can ever be taken for a word.
//!
//! Messages that wait for the next page (flashes) are stored in the session as this structure
//! and drawn in the language of whoever reads them.

use super::{Lang, Text};
use serde::{Deserialize, Serialize};

/// A value of a message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Value {
    /// What a person typed or the system named: shown as it is.
    Data(String),
    /// A word of the UI (a role, a status): translated.
    Word(Text),
    /// A message inside the message (an error's reason).
    Message(Box<Message>),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Message {
    /// A text of the catalog with its values, by name (`{code}`), or in order for `{}`
    /// (named "").
    Text {
        text: Text,
        values: Vec<(String, Value)>,
        /// The text is a format string (an error's `#[error]`): `{{` and `}}` are braces.
        #[serde(default)]
        formatted: bool,
    },
    /// Messages one after the other, as one sentence of parts (`3 receipts recorded; …`).
    Parts(Vec<Message>),
    /// Data alone (a time, a name): the same in every language.
    Plain(String),
}

impl Message {
    /// `text`, with values to come.
    pub fn new(text: Text) -> Self {
        Self::Text {
            text,
            values: Vec::new(),
            formatted: false,
        }
    }

    /// `text` as a format string (`{{` for a brace), as `#[derive(Says)]` makes from an
    /// error's `#[error]`.
    pub fn formatted(text: Text) -> Self {
        Self::Text {
            text,
            values: Vec::new(),
            formatted: true,
        }
    }

    /// The value `{name}`, of any kind.
    pub fn value(self, name: &str, value: Value) -> Self {
        self.with(name, value)
    }

    /// Data shown as it is in every language (a time where a cell could also say "never").
    pub fn plain(data: impl Into<String>) -> Self {
        Self::Plain(data.into())
    }

    fn with(mut self, name: &str, value: Value) -> Self {
        match &mut self {
            Self::Text { values, .. } => values.push((name.to_owned(), value)),
            // Only a text has places for values: giving one to anything else is a mistake.
            _ => debug_assert!(false, "a value for {name} given to {self:?}"),
        }
        self
    }

    /// The value `{name}` (or, with "", the next `{}`): data, shown as it is.
    pub fn data(self, name: &str, value: impl std::fmt::Display) -> Self {
        self.with(name, Value::Data(value.to_string()))
    }

    /// The value `{name}`: a word of the UI, translated.
    pub fn word(self, name: &str, word: Text) -> Self {
        self.with(name, Value::Word(word))
    }

    /// The value `{name}`: a message, shown in the same language.
    pub fn message(self, name: &str, message: Message) -> Self {
        self.with(name, Value::Message(Box::new(message)))
    }

    /// The message in `lang`.
    pub fn show(&self, lang: Lang) -> String {
        match self {
            Self::Plain(data) => data.clone(),
            Self::Parts(parts) => parts
                .iter()
                .map(|part| part.show(lang))
                .collect::<Vec<_>>()
                .join(lang.t(t!("; "))),
            Self::Text {
                text,
                values,
                formatted,
            } => {
                let shown: Vec<(&str, String)> = values
                    .iter()
                    .map(|(name, value)| {
                        let value = match value {
                            Value::Data(data) => data.clone(),
                            Value::Word(word) => lang.t(*word).to_owned(),
                            Value::Message(message) => message.show(lang),
                        };
                        (name.as_str(), value)
                    })
                    .collect();
                put_in(lang.t(*text), &shown, *formatted)
            }
        }
    }
}

/// `pattern` with `{name}` (or `{name:spec}`) replaced by the value of that name, each `{}` by
/// the next value named "" and `{0}`, `{1}` by the value of that name or else those values by
/// number (a translation may put them in another order), in one pass: a value is never
/// searched for placeholders (it may hold `{1}` itself). A placeholder without a value stays
/// as it is. In a format string, `{{` and `}}` are braces.
pub(super) fn put_in(pattern: &str, values: &[(&str, impl AsRef<str>)], formatted: bool) -> String {
    let in_order: Vec<&str> = values
        .iter()
        .filter(|(name, _)| name.is_empty())
        .map(|(_, value)| value.as_ref())
        .collect();
    let named = |name: &str| {
        values
            .iter()
            .find(|(known, _)| *known == name)
            .map(|(_, value)| value.as_ref())
    };
    let mut next = 0;
    let mut out = String::with_capacity(pattern.len() + 32);
    let mut rest = pattern;
    while let Some(open) = rest.find(['{', '}']) {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        if rest[open..].starts_with('}') {
            out.push('}');
            rest = if formatted {
                after.strip_prefix('}').unwrap_or(after)
            } else {
                after
            };
            continue;
        }
        if formatted && let Some(tail) = after.strip_prefix('{') {
            out.push('{');
            rest = tail;
            continue;
        }
        let found = after.find('}').and_then(|close| {
            let name = after[..close].split(':').next().unwrap_or("");
            let value = if name.is_empty() {
                next += 1;
                in_order.get(next - 1).copied()
            } else if let Some(value) = named(name) {
                Some(value)
            } else {
                name.parse::<usize>()
                    .ok()
                    .and_then(|number| in_order.get(number).copied())
            };
            Some((close, value?))
        });
        match found {
            Some((close, value)) => {
                out.push_str(value);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// What a page shows in the reader's language: a [`Message`], however many references deep
/// (a template's loop hands out references).
pub trait Shown {
    fn shown(&self, lang: Lang) -> String;
}

impl Shown for Message {
    fn shown(&self, lang: Lang) -> String {
        self.show(lang)
    }
}

impl<T: Shown + ?Sized> Shown for &T {
    fn shown(&self, lang: Lang) -> String {
        (**self).shown(lang)
    }
}

/// In English: for logs, and for whoever reads `Display` (the CLI, the API).
impl std::fmt::Display for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.show(Lang::En))
    }
}

impl Says for Message {
    fn says(&self) -> Message {
        self.clone()
    }
}

/// What a person reads when something went wrong, as a [`Message`]: derived from the
/// `#[error]` of an error (`#[derive(Says)]`), so the English is written once and checked
/// against the catalog when the code is compiled.
pub trait Says {
    fn says(&self) -> Message;
}

/// A field of an error, for `#[derive(Says)]`: its message when it is an error that says one,
/// else its `Display` as data (chosen by which of the traits below applies first).
#[doc(hidden)]
pub struct Inner<'a, T: ?Sized>(pub &'a T);

#[doc(hidden)]
pub trait AsMessage {
    fn value(&self) -> Value;
    fn message(&self) -> Message;
}

impl<T: Says + ?Sized> AsMessage for Inner<'_, T> {
    fn value(&self) -> Value {
        Value::Message(Box::new(self.0.says()))
    }

    fn message(&self) -> Message {
        self.0.says()
    }
}

/// Data has no `message`: an error whose whole text is a field (`"{0}"`) must pass on an
/// error that says one, never an English sentence made elsewhere.
#[doc(hidden)]
pub trait AsData {
    fn value(&self) -> Value;
}

impl<T: std::fmt::Display + ?Sized> AsData for &Inner<'_, T> {
    fn value(&self) -> Value {
        Value::Data(self.0.to_string())
    }
}

impl Serialize for Text {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.english())
    }
}

impl<'de> Deserialize<'de> for Text {
    /// Only a text of this version's catalog: a message stored by another version with a text
    /// this one does not have is refused (a flash is then not shown, never shown wrong).
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let english = String::deserialize(deserializer)?;
        Text::find(&english)
            .ok_or_else(|| serde::de::Error::custom(format!("no text {english:?} in the catalog")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_put_into_the_translation_and_data_stays_as_typed() {
        // A link whose code is a word of the UI, and a role that is one.
        let disabled = Message::new(t!("Disabled {}")).data("", "Edit");
        assert_eq!(disabled.show(Lang::ZhCn), "已停用 Edit");
        assert_eq!(disabled.show(Lang::En), "Disabled Edit");
        let added = Message::new(t!("Added {} ({})"))
            .data("", "operator")
            .word("", t!("operator"));
        assert_eq!(added.show(Lang::ZhCn), "已添加 operator（运营）");
        assert_eq!(added.show(Lang::En), "Added operator (operator)");
        // A value holding braces is not read as a placeholder.
        let saved = Message::new(t!("Saved the UTM preset of {tag}")).data("tag", "{tag}");
        assert_eq!(saved.show(Lang::ZhCn), "已保存 {tag} 的 UTM 预设");
        // Parts, and a message inside.
        let parts = Message::Parts(vec![
            Message::new(t!("{} receipts recorded")).data("", 3),
            Message::new(t!("line {line}: {reason}"))
                .data("line", 2)
                .message("reason", Message::new(t!("the file is empty"))),
        ]);
        assert_eq!(
            parts.show(Lang::En),
            "3 receipts recorded; line 2: the file is empty"
        );
        assert_eq!(parts.show(Lang::ZhCn), "已记录 3 条回执；第 2 行：文件为空");
        // A translation that puts the values in another order.
        let changed = Message::new(t!("{} of {} selected links changed"))
            .data("", 3)
            .data("", 4);
        assert_eq!(changed.show(Lang::ZhCn), "所选 4 个链接中已更改 3 个");
        assert_eq!(changed.show(Lang::En), "3 of 4 selected links changed");
        // Kept in the session and read back the same.
        let stored = serde_json::to_string(&added).unwrap();
        assert_eq!(serde_json::from_str::<Message>(&stored).unwrap(), added);
        let foreign = stored.replace("Added {} ({})", "Added {} [{}]");
        assert!(serde_json::from_str::<Message>(&foreign).is_err());
    }
}
