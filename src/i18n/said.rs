//! Sentences still made as English text at run time (what a [`Message`](super::Message)
//! cannot hold yet), translated by finding the catalog pattern they were made from and putting
//! their values into its Chinese: [`Lang::say`](super::Lang::say).

use super::message::put_in;
use std::borrow::Cow;
use std::collections::HashMap;

/// English → Chinese: texts found whole, and the patterns of messages with values.
pub(super) struct Catalog {
    pub(super) exact: HashMap<String, String>,
    patterns: Vec<Pattern>,
    /// The values the Chinese marks as messages or words, by English and value name: what a
    /// value is when the code hands it over as a plain string.
    marked: HashMap<&'static str, HashMap<String, Kind>>,
}

/// What a value in a message is, as the Chinese of its pattern says (`{name}`, `{name:msg}`,
/// `{name:word}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// What a person typed or the system named (a code, a tag, a user name, a URL, a host, a
    /// number, a date, a command): shown as it is in every language. Every value is data
    /// unless its pattern says otherwise, so that nobody's `Edit` ever reads 「编辑」.
    Data,
    /// A message itself (an error inside an error, "3 links"): translated in turn.
    Message,
    /// A word of the UI (a role, a status): translated by its English whole.
    Word,
}

/// `Added {name} ({role})`: the literal pieces around its values, and the Chinese with the
/// same names.
struct Pattern {
    english: &'static str,
    pieces: Vec<String>,
    names: Vec<String>,
    chinese: String,
}

/// The Chinese of a catalog entry without its markers, and the kind of each value it marks.
/// `{}` placeholders are numbered like `format!` numbers them (`{0}`, `{1}`), and a format
/// spec (`{1:?}`) is dropped: the value comes formatted already.
fn unmark(chinese: &str) -> (String, HashMap<String, Kind>) {
    let mut out = String::with_capacity(chinese.len());
    let mut kinds = HashMap::new();
    let mut rest = chinese;
    let mut position = 0;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        // `{{` is a literal brace, as in `format!`.
        if let Some(tail) = after.strip_prefix('{') {
            out.push_str("{{");
            rest = tail;
            continue;
        }
        let Some(close) = after.find('}') else {
            out.push_str(&rest[open..]);
            return (out, kinds);
        };
        let inside = &after[..close];
        let (name, spec) = inside.split_once(':').unwrap_or((inside, ""));
        let valid = name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
        if !valid {
            out.push_str(&rest[open..open + close + 2]);
            rest = &after[close + 1..];
            continue;
        }
        let name = if name.is_empty() {
            position += 1;
            (position - 1).to_string()
        } else {
            name.to_owned()
        };
        match spec {
            "msg" => {
                kinds.insert(name.clone(), Kind::Message);
            }
            "word" => {
                kinds.insert(name.clone(), Kind::Word);
            }
            _ => {}
        }
        out.push('{');
        out.push_str(&name);
        out.push('}');
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    (out, kinds)
}

