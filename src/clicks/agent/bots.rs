//! Whether a user agent is a person's: crawlers, link-preview fetchers, site monitors, security
//! scanners and scripted clients, by name, by the words they describe themselves with, and by
//! the shape of a user agent no browser sends.

use super::{MAX_NAME, Tokens, clip, starts_word, word_starting};
use crate::clickstore::row::Text;
use std::sync::LazyLock;

/// Crawlers, link-preview fetchers and scripted clients that the generic rule below (a word
/// ending in "bot", "spider" or "crawler") does not catch.
const BOT_MARKERS: &[&str] = &[
    // Names with a space are kept whole.
    "sogou web spider",
    "sogou inst spider",
    "yahoo! slurp",
    "facebookexternalhit",
    "facebookexternalua",
    "facebookcatalog",
    "meta-external",
    "slack-imgproxy",
    "whatsapp/",
    "skypeuripreview",
    "embedly",
    "iframely",
    "vkshare",
    "line-poker",
    "mediapartners-google",
    "google-",
    "googleother",
    "googleimageproxy",
    "googleassociationservice",
    "google_partner_monitoring",
    "feedfetcher",
    "ia_archiver",
    "anthropic-ai",
    "claude-web",
    "chatgpt-user",
    "perplexity-user",
    "cohere-ai",
    "githubcopilot",
    "slurp",
    "bingpreview",
    "daumoa",
    "larkurl2card",
    "headlesschrome",
    "phantomjs",
    "lighthouse",
    "gtmetrix",
    "pingdom",
    "site24x7",
    "nodeping",
    "statuscake",
    "uptime",
    "nagios",
    "check_http",
    "zabbix",
    "datadog",
    "newrelic",
    "prtg",
    "collectd",
    "synthetic",
    "monitor",
    "scanner",
    "scanning",
    "researchscan",
    "nmap",
    "masscan",
    "zgrab",
    "nuclei",
    "gobuster",
    "sqlmap",
    "nikto",
    "wpscan",
    "jndi:",
    "validator",
    "linkcheck",
    "link checker",
    "sitecheck",
    "sitemap",
    "preview",
    "prefetch",
    "netcraft",
    "ssllabs",
    "ssl labs",
    "comodo dcv",
    "acme.",
    "shodan",
    "censys",
    "detectify",
    "securityheaders",
    "security.txt",
    "cloudflare",
    "observator",
    "phpmyadmin",
    "wordpress/",
    "scrapy",
    "colly",
    "nutch",
    "indexer",
    "scraper",
    "archiver",
    "analyzer",
    "research",
    "survey",
    "lookup",
    "fetch/",
    "fetcher",
    "harvester",
    "transcoder",
    "favicon",
    "page speed",
    "search console",
    "duplexweb",
    "storebot",
    "adsense",
    "inspector",
    "checker",
    "siteimprove",
    "catchpoint",
    "datanyze",
    "outbrain",
    "sitesucker",
    "infrawatch",
    "thousandeyes",
    "measurement",
    "logic-apps",
    "assetnote",
    "amzn-user",
    "devin/",
    "manus-user",
    "productfinder",
    "feed finder",
    "prospecting",
    "mixnode",
    "functionize",
    "whatcms",
    "pageburst",
    "browsershots",
    "keycdn",
    "urldownloader",
    // Feed aggregators fetch for their subscribers.
    "subscribers",
    "feed-id",
    "feedid",
    "feedly",
    "inoreader",
    "simplepie",
    "freshrss",
    "tt-rss",
    "magpierss",
    "netvibes",
    "flipboardrss",
    "flipboardproxy",
    "feedbin",
    "feedspot",
    "commafeed",
    "ptst/",
    "gomez",
    "internetarchive",
];

/// HTTP client libraries and tools: a script's, unless an app of its own (a podcast player, a
/// feed reader on Linux) names itself before the library it is built on.
const LIBRARIES: &[&str] = &[
    "curl/",
    "libcurl",
    "wget/",
    "python-requests",
    "python-urllib",
    "python-httpx",
    "python/",
    "aiohttp",
    "httpx",
    "go-http-client",
    "apache-httpclient",
    "http-java-client",
    "http client",
    "httpclient",
    "java/",
    "okhttp/",
    "axios/",
    "node-fetch",
    "node.js",
    "deno/",
    "undici",
    "got (",
    "postmanruntime",
    "insomnia/",
    "libwww-perl",
    "lwp::",
    "guzzlehttp",
    "ruby/",
    "php/",
    "dart/",
    "reqwest",
    "httpie/",
    "winhttp",
    "powershell",
    "ahc/",
    "libwwwperl",
];

/// Where the name of a bot may start: a UA's own words are made of these.
fn is_name_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.')
}

