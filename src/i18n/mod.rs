//! Languages: Chinese (zh-CN) and English. The person's choice (their account setting, else the
//! `inklink_lang` cookie the language switch sets), else the browser's `Accept-Language`.
//!
//! Two kinds of text:
//! - visitor pages use keys (`locales/en.toml`, `locales/zh-CN.toml`, the same keys in both);
//! - the admin UI and every message a person reads there are written in English in the code,
//!   gettext style, and `catalog.rs` gives each its Chinese. A text of a page is written
//!   `t!("Links")`: a [`Text`], which exists only for an English the catalog has, so a text
//!   without its Chinese does not build, and the catalog is the list of every such text. A
//!   message with values (`Created {url}`) is a [`Message`]: a text and its values, kept
//!   apart until it is shown, so data is never read as words; errors derive theirs from their
//!   `#[error]` (`#[derive(Says)]`). What is still made as an English sentence at run time
//!   ([`Lang::say`]: stored webhook delivery errors, rows of an import) is found by its
//!   pattern, with its values put into the Chinese one.

mod catalog;

use actix_web::HttpRequest;
use actix_web::http::header;
use std::borrow::Cow;
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::LazyLock;

/// The cookie the language switch sets (for people who are not signed in, and for pages that
/// do not know who is).
pub const COOKIE: &str = "inklink_lang";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    En,
    ZhCn,
}

const SOURCES: [(Lang, &str); 2] = [
    (Lang::En, include_str!("../../locales/en.toml")),
    (Lang::ZhCn, include_str!("../../locales/zh-CN.toml")),
];

static TEXTS: LazyLock<[HashMap<String, String>; 2]> = LazyLock::new(|| {
    SOURCES.map(|(lang, source)| {
        toml::from_str(source)
            .unwrap_or_else(|err| panic!("locales of {lang:?} do not parse: {err}"))
    })
});

static CHINESE: LazyLock<Catalog> = LazyLock::new(|| Catalog::new(catalog::CHINESE));

/// A text of the admin UI in English, known to have its Chinese: made by [`t!`](crate::t),
/// which checks the catalog when the code is compiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Text(&'static str);

impl Text {
    /// The text `english`, or a compile-time error when it is used in a constant (as `t!`
    /// does) and the catalog has no Chinese for it.
    pub const fn known(english: &'static str) -> Self {
        assert!(
            in_catalog(english),
            "this text has no Chinese in src/i18n/catalog.rs"
        );
        Self(english)
    }

    /// The text of the catalog that reads `english`, for a word of one of inklink's own
    /// vocabularies that arrives as data (a browser's or a device's name): only what the
    /// catalog has can become a text.
    pub fn find(english: &str) -> Option<Self> {
        catalog::CHINESE
            .binary_search_by(|(known, _)| known.as_bytes().cmp(english.as_bytes()))
            .ok()
            .map(|at| Self(catalog::CHINESE[at].0))
    }

    /// The English, as written in the code.
    pub const fn english(self) -> &'static str {
        self.0
    }
}

/// A [`Text`], however many references deep (a template's loop hands out references).
pub trait AsText {
    fn text(&self) -> Text;
}

impl AsText for Text {
    fn text(&self) -> Text {
        *self
    }
}

impl<T: AsText + ?Sized> AsText for &T {
    fn text(&self) -> Text {
        (**self).text()
    }
}

/// A text of the admin UI: `t!("Links")` is a [`Text`], and does not compile unless
/// `src/i18n/catalog.rs` has the Chinese of `"Links"`.
#[macro_export]
macro_rules! t {
    ($english:literal) => {{
        const TEXT: $crate::i18n::Text = $crate::i18n::Text::known($english);
        TEXT
    }};
}

// After `t!`, which it uses.
mod message;

pub use inklink_macros::Says;
pub use message::{AsData, AsMessage, Inner, Message, Says, Shown, Value};

/// `a` before `b` in byte order, in a constant.
const fn before(a: &str, b: &str) -> std::cmp::Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut i = 0;
    while i < a.len() && i < b.len() {
        if a[i] != b[i] {
            return if a[i] < b[i] {
                std::cmp::Ordering::Less
            } else {
                std::cmp::Ordering::Greater
            };
        }
        i += 1;
    }
    if a.len() < b.len() {
        std::cmp::Ordering::Less
    } else if a.len() > b.len() {
        std::cmp::Ordering::Greater
    } else {
        std::cmp::Ordering::Equal
    }
}

