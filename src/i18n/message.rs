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
    },
    /// Messages one after the other, as one sentence of parts (`3 receipts recorded; …`).
    Parts(Vec<Message>),
    /// A message made below as an English sentence (an error of a service): shown through
    /// its pattern in the catalog (`Lang::say`) until those errors carry their structure too.
    Said(String),
}

impl Message {
    /// `text`, with values to come.
    pub fn new(text: Text) -> Self {
        Self::Text {
            text,
            values: Vec::new(),
        }
    }

    /// An English sentence made elsewhere (an error's `Display`).
    pub fn said(english: impl Into<String>) -> Self {
        Self::Said(english.into())
    }

    fn with(mut self, name: &str, value: Value) -> Self {
        if let Self::Text { values, .. } = &mut self {
            values.push((name.to_owned(), value));
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
            Self::Said(english) => lang.say(english).into_owned(),
            Self::Parts(parts) => parts
                .iter()
                .map(|part| part.show(lang))
                .collect::<Vec<_>>()
                .join(lang.t(t!("; "))),
            Self::Text { text, values } => {
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
                put_in(lang.t(*text), &shown)
            }
        }
    }
}

/// `pattern` with `{name}` replaced by the value of that name, each `{}` by the next value
/// named "" and `{0}`, `{1}` by those values by number (a translation may put them in
/// another order), in one pass: a value is never searched for placeholders (it may hold `{1}`
/// itself). A placeholder without a value stays as it is.
fn put_in(pattern: &str, values: &[(&str, String)]) -> String {
    let in_order: Vec<&str> = values
        .iter()
        .filter(|(name, _)| name.is_empty())
        .map(|(_, value)| value.as_str())
        .collect();
    let mut next = 0;
    let mut out = String::with_capacity(pattern.len() + 32);
    let mut rest = pattern;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let found = after.find('}').and_then(|close| {
            let name = &after[..close];
            let value = if name.is_empty() {
                next += 1;
                in_order.get(next - 1).copied()
            } else if let Ok(number) = name.parse::<usize>() {
                in_order.get(number).copied()
            } else {
                values
                    .iter()
                    .find(|(known, _)| *known == name)
                    .map(|(_, value)| value.as_str())
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
