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
//!   `#[error]` (`#[derive(Says)]`). No sentence a person reads is made as English text at
//!   run time: what is stored to be shown later (a domain's health reason, a webhook delivery's
//!   error) is stored as its message too.

mod catalog;

use actix_web::HttpRequest;
use actix_web::http::header;
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

/// A text of the admin UI in English, known to have its Chinese: made by [`t!`](crate::t),
/// which checks the catalog when the code is compiled.
/// Held as its place in the catalog, so its Chinese is at hand; ordered as the catalog is.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Text(usize);

impl std::fmt::Debug for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "t!({:?})", self.english())
    }
}

impl Text {
    /// The text `english`, or a compile-time error when it is used in a constant (as `t!`
    /// does) and the catalog has no Chinese for it. For `t!` only: called at run time with an
    /// unknown text it panics.
    #[doc(hidden)]
    pub const fn known(english: &'static str) -> Self {
        match place(english) {
            Some(at) => Self(at),
            None => panic!("this text has no Chinese in src/i18n/catalog.rs"),
        }
    }

    /// The text of the catalog that reads `english`, for a word of one of inklink's own
    /// vocabularies that arrives as data (a browser's or a device's name): only what the
    /// catalog has can become a text.
    pub fn find(english: &str) -> Option<Self> {
        catalog::CHINESE
            .binary_search_by(|(known, _)| known.as_bytes().cmp(english.as_bytes()))
            .ok()
            .map(Self)
    }

    /// The English, as written in the code.
    pub const fn english(self) -> &'static str {
        catalog::CHINESE[self.0].0
    }

    /// The Chinese.
    pub const fn chinese(self) -> &'static str {
        catalog::CHINESE[self.0].1
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
use message::put_in;
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
/// `t!`: its place there.
const fn place(english: &str) -> Option<usize> {
    let (mut low, mut high) = (0, catalog::CHINESE.len());
    while low < high {
        let middle = (low + high) / 2;
        match before(catalog::CHINESE[middle].0, english) {
            std::cmp::Ordering::Less => low = middle + 1,
            std::cmp::Ordering::Greater => high = middle,
            std::cmp::Ordering::Equal => return Some(middle),
        }
    }
    None
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
            Self::En => text.english(),
            Self::ZhCn => text.chinese(),
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
        put_in(self.t(english), values, false)
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

    /// A message in this language.
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
            .enumerate()
            .map(|(at, _)| Text(at))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_exists_only_for_what_the_catalog_has() {
        // What `t!` checks when the code is compiled.
        assert!(place("Links").is_some());
        assert!(place("Links ").is_none());
        assert!(place("No such text in the catalog").is_none());
        assert!(place("").is_none());
        // Both ends of the catalog are found.
        assert!(place(catalog::CHINESE[0].0).is_some());
        assert!(place(catalog::CHINESE[catalog::CHINESE.len() - 1].0).is_some());
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
}