/// The bot's own name (the word of the UA that gave it away), or `None` for a person.
pub(super) fn bot_name(ua: &str, lower: &str) -> Option<Text> {
    static MARKERS: LazyLock<Tokens> = LazyLock::new(|| Tokens::new(BOT_MARKERS));
    static LIBRARY_TOKENS: LazyLock<Tokens> = LazyLock::new(|| Tokens::new(LIBRARIES));
    // Names with a space are kept whole.
    if let Some((index, at)) = MARKERS
        .found_in(lower)
        .filter(|(index, _)| BOT_MARKERS[*index].contains(' '))
        .min()
    {
        return Some(Text::from(&ua[at..at + BOT_MARKERS[index].len()]));
    }
    // A phone's model is named inside the first parentheses of its browser's user agent, and
    // models are called anything ("VR BOT 552", "Spider 8", "HTC_Ruby").
    let model = model_span(lower);
    let outside = |at: &usize| !model.contains(at);
    let markers = MARKERS
        .found_in(lower)
        .filter(|(index, _)| !app_not_bot(BOT_MARKERS[*index], lower))
        .map(|(_, at)| at);
    let libraries = LIBRARY_TOKENS
        .found_in(lower)
        .filter(|&(index, at)| starts_word(lower, at) && !app_not_bot(LIBRARIES[index], lower))
        .map(|(_, at)| at)
        .min()
        .filter(|_| !app_of_its_own(lower));
    // The first giveaway names the client; later ones are often the library it is built on.
    let at = markers
        .chain(libraries)
        .filter(outside)
        .chain(generic_bot_word(lower).filter(outside))
        .min()
        // A person's browser names no web address and no mailbox; crawlers name the page
        // about themselves, or whom to write to (and so do some feed readers and podcast
        // players, which name what they are, or the system they run on).
        .or_else(|| {
            contact(lower)
                .filter(|at| outside(at) && !app_of_its_own(lower))
                .map(|at| word_start_after(lower, at))
        })
        .or_else(|| no_platform(lower))?;
    Some(word_at(ua, at))
}

/// Markers that are also in the user agents of people's apps: WhatsApp's own client names its
/// device (its link-preview fetcher does not), and a feature phone's browser runs on Java.
fn app_not_bot(marker: &str, lower: &str) -> bool {
    match marker {
        "whatsapp/" => lower.contains(" device/"),
        "java/" => ["midp", "cldc", "mms/"]
            .iter()
            .any(|phone| lower.contains(phone)),
        _ => false,
    }
}

/// The word of the UA around `at`, as the bot's name.
fn word_at(ua: &str, at: usize) -> Text {
    if !ua.is_char_boundary(at) {
        return Text::from("bot");
    }
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
    Text::from(clip(
        match word {
            "" | "compatible" | "Mozilla" | "http" | "https" | "www" => "bot",
            word => word,
        },
        MAX_NAME,
    ))
}

/// The bytes of the first parentheses of a browser's user agent on Android, where the phone's
/// model is.
fn model_span(lower: &str) -> std::ops::Range<usize> {
    let Some(open) = lower.find('(') else {
        return 0..0;
    };
    let close = lower[open..]
        .find(')')
        .map_or(lower.len(), |len| open + len);
    if lower[open..close].contains("android") {
        open..close
    } else {
        0..0
    }
}

/// The start of a web address or mailbox the UA names.
fn contact(lower: &str) -> Option<usize> {
    ["+http", "http://", "https://", "www.", "mailto:", "[at]"]
        .iter()
        .filter_map(|marker| lower.find(marker))
        .chain(mailbox(lower))
        .min()
}

/// An address like `crawler@example.com`.
fn mailbox(lower: &str) -> Option<usize> {
    lower.match_indices('@').find_map(|(at, _)| {
        let before = lower[..at].bytes().next_back()?;
        let domain = &lower[at + 1..];
        let host: &str = domain
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '-'))
            .next()?;
        // A real domain ends in letters (not `android@62.0.3202.101`).
        let top_level = host.rsplit('.').next().unwrap_or("");
        let named = top_level.len() >= 2 && top_level.bytes().all(|b| b.is_ascii_alphabetic());
        (before.is_ascii_alphanumeric() && host.contains('.') && named).then_some(at)
    })
}

/// Where a bot's name most likely is when only its address gave it away: the UA's first word,
/// unless that is the `Mozilla/5.0 (compatible; …)` every crawler starts with.
fn word_start_after(lower: &str, at: usize) -> usize {
    match lower.find("compatible; ") {
        Some(compatible) if compatible < at => compatible + "compatible; ".len(),
        _ if lower.starts_with("mozilla/") => at,
        _ => 0,
    }
}

