//! What a user agent says about the visitor: browser (or in-app browser), OS, device category,
//! and whether it is a person at all. woothee does the general parsing; the rules here come
//! first, because woothee knows neither the Chinese super-apps and browsers our operators'
//! visitors use nor most of the crawlers and scripts that fetch short links.

use super::capture::clip;
pub use crate::clickstore::row::Agent;
use crate::clickstore::row::Text;

/// In-app browsers and browsers, each by a token of its user agent (lower case), in the order
/// they are tried: an app's web view often carries the token of the engine it embeds as well
/// (WeCom's says MicroMessenger, QQ's and old WeChat's say MQQBrowser), so apps come first.
/// The version is read after `version_after` when the rule names one, else after the token.
struct AppRule {
    token: &'static str,
    name: &'static str,
    version_after: Option<&'static str>,
}

const fn app(token: &'static str, name: &'static str) -> AppRule {
    AppRule {
        token,
        name,
        version_after: None,
    }
}

const APPS: &[AppRule] = &[
    app("wxwork/", "WeCom"),
    app("micromessenger/", "WeChat"),
    app("__weibo__", "Weibo"),
    AppRule {
        token: "appname/aweme",
        name: "Douyin",
        version_after: Some("app_version/"),
    },
    app("aweme_", "Douyin"),
    app("newsarticle/", "Toutiao"),
    AppRule {
        token: "appname/news_article",
        name: "Toutiao",
        version_after: Some("app_version/"),
    },
    app("xhsdiscover/", "Xiaohongshu"),
    app("xiaohongshu/", "Xiaohongshu"),
    app("dingtalk/", "DingTalk"),
    app("dingtalk(", "DingTalk"),
    app("alipayclient/", "Alipay"),
    app("aliapp(ap/", "Alipay"),
    app("alipaydefined", "Alipay"),
    app("aliapp(tb/", "Taobao"),
    app(" qq/", "QQ"),
    AppRule {
        token: "channelname/feishu",
        name: "Feishu",
        version_after: Some("lark/"),
    },
    app("lark/", "Lark"),
    app("baiduboxapp/", "Baidu"),
    app("baidubrowser/", "Baidu Browser"),
    app("quark/", "Quark"),
    app("ucbrowser/", "UC Browser"),
    app("ubrowser/", "UC Browser"),
    app("ucweb/", "UC Browser"),
    app("mqqbrowser/", "QQ Browser"),
    app("qqbrowser/", "QQ Browser"),
    app("huaweibrowser/", "Huawei Browser"),
    app("miuibrowser/", "MIUI Browser"),
    app("vivobrowser/", "Vivo Browser"),
    app("heytapbrowser/", "OPPO Browser"),
    app("oppobrowser/", "OPPO Browser"),
    app("qihoobrowser/", "360 Browser"),
    app("qhbrowser/", "360 Browser"),
    app("360se", "360 Browser"),
    app("360ee", "360 Browser"),
    app("sogoumobilebrowser/", "Sogou Browser"),
    app("sogoumse", "Sogou Browser"),
    app("metasr", "Sogou Browser"),
    app("2345browser/", "2345 Browser"),
    app("2345explorer/", "2345 Browser"),
    app("zhihuhybrid", "Zhihu"),
    app("fban/", "Facebook"),
    AppRule {
        token: "fb_iab/",
        name: "Facebook",
        version_after: Some("fbav/"),
    },
    app("instagram ", "Instagram"),
    app("samsungbrowser/", "Samsung Internet"),
    app("brave/", "Brave"),
    app("brave ", "Brave"),
    app("yabrowser/", "Yandex Browser"),
    app("edg/", "Edge"),
    app("edga/", "Edge"),
    app("edgios/", "Edge"),
    app("opr/", "Opera"),
    app("opt/", "Opera"),
    app("opios/", "Opera"),
    app("crios/", "Chrome"),
    app("fxios/", "Firefox"),
];