/// Is `english` in the catalog? A binary search, so that the compiler can run it for every
/// `t!`.
const fn in_catalog(english: &str) -> bool {
    let (mut low, mut high) = (0, catalog::CHINESE.len());
    while low < high {
        let middle = (low + high) / 2;
        match before(catalog::CHINESE[middle].0, english) {
            std::cmp::Ordering::Less => low = middle + 1,
            std::cmp::Ordering::Greater => high = middle,
            std::cmp::Ordering::Equal => return true,
        }
    }
    false
}

// The search above needs the catalog in order, each English once.
const _: () = {
    let mut i = 1;
    while i < catalog::CHINESE.len() {
        assert!(
            matches!(
                before(catalog::CHINESE[i - 1].0, catalog::CHINESE[i].0),
                std::cmp::Ordering::Less
            ),
            "src/i18n/catalog.rs is out of byte order of the English, or has an English twice"
        );
        i += 1;
    }
};

tokio::task_local! {
    /// The language of the request being answered, for pages drawn far from it (error pages).
    static CURRENT: Cell<Lang>;
}

impl Lang {
    pub const ALL: [Self; 2] = [Self::En, Self::ZhCn];

    /// The person's choice from the switch's cookie, else what the browser prefers most among
    /// ours; English when it names neither.
    pub fn of(req: &HttpRequest) -> Self {
        if let Some(chosen) = req.cookie(COOKIE).and_then(|c| Self::from_tag(c.value())) {
            return chosen;
        }
        req.headers()
            .get(header::ACCEPT_LANGUAGE)
            .and_then(|value| value.to_str().ok())
            .map_or(Self::En, Self::preferred)
    }

    /// The best of ours in an `Accept-Language` value (`zh-CN,zh;q=0.9,en;q=0.8`).
    pub fn preferred(accept: &str) -> Self {
        let mut best: Option<(f32, Self)> = None;
        for item in accept.split(',') {
            let mut parts = item.split(';');
            let tag = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let quality = parts
                .filter_map(|param| param.trim().strip_prefix("q="))
                .find_map(|q| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            let lang = if tag == "zh" || tag.starts_with("zh-") {
                Self::ZhCn
            } else if tag == "en" || tag.starts_with("en-") {
                Self::En
            } else {
                continue;
            };
            if quality > 0.0 && best.is_none_or(|(q, _)| quality > q) {
                best = Some((quality, lang));
            }
        }
        best.map_or(Self::En, |(_, lang)| lang)
    }

    /// `en` or `zh-CN` (also `zh`, any case), as the switch, a setting or the API names it.
    pub fn from_tag(tag: &str) -> Option<Self> {
        match tag.trim().to_ascii_lowercase().as_str() {
            "en" => Some(Self::En),
            "zh-cn" | "zh" | "zh-hans" => Some(Self::ZhCn),
            _ => None,
        }
    }

    /// The `lang` attribute.
    pub fn tag(self) -> &'static str {
        match self {
            Self::En => "en",
            Self::ZhCn => "zh-CN",
        }
    }

    /// The other language: what the switch offers.
    pub fn other(self) -> Self {
        match self {
            Self::En => Self::ZhCn,
            Self::ZhCn => Self::En,
        }
    }