/// Every browser, app, phone and television says what it runs on; a UA that names no system,
/// no device and no engine is a script's (`collectd/5.5.1`, `NodePing`,
/// `Mozilla/5.0 (compatible; FormFinder/1.0)`).
fn no_platform(lower: &str) -> Option<usize> {
    const PLATFORMS: &[&str] = &[
        "android",
        "iphone",
        "ipad",
        "ipod",
        "ios",
        "windows",
        "win32",
        "win64",
        "wow64",
        "win10",
        "mac",
        "darwin",
        "cfnetwork",
        "watch",
        "linux",
        "x11",
        "cros",
        "bsd",
        "sunos",
        "tizen",
        "webos",
        "kaios",
        "symbian",
        "series",
        "s60",
        "blackberry",
        "bb10",
        "midp",
        "cldc",
        "profile/",
        "up.browser",
        "up/",
        "docomo",
        "kddi",
        "nokia",
        "samsung",
        "sie-",
        "sonyericsson",
        "mot-",
        "lg-",
        "lge",
        "alcatel",
        "huawei",
        "zte",
        "htc",
        "amoi",
        "sharp",
        "sony",
        "lenovo",
        "asus",
        "philips",
        "pantech",
        "archos",
        "motorola",
        "vodafone",
        "sanyo",
        "sagem",
        "kyocera",
        "tecno",
        "karbonn",
        "micromax",
        "bird ",
        "lg ",
        "wap",
        "browser",
        "opera",
        "playstation",
        "nintendo",
        "xbox",
        "roku",
        "smart-tv",
        "smarttv",
        "hbbtv",
        "tv",
        "amazon;",
        "garmin",
        "dv(",
        "fban",
        "fbav",
        "gecko",
        "applewebkit",
        "trident",
        "msie",
        "presto",
        "konqueror",
        "netfront",
        "obigo",
        "maui",
        "brew",
        "java",
        "j2me",
        "ucweb",
        "mqqbrowser",
        "dalvik",
        "cronet",
        "okhttp",
        "amiga",
        "beos",
        "palm",
        "risc os",
        "inferno",
        "plan9",
        "netsurf",
        "lynx",
        "dillo",
        "hotjava",
        "mosaic",
        "teleca",
        "rim9",
        "foma",
        "lumia",
        "ppc",
        "lg/",
    ];
    static PLATFORM_TOKENS: LazyLock<Tokens> = LazyLock::new(|| Tokens::new(PLATFORMS));
    if PLATFORM_TOKENS.any_in(lower) || names_an_app(lower) {
        return None;
    }
    // A phone's own name (`NOKIA-6060`, `SGH-D900i`, `Spice M5364`) is letters and digits;
    // a script's is a word, a version, perhaps a note in parentheses.
    let first = lower.split([' ', '/', ';', '(']).next().unwrap_or("");
    let second = lower.split([' ', '/', ';', '(']).nth(1).unwrap_or("");
    let model_like = |word: &str| {
        word.bytes().any(|byte| byte.is_ascii_digit())
            && word.bytes().any(|byte| byte.is_ascii_alphabetic())
    };
    let versioned = lower
        .match_indices('/')
        .any(|(at, _)| lower[at + 1..].starts_with(|c: char| c.is_ascii_digit() || c == 'v'));
    if (model_like(first) || model_like(second)) && !versioned {
        return None;
    }
    // The name is the first word, the one after "compatible; ", or else the last word.
    Some(word_start_after(lower, lower.len()))
}

/// People's podcast, feed and media apps name what they are.
fn names_an_app(lower: &str) -> bool {
    const APP_WORDS: &[&str] = &[
        "player",
        "pod",
        "cast",
        "rss",
        "feed",
        "reader",
        "syndication",
        "music",
        "radio",
        " fm",
        "audio",
        "media",
        "stream",
        "tube",
        "vlc",
        "lavf",
        "mpv",
        "kodi",
        "xbmc",
        "download",
        "torrent",
        "updat",
        ".fm",
        "catcher",
        "spotify",
        "sonos",
        "airplay",
        "bose/",
        "zune",
        "rhythmbox",
        "foobar2000",
        "audacious",
    ];
    static WORDS: LazyLock<Tokens> = LazyLock::new(|| Tokens::new(APP_WORDS));
    WORDS.any_in(lower)
}

/// A client of its own (not a browser, not a script): a feed reader or podcast player, or an
/// app that names the system it runs on.
fn app_of_its_own(lower: &str) -> bool {
    names_an_app(lower)
        || (!lower.starts_with("mozilla/")
            && [
                "linux", "windows", "mac os", "macos", "iphone", "ipad", "android", "ios;", "ios/",
                "tvos",
            ]
            .iter()
            .any(|platform| word_starting(lower, platform).is_some()))
}

/// The start of a word that ends in "bot", "spider" or "crawler" (Googlebot, PetalBot,
/// Bytespider, 360Spider, YisouSpider, "Sogou web spider"), but not a phone named CUBOT.
fn generic_bot_word(lower: &str) -> Option<usize> {
    ["bot", "spider", "crawler", "crawling"]
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
