//! What a visitor's user agent runs on: the operating system, one name per system, and the
//! device category.

use super::{Tokens, word_starting};
use std::sync::LazyLock;

/// One name per operating system: woothee's iPhone, iPad and iPod are all iOS, its "Windows 10"
/// and "Windows 7" are Windows (their version is the OS version), and HarmonyOS (which also says Android on older phones) is itself.
pub(super) fn os_of<'a>(lower: &str, woothee_os: &'a str) -> Option<&'a str> {
    if lower.contains("harmonyos") || lower.contains("openharmony") {
        return Some("HarmonyOS");
    }
    // Chromebooks run Android apps, whose user agents say Android and the model.
    if lower.contains("chromebook") || lower.contains("cros ") {
        return Some("Chrome OS");
    }
    match woothee_os {
        "iPhone" | "iPad" | "iPod" | "iOS" => Some("iOS"),
        "Mac OSX" => Some("macOS"),
        "ChromeOS" => Some("Chrome OS"),
        "Windows Phone OS" => Some("Windows Phone"),
        windows if windows.starts_with("Windows") => Some("Windows"),
        // woothee reads tokens case-sensitively; some apps send their UA in lower case, or
        // abbreviated (UC Browser's "Adr 9", its iOS "dv(iPh…)").
        "" | woothee::woothee::VALUE_UNKNOWN => [
            ("android", "Android"),
            ("adr ", "Android"),
            ("dalvik", "Android"),
            ("iphone", "iOS"),
            ("ipad", "iOS"),
            ("dv(iph", "iOS"),
            ("ios/", "iOS"),
            ("ipados/", "iOS"),
            ("windows", "Windows"),
            ("mac os x", "macOS"),
        ]
        .iter()
        .find_map(|(token, os)| word_starting(lower, token).map(|_| *os)),
        other => Some(other),
    }
}

/// The version of Windows is in woothee's name for it ("Windows 10", "Windows XP").
pub(super) fn windows_version(woothee_os: &str) -> Option<&str> {
    woothee_os
        .strip_prefix("Windows ")
        // woothee's "Windows UNKNOWN Ver" names no version.
        .filter(|version| {
            !version.is_empty() && !version.starts_with("Phone") && !version.starts_with("UNKNOWN")
        })
}

/// Models of Android tablets whose browsers say "Mobile" as phones' do: Samsung's Galaxy Tab
/// (SM-T, SM-X, SM-P), Lenovo's TB-, Huawei's MediaPad and MatePad, Xiaomi's Pad, Amazon's
/// Kindle Fire, and the many models that call themselves a pad or a tab.
const TABLET_MODELS: &[&str] = &[
    "tablet",
    "; sm-t",
    "; sm-x",
    "; sm-p",
    "; gt-p",
    "; tb-",
    "; tb3-",
    "; tb2-",
    "lenovo tb",
    "lenovo yt",
    "; yt-",
    "; tab",
    " tab ",
    "tab_",
    "-tab",
    "pad ",
    "pad)",
    "pad_",
    "pad;",
    "matepad",
    "mediapad",
    "; kf",
    "; ags",
    "; bah",
    "; kob",
    "; jdn",
    "; scm-",
    "; dby-",
    "; btv-",
    "; agr-",
    "; bg2-",
    "nexus 7",
    "nexus 9",
    "nexus 10",
    "pixel c",
    "iplay",
    "/apad",
    "; pmt",
    "; nomi c",
];

/// The device category: from what the UA names (iPhone, iPad, an Android or HarmonyOS phone
/// or tablet) before woothee's category, which files an iPhone without "Mobile" as a tablet.
pub(super) fn device_of(lower: &str, os: Option<&str>, category: &str) -> &'static str {
    static TABLETS: LazyLock<Tokens> = LazyLock::new(|| Tokens::new(TABLET_MODELS));
    if lower.contains("ipad") {
        return "tablet";
    }
    if lower.contains("iphone") || lower.contains("ipod") || lower.contains("dv(iph") {
        return "mobile";
    }
    match os {
        Some("Chrome OS") => return "desktop",
        Some("HarmonyOS") if lower.contains("(tablet;") => return "tablet",
        Some("HarmonyOS") if lower.contains("(phone;") || lower.contains("mobile") => {
            return "mobile";
        }
        Some("Android" | "HarmonyOS") if TABLETS.any_in(lower) => {
            return "tablet";
        }
        Some("Android" | "HarmonyOS") if lower.contains("mobile") => return "mobile",
        // A browser on Android that does not say "Mobile" runs on a tablet; an app's own
        // user agent (a podcast player, the Java HTTP client) does not say either way, and
        // most Android devices are phones.
        Some("Android" | "HarmonyOS") if !lower.starts_with("mozilla/") => return "mobile",
        Some("Android" | "HarmonyOS") if !lower.contains("tv") => return "tablet",
        _ => {}
    }
    match category {
        "pc" => "desktop",
        // A Windows woothee cannot date (`Windows NT 11.0`) is still a computer.
        _ if matches!(os, Some("Windows" | "macOS")) => "desktop",
        "smartphone" => "mobile",
        "mobilephone" => "feature phone",
        "appliance" => "appliance",
        _ => "other",
    }
}