/// Crawlers, link-preview fetchers and scripted clients that the generic rule below (a word
/// ending in "bot", "spider" or "crawler") does not catch.
const BOT_MARKERS: &[&str] = &[
    // Names with a space are kept whole.
    "sogou web spider",
    "sogou inst spider",
    "yahoo! slurp",
    "facebookexternalhit",
    "facebookcatalog",
    "meta-externalagent",
    "slack-imgproxy",
    "whatsapp/",
    "skypeuripreview",
    "embedly",
    "iframely",
    "vkshare",
    "line-poker",
    "viber",
    "mediapartners-google",
    "google-",
    "googleother",
    "feedfetcher",
    "ia_archiver",
    "anthropic-ai",
    "claude-web",
    "chatgpt-user",
    "perplexity-user",
    "slurp",
    "bingpreview",
    "daum",
    "larkurl2card",
    "headlesschrome",
    "phantomjs",
    "lighthouse",
    "curl/",
    "wget/",
    "python-requests",
    "python-urllib",
    "python-httpx",
    "python/",
    "aiohttp",
    "httpx/",
    "go-http-client",
    "apache-httpclient",
    "java/",
    "okhttp",
    "axios/",
    "node-fetch",
    "undici",
    "got (",
    "postmanruntime",
    "insomnia/",
    "libwww-perl",
    "lwp::",
    "guzzlehttp",
    "ruby",
    "php/",
    "dart/",
    "reqwest",
    "httpie/",
    "scrapy",
    "colly",
    "dalvik/",
    "winhttp",
    "powershell",
];

/// Where the name of a bot may start: a UA's own words are made of these.
fn is_name_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.')
}

const MAX_NAME: usize = 64;

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
    let (browser, browser_version) = match in_app(ua, &lower) {
        Some((name, version)) => (Some(Text::from(name)), version.map(Text::from)),
        None => match &parsed {
            Some(parsed) => (known(parsed.name), known(parsed.version)),
            None => (None, None),
        },
    };
    let woothee_os = parsed.as_ref().map_or("", |p| p.os);
    let os = os_of(&lower, woothee_os);
    let os_version = match os {
        Some("HarmonyOS") => version_after(ua, &lower, "openharmony ").map(Text::from),
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

/// The bot's own name (the word of the UA that gave it away), or `None` for a person.
fn bot_name(ua: &str, lower: &str) -> Option<Text> {
    if let Some((at, marker)) = BOT_MARKERS
        .iter()
        .filter(|marker| marker.contains(' '))
        .find_map(|marker| Some((lower.find(marker)?, marker)))
    {
        return Some(Text::from(&ua[at..at + marker.len()]));
    }
    // The first giveaway names the client; later ones are often the library it is built on.
    let at = BOT_MARKERS
        .iter()
        .filter_map(|marker| lower.find(marker))
        .chain(generic_bot_word(lower))
        .min()
        // A person's browser names no web address; crawlers name the page about themselves.
        .or_else(|| lower.find("+http").or_else(|| lower.find("http://")))?;
    let bytes = ua.as_bytes();
    let mut start = at;
    while start > 0 && is_name_byte(bytes[start - 1]) {
        start -= 1;
    }
    let mut end = at;
    while end < bytes.len() && is_name_byte(bytes[end]) {
        end += 1;
    }
    let word = ua[start..end].trim_matches(|c| c == '-' || c == '.' || c == '_');
    Some(Text::from(clip(
        match word {
            "" | "compatible" | "Mozilla" => "bot",
            word => word,
        },
        MAX_NAME,
    )))
}

/// The start of a word that ends in "bot", "spider" or "crawler" (Googlebot, PetalBot,
/// Bytespider, 360Spider, YisouSpider, "Sogou web spider"), but not a phone named CUBOT.
fn generic_bot_word(lower: &str) -> Option<usize> {
    ["bot", "spider", "crawler"]
        .iter()
        .filter_map(|suffix| {
            lower.match_indices(suffix).find_map(|(at, _)| {
                let end = at + suffix.len();
                let next = lower.as_bytes().get(end).copied();
                let ends_word = next.is_none_or(|byte| !byte.is_ascii_alphabetic());
                let phone = lower[..at].ends_with("cu");
                (ends_word && !phone).then_some(at)
            })
        })
        .min()
}

/// The app or browser a rule recognises, with its version.
fn in_app<'a>(ua: &'a str, lower: &str) -> Option<(&'static str, Option<&'a str>)> {
    if let Some(rule) = APPS.iter().find(|rule| applies(rule, lower)) {
        let version = rule
            .version_after
            .and_then(|after| version_after(ua, lower, after))
            .or_else(|| version_after(ua, lower, rule.token));
        return Some((rule.name, version));
    }
    // Android's system web view, inside any other app ("; wv)", or the X5 engine's TBS).
    if lower.contains("android") && (lower.contains("; wv)") || lower.contains(" tbs/")) {
        return Some(("Android WebView", version_after(ua, lower, "chrome/")));
    }
    None
}

