//! Which browser or in-app browser a user agent is, by the tokens apps and browsers add to the
//! engine's: the Chinese super-apps and browsers first, then the world's in-app browsers and
//! minor browsers, then any product token we have no rule for.

use super::{Tokens, leading_version, version_after};
use std::sync::LazyLock;

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

const fn app_at(token: &'static str, name: &'static str, version: &'static str) -> AppRule {
    AppRule {
        token,
        name,
        version_after: Some(version),
    }
}

const APPS: &[AppRule] = &[
    app("wxwork/", "WeCom"),
    app("micromessenger/", "WeChat"),
    app("__weibo__", "Weibo"),
    app("weibointlios", "Weibo"),
    app_at("appname/aweme", "Douyin", "app_version/"),
    app("aweme_", "Douyin"),
    app("newsarticle/", "Toutiao"),
    app_at("appname/news_article", "Toutiao", "app_version/"),
    app_at("appname/musical_ly", "TikTok", "app_version/"),
    app("musical_ly_", "TikTok"),
    app("trill_", "TikTok"),
    app("topbuzz/", "TopBuzz"),
    app("xhsdiscover/", "Xiaohongshu"),
    app("xiaohongshu/", "Xiaohongshu"),
    app("dingtalk/", "DingTalk"),
    app("dingtalk(", "DingTalk"),
    app("alipayclient/", "Alipay"),
    app("aliapp(ap/", "Alipay"),
    app("alipaydefined", "Alipay"),
    app("aliapp(tb/", "Taobao"),
    app(" qq/", "QQ"),
    app_at("channelname/feishu", "Feishu", "lark/"),
    app("lark/", "Lark"),
    app("bdhonorbrowser", "Honor Browser"),
    app("baiduboxapp/", "Baidu"),
    // Old Baidu Browser says it inside Internet Explorer's parentheses: `baidubrowser 1.x`.
    app("baidubrowser", "Baidu Browser"),
    app("bidubrowser/", "Baidu Browser"),
    app("bdbrowser/", "Baidu Browser"),
    app("baiduhd/", "Baidu Browser"),
    app("bdspark/", "Baidu Browser"),
    app("quark/", "Quark"),
    // The desktop editions of Quark, UC and Huawei's browsers.
    app("quarkpc/", "Quark"),
    app("ucpc/", "UC Browser"),
    app("hbpc/", "Huawei Browser"),
    app("ucturbo/", "UC Browser Turbo"),
    app("ucbrowser/", "UC Browser"),
    app("ubrowser/", "UC Browser"),
    app("ucmobile/", "UC Browser"),
    // Feature phones' UC says UCWEB7.9 or "UCBrowser8.2/…/UCWEB Mobile".
    app("ucweb", "UC Browser"),
    app_at("pr(ucbrowser", "UC Browser", "pr(ucbrowser/"),
    app("mqqbrowser/", "QQ Browser"),
    app("qqbrowser/", "QQ Browser"),
    // Outside the parentheses only: Huawei Browser names HMS Core in its platform.
    app("hmscore/", "Huawei Mobile Services"),
    app("huaweibrowser/", "Huawei Browser"),
    app("honorbrowser/", "Honor Browser"),
    app("mint browser/", "Mint Browser"),
    app("miuibrowser/", "MIUI Browser"),
    app("vivobrowser/", "Vivo Browser"),
    app("heytapbrowser/", "HeyTap Browser"),
    app("oppobrowser/", "OPPO Browser"),
    app("mzbrowser/", "Meizu Browser"),
    app("qihoobrowser/", "360 Browser"),
    app("qhbrowser/", "360 Browser"),
    app("360se", "360 Browser"),
    app("360ee", "360 Browser"),
    app("sogoumobilebrowser/", "Sogou Browser"),
    app("sogoumse", "Sogou Browser"),
    app("metasr", "Sogou Browser"),
    app("2345browser/", "2345 Browser"),
    app("2345explorer/", "2345 Browser"),
    app("2345chrome", "2345 Browser"),
    app("mxbrowser/", "Maxthon"),
    app("mxios/", "Maxthon"),
    app("maxthon", "Maxthon"),
    app("zhihuhybrid", "Zhihu"),
    app("smzdm", "smzdm"),
    app("slbrowser/", "Smart Lenovo Browser"),
    // The world's in-app browsers.
    app("fb_iab/orca", "Messenger"),
    app("fban/messenger", "Messenger"),
    app("fban/orca", "Messenger"),
    app("fban/", "Facebook"),
    app_at("fb_iab/", "Facebook", "fbav/"),
    app("instagram ", "Instagram"),
    app("barcelona ", "Threads"),
    app("twitterandroid", "Twitter"),
    app("twitter for iphone", "Twitter"),
    app("telegram-android/", "Telegram"),
    app("telegram-ios/", "Telegram"),
    app("telegrambot", "Telegram"),
    app_at("kakaotalk", "KakaoTalk", "kakaotalk "),
    app("naver(inapp", "Naver"),
    app("daumapps/", "Daum"),
    app("line/", "LINE"),
    app("snapchat", "Snapchat"),
    app("[pinterest/", "Pinterest"),
    app("pinterest for ", "Pinterest"),
    app("linkedinapp", "LinkedIn"),
    app("googleapp/", "Google"),
    app("gsa/", "Google"),
    app("com.google.android.apps.searchlite", "Google Go"),
    app("com.google.android.youtube", "YouTube"),
    app("instabridge/", "Instabridge"),
    app("viber/", "Viber"),
    app("flipboard", "Flipboard"),
    app("bingsapphire/", "Microsoft Bing"),
    app("bingweb/", "Microsoft Bing"),
    // Valve's Steam client, overlay and Big Picture, in the platform part.
    app("valve steam", "Steam"),
    // Headsets' browsers name Samsung's too, and Pico's Oculus's.
    app("picobrowser/", "Pico Browser"),
    app("oculusbrowser/", "Oculus Browser"),
    // Browsers that say Chrome, Safari or Firefox as well.
    app("samsungbrowser/", "Samsung Internet"),
    app("brave/", "Brave"),
    app("brave ", "Brave"),
    // Brave on iOS adds only its name, at the end.
    app(" brave", "Brave"),
    app("(brave)", "Brave"),
    app("yabrowser/", "Yandex Browser"),
    app("yasearchbrowser/", "Yandex Browser"),
    app("yandexsearchbrowser/", "Yandex Browser"),
    app("yandexsearch/", "Yandex Browser"),
    app("yaapp_android/", "Yandex Browser"),
    app("yaapp_ios/", "Yandex Browser"),
    app("duckduckgo/", "DuckDuckGo"),
    app("ddg/", "DuckDuckGo"),
    app("ecosia", "Ecosia"),
    app("avast/", "Avast Secure Browser"),
    app("avastsecurebrowser", "Avast Secure Browser"),
    app("avg/", "AVG Secure Browser"),
    app("qwantmobile/", "Qwant"),
    app("qwantios/", "Qwant"),
    app("qwantbrowser/", "Qwant"),
    app("qtcarbrowser", "Tesla Browser"),
    app("alohabrowser/", "Aloha Browser"),
    app("aloha/", "Aloha Browser"),
    app("phx/", "Phoenix Browser"),
    app("hibrowser/", "Hi Browser"),
    app("hawk/quickbrowser", "Hawk Quick Browser"),
    app("puffin/", "Puffin"),
    app("sznprohlizec/", "Seznam Browser"),
    app("abb/", "AdBlock Browser"),
    app("vivaldi/", "Vivaldi"),
    app("whale/", "Whale"),
    app("silk/", "Silk"),
    app("focus/", "Firefox Focus"),
    app("klar/", "Firefox Klar"),
    app("edg/", "Edge"),
    app("edga/", "Edge"),
    app("edgios/", "Edge"),
    app("edgw/", "Edge WebView2"),
    app("edge/", "Edge"),
    app("opx/", "Opera GX"),
    app("oprgx/", "Opera GX"),
    app("opr/", "Opera"),
    app("opt/", "Opera"),
    app("opios/", "Opera"),
    app("opera mini/", "Opera Mini"),
    app("coast/", "Opera Coast"),
    app("crios/", "Chrome"),
    app("crmo/", "Chrome"),
    app("fxios/", "Firefox"),
];

