//! What a campaign link may carry besides its target: a visitor password, a visit limit,
//! alternative targets by device and app, and the in-app browsers that get a page telling the
//! visitor to open the link in their browser instead of a redirect.

use super::codes::{MAX_GENERATED_LEN, MIN_GENERATED_LEN};
use super::target_url::{TargetUrl, TargetUrlError, UrlRules};
use crate::i18n::Text;
use std::fmt;

pub const MIN_LINK_PASSWORD_CHARS: usize = 4;
pub const MAX_LINK_PASSWORD_CHARS: usize = 128;
/// More alternative targets than this would be a routing table, not a link.
pub const MAX_ALT_TARGETS: usize = 8;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, crate::i18n::Says)]
pub enum CampaignError {
    #[error(
        "a link password must be {MIN_LINK_PASSWORD_CHARS} to {MAX_LINK_PASSWORD_CHARS} characters long"
    )]
    PasswordLength,
    #[error("the maximum number of visits must be a whole number from 1 to 1000000000")]
    VisitLimit,
    #[error(
        "a generated code is {MIN_GENERATED_LEN} to {MAX_GENERATED_LEN} characters long; for a shorter code choose a custom code"
    )]
    CodeLength,
    #[error(
        "'{0}' is not a target rule; use ios, android, desktop or wechat, as RULE=URL (for example ios=https://apps.apple.com/app/id123)"
    )]
    UnknownRule(String),
    #[error(
        "'{0}' is not a target rule; write RULE=URL, for example android=https://example.com/app.apk"
    )]
    RuleWithoutUrl(String),
    #[error("the rule '{0}' is given twice; give each rule once")]
    DuplicateRule(&'static str),
    #[error("at most {MAX_ALT_TARGETS} alternative targets are allowed")]
    TooManyTargets,
    #[error("the {rule} target: {error}")]
    TargetUrl {
        rule: &'static str,
        error: TargetUrlError,
    },
    #[error(
        "'{0}' is not an app inklink knows; choose among wechat, qq, weibo, douyin, toutiao, xiaohongshu, dingtalk, alipay, taobao (or none)"
    )]
    UnknownApp(String),
}

/// The length of a generated code, in base62 characters (a check character, when on, comes on
/// top): 4 to 12.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CodeLength(u8);

impl CodeLength {
    pub fn new(length: u64) -> Result<Self, CampaignError> {
        u8::try_from(length)
            .ok()
            .filter(|length| (MIN_GENERATED_LEN..=MAX_GENERATED_LEN).contains(length))
            .map(Self)
            .ok_or(CampaignError::CodeLength)
    }

    pub fn parse(input: &str) -> Result<Self, CampaignError> {
        input
            .trim()
            .parse::<u64>()
            .map_err(|_| CampaignError::CodeLength)
            .and_then(Self::new)
    }

    pub fn get(self) -> u8 {
        self.0
    }

    pub fn all() -> impl DoubleEndedIterator<Item = Self> {
        (MIN_GENERATED_LEN..=MAX_GENERATED_LEN).map(Self)
    }
}

/// The password a visitor must give before being sent on (not an account password: links
/// are shared, so short ones are allowed).
#[derive(Clone)]
pub struct LinkPassword(String);

impl LinkPassword {
    pub fn parse(input: &str) -> Result<Self, CampaignError> {
        let chars = input.chars().count();
        if !(MIN_LINK_PASSWORD_CHARS..=MAX_LINK_PASSWORD_CHARS).contains(&chars) {
            return Err(CampaignError::PasswordLength);
        }
        Ok(Self(input.to_owned()))
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for LinkPassword {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LinkPassword(…)")
    }
}

/// How often a link may send visitors on: 1 to a billion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VisitLimit(i64);

impl VisitLimit {
    pub fn new(limit: i64) -> Result<Self, CampaignError> {
        if (1..=1_000_000_000).contains(&limit) {
            Ok(Self(limit))
        } else {
            Err(CampaignError::VisitLimit)
        }
    }