fn applies(rule: &AppRule, lower: &str) -> bool {
    if !lower.contains(rule.token) {
        return false;
    }
    // Tencent's X5 web view says MQQBrowser/6.2 TBS/… inside other apps; QQ Browser does not.
    !(rule.name == "QQ Browser" && lower.contains(" tbs/"))
}

/// The version number (digits and dots) that follows `token`, if any.
fn version_after<'a>(ua: &'a str, lower: &str, token: &str) -> Option<&'a str> {
    let start = lower.find(token)? + token.len();
    let rest = &ua[start..];
    let len = rest
        .bytes()
        .take_while(|byte| byte.is_ascii_digit() || *byte == b'.')
        .count();
    let version = rest[..len].trim_end_matches('.');
    (!version.is_empty() && version.starts_with(|c: char| c.is_ascii_digit()))
        .then(|| clip(version, MAX_NAME))
}

/// One name per operating system: woothee's iPhone, iPad and iPod are all iOS, and HarmonyOS
/// (which also says Android on older phones) is itself.
fn os_of<'a>(lower: &str, woothee_os: &'a str) -> Option<&'a str> {
    if lower.contains("harmonyos") || lower.contains("openharmony") {
        return Some("HarmonyOS");
    }
    match woothee_os {
        "iPhone" | "iPad" | "iPod" | "iOS" => Some("iOS"),
        "Mac OSX" => Some("macOS"),
        // woothee reads tokens case-sensitively; some apps send their UA in lower case.
        "" | woothee::woothee::VALUE_UNKNOWN => [
            ("android", "Android"),
            ("iphone", "iOS"),
            ("ipad", "iOS"),
            ("windows", "Windows"),
            ("mac os x", "macOS"),
        ]
        .iter()
        .find_map(|(token, os)| lower.contains(token).then_some(*os)),
        other => Some(other),
    }
}

/// The device category: from what the UA names (iPhone, iPad, an Android or HarmonyOS phone
/// or tablet) before woothee's category, which files an iPhone without "Mobile" as a tablet.
fn device_of(lower: &str, os: Option<&str>, category: &str) -> &'static str {
    if lower.contains("ipad") {
        return "tablet";
    }
    if lower.contains("iphone") || lower.contains("ipod") {
        return "mobile";
    }
    match os {
        Some("HarmonyOS") if lower.contains("(tablet;") => return "tablet",
        Some("HarmonyOS") if lower.contains("(phone;") || lower.contains("mobile") => {
            return "mobile";
        }
        Some("Android" | "HarmonyOS") if lower.contains("mobile") => return "mobile",
        Some("Android" | "HarmonyOS") if !lower.contains("tv") => return "tablet",
        _ => {}
    }
    match category {
        "pc" => "desktop",
        "smartphone" => "mobile",
        "mobilephone" => "feature phone",
        "appliance" => "appliance",
        _ => "other",
    }
}