/// The app or browser a rule recognises, with its version.
pub(super) fn in_app<'a>(ua: &'a str, lower: &str) -> Option<(&'a str, Option<&'a str>)> {
    static TOKENS: LazyLock<Tokens> =
        LazyLock::new(|| Tokens::new(&APPS.iter().map(|rule| rule.token).collect::<Vec<_>>()));
    // The first rule of the list that applies, wherever its token is.
    let first = TOKENS
        .found_in(lower)
        .filter(|&(index, at)| applies(&APPS[index], lower, at))
        .map(|(index, _)| index)
        .min();
    if let Some(rule) = first.map(|index| &APPS[index]) {
        let version = rule
            .version_after
            .and_then(|after| version_after(ua, lower, after))
            .or_else(|| version_after(ua, lower, rule.token));
        return Some((rule.name, version));
    }
    if let Some(found) = product_token(ua, lower) {
        return Some(found);
    }
    // An app built on Electron or Qt's web engine that did not name itself.
    if lower.contains("electron/") {
        return Some(("Electron", version_after(ua, lower, "electron/")));
    }
    if lower.contains("qtwebengine/") {
        return Some(("Qt Web Engine", version_after(ua, lower, "qtwebengine/")));
    }
    let android = lower.contains("android");
    // Android's system web view, inside any other app ("; wv)", the X5 engine's TBS, or the
    // "Version/4.0 Chrome/" that only web views send).
    if android
        && (in_web_view(lower)
            || lower.contains(" tbs/")
            || (lower.contains("version/4.0 chrome/")))
    {
        return Some(("Android WebView", version_after(ua, lower, "chrome/")));
    }
    // Android's own browser before Chrome, and the Java HTTP client apps fetch links with.
    if android && !lower.contains("chrome/") && lower.contains("safari/")
        || lower.starts_with("dalvik/")
    {
        return Some(("Android Browser", version_after(ua, lower, "version/")));
    }
    None
}