    /// The language's own name, as the switch shows it.
    pub fn name(self) -> &'static str {
        match self {
            Self::En => "English",
            Self::ZhCn => "中文",
        }
    }

    /// The language switch's cookie: a year, on every path of the host (visitor pages too).
    pub fn cookie(self) -> actix_web::cookie::Cookie<'static> {
        actix_web::cookie::Cookie::build(COOKIE, self.tag())
            .path("/")
            .same_site(actix_web::cookie::SameSite::Lax)
            .max_age(actix_web::cookie::time::Duration::days(365))
            .finish()
    }

    /// Where the language switch leads back to: the page it was on (the `Referer`'s path on
    /// this host, never an address elsewhere), else `fallback`.
    pub fn back_to(req: &HttpRequest, fallback: &str) -> String {
        req.headers()
            .get(header::REFERER)
            .and_then(|value| value.to_str().ok())
            .and_then(|referer| url::Url::parse(referer).ok())
            .filter(|url| {
                url.host_str()
                    .zip(req.uri().host().or_else(|| {
                        req.headers()
                            .get(header::HOST)
                            .and_then(|h| h.to_str().ok())
                    }))
                    .is_some_and(|(from, here)| {
                        here.split(':')
                            .next()
                            .is_some_and(|h| h.eq_ignore_ascii_case(from))
                    })
            })
            .map(|url| match url.query() {
                Some(query) => format!("{}?{query}", url.path()),
                None => url.path().to_owned(),
            })
            .filter(|path| path.starts_with('/') && !path.starts_with("//"))
            .unwrap_or_else(|| fallback.to_owned())
    }

    /// A visitor-page text by key.
    pub fn text(self, key: &str) -> &'static str {
        TEXTS[self as usize]
            .get(key)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("no text '{key}' in {:?}", self))
    }

    /// Every key of every language, for the test that none is missing.
    pub fn keys(self) -> Vec<&'static str> {
        let mut keys: Vec<&str> = TEXTS[self as usize].keys().map(String::as_str).collect();
        keys.sort_unstable();
        keys
    }

    /// A text of the admin UI in this language.
    pub fn t(self, text: impl AsText) -> &'static str {
        let text = text.text();
        match self {
            Self::En => text.0,
            Self::ZhCn => CHINESE.exact.get(text.0).map_or(text.0, String::as_str),
        }
    }

    /// `text` in this language; without one (an identifier a newer version wrote), `as_is`.
    pub fn t_or(self, text: Option<Text>, as_is: &str) -> &str {
        text.map_or(as_is, |text| self.t(text))
    }

    /// A text with one value in it: `{}` in the text is replaced by `value`.
    pub fn f(self, text: impl AsText, value: impl std::fmt::Display) -> String {
        self.t(text).replacen("{}", &value.to_string(), 1)
    }

    /// A text with named values (`Add the tags {tags} to {links}`), each put in as it is:
    /// the values are data, or already in this language.
    pub fn fill(self, english: impl AsText, values: &[(&str, &str)]) -> String {
        let values: HashMap<&str, Cow<'_, str>> = values
            .iter()
            .map(|(name, value)| (*name, Cow::Borrowed(*value)))
            .collect();
        fill(self.t(english), &values)
    }

    /// A count as people read it: `15,812`; in Chinese a large one in 万 or 亿 (`1.6万`), as
    /// Chinese dashboards show them.
    pub fn number(self, n: i64) -> String {
        let grouped = |n: i64| {
            let digits = n.unsigned_abs().to_string();
            let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
            if n < 0 {
                out.push('-');
            }
            for (i, digit) in digits.chars().enumerate() {
                if i > 0 && (digits.len() - i).is_multiple_of(3) {
                    out.push(',');
                }
                out.push(digit);
            }
            out
        };
        let large = |unit: f64, name: &str| {
            let value = format!("{:.1}", n as f64 / unit);
            format!("{}{name}", value.strip_suffix(".0").unwrap_or(&value))
        };
        match self {
            Self::ZhCn if n.abs() >= 100_000_000 => large(1e8, "亿"),
            Self::ZhCn if n.abs() >= 10_000 => large(1e4, "万"),
            _ => grouped(n),
        }
    }

    /// The change from `before` to `now`: `▲ 12.5 %`, `▼ 3 %`, `0 %`; `—` when there was
    /// nothing before to compare with.
    pub fn change(self, now: i64, before: i64) -> String {
        if before == 0 {
            return "—".to_owned();
        }
        let percent = (now - before) as f64 * 100.0 / before as f64;
        let shown = format!("{:.1}", percent.abs());
        let shown = shown.strip_suffix(".0").unwrap_or(&shown);
        match percent {
            p if p > 0.0 => format!("▲ {shown} %"),
            p if p < 0.0 => format!("▼ {shown} %"),
            _ => "0 %".to_owned(),
        }
    }

    /// A sentence still made as English text at run time (what a [`Message`] cannot hold yet:
    /// a stored delivery error, an import row's problem) in this language: found whole, else by
    /// the pattern it was made from, with its values (which may be messages themselves) put
    /// into the translation.
    pub fn say<'a>(self, message: &'a str) -> Cow<'a, str> {
        match self {
            Self::En => Cow::Borrowed(message),
            Self::ZhCn => CHINESE.translate(message),
        }
    }

    /// A message in this language: a [`Message`], or a sentence still made as English text.
    pub fn show(self, message: impl Shown) -> String {
        message.shown(self)
    }

    /// The language of the request being answered (set by [`Lang::scope`]); English outside
    /// one.
    pub fn current() -> Self {
        CURRENT.try_with(Cell::get).unwrap_or(Self::En)
    }

    /// Once the signed-in person is known, their own setting wins for the rest of the request.
    pub fn set_current(self) {
        let _ = CURRENT.try_with(|cell| cell.set(self));
    }

    /// Answers `request` with `self` as the current language.
    pub async fn scope<F: std::future::Future>(self, request: F) -> F::Output {
        CURRENT.scope(Cell::new(self), request).await
    }

    /// Runs `draw` with `self` as the current language (for responses drawn outside the
    /// request, such as the error of a layer below the page).
    pub fn within<R>(self, draw: impl FnOnce() -> R) -> R {
        CURRENT.sync_scope(Cell::new(self), draw)
    }

    /// Every text of the admin UI (the catalog is their list), for the tests.
    pub fn translated() -> Vec<Text> {
        catalog::CHINESE
            .iter()
            .map(|(english, _)| Text(english))
            .collect()
    }
}