    pub fn parse(input: &str) -> Result<Self, CampaignError> {
        input
            .trim()
            .parse::<i64>()
            .map_err(|_| CampaignError::VisitLimit)
            .and_then(Self::new)
    }

    pub fn get(self) -> i64 {
        self.0
    }
}

/// What a visitor's user agent must say for an alternative target to apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TargetRule {
    /// iPhone, iPad, iPod.
    Ios,
    /// Android and HarmonyOS.
    Android,
    /// Windows, macOS, Linux, ChromeOS.
    Desktop,
    /// WeChat's and WeCom's in-app browser.
    WeChat,
}

impl TargetRule {
    pub const ALL: [Self; 4] = [Self::Ios, Self::Android, Self::Desktop, Self::WeChat];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ios => "ios",
            Self::Android => "android",
            Self::Desktop => "desktop",
            Self::WeChat => "wechat",
        }
    }

    pub fn parse(input: &str) -> Result<Self, CampaignError> {
        let word = input.trim().to_ascii_lowercase();
        Self::ALL
            .into_iter()
            .find(|rule| rule.as_str() == word)
            .ok_or_else(|| CampaignError::UnknownRule(input.trim().to_owned()))
    }
}

impl fmt::Display for TargetRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Alternative targets in the order they are tried; the first rule that matches the visitor
/// wins, and the link's own target serves everyone else.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AltTargets(Vec<(TargetRule, TargetUrl)>);

impl AltTargets {
    pub fn new(targets: Vec<(TargetRule, TargetUrl)>) -> Result<Self, CampaignError> {
        if targets.len() > MAX_ALT_TARGETS {
            return Err(CampaignError::TooManyTargets);
        }
        for (index, (rule, _)) in targets.iter().enumerate() {
            if targets[..index].iter().any(|(seen, _)| seen == rule) {
                return Err(CampaignError::DuplicateRule(rule.as_str()));
            }
        }
        Ok(Self(targets))
    }

    /// `RULE=URL` entries separated by line breaks or commas followed by a rule name (what
    /// the form's text area and the CLI's `--target` give).
    pub fn parse_lines<'a>(
        lines: impl IntoIterator<Item = &'a str>,
        rules: &UrlRules<'_>,
    ) -> Result<Self, CampaignError> {
        let mut targets = Vec::new();
        for line in lines.into_iter().map(str::trim).filter(|l| !l.is_empty()) {
            let (rule, url) = line
                .split_once('=')
                .ok_or_else(|| CampaignError::RuleWithoutUrl(line.to_owned()))?;
            let rule = TargetRule::parse(rule)?;
            let url =
                TargetUrl::parse(url.trim(), rules).map_err(|error| CampaignError::TargetUrl {
                    rule: rule.as_str(),
                    error,
                })?;
            targets.push((rule, url));
        }
        Self::new(targets)
    }

    /// A stored value: one `RULE=URL` per line, checked when it was stored.
    pub fn stored(text: &str) -> Self {
        Self(
            text.lines()
                .filter_map(|line| {
                    let (rule, url) = line.split_once('=')?;
                    Some((TargetRule::parse(rule).ok()?, TargetUrl::stored(url)?))
                })
                .collect(),
        )
    }

    /// What is stored: `None` when there is none.
    pub fn to_stored(&self) -> Option<String> {
        (!self.0.is_empty()).then(|| self.to_string())
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &(TargetRule, TargetUrl)> {
        self.0.iter()
    }
}

impl fmt::Display for AltTargets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, (rule, url)) in self.0.iter().enumerate() {
            if index > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{rule}={url}")?;
        }
        Ok(())
    }
}

/// Apps whose in-app browser may block a link, by the name the user-agent rules give them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum App {
    WeChat,
    Qq,
    Weibo,
    Douyin,
    Toutiao,
    Xiaohongshu,
    DingTalk,
    Alipay,
    Taobao,
}