fn applies(rule: &AppRule, lower: &str, at: usize) -> bool {
    match rule.token {
        // Tencent's X5 web view says MQQBrowser/6.2 TBS/… inside other apps; QQ Browser
        // does not.
        "mqqbrowser/" | "qqbrowser/" => !lower.contains(" tbs/"),
        // An app on HMS Core's web view names it after the engine; Huawei Browser names it
        // in its platform, `(Linux; Android 10; LYA-AL00; HMSCore/4.0.0)`.
        "hmscore/" => !in_parentheses(lower, at),
        _ => true,
    }
}

/// Whether the byte at `at` lies inside parentheses.
fn in_parentheses(lower: &str, at: usize) -> bool {
    let before = &lower.as_bytes()[..at];
    let opened = before.iter().filter(|&&byte| byte == b'(').count();
    let closed = before.iter().filter(|&&byte| byte == b')').count();
    opened > closed
}

/// Tokens every engine's user agent is made of, and tokens apps add that name no product:
/// none of them is the name of a browser.
const NOT_PRODUCTS: &[&str] = &[
    "mozilla",
    "applewebkit",
    "webkit",
    "chrome",
    "chromium",
    "headlesschrome",
    "safari",
    "version",
    "mobile",
    "gecko",
    "firefox",
    "khtml",
    "like",
    "nettype",
    "language",
    "webp",
    "jssdk",
    "process",
    "channel",
    "bytelocale",
    "bytefulllocale",
    "region",
    "sp-engine",
    "xweb",
    "mmwebid",
    "mmwebsdk",
    "uws",
    "bdapp",
    "languagetype",
    "matrixstyle",
    "themeua",
    "nabar",
    "swan",
    "appname",
    "app_version",
    "appverc",
    "apptheme",
    "broPP",
    "sa",
    "ubrowser",
    "build",
    "cpu",
    "os",
    "iphone",
    "ipad",
    "android",
    "linux",
    "windows",
    "trident",
    "edg",
    "cfnetwork",
    "darwin",
    "isdarkmode",
    "statusbarheight",
    "jsbv",
    "abi",
    "model",
    "device",
    "webview",
    "wkwebview",
    "electron",
    "qtwebengine",
    "mqqbrowser",
    "tbs",
    "statusbarheightdp",
    "agentweb",
    "core",
    "pixel",
    "scale",
    "appversion",
    "time",
    "ubuntu",
    "fedora",
    "debian",
    "centos",
    // Pale Moon's and Basilisk's engine, named before the browser's own token.
    "goanna",
    // Cobalt's (YouTube on televisions) porting layer, named after it.
    "starboard",
];

