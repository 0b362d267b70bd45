//! Languages: Chinese (zh-CN) and English. The person's choice (their account setting, else the
//! `inklink_lang` cookie the language switch sets), else the browser's `Accept-Language`.
//!
//! Two kinds of text, each in `locales/`:
//! - visitor pages use keys (`locales/en.toml`, `locales/zh-CN.toml`, the same keys in both);
//! - the admin UI and every message a person reads there are written in English in the code,
//!   gettext style, and `locales/admin.zh-CN.toml` gives each its Chinese. A message with
//!   values in it (`Created {url}`) is found by its pattern, and the values are put into the
//!   Chinese one. Tests fail when a key or a message has no Chinese.

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
    (Lang::En, include_str!("../locales/en.toml")),
    (Lang::ZhCn, include_str!("../locales/zh-CN.toml")),
];

static TEXTS: LazyLock<[HashMap<String, String>; 2]> = LazyLock::new(|| {
    SOURCES.map(|(lang, source)| {
        toml::from_str(source)
            .unwrap_or_else(|err| panic!("locales of {lang:?} do not parse: {err}"))
    })
});

static CHINESE: LazyLock<Catalog> = LazyLock::new(|| {
    let table: HashMap<String, String> =
        toml::from_str(include_str!("../locales/admin.zh-CN.toml"))
            .unwrap_or_else(|err| panic!("locales/admin.zh-CN.toml does not parse: {err}"));
    Catalog::new(table)
});

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

    /// A text of the admin UI, written in English in the template or the code.
    pub fn t(self, english: &str) -> &str {
        match self {
            Self::En => english,
            Self::ZhCn => CHINESE.exact.get(english).map_or(english, String::as_str),
        }
    }

    /// A text with one value in it: `{}` in `english` is replaced by `value`.
    pub fn f(self, english: &str, value: impl std::fmt::Display) -> String {
        self.t(english).replacen("{}", &value.to_string(), 1)
    }

    /// A message made at run time (an error, a flash message, a confirmation) in this
    /// language: found whole, else by the pattern it was made from, with its values (which may
    /// be messages themselves) put into the translation.
    pub fn say<'a>(self, message: &'a str) -> Cow<'a, str> {
        match self {
            Self::En => Cow::Borrowed(message),
            Self::ZhCn => CHINESE.translate(message),
        }
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

    /// Every English text the Chinese catalog translates, for the tests.
    pub fn translated() -> Vec<&'static str> {
        CHINESE.exact.keys().map(String::as_str).collect()
    }
}

/// English → Chinese: texts found whole, and the patterns of messages with values.
struct Catalog {
    exact: HashMap<String, String>,
    patterns: Vec<Pattern>,
}

/// `Added {name} ({role})`: the literal pieces around its values, and the Chinese with the
/// same names.
struct Pattern {
    pieces: Vec<String>,
    names: Vec<String>,
    chinese: String,
}

impl Catalog {
    fn new(exact: HashMap<String, String>) -> Self {
        let mut patterns: Vec<Pattern> = exact
            .iter()
            .filter_map(|(english, chinese)| Pattern::parse(english, chinese))
            .collect();
        // The most specific pattern (most literal text) is tried first.
        patterns
            .sort_by_key(|p| std::cmp::Reverse(p.pieces.iter().map(String::len).sum::<usize>()));
        Self { exact, patterns }
    }

    fn translate<'a>(&self, message: &'a str) -> Cow<'a, str> {
        if let Some(chinese) = self.exact.get(message) {
            return Cow::Owned(chinese.clone());
        }
        for pattern in &self.patterns {
            if let Some(values) = pattern.capture(message) {
                let mut out = pattern.chinese.clone();
                for (name, value) in pattern.names.iter().zip(values) {
                    let value = self.translate(value);
                    out = out.replace(&format!("{{{name}}}"), &value);
                }
                return Cow::Owned(out);
            }
        }
        Cow::Borrowed(message)
    }
}

impl Pattern {
    fn parse(english: &str, chinese: &str) -> Option<Self> {
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
        let mut chinese = chinese.to_owned();
        let mut position = 0;
        while let Some(at) = chinese.find("{}") {
            chinese.replace_range(at..at + 2, &format!("{{{position}}}"));
            position += 1;
        }
        (!names.is_empty()).then_some(Self {
            pieces,
            names,
            chinese,
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

    fn catalog(pairs: &[(&str, &str)]) -> Catalog {
        Catalog::new(
            pairs
                .iter()
                .map(|(e, c)| (e.to_string(), c.to_string()))
                .collect(),
        )
    }

    #[test]
    fn messages_with_values_are_found_by_their_pattern() {
        let c = catalog(&[
            ("Added {} ({})", "已添加 {}（{}）"),
            ("Created {url}", "已创建 {url}"),
            ("row {0}: {1}", "第 {0} 行：{1}"),
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
}
