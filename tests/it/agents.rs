//! Who a click came from: user-agent classification against a corpus of real user agents, and
//! the headers real clients send (forwarded addresses with ports, bytes outside ASCII, HEAD).

use crate::analytics::wait_written;
use crate::support::{create_link, spawn_app_with};
use actix_web::http::header::HeaderValue;
use inklink::clicks::agent::parse_agent;

const CORPUS: &str = include_str!("../data/user_agents.tsv");

fn or_dash(value: Option<&str>) -> &str {
    value.unwrap_or("-")
}

#[test]
fn real_world_user_agents_get_their_browser_os_device_and_bot_flag() {
    let mut checked = 0;
    let mut chinese = 0;
    let mut wrong = Vec::new();
    for line in CORPUS
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let fields: Vec<&str> = line.splitn(5, '\t').collect();
        let [browser, os, device, kind, ua] = fields[..] else {
            panic!("a corpus line needs five fields: {line}");
        };
        let agent = parse_agent(Some(ua));
        let got = (
            or_dash(agent.browser.as_deref()),
            or_dash(agent.os.as_deref()),
            or_dash(agent.device.as_deref()),
            if agent.is_bot { "bot" } else { "person" },
        );
        if got != (browser, os, device, kind) {
            wrong.push(format!(
                "{ua}\n    want {browser} | {os} | {device} | {kind}\n    got  {} | {} | {} | {}",
                got.0, got.1, got.2, got.3
            ));
        }
        checked += 1;
        let lower = ua.to_ascii_lowercase();
        if [
            "micromessenger",
            "weibo",
            "aweme",
            "newsarticle",
            "xiaohongshu",
            "xhsdiscover",
            "dingtalk",
            "alipay",
            "aliapp",
            " qq/",
            "baidu",
            "quark",
            "ucbrowser",
            "qqbrowser",
            "huawei",
            "miui",
            "vivo",
            "heytap",
            "oppo",
            "360",
            "qihoo",
            "sogou",
            "metasr",
            "2345",
            "bytespider",
            "petalbot",
            "yisou",
            "youdao",
            "toutiao",
            "feishu",
            "zhihu",
            "harmony",
        ]
        .iter()
        .any(|marker| lower.contains(marker))
        {
            chinese += 1;
        }
    }
    assert!(checked >= 200, "only {checked} user agents in the corpus");
    assert!(
        chinese * 2 >= checked,
        "{chinese} of {checked} are Chinese browsers, apps or crawlers"
    );
    assert!(
        wrong.is_empty(),
        "{} of {checked} classified wrongly:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn in_app_versions_are_numbers_and_names_are_one_per_os() {
    let cases = [
        (
            "Mozilla/5.0 (Linux; Android 11; PDRM00 Build/RKQ1.200903.002; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/97.0.4692.98 Mobile Safari/537.36 AliApp(DingTalk/7.0.10) com.alibaba.android.rimet/28165834",
            "DingTalk",
            "7.0.10",
        ),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 MicroMessenger/8.0.47(0x18002f2f) NetType/WIFI Language/zh_CN",
            "WeChat",
            "8.0.47",
        ),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 16_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Weibo (iPhone13,2__weibo__12.10.1__iphone__os16.0)",
            "Weibo",
            "12.10.1",
        ),
        (
            "Mozilla/5.0 (Linux; Android 10; HD1900 Build/QKQ1.190716.003; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/75.0.3770.156 Mobile Safari/537.36 aweme_230400 JsSdk/1.0 NetType/WIFI AppName/aweme app_version/23.4.0 ByteLocale/zh-CN",
            "Douyin",
            "23.4.0",
        ),
        (
            "Mozilla/5.0 (Linux; Android 12; 2201123G) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/107.0.0.0 Mobile Safari/537.36 XiaoMi/MiuiBrowser/13.24.1-gn",
            "MIUI Browser",
            "13.24.1",
        ),
    ];
    for (ua, browser, version) in cases {
        let agent = parse_agent(Some(ua));
        assert_eq!(agent.browser.as_deref(), Some(browser), "{ua}");
        assert_eq!(agent.browser_version.as_deref(), Some(version), "{ua}");
    }
    // iPhone, iPad and iPod are one OS, with the version the UA names.
    for ua in [
        "Mozilla/5.0 (iPad; CPU OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Mobile/15E148 Safari/604.1",
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Mobile/15E148 Safari/604.1",
    ] {
        let agent = parse_agent(Some(ua));
        assert_eq!(agent.os.as_deref(), Some("iOS"), "{ua}");
        assert_eq!(agent.os_version.as_deref(), Some("17.2"), "{ua}");
    }
    // No user agent at all, or only blanks: a script.
    for ua in [None, Some(""), Some("   ")] {
        let agent = parse_agent(ua);
        assert!(agent.is_bot, "{ua:?}");
        assert_eq!(agent.device.as_deref(), Some("bot"), "{ua:?}");
    }
}