impl App {
    pub const ALL: [Self; 9] = [
        Self::WeChat,
        Self::Qq,
        Self::Weibo,
        Self::Douyin,
        Self::Toutiao,
        Self::Xiaohongshu,
        Self::DingTalk,
        Self::Alipay,
        Self::Taobao,
    ];

    pub fn key(self) -> &'static str {
        match self {
            Self::WeChat => "wechat",
            Self::Qq => "qq",
            Self::Weibo => "weibo",
            Self::Douyin => "douyin",
            Self::Toutiao => "toutiao",
            Self::Xiaohongshu => "xiaohongshu",
            Self::DingTalk => "dingtalk",
            Self::Alipay => "alipay",
            Self::Taobao => "taobao",
        }
    }

    /// The app's name, as the user-agent rules name its browser (and the pages show it).
    pub fn name(self) -> &'static str {
        match self {
            Self::WeChat => "WeChat",
            Self::Qq => "QQ",
            Self::Weibo => "Weibo",
            Self::Douyin => "Douyin",
            Self::Toutiao => "Toutiao",
            Self::Xiaohongshu => "Xiaohongshu",
            Self::DingTalk => "DingTalk",
            Self::Alipay => "Alipay",
            Self::Taobao => "Taobao",
        }
    }

    /// Its name as the UI shows it, translated.
    pub fn words(self) -> Text {
        match self {
            Self::WeChat => t!("WeChat"),
            Self::Qq => t!("QQ"),
            Self::Weibo => t!("Weibo"),
            Self::Douyin => t!("Douyin"),
            Self::Toutiao => t!("Toutiao"),
            Self::Xiaohongshu => t!("Xiaohongshu"),
            Self::DingTalk => t!("DingTalk"),
            Self::Alipay => t!("Alipay"),
            Self::Taobao => t!("Taobao"),
        }
    }

    /// Whether the browser name the user-agent rules gave is this app's.
    pub fn is(self, browser: &str) -> bool {
        browser == self.name() || (self == Self::WeChat && browser == "WeCom")
    }

    fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

/// The in-app browsers that get the "open in your browser" page instead of a redirect.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InAppApps(u16);

impl InAppApps {
    pub const NONE: Self = Self(0);

    /// Comma- or space-separated app names; `none` (or nothing) for none.
    pub fn parse(input: &str) -> Result<Self, CampaignError> {
        let mut bits = 0;
        for word in input
            .split([',', ' ', ';', '\n'])
            .map(str::trim)
            .filter(|w| !w.is_empty())
        {
            let word = word.to_ascii_lowercase();
            if word == "none" {
                continue;
            }
            let app = App::ALL
                .into_iter()
                .find(|app| app.key() == word)
                .ok_or_else(|| CampaignError::UnknownApp(word.clone()))?;
            bits |= app.bit();
        }
        Ok(Self(bits))
    }

    pub fn from_apps(apps: impl IntoIterator<Item = App>) -> Self {
        Self(apps.into_iter().fold(0, |bits, app| bits | app.bit()))
    }

    /// A stored value (written by [`fmt::Display`]); unknown names are skipped.
    pub fn stored(text: &str) -> Self {
        Self::from_apps(
            text.split(',')
                .filter_map(|word| App::ALL.into_iter().find(|app| app.key() == word)),
        )
    }

    pub fn contains(self, app: App) -> bool {
        self.0 & app.bit() != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn apps(self) -> impl Iterator<Item = App> {
        App::ALL.into_iter().filter(move |app| self.contains(*app))
    }

    /// The app of `browser` (a name the user-agent rules give) if it is one of these.
    pub fn matches(self, browser: &str) -> bool {
        self.apps().any(|app| app.is(browser))
    }
}

impl fmt::Display for InAppApps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("none");
        }
        for (index, app) in self.apps().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            f.write_str(app.key())?;
        }
        Ok(())
    }
}