/// Whether `word` is one of [`NOT_PRODUCTS`].
fn names_no_product(word: &str) -> bool {
    NOT_PRODUCTS
        .iter()
        .any(|known| known.eq_ignore_ascii_case(word))
}

/// Android's web view marks itself in the user agent's platform: `(Linux; Android 14; …; wv)`.
fn in_web_view(lower: &str) -> bool {
    lower.contains("; wv)") || lower.contains("; wv ")
}

/// A product token (`Name/1.2`) outside the parentheses of a `Mozilla/5.0` user agent that no
/// rule above knows: browsers built on Chromium or Firefox name themselves this way
/// (Herring/95.5, LikeWise/94.6, Atom/1.6, Mypal/74.1, and on Gecko alone SeaMonkey/2.53,
/// K-Meleon/76.4), as do engines of their own (Ladybird/1.0, Cobalt/25), and their name is a
/// better answer than Chrome, Firefox or nothing. When there are several, the last: an app embedding a framework names the
/// framework first (`CEF/128 … R2Client/1.0`).
fn product_token<'a>(ua: &'a str, lower: &str) -> Option<(&'a str, Option<&'a str>)> {
    if !lower.starts_with("mozilla/5.0") {
        return None;
    }
    let words = top_level_words(ua);
    let last = words
        .iter()
        .enumerate()
        .rev()
        .find_map(|(at, word)| product(word).map(|(name, version)| (at, name, version)));
    if let Some((at, name, version)) = last {
        return Some((two_word_name(ua, &words, at, name), version));
    }
    // Apps that show pages in Android's web view add a bare word as often as a browser does,
    // and the page is the web view's.
    if in_web_view(lower) {
        return None;
    }
    bare_name(ua, &words)
}

/// `name`, the start of `words[at]`, with the word before when it is the generic "Browser":
/// "ZTE Browser/73.4", "360 Alitephone Browser".
fn two_word_name<'a>(ua: &'a str, words: &[&'a str], at: usize, name: &'a str) -> &'a str {
    match at.checked_sub(1).map(|before| words[before]) {
        Some(before) if name.eq_ignore_ascii_case("browser") && !before.contains('/') => {
            span(ua, before, name)
        }
        _ => name,
    }
}

/// Words without a version that only engines' user agents have, and that name no product.
const NOT_NAMES: &[&str] = &["mobile", "safari", "vr", "tablet", "like", "gecko", "u"];

/// A name alone at the end of a Chromium or WebKit user agent, where other browsers put a
/// product token: `… Safari/537.36 Sparrow`, `… Mobile/15E148 TopBuzz com.alex.NewsMaster/8.2.1`.
fn bare_name<'a>(ua: &'a str, words: &[&'a str]) -> Option<(&'a str, Option<&'a str>)> {
    let engine = words.iter().position(|word| {
        word.get(..12)
            .is_some_and(|start| start.eq_ignore_ascii_case("applewebkit/"))
    })?;
    let after = &words[engine + 1..];
    let at = after.iter().rposition(|word| {
        (3..=32).contains(&word.len())
            && word.starts_with(|c: char| c.is_ascii_alphabetic())
            && word.bytes().all(|byte| byte.is_ascii_alphanumeric())
            && !NOT_NAMES
                .iter()
                .any(|known| known.eq_ignore_ascii_case(word))
            && !names_no_product(word)
    })?;
    let name = two_word_name(ua, after, at, after[at]);
    // "Browser" alone names nothing.
    (!name.eq_ignore_ascii_case("browser")).then_some((name, None))
}

