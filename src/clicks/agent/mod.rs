//! What a user agent says about the visitor: browser (or in-app browser), OS, device category,
//! and whether it is a person at all. woothee does the general parsing; the rules here come
//! first, because woothee knows neither the Chinese super-apps and browsers our operators'
//! visitors use nor most of the crawlers and scripts that fetch short links.

mod apps;
mod bots;
mod platform;

use super::capture::clip;
pub use crate::clickstore::row::Agent;
use crate::clickstore::row::Text;
use apps::{app_name, engine_browser, in_app};
use bots::bot_name;
use platform::{device_of, os_of, windows_version};

const MAX_NAME: usize = 64;

/// User agents parsed for the redirect path, by their text: a campaign's visitors share a few
/// thousand, and a parse costs about 6 µs. Bounded, so a flood of made-up ones costs parsing,
/// not memory (a key is at most `MAX_TEXT` bytes: 8 MB at most, 2 kB keys being rare).
static PARSED: std::sync::LazyLock<quick_cache::sync::Cache<Box<str>, Agent>> =
    std::sync::LazyLock::new(|| quick_cache::sync::Cache::new(4096));

/// [`parse_agent`], remembered per distinct user agent (for callers that share no cache of
/// their own, as the click writer's is): the same answer, parsed once.
pub fn parse_agent_cached(user_agent: Option<&str>) -> Agent {
    let Some(user_agent) = user_agent else {
        return parse_agent(None);
    };
    let key = clip(user_agent, super::capture::MAX_TEXT);
    if let Some(agent) = PARSED.get(key) {
        return agent;
    }
    let agent = parse_agent(Some(key));
    PARSED.insert(key.into(), agent.clone());
    agent
}

pub fn parse_agent(user_agent: Option<&str>) -> Agent {
    // Every browser sends a user agent; a request without one is a script.
    let Some(ua) = user_agent.map(str::trim).filter(|ua| !ua.is_empty()) else {
        return bot(None);
    };
    let lower = ua.to_ascii_lowercase();
    let parsed = woothee::parser::Parser::new().parse(ua);
    let known = |value: &str| {
        (!value.is_empty() && value != woothee::woothee::VALUE_UNKNOWN)
            .then(|| Text::from(clip(value, MAX_NAME)))
    };
    if let Some(name) = bot_name(ua, &lower) {
        let mut agent = bot(Some(name));
        if let Some(parsed) = &parsed {
            agent.os = os_of(&lower, parsed.os).map(Text::from);
        }
        return agent;
    }
    if let Some(parsed) = parsed.as_ref().filter(|p| p.category == "crawler") {
        let mut agent = bot(known(parsed.name));
        agent.browser_version = known(parsed.version);
        return agent;
    }
    let woothee_os = parsed.as_ref().map_or("", |p| p.os);
    let os = os_of(&lower, woothee_os);
    let (browser, browser_version) = match in_app(ua, &lower) {
        Some((name, version)) => (
            Some(Text::from(clip(name, MAX_NAME))),
            version.map(Text::from),
        ),
        None => match &parsed {
            // An app's own web view on iOS, which names neither Safari nor the app.
            Some(parsed) if parsed.name == "Webview" && os == Some("iOS") => {
                (Some(Text::from("iOS WebView")), None)
            }
            Some(parsed) if known(parsed.name).is_some() => {
                (known(parsed.name), known(parsed.version))
            }
            // woothee knows nothing of it: an app that names itself, or an engine's token.
            _ => match app_name(ua, &lower).or_else(|| engine_browser(ua, &lower)) {
                Some((name, version)) => (
                    Some(Text::from(clip(name, MAX_NAME))),
                    version.map(Text::from),
                ),
                None => (None, None),
            },
        },
    };
    let os_version = match os {
        Some("HarmonyOS") => version_after(ua, &lower, "openharmony ").map(Text::from),
        Some("Windows") => windows_version(woothee_os).map(Text::from),
        _ => parsed.as_ref().and_then(|p| known(&p.os_version)),
    };
    let category = parsed.as_ref().map_or("", |p| p.category);
    Agent {
        browser,
        browser_version,
        os: os.map(Text::from),
        os_version,
        device: Some(Text::from(device_of(&lower, os, category))),
        is_bot: false,
    }
}

/// The device category of every bot.
pub const BOT_DEVICE: &str = "bot";

impl Agent {
    /// What a request says about itself beyond its user agent (a `HEAD`) makes it a bot's.
    pub fn mark_bot(&mut self) {
        self.is_bot = true;
        self.device = Some(Text::from(BOT_DEVICE));
    }
}

fn bot(name: Option<Text>) -> Agent {
    let mut agent = Agent {
        browser: name,
        ..Agent::default()
    };
    agent.mark_bot();
    agent
}

/// The version number (digits and dots) that follows `token`, if any.
fn version_after<'a>(ua: &'a str, lower: &str, token: &str) -> Option<&'a str> {
    leading_version(&ua[lower.find(token)? + token.len()..])
}

/// The version number (digits and dots) `text` starts with, if any.
fn leading_version(text: &str) -> Option<&str> {
    let len = text
        .bytes()
        .take_while(|byte| byte.is_ascii_digit() || *byte == b'.')
        .count();
    let version = text[..len].trim_end_matches('.');
    (!version.is_empty() && version.starts_with(|c: char| c.is_ascii_digit()))
        .then(|| clip(version, MAX_NAME))
}

/// Where `word` starts a word of the UA: `ios/` in `Spotify iOS/16` but not in `axios/1.6`,
/// `php/` in `PHP/8.1` but not in `FirePHP/0.3`.
fn word_starting(lower: &str, word: &str) -> Option<usize> {
    lower
        .match_indices(word)
        .map(|(at, _)| at)
        .find(|&at| starts_word(lower, at))
}

fn starts_word(lower: &str, at: usize) -> bool {
    at == 0 || !lower.as_bytes()[at - 1].is_ascii_alphanumeric()
}

/// A list of lower-case tokens, all looked for in one pass over a user agent: the rules test
/// hundreds of tokens, and campaign links parse the user agent of every request.
struct Tokens(aho_corasick::AhoCorasick);

impl Tokens {
    fn new(list: &[&str]) -> Self {
        Self(aho_corasick::AhoCorasick::new(list).expect("the token lists are small"))
    }

    fn any_in(&self, lower: &str) -> bool {
        self.0.is_match(lower)
    }

    /// Every occurrence of every token: (its index in the list, where it starts).
    fn found_in<'a>(&'a self, lower: &'a str) -> impl Iterator<Item = (usize, usize)> + 'a {
        self.0
            .find_overlapping_iter(lower)
            .map(|found| (found.pattern().as_usize(), found.start()))
    }
}