/// English → Chinese: texts found whole, and the patterns of messages with values.
struct Catalog {
    exact: HashMap<String, String>,
    patterns: Vec<Pattern>,
    /// The values the Chinese marks as messages or words, by English and value name: what a
    /// value is when the code hands it over as a plain string.
    marked: HashMap<&'static str, HashMap<String, Kind>>,
}

/// What the catalog says the value `name` of `text` is (data unless marked).
fn kind_of(text: Text, name: &str) -> Kind {
    CHINESE
        .marked
        .get(text.0)
        .and_then(|kinds| kinds.get(name))
        .copied()
        .unwrap_or(Kind::Data)
}

/// What a value in a message is, as the Chinese of its pattern says (`{name}`, `{name:msg}`,
/// `{name:word}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
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
    pieces: Vec<String>,
    names: Vec<String>,
    chinese: String,
    kinds: HashMap<String, Kind>,
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

/// `template` with each `{name}` replaced by its value, in one pass (a value is never searched
/// for placeholders: it may contain `{1}` itself).
fn fill(template: &str, values: &HashMap<&str, Cow<'_, str>>) -> String {
    let mut out = String::with_capacity(template.len() + 32);
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after
            .find('}')
            .and_then(|close| Some((close, values.get(&after[..close])?)))
        {
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

impl Catalog {
    fn new(table: &[(&'static str, &str)]) -> Self {
        let mut exact = HashMap::with_capacity(table.len());
        let mut patterns = Vec::new();
        let mut marks = HashMap::new();
        for &(english, marked) in table {
            let (chinese, kinds) = unmark(marked);
            if !kinds.is_empty() {
                marks.insert(english, kinds.clone());
            }
            if let Some(pattern) = Pattern::parse(english, &chinese, kinds) {
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

    fn translate<'a>(&self, message: &'a str) -> Cow<'a, str> {
        if let Some(chinese) = self.exact.get(message) {
            return Cow::Owned(chinese.clone());
        }
        for pattern in &self.patterns {
            if let Some(values) = pattern.capture(message) {
                let values: HashMap<&str, Cow<'_, str>> = pattern
                    .names
                    .iter()
                    .zip(values)
                    .map(|(name, value)| {
                        let kind = pattern.kinds.get(name).copied().unwrap_or(Kind::Data);
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
                return Cow::Owned(fill(&pattern.chinese, &values));
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
            .map(|p| &p.kinds)
    }
}

impl Pattern {
    fn parse(english: &str, chinese: &str, kinds: HashMap<String, Kind>) -> Option<Self> {
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
            pieces,
            names,
            chinese: chinese.to_owned(),
            kinds,
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
    fn a_text_exists_only_for_what_the_catalog_has() {
        // What `t!` checks when the code is compiled.
        assert!(in_catalog("Links"));
        assert!(!in_catalog("Links "));
        assert!(!in_catalog("No such text in the catalog"));
        assert!(!in_catalog(""));
        // Both ends of the catalog are found.
        assert!(in_catalog(catalog::CHINESE[0].0));
        assert!(in_catalog(catalog::CHINESE[catalog::CHINESE.len() - 1].0));
        assert_eq!(Text::find("Links"), Some(t!("Links")));
        assert_eq!(Text::find("links of nobody"), None);
        assert_eq!(Lang::ZhCn.t(t!("Links")), "链接");
        assert_eq!(Lang::En.t(t!("Links")), "Links");
        assert_eq!(
            Lang::ZhCn.t_or(Text::find("Chrome-ish"), "Chrome-ish"),
            "Chrome-ish"
        );
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
    fn numbers_and_changes_read_as_people_write_them() {
        assert_eq!(Lang::En.number(15_812), "15,812");
        assert_eq!(Lang::En.number(-1_234_567), "-1,234,567");
        assert_eq!(Lang::En.number(999), "999");
        assert_eq!(Lang::ZhCn.number(9_999), "9,999");
        assert_eq!(Lang::ZhCn.number(15_812), "1.6万");
        assert_eq!(Lang::ZhCn.number(20_000), "2万");
        assert_eq!(Lang::ZhCn.number(123_456_789), "1.2亿");
        assert_eq!(Lang::En.change(1125, 1000), "▲ 12.5 %");
        assert_eq!(Lang::En.change(970, 1000), "▼ 3 %");
        assert_eq!(Lang::En.change(5, 5), "0 %");
        assert_eq!(Lang::En.change(5, 0), "—");
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