/// The part of `ua` from the start of `first` to the end of `last`, both slices of it.
fn span<'a>(ua: &'a str, first: &str, last: &str) -> &'a str {
    let offset = |part: &str| part.as_ptr() as usize - ua.as_ptr() as usize;
    &ua[offset(first)..offset(last) + last.len()]
}

/// The space-separated words of `ua` outside parentheses.
fn top_level_words(ua: &str) -> Vec<&str> {
    let mut words = Vec::new();
    let mut depth = 0u32;
    let mut start = 0;
    for (at, byte) in ua.bytes().enumerate().chain([(ua.len(), b' ')]) {
        match byte {
            b'(' => depth += 1,
            b')' => depth = depth.saturating_sub(1),
            b' ' if depth == 0 && start < at => words.push(&ua[start..at]),
            _ => {}
        }
        // A word starts after a space or a closing parenthesis at the top level.
        if depth > 0 || matches!(byte, b' ' | b')') {
            start = at + 1;
        }
    }
    words
}

fn product(token: &str) -> Option<(&str, Option<&str>)> {
    let (name, version) = token.split_once('/')?;
    let digits = version.trim_start_matches(['v', 'V']);
    // Names may start with a digit ("115Browser", "2345Explorer"), never be one.
    let plausible = name.len() >= 3
        && name.len() <= 32
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.bytes().any(|byte| byte.is_ascii_alphabetic())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_'))
        && digits.starts_with(|c: char| c.is_ascii_digit())
        && !names_no_product(name);
    if !plausible {
        return None;
    }
    Some((name, leading_version(digits)))
}

/// Clients that are not browsers name themselves first: `Spotify/8.7.70 iOS/16.0`,
/// `TuneIn Radio/31.9.0; iPhone17,5`, `Repod/2.9.0 Mozilla/5.0 (…)`.
pub(super) fn app_name<'a>(ua: &'a str, lower: &str) -> Option<(&'a str, Option<&'a str>)> {
    let ends = |at: usize| {
        let rest = &ua[at..];
        rest.starts_with('/')
            || rest.starts_with('(')
            || rest.starts_with(';')
            || rest.starts_with(" (")
            || rest.starts_with(" - ")
            || (rest.starts_with(' ') && rest[1..].starts_with(|c: char| c.is_ascii_digit()))
    };
    let end = (1..ua.len())
        .find(|&at| ua.is_char_boundary(at) && ends(at))
        .unwrap_or(ua.len());
    let name = ua[..end].trim();
    let before_mozilla = lower[end..]
        .trim_start_matches(|c: char| c != ' ')
        .trim_start();
    let leads = !lower.starts_with("mozilla/")
        || (before_mozilla.starts_with("mozilla/") && !name.eq_ignore_ascii_case("mozilla"));
    let generic = ["mozilla", "dalvik", "opera", "ucweb", "okhttp", "cfnetwork"]
        .iter()
        .any(|word| name.eq_ignore_ascii_case(word));
    let plausible = leads
        && !generic
        && (2..=40).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        // Reverse-DNS names of apps (com.google.ios.youtube) say nothing a person reads.
        && !name.contains('.')
        && name.bytes().any(|byte| byte.is_ascii_lowercase());
    plausible.then(|| (name, ua[end..].strip_prefix('/').and_then(leading_version)))
}

/// The browser an engine's own token names, for user agents woothee cannot read (it reads
/// tokens case-sensitively, and some apps send theirs in lower case).
pub(super) fn engine_browser<'a>(ua: &'a str, lower: &str) -> Option<(&'a str, Option<&'a str>)> {
    [
        ("chrome/", "Chrome"),
        ("firefox/", "Firefox"),
        ("version/", "Safari"),
    ]
    .iter()
    .find(|(token, _)| lower.contains(token))
    .map(|(token, name)| (*name, version_after(ua, lower, token)))
}
