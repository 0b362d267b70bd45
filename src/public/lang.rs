//! The language of the pages visitors see: Chinese or English, from the browser's
//! `Accept-Language`. The texts live in `locales/*.toml`, one file per language with the same
//! keys (a test checks that none is missing).

use actix_web::HttpRequest;
use actix_web::http::header;
use std::collections::HashMap;
use std::sync::LazyLock;

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

impl Lang {
    pub const ALL: [Self; 2] = [Self::En, Self::ZhCn];

    /// The language the visitor's browser prefers most among ours; English when it names
    /// neither.
    pub fn of(req: &HttpRequest) -> Self {
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

    /// The `lang` attribute.
    pub fn tag(self) -> &'static str {
        match self {
            Self::En => "en",
            Self::ZhCn => "zh-CN",
        }
    }

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
}