impl Catalog {
    pub(super) fn new(table: &[(&'static str, &str)]) -> Self {
        let mut exact = HashMap::with_capacity(table.len());
        let mut patterns = Vec::new();
        let mut marks = HashMap::new();
        for &(english, marked) in table {
            let (chinese, kinds) = unmark(marked);
            if !kinds.is_empty() {
                marks.insert(english, kinds);
            }
            if let Some(pattern) = Pattern::parse(english, &chinese) {
                patterns.push(pattern);
            }
            // A text found whole has its values written in by `Lang::f`: without markers.
            let plain = marked.replace(":msg}", "}").replace(":word}", "}");
            exact.insert(english.to_owned(), plain);
        }
        // The most specific pattern (most literal text) is tried first; among equals, the
        // same one every time.
        patterns.sort_by(|a, b| {
            let literal = |p: &Pattern| p.pieces.iter().map(String::len).sum::<usize>();
            literal(b)
                .cmp(&literal(a))
                .then_with(|| a.pieces.cmp(&b.pieces))
        });
        Self {
            exact,
            patterns,
            marked: marks,
        }
    }

    pub(super) fn translate<'a>(&self, message: &'a str) -> Cow<'a, str> {
        if let Some(chinese) = self.exact.get(message) {
            return Cow::Owned(chinese.clone());
        }
        for pattern in &self.patterns {
            if let Some(values) = pattern.capture(message) {
                let values: Vec<(&str, Cow<'_, str>)> = pattern
                    .names
                    .iter()
                    .zip(values)
                    .map(|(name, value)| {
                        let kind = self.kind(pattern.english, name);
                        let value = match kind {
                            Kind::Data => Cow::Borrowed(value),
                            Kind::Message => self.translate(value),
                            Kind::Word => self
                                .exact
                                .get(value)
                                .map_or(Cow::Borrowed(value), |w| Cow::Borrowed(w.as_str())),
                        };
                        (name.as_str(), value)
                    })
                    .collect();
                return Cow::Owned(put_in(&pattern.chinese, &values, false));
            }
        }
        Cow::Borrowed(message)
    }

    /// The patterns whose values are all data, for the tests.
    #[cfg(test)]
    fn kinds(&self, english_pieces: &[&str]) -> Option<&HashMap<String, Kind>> {
        self.patterns
            .iter()
            .find(|p| {
                p.pieces
                    .iter()
                    .map(String::as_str)
                    .eq(english_pieces.iter().copied())
            })
            .and_then(|p| self.marked.get(p.english))
    }

    /// What the value `name` of `english` is, as the Chinese marks it (data unless marked).
    pub(super) fn kind(&self, english: &str, name: &str) -> Kind {
        self.marked
            .get(english)
            .and_then(|kinds| kinds.get(name))
            .copied()
            .unwrap_or(Kind::Data)
    }
}

impl Pattern {
    fn parse(english: &'static str, chinese: &str) -> Option<Self> {
        let mut pieces = vec![String::new()];
        let mut names = Vec::new();
        let mut rest = english;
        while let Some(open) = rest.find('{') {
            let close = rest[open..].find('}')? + open;
            let name = &rest[open + 1..close];
            let name = name.split(':').next().unwrap_or(name);
            if name
                .chars()
                .any(|c| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
            {
                return None;
            }
            pieces.last_mut()?.push_str(&rest[..open]);
            names.push(name.to_owned());
            pieces.push(String::new());
            rest = &rest[close + 1..];
        }
        pieces.last_mut()?.push_str(rest);
        // A placeholder `{}` / `{:?}` has no name: like `format!`, number it among the
        // unnamed ones.
        let mut position = 0;
        for name in names.iter_mut() {
            if name.is_empty() {
                *name = position.to_string();
                position += 1;
            }
        }
        (!names.is_empty()).then(|| Self {
            english,
            pieces,
            names,
            chinese: chinese.to_owned(),
        })
    }

    /// The values in `message` if it was made from this pattern.
    fn capture<'a>(&self, message: &'a str) -> Option<Vec<&'a str>> {
        let first = &self.pieces[0];
        let last = self.pieces.last()?;
        let inner = message.strip_prefix(first.as_str())?;
        let mut rest = inner.strip_suffix(last.as_str())?;
        if message.len() < first.len() + last.len() {
            return None;
        }
        let mut values = Vec::with_capacity(self.names.len());
        for piece in &self.pieces[1..self.pieces.len() - 1] {
            // The value runs to the next literal piece (never empty).
            let at = rest.get(1..)?.find(piece.as_str())? + 1;
            values.push(&rest[..at]);
            rest = &rest[at + piece.len()..];
        }
        if rest.is_empty() {
            return None;
        }
        values.push(rest);
        Some(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog(pairs: &[(&'static str, &str)]) -> Catalog {
        Catalog::new(pairs)
    }

    #[test]
    fn messages_with_values_are_found_by_their_pattern() {
        let c = catalog(&[
            ("Added {} ({})", "已添加 {}（{:word}）"),
            ("Created {url}", "已创建 {url}"),
            ("row {0}: {1}", "第 {0} 行：{1:msg}"),
            ("the link is too long", "链接太长"),
            ("admin", "管理员"),
            (
                "{links} links move to {}: become {}",
                "{links} 个链接迁移到 {}：变为 {}",
            ),
        ]);
        assert_eq!(
            c.translate("3 links move to b.test: become https://b.test/"),
            "3 个链接迁移到 b.test：变为 https://b.test/"
        );
        assert_eq!(c.translate("Added ann (admin)"), "已添加 ann（管理员）");
        assert_eq!(c.translate("Created http://x/a"), "已创建 http://x/a");
        assert_eq!(
            c.translate("row 3: the link is too long"),
            "第 3 行：链接太长"
        );
        assert_eq!(c.translate("nothing like it"), "nothing like it");
        assert_eq!(c.translate("Created "), "Created ");
    }

    #[test]
    fn values_are_data_unless_the_pattern_says_otherwise() {
        let c = catalog(&[
            ("Disabled {code}", "已停用 {code}"),
            ("Edit", "编辑"),
            ("Disabled", "已停用"),
            ("operator", "运营"),
            ("by {}", "创建者 {}"),
            ("Replace {} by {}?", "用 {1} 替换 {0}？"),
            (
                "the tag '{0}' contains {1:?}; no",
                "标签“{0}”中含有 {1:?}；不行",
            ),
            ("Delete {links}?", "删除 {links:msg}？"),
            ("{} links", "{} 个链接"),
        ]);
        assert_eq!(c.translate("Disabled Edit"), "已停用 Edit");
        assert_eq!(c.translate("Disabled Expired Edit"), "已停用 Expired Edit");
        assert_eq!(c.translate("by operator"), "创建者 operator");
        assert_eq!(c.translate("Replace a{1}b by c?"), "用 c 替换 a{1}b？");
        assert_eq!(
            c.translate("the tag 'x' contains '|'; no"),
            "标签“x”中含有 '|'；不行"
        );
        assert_eq!(c.translate("Delete 3 links?"), "删除 3 个链接？");
        assert_eq!(c.kinds(&["Delete ", "?"]).unwrap()["links"], Kind::Message);
        // `Lang::f` fills the whole text found: no marker is left in it.
        assert_eq!(c.exact["Delete {links}?"], "删除 {links}？");
    }
}