/// One stored event's client address, user agent, referer, referrer host, browser and device.
type Stored = (
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

#[actix_web::test]
async fn the_headers_real_clients_send_are_kept() {
    let app = spawn_app_with(&["--trusted-proxies", "127.0.0.1"]).await;
    let link = create_link(&app, "https://example.com/real").await;
    let path = format!("/{}", link.link.compression_code);
    let vodafone = "Mozilla/5.0 (Linux; Android 8.0.0; Vodafone Smart N9 Build/O00623; wv) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/70.0 Mobile Safari/537.36 (Vodafone España)";
    let baidu = "https://www.baidu.com/s?wd=短链接";
    // As the bytes arrive: UTF-8, and one client that sends Latin-1 (0xF1 is "ñ").
    let mut latin1 = b"Mozilla/5.0 (Linux; Android 9; Espa".to_vec();
    latin1.push(0xF1);
    latin1.extend_from_slice(
        b"a) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/70.0 Mobile Safari/537.36",
    );
    let requests: [(&str, HeaderValue, Option<&str>, &str); 4] = [
        (
            "115.82.82.248:40001",
            HeaderValue::from_bytes(vodafone.as_bytes()).unwrap(),
            Some(baidu),
            "GET",
        ),
        (
            "[2001:db8::7]:4711",
            HeaderValue::from_bytes(&latin1).unwrap(),
            None,
            "GET",
        ),
        (
            "198.51.100.4",
            HeaderValue::from_static(
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
            ),
            None,
            "HEAD",
        ),
        (
            "198.51.100.5",
            HeaderValue::from_static(
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
            ),
            None,
            "GET",
        ),
    ];
    for (forwarded, ua, referer, method) in &requests {
        let mut request = match *method {
            "HEAD" => app.client.head(app.url(&path)),
            _ => app.client.get(app.url(&path)),
        }
        .insert_header(("x-forwarded-for", *forwarded))
        .insert_header(("user-agent", ua.clone()));
        if let Some(referer) = referer {
            request = request.insert_header((
                "referer",
                HeaderValue::from_bytes(referer.as_bytes()).unwrap(),
            ));
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status().as_u16(), 302, "{forwarded}");
    }
    wait_written(&app, requests.len() as u64).await;
    let db = &app.core.db;
    let rows = inklink::clickstore::stored::all(db).await.unwrap();
    let text = |t: &Option<std::sync::Arc<str>>| t.as_deref().map(str::to_owned);
    let stored: Vec<Stored> = rows
        .iter()
        .map(|row| {
            (
                row.client_ip.to_string(),
                text(&row.user_agent),
                text(&row.referer),
                text(&row.referer_host),
                text(&row.agent.browser),
                text(&row.agent.device),
            )
        })
        .collect();
    let chrome = Some("Chrome".to_owned());
    let s = |text: &str| Some(text.to_owned());
    assert_eq!(
        stored,
        vec![
            (
                "115.82.82.248".to_owned(),
                s(vodafone),
                s(baidu),
                s("www.baidu.com"),
                s("Android WebView"),
                s("mobile"),
            ),
            (
                "2001:db8::7".to_owned(),
                s(
                    "Mozilla/5.0 (Linux; Android 9; España) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/70.0 Mobile Safari/537.36"
                ),
                None,
                None,
                chrome.clone(),
                s("mobile"),
            ),
            (
                "198.51.100.4".to_owned(),
                s(
                    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36"
                ),
                None,
                None,
                chrome.clone(),
                s("bot"),
            ),
            (
                "198.51.100.5".to_owned(),
                s(
                    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36"
                ),
                None,
                None,
                chrome,
                s("desktop"),
            ),
        ]
    ); // Only the HEAD was a bot's.
    let bots: Vec<String> = rows
        .iter()
        .filter(|row| row.agent.is_bot)
        .map(|row| row.client_ip.to_string())
        .collect();
    assert_eq!(bots, ["198.51.100.4"]);
}

#[actix_web::test]
async fn strangers_probing_codes_cannot_fill_the_database() {
    let app = spawn_app_with(&["--unknown-visits-per-day", "3"]).await;
    let link = create_link(&app, "https://example.com/known").await;
    let long = "x".repeat(2048);
    let ua = format!("Mozilla/5.0 (X11; Linux x86_64) {long}");
    for i in 0..5 {
        let response = app
            .client
            .get(app.url(&format!("/NoSuch{i}?{long}")))
            .insert_header(("user-agent", ua.as_str()))
            .insert_header(("referer", format!("https://example.org/{long}")))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 404);
    }
    // A visit to a real link keeps everything it carried.
    let response = app
        .client
        .get(app.url(&format!("/{}?{long}", link.link.compression_code)))
        .insert_header(("user-agent", ua.as_str()))
        .insert_header(("referer", format!("https://example.org/{long}")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 302);
    wait_written(&app, 4).await;
    let db = &app.core.db;
    let text = |t: &Option<std::sync::Arc<str>>| t.as_deref().map(str::to_owned);
    let stored: Vec<(String, String, Option<String>, Option<String>)> =
        inklink::clickstore::stored::all(db)
            .await
            .unwrap()
            .iter()
            .map(|row| {
                (
                    row.compression_code.to_string(),
                    text(&row.user_agent).unwrap_or_default(),
                    text(&row.referer),
                    text(&row.query_string),
                )
            })
            .collect();
    assert_eq!(stored.len(), 4, "three unknown visits and the real one");
    for (code, agent, referer, query) in &stored[..3] {
        assert!(code.starts_with("NoSuch"), "{code}");
        assert_eq!(agent.len(), 256);
        assert_eq!((referer, query), (&None, &None));
    }
    let (_, agent, referer, query) = &stored[3];
    assert!(ua.starts_with(agent.as_str()) && agent.len() == 2048);
    assert!(referer.as_ref().is_some_and(|r| r.len() == 2048));
    assert!(query.as_deref() == Some(long.as_str()));
    let metrics = app.state.clicks.metrics();
    assert_eq!(
        metrics
            .unknown_not_stored
            .load(std::sync::atomic::Ordering::Relaxed),
        2
    );
}

#[test]
fn journal_lines_give_back_the_click_they_hold() {
    use inklink::clicks::ClickEvent;
    use inklink::clicks::journal::line;
    use inklink::clickstore::row::EventKey;
    use inklink::rules::Outcome;
    let at = chrono::NaiveDate::from_ymd_opt(2026, 11, 23)
        .unwrap()
        .and_hms_micro_opt(8, 1, 2, 345_678)
        .unwrap();
    let full = ClickEvent {
        at,
        code: "abc".into(),
        link_id: Some(42),
        host: Some("s.example.com".into()),
        client_ip: "115.82.82.248".parse().unwrap(),
        user_agent: Some("Mozilla/5.0 (Linux; Android 9; España)\ttab \\ back".into()),
        referer: Some("https://www.baidu.com/s?wd=短链接".into()),
        query: Some("a=1&b=\\t".into()),
        outcome: Outcome::Redirected,
        head: true,
        key: Some(EventKey(u128::MAX - 7)),
        generation: 0,
    };
    let bare = ClickEvent {
        link_id: None,
        host: None,
        client_ip: "2001:db8::7".parse().unwrap(),
        user_agent: None,
        referer: None,
        query: None,
        outcome: Outcome::Unknown,
        head: false,
        key: None,
        ..full.clone()
    };
    for event in [full, bare] {
        let mut out = Vec::new();
        line::encode(&event, &mut out);
        assert_eq!(out.iter().filter(|&&b| b == b'\n').count(), 1);
        assert_eq!(out.last(), Some(&b'\n'));
        assert_eq!(line::decode(&out[..out.len() - 1]), Some(event.clone()));
        // A line cut short by a crash is not a click.
        assert_eq!(line::decode(&out[..out.len() / 2]), None);
    }
}
