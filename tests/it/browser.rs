//! The admin UI in real headless Chromium, as an operator uses it. Screenshots of each main
//! page land in target/screenshots/ for a person to look at.
//!
//! Needs Debian's chromium and chromium-driver. Without them the tests say so and pass, except
//! under CI (CI=true), where a missing browser is a failure.

use crate::support::{TestApp, spawn_app, spawn_app_with};
use fantoccini::wd::Capabilities;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use inklink::rules::{Password, Role, Username};
use inklink::services::{Actor, users};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

struct ChromeDriver {
    process: Child,
    port: u16,
    profile: PathBuf,
}

impl Drop for ChromeDriver {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
        let _ = std::fs::remove_dir_all(self.second_profile());
    }
}

impl ChromeDriver {
    /// The profile of a window opened with another user agent and language: its own, so that
    /// the cookies of the first window (a language chosen, a session) do not follow it.
    fn second_profile(&self) -> PathBuf {
        let mut path = self.profile.clone().into_os_string();
        path.push("-as");
        path.into()
    }
}

fn chromedriver() -> Option<ChromeDriver> {
    if Command::new("chromedriver")
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(
            std::env::var_os("CI").is_none(),
            "chromedriver is missing; .ci/run installs chromium and chromium-driver"
        );
        eprintln!(
            "SKIPPED: browser test needs chromium and chromium-driver (apt-get install chromium chromium-driver)"
        );
        return None;
    }
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // Owned at once, so that Drop kills and reaps it on every path.
    let driver = ChromeDriver {
        process: Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts"),
        port,
        // Fresh every time: Chromium keeps cookies by host, not by port, so a profile left
        // from an earlier test on a reused port would bring its language cookie along.
        profile: std::env::temp_dir().join(format!("inklink-chrome-{}-{port}", std::process::id())),
    };
    let _ = std::fs::remove_dir_all(&driver.profile);
    let _ = std::fs::remove_dir_all(driver.second_profile());
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some(driver);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("chromedriver did not open port {port}");
}

async fn open_browser(driver: &ChromeDriver) -> Client {
    let mut capabilities = Capabilities::new();
    capabilities.insert(
        "goog:chromeOptions".into(),
        serde_json::json!({
            "binary": "/usr/bin/chromium",
            "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-dev-shm-usage", "--disable-quic", "--no-first-run", "--disable-component-update",
                "--disable-sync", "--window-size=1280,900",
                format!("--user-data-dir={}", driver.profile.display()),
            ]
        }),
    );
    ClientBuilder::new(HttpConnector::new())
        .capabilities(capabilities)
        .connect(&format!("http://127.0.0.1:{}", driver.port))
        .await
        .expect("a Chromium session")
}

fn screenshot_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn screenshot(client: &Client, name: &str) {
    let png = client.screenshot().await.expect("a screenshot");
    std::fs::write(screenshot_dir().join(format!("{name}.png")), png).unwrap();
}

async fn fill(client: &Client, selector: &str, text: &str) {
    let field = client
        .find(Locator::Css(selector))
        .await
        .unwrap_or_else(|_| panic!("no {selector}"));
    field.clear().await.unwrap();
    field.send_keys(text).await.unwrap();
}

async fn click(client: &Client, selector: &str) {
    client
        .find(Locator::Css(selector))
        .await
        .unwrap_or_else(|_| panic!("no {selector}"))
        .click()
        .await
        .unwrap();
}

async fn body_text(client: &Client) -> String {
    match client.find(Locator::Css("body")).await {
        Ok(body) => body.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    }
}

/// Waits until the page shows `needle`: a click that submits a form may return before the
/// next page has loaded.
async fn wait_for_text(client: &Client, needle: &str) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let text = body_text(client).await;
        if text.contains(needle) {
            return text;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the page never showed {needle:?}; it shows:\n{text}"
        );
        actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn sign_in(client: &Client, app: &TestApp) {
    users::add(
        &app.core.db,
        &Username::parse("ada").unwrap(),
        &Password::parse("admin-password").unwrap(),
        Role::Admin,
        &Actor::System,
    )
    .await
    .unwrap();
    client.goto(&app.url("/admin/links")).await.unwrap();
    assert!(
        client
            .current_url()
            .await
            .unwrap()
            .path()
            .ends_with("/admin/login")
    );
    screenshot(client, "login").await;
    fill(client, "#username", "ada").await;
    fill(client, "#password", "admin-password").await;
    click(client, "form button[type=submit]").await;
    wait_for_text(client, "Sign out").await;
    assert_eq!(client.current_url().await.unwrap().path(), "/admin/links");
}

#[actix_web::test]
async fn an_operator_creates_follows_disables_and_rotates_in_a_real_browser() {
    let Some(driver) = chromedriver() else { return };
    let app = spawn_app().await;
    let client = open_browser(&driver).await;
    sign_in(&client, &app).await;
    wait_for_text(&client, "No links yet").await;
    screenshot(&client, "links-empty").await;

    click(&client, "a.button[href='/admin/links/new']").await;
    wait_for_text(&client, "Target URL").await;
    screenshot(&client, "link-new").await;
    // The target is this server's health check on 127.0.0.1 (not one of our domains).
    let target = app.url("/healthz");
    fill(&client, "#url", &target).await;
    fill(&client, "#description", "Spring campaign").await;
    click(&client, "form.stack button[type=submit]").await;
    let text = wait_for_text(&client, "Created ").await;
    let created = text
        .lines()
        .find(|l| l.starts_with("Created "))
        .expect("a flash message")
        .to_owned();
    // The flash ends with its copy button.
    let short_url = created
        .trim_start_matches("Created ")
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    assert!(
        short_url.starts_with(&format!("http://localhost:{}/", app.port)),
        "{short_url}"
    );
    assert!(text.contains("Spring campaign"));
    screenshot(&client, "links").await;

    // Following the short URL lands on the target.
    client.goto(&short_url).await.unwrap();
    assert_eq!(client.current_url().await.unwrap().as_str(), target);
    assert!(client.source().await.unwrap().contains("\"database\""));

    let code = short_url.rsplit('/').next().unwrap().to_owned();
    client
        .goto(&app.url(&format!("/admin/links/{code}")))
        .await
        .unwrap();
    wait_for_text(&client, "History").await;
    screenshot(&client, "link-page").await;
    client
        .goto(&app.url(&format!("/admin/links/{code}/edit")))
        .await
        .unwrap();
    let qr = client.find(Locator::Css("figure.qr img")).await.unwrap();
    let loaded = client
        .execute(
            "return arguments[0].complete && arguments[0].naturalWidth > 0",
            vec![serde_json::to_value(&qr).unwrap()],
        )
        .await
        .unwrap();
    assert_eq!(
        loaded,
        serde_json::Value::Bool(true),
        "the QR code image loads under the CSP"
    );
    screenshot(&client, "link-edit").await;

    client.goto(&app.url("/admin/links")).await.unwrap();
    click(
        &client,
        &format!("form[action='/admin/links/{code}/disable'] button"),
    )
    .await;
    wait_for_text(&client, &format!("Disabled {code}")).await;
    client.goto(&short_url).await.unwrap();
    wait_for_text(&client, "no longer available").await;
    screenshot(&client, "gone").await;

    // Rotate the default domain to a new one.
    client.goto(&app.url("/admin/domains")).await.unwrap();
    fill(&client, "#host", "new.example").await;
    click(&client, "input[name=http]").await;
    click(&client, "form[action='/admin/domains'] button[type=submit]").await;
    wait_for_text(&client, "Added http://new.example/").await;
    let old_id = app.core.db.clone();
    let domains = inklink::services::domains::list(&old_id).await.unwrap();
    let old = domains
        .iter()
        .find(|d| d.host == format!("localhost:{}", app.port))
        .unwrap()
        .id;
    client
        .find(Locator::Css(&format!("#replacement-{old}")))
        .await
        .unwrap()
        .select_by_label("new.example")
        .await
        .unwrap();
    click(
        &client,
        &format!("form[action='/admin/domains/{old}/rotate'] button"),
    )
    .await;
    // A confirmation says what will happen before anything does.
    wait_for_text(&client, "1 link moves to new.example").await;
    screenshot(&client, "domain-rotate-confirm").await;
    click(&client, "form.confirm button[type=submit]").await;
    wait_for_text(&client, "links are now shown on new.example").await;
    screenshot(&client, "domains").await;
    client.goto(&app.url("/admin/links")).await.unwrap();
    wait_for_text(&client, &format!("http://new.example/{code}")).await;

    client.goto(&app.url("/admin/users")).await.unwrap();
    wait_for_text(&client, "Add a user").await;
    screenshot(&client, "users").await;
    client.goto(&app.url("/admin/audit")).await.unwrap();
    wait_for_text(&client, "Domain rotated").await;
    screenshot(&client, "audit").await;

    // At phone width nothing spills sideways.
    client.set_window_size(375, 800).await.unwrap();
    client.goto(&app.url("/admin/links")).await.unwrap();
    let fits = client
        .execute(
            "return document.documentElement.scrollWidth <= window.innerWidth + 1",
            vec![],
        )
        .await
        .unwrap();
    screenshot(&client, "links-375px").await;
    assert_eq!(
        fits,
        serde_json::Value::Bool(true),
        "the links page fits 375 px"
    );
    client.close().await.unwrap();
}

#[actix_web::test]
async fn an_operator_imports_1000_rows_and_downloads_the_results() {
    let Some(driver) = chromedriver() else { return };
    let app = spawn_app().await;
    let client = open_browser(&driver).await;
    sign_in(&client, &app).await;
    let file = std::env::temp_dir().join(format!("inklink-browser-import-{}.csv", app.port));
    let mut csv = String::from("url,description\n");
    for n in 0..1000 {
        csv.push_str(&format!("https://example.com/import/{n},row {n}\n"));
    }
    std::fs::write(&file, csv).unwrap();
    client.goto(&app.url("/admin/links/import")).await.unwrap();
    client
        .find(Locator::Css("#file"))
        .await
        .unwrap()
        .send_keys(file.to_str().unwrap())
        .await
        .unwrap();
    click(&client, "form.stack button[type=submit]").await;
    let report = client
        .wait()
        .at_most(Duration::from_secs(120))
        .for_element(Locator::Css("a[download='inklink-import-results.csv']"))
        .await
        .expect("the results link");
    wait_for_text(&client, "Created 1000 links").await;
    screenshot(&client, "import").await;
    let href = report.attr("href").await.unwrap().unwrap();
    use base64::Engine;
    let encoded = href.split("base64,").nth(1).unwrap();
    let results = String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(results.lines().count(), 1001);
    assert!(
        results
            .lines()
            .skip(1)
            .all(|line| line.contains(&format!("http://localhost:{}/", app.port)))
    );
    let _ = std::fs::remove_file(&file);
    client.close().await.unwrap();
}

#[actix_web::test]
async fn dashboards_fill_as_visitors_click_from_several_devices() {
    let Some(driver) = chromedriver() else { return };
    let app = crate::support::spawn_app_with(&[
        "--geoip-db",
        crate::analytics::GEOIP,
        "--trusted-proxies",
        "127.0.0.1",
        "--stats-interval",
        "1",
    ])
    .await;
    let promo = crate::support::create_link(&app, "https://example.com/promo").await;
    let news = crate::support::create_link(&app, "https://example.com/news").await;
    let visitors = [
        (
            "36.110.7.1",
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 MicroMessenger/8.0.47(0x18002f2f) NetType/WIFI Language/zh_CN",
        ),
        (
            "116.228.1.2",
            "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.6099.144 Mobile Safari/537.36",
        ),
        (
            "203.0.113.3",
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
        ),
        (
            "198.51.100.4",
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15",
        ),
        (
            "113.108.20.5",
            "Mozilla/5.0 (iPad; CPU OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Mobile/15E148 Safari/604.1",
        ),
        (
            "192.0.2.6",
            "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
        ),
    ];
    let mut people = 0;
    for (round, link) in [&promo, &news, &promo].into_iter().enumerate() {
        for (ip, ua) in visitors.iter().skip(round) {
            let response = app
                .client
                .get(app.url(&format!("/{}", link.link.compression_code)))
                .insert_header(("x-forwarded-for", *ip))
                .insert_header(("user-agent", *ua))
                .insert_header(("referer", "https://weixin.qq.com/s/campaign"))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status().as_u16(), 302);
            if !ua.contains("Googlebot") {
                people += 1;
            }
        }
    }
    let client = open_browser(&driver).await;
    sign_in(&client, &app).await;
    click(&client, "nav a[href='/admin/dashboard']").await;
    // Statistics refresh every second here; reload until they show every visit.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let pv = client
            .find(Locator::Css("#total-pv"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if pv == people.to_string() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "PV stayed at {pv}, not {people}"
        );
        actix_web::rt::time::sleep(Duration::from_millis(300)).await;
        client.refresh().await.unwrap();
    }
    let text = body_text(&client).await;
    for expected in [
        "China",
        "Beijing",
        "WeChat",
        "mobile",
        "weixin.qq.com",
        "Top links",
    ] {
        assert!(text.contains(expected), "the dashboard shows {expected}");
    }
    let charts = client
        .find_all(Locator::Css("figure.chart svg"))
        .await
        .unwrap();
    assert!(
        charts.len() >= 9,
        "line, bar and breakdown charts ({})",
        charts.len()
    );
    screenshot(&client, "dashboard").await;
    client
        .execute(
            "document.querySelector('.breakdowns').scrollIntoView()",
            vec![],
        )
        .await
        .unwrap();
    screenshot(&client, "dashboard-breakdowns").await;

    click(&client, "#top-links a").await;
    wait_for_text(&client, "Visits to").await;
    screenshot(&client, "link-stats").await;

    let today = chrono::Utc::now().date_naive();
    let year_ago = today - chrono::Duration::days(364);
    client
        .goto(&app.url(&format!("/admin/dashboard?from={year_ago}&to={today}")))
        .await
        .unwrap();
    wait_for_text(&client, "365 days").await;
    screenshot(&client, "dashboard-365-days").await;
    client
        .goto(&app.url(&format!("/admin/dashboard?from={today}&to={today}")))
        .await
        .unwrap();
    wait_for_text(&client, "(1 day,").await;
    screenshot(&client, "dashboard-1-day").await;
    client
        .goto(&app.url("/admin/dashboard?from=2026-02-30"))
        .await
        .unwrap();
    wait_for_text(&client, "is not a date").await;

    client.set_window_size(375, 800).await.unwrap();
    client.goto(&app.url("/admin/dashboard")).await.unwrap();
    let fits = client
        .execute(
            "return document.documentElement.scrollWidth <= window.innerWidth + 1",
            vec![],
        )
        .await
        .unwrap();
    screenshot(&client, "dashboard-375px").await;
    assert_eq!(
        fits,
        serde_json::Value::Bool(true),
        "the dashboard fits 375 px"
    );
    client.close().await.unwrap();
}

async fn open_browser_as(driver: &ChromeDriver, agent: &str, language: &str) -> Client {
    let mut capabilities = Capabilities::new();
    capabilities.insert(
        "goog:chromeOptions".into(),
        serde_json::json!({
            "binary": "/usr/bin/chromium",
            "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-dev-shm-usage", "--disable-quic", "--no-first-run", "--disable-component-update",
                "--disable-sync", "--window-size=375,800",
                format!("--user-agent={agent}"),
                format!("--lang={language}"),
                format!("--user-data-dir={}", driver.second_profile().display()),
            ],
            "prefs": {"intl.accept_languages": language},
        }),
    );
    ClientBuilder::new(HttpConnector::new())
        .capabilities(capabilities)
        .connect(&format!("http://127.0.0.1:{}", driver.port))
        .await
        .expect("a Chromium session")
}

#[actix_web::test]
async fn the_sms_composer_counts_as_you_type_and_wechat_visitors_get_the_open_in_browser_page() {
    let Some(driver) = chromedriver() else { return };
    let app = spawn_app().await;
    let client = open_browser(&driver).await;
    sign_in(&client, &app).await;
    click(&client, "a[href='/admin/sms']").await;
    wait_for_text(&client, "SMS composer").await;
    // The live count: the stand-in link is http://localhost:PORT/ plus a 6-character code.
    let link_len = format!("http://localhost:{}/xxxxxx", app.port)
        .chars()
        .count();
    fill(&client, "#signature", "好店").await;
    fill(&client, "#message", "春季大促 {link} 回TD退订").await;
    let units = 4 + 5 + 1 + link_len + 1 + 4;
    wait_for_text(&client, &format!("China · {units} characters · 1 segment")).await;
    let filler = "好".repeat(70);
    fill(&client, "#message", &format!("春季大促 {{link}} {filler}")).await;
    wait_for_text(&client, "· 2 segments").await;
    screenshot(&client, "sms-composer").await;
    fill(&client, "#message", "春季大促，点击 {link} 领取").await;
    fill(&client, "#url", "https://shop.example.com/sale").await;
    fill(&client, "#segments", "1").await;
    click(&client, "button[value=create]").await;
    let text = wait_for_text(&client, "Your message").await;
    assert!(text.contains("1 segment"), "{text}");
    let sent = client
        .find(Locator::Css("#result"))
        .await
        .unwrap()
        .prop("value")
        .await
        .unwrap()
        .unwrap();
    assert!(
        sent.starts_with("【好店】春季大促，点击 http://localhost:"),
        "{sent}"
    );
    assert!(sent.ends_with(" 领取"), "{sent}");
    screenshot(&client, "sms-composed").await;
    client.close().await.unwrap();

    // A link that WeChat visitors should open in their browser.
    let api = crate::api::Api::with_role(&app, "browser", Role::Admin).await;
    let reply = api
        .call(
            "POST",
            "/api/v1/links",
            Some(serde_json::json!({
                "url": "https://shop.example.com/wechat-sale",
                "code": "wx", "in_app_page": ["wechat"],
            })),
        )
        .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let wechat = open_browser_as(
        &driver,
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 MicroMessenger/8.0.47(0x18002f2c) NetType/WIFI Language/zh_CN",
        "zh-CN",
    )
    .await;
    wechat.goto(&app.url("/wx")).await.unwrap();
    let text = wait_for_text(&wechat, "请在浏览器中打开此链接").await;
    assert!(text.contains("在浏览器中打开"), "{text}");
    assert_eq!(wechat.current_url().await.unwrap().path(), "/wx");
    click(&wechat, "#copy").await;
    // The copy script ran under the page's CSP: the address is selected for copying.
    let selected = wechat
        .execute(
            "var f = document.getElementById('address'); return [document.activeElement === f, f.selectionEnd - f.selectionStart, f.value];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        selected,
        serde_json::json!([true, 36, "https://shop.example.com/wechat-sale"])
    );
    screenshot(&wechat, "wechat-open-in-browser").await;
    wechat.close().await.unwrap();
}

/// Words that may stay Latin on a Chinese page: names, abbreviations and values people type.
const LATIN_ON_CHINESE_PAGES: &[&str] = &[
    "inklink",
    // Webhooks, as Chinese teams call them, and the chat apps' robots, by their names.
    "Webhook",
    "Webhooks",
    "Standard",
    "WeCom",
    "Feishu",
    "Lark",
    "DingTalk",
    "POST",
    // ICP filing (ICP备案), as Chinese writes it.
    "ICP",
    // Authenticator apps, by their names.
    "Google",
    "Microsoft",
    "Authenticator",
    "English",
    "PV",
    "UV",
    "IP",
    "CSV",
    "API",
    "SMS",
    "UTM",
    "QR",
    "PNG",
    "SVG",
    "REST",
    "JSON",
    "OpenAPI",
    "GSM",
    "UCS",
    "UTF",
    "Excel",
    "IANA",
    "TLS",
    "URL",
    "RULE",
    "UTC",
    "Asia",
    "Shanghai",
    "ios",
    "android",
    "desktop",
    "wechat",
    "qq",
    "weibo",
    "douyin",
    "toutiao",
    "xiaohongshu",
    "dingtalk",
    "alipay",
    "taobao",
    "none",
    "url",
    "code",
    "description",
    "domain",
    "length",
    "tags",
    "sale",
    "spring",
    "sms",
    "text",
    "cli",
    "system",
    "user",
    "link",
    "batch",
    "ada",
    "Chrome",
    "Android",
    "iOS",
    "Safari",
    "Mobile",
    "Linux",
    "Windows",
    "macOS",
    // Products Chinese writes as they are (the link form's devices and apps).
    "iPhone",
    "iPad",
    "QQ",
    "http",
    "https",
    // Field names of the API, as its page quotes them.
    "version",
    // Columns of the batches' files, as their forms name them.
    "phone",
    "key",
    "delivered",
    "at",
    "column",
    "name",
    "SessionContext",
    "HEAD",
    "segments",
    "create",
    "false",
];

/// The Latin words a person reads on the page (text, placeholders, labels), leaving out code
/// samples and charts; tokens with digits, dots or slashes (addresses, codes, times) are data.
async fn latin_words(client: &Client) -> Vec<String> {
    let text = client
        .execute(
            "const c = document.body.cloneNode(true);
             c.querySelectorAll('pre, code, script, style, svg, datalist').forEach(e => e.remove());
             const attrs = [...document.querySelectorAll('[placeholder], [aria-label], [alt], [title]')]
               .map(e => [e.getAttribute('placeholder'), e.getAttribute('aria-label'), e.getAttribute('alt'), e.getAttribute('title')].join(' '));
             const walker = document.createTreeWalker(c, NodeFilter.SHOW_TEXT);
             const parts = [];
             while (walker.nextNode()) parts.push(walker.currentNode.nodeValue);
             return parts.join(' ') + ' ' + attrs.join(' ');",
            vec![],
        )
        .await
        .unwrap();
    let mut words: Vec<String> = text
        .as_str()
        .unwrap_or_default()
        .split_whitespace()
        .filter(|token| {
            !token
                .chars()
                .any(|c| c.is_ascii_digit() || "./:@_=".contains(c))
        })
        .flat_map(|token| {
            token
                .split(|c: char| !c.is_ascii_alphabetic())
                .filter(|w| w.len() >= 2)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter(|w| !LATIN_ON_CHINESE_PAGES.contains(&w.as_str()))
        .collect();
    words.sort();
    words.dedup();
    words
}

async fn fits_the_width(client: &Client) -> bool {
    client
        .execute(
            "return document.documentElement.scrollWidth <= window.innerWidth + 1",
            vec![],
        )
        .await
        .unwrap()
        == serde_json::Value::Bool(true)
}

#[actix_web::test]
async fn every_page_in_both_languages_at_desktop_and_phone_width() {
    let Some(driver) = chromedriver() else { return };
    let app = spawn_app().await;
    // A service in use: links with tags and clicks, a second domain, a key, an operator.
    let client = open_browser(&driver).await;
    sign_in(&client, &app).await;
    let mut admin = crate::admin::Browser::new(&app);
    admin.sign_in("ada", "admin-password").await;
    let csrf = admin.csrf("/admin/links").await;
    for (code, url, tags) in [
        (
            "c1",
            "https://example.com/促销?from=sms",
            "双十一, sms-2026",
        ),
        ("c2", "https://example.com/news", "双十一"),
    ] {
        let created = admin
            .post(
                "/admin/links",
                &[
                    ("csrf", &csrf),
                    ("url", url),
                    ("code", code),
                    ("tags", tags),
                    ("description", "短信活动"),
                ],
            )
            .await;
        assert_eq!(created.status, 303, "{}", created.body);
    }
    admin
        .post("/admin/domains", &[("csrf", &csrf), ("host", "s2.test")])
        .await;
    admin
        .post(
            "/admin/keys",
            &[("csrf", &csrf), ("name", "crm-1"), ("role", "operator")],
        )
        .await;
    // A campaign batch with a receipt.
    let spec = inklink::services::batches::BatchFields {
        name: "双十一 第一波".into(),
        code: Some("c1".into()),
        template: "【小店】{姓名}您好，双十一低至5折 {link} 回T退订".into(),
        ..Default::default()
    }
    .parse(&app.core)
    .await
    .unwrap();
    let (columns, rows) = inklink::services::batches::read::from_json(
        (0..5)
            .map(|i| {
                serde_json::json!({"phone": format!("1380000000{i}"), "姓名": format!("客户{i}")})
                    .as_object()
                    .unwrap()
                    .clone()
            })
            .collect(),
    );
    let batch = inklink::services::batches::create(
        &app.core,
        spec,
        &columns,
        rows.into_iter(),
        &inklink::services::Actor::Cli,
    )
    .await
    .unwrap();
    let receipts = vec![Ok(inklink::services::batches::receipts::Incoming {
        phone: Some("13800000001".into()),
        delivered: true,
        ..Default::default()
    })];
    inklink::services::batches::receipts::ingest(
        &app.core,
        inklink::services::batches::receipts::Scope::Batch(&batch.batch),
        receipts,
    )
    .await
    .unwrap();
    let batch_page = format!("/admin/batches/{}", batch.batch.id);
    // Webhooks: one for a program, one for a WeCom group robot.
    let mut hooks = Vec::new();
    for (url, events) in [
        (
            "https://crm.example.com/hooks/inklink",
            vec!["link.created", "link.clicked"],
        ),
        (
            "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=test",
            vec!["link.created", "domain.blocked"],
        ),
    ] {
        let new =
            inklink::services::webhooks::NewWebhook::parse(url, None, events, Some("客户系统"))
                .unwrap();
        let made = inklink::services::webhooks::create(
            &app.core,
            new,
            &inklink::services::Actor::Cli,
            "zh-CN",
        )
        .await
        .unwrap();
        inklink::services::webhooks::send_test(&app.core, made.id, &inklink::services::Actor::Cli)
            .await
            .unwrap();
        hooks.push(made.id);
    }
    let webhook_page = format!("/admin/webhooks/{}", hooks[0]);
    for agent in [
        "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.6099.144 Mobile Safari/537.36",
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 MicroMessenger/8.0.47(0x18002f2f) NetType/WIFI Language/zh_CN",
    ] {
        let answer = app
            .client
            .get(app.url("/c1"))
            .insert_header(("user-agent", agent))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 302);
    }
    let pages = [
        ("links", "/admin/links"),
        ("link-new", "/admin/links/new"),
        ("link", "/admin/links/c1"),
        ("link-edit", "/admin/links/c1/edit"),
        ("link-delete", "/admin/links/c1/delete"),
        ("link-stats", "/admin/links/c1/stats"),
        ("dashboard", "/admin/dashboard"),
        ("tags", "/admin/tags"),
        ("tag-stats", "/admin/tags/%E5%8F%8C%E5%8D%81%E4%B8%80/stats"),
        ("sms", "/admin/sms"),
        ("batches", "/admin/batches"),
        ("batch", batch_page.as_str()),
        ("import", "/admin/links/import"),
        ("domains", "/admin/domains"),
        ("users", "/admin/users"),
        ("two-factor", "/admin/account/two-factor"),
        ("keys", "/admin/keys"),
        ("webhooks", "/admin/webhooks"),
        ("webhook", webhook_page.as_str()),
        ("audit", "/admin/audit"),
        ("api", "/admin/api"),
        ("account", "/admin/account"),
        ("admin-not-found", "/admin/no-such-page"),
        ("visitor-not-found", "/no-such-code"),
        ("home", "/"),
    ];
    let mut too_wide = Vec::new();
    for (lang, switch_to) in [("en", None), ("zh-CN", Some("中文"))] {
        if let Some(label) = switch_to {
            // The switch on the page, as a person would use it.
            client.goto(&app.url("/admin/links")).await.unwrap();
            click(&client, "form.switch button").await;
            wait_for_text(&client, "新建链接").await;
            let _ = label;
        }
        for width in [1366, 375] {
            client.set_window_size(width, 900).await.unwrap();
            for (name, path) in pages {
                client.goto(&app.url(path)).await.unwrap();
                let html_lang = client
                    .execute("return document.documentElement.lang", vec![])
                    .await
                    .unwrap();
                assert_eq!(html_lang, serde_json::json!(lang), "{path} in {lang}");
                screenshot(&client, &format!("{lang}-{width}-{name}")).await;
                if !fits_the_width(&client).await {
                    too_wide.push(format!("{lang} {width}px {path}"));
                }
                if lang == "zh-CN" {
                    let latin = latin_words(&client).await;
                    assert!(
                        latin.is_empty(),
                        "{path} shows English in Chinese: {latin:?}"
                    );
                }
            }
            // A confirmation, reached as a person reaches it: select, choose, apply.
            client.goto(&app.url("/admin/links")).await.unwrap();
            click(&client, "input[name=codes][value=c2]").await;
            client
                .find(Locator::Css("#selection-action"))
                .await
                .unwrap()
                .select_by_value("disable")
                .await
                .unwrap();
            click(&client, "#selection button[type=submit]").await;
            wait_for_text(
                &client,
                if lang == "en" {
                    "Disable 1 link?"
                } else {
                    "停用 1 个链接？"
                },
            )
            .await;
            screenshot(&client, &format!("{lang}-{width}-confirm")).await;
            if lang == "zh-CN" {
                let latin = latin_words(&client).await;
                assert!(
                    latin.is_empty(),
                    "the confirmation shows English: {latin:?}"
                );
            }
        }
    }
    // Signed out, the sign-in page keeps the chosen language (the switch's cookie).
    client.goto(&app.url("/admin/links")).await.unwrap();
    click(&client, "form.signout button").await;
    wait_for_text(&client, "登录 inklink").await;
    screenshot(&client, "zh-CN-375-login").await;
    assert!(
        too_wide.is_empty(),
        "pages wider than the window: {too_wide:#?}"
    );
    client.close().await.unwrap();
}

#[actix_web::test]
async fn an_operator_makes_a_batch_from_a_file_uploads_receipts_and_reads_the_funnel_in_both_languages()
 {
    let Some(driver) = chromedriver() else { return };
    let app = spawn_app().await;
    let client = open_browser(&driver).await;
    sign_in(&client, &app).await;
    let file = std::env::temp_dir().join(format!("inklink-browser-batch-{}.csv", app.port));
    let mut csv = String::from("\u{feff}phone,姓名\n");
    for n in 0..2000 {
        csv.push_str(&format!("1390000{n:04},客户{n}\n"));
    }
    csv.push_str("12345,bad\n");
    std::fs::write(&file, csv).unwrap();
    client.goto(&app.url("/admin/batches")).await.unwrap();
    wait_for_text(&client, "No batches yet.").await;
    fill(&client, "#batch-name", "双十一 第一波").await;
    fill(&client, "#batch-url", "https://shop.example.com/sale").await;
    fill(
        &client,
        "#batch-template",
        "【小店】{姓名}您好 {link} 回T退订",
    )
    .await;
    client
        .find(Locator::Css("#batch-file"))
        .await
        .unwrap()
        .send_keys(file.to_str().unwrap())
        .await
        .unwrap();
    click(&client, "#new-batch button[type=submit]").await;
    let page = wait_for_text(&client, "Rejected rows").await;
    assert!(page.contains("2000"), "{page}");
    assert!(page.contains("2002"), "the bad row's line: {page}");
    assert!(page.contains("139****0000"), "phones are masked: {page}");
    assert!(
        page.contains("【小店】客户0您好 http://localhost:"),
        "{page}"
    );
    screenshot(&client, "batch-created").await;
    // The receipts, as a person uploads them.
    let receipts = std::env::temp_dir().join(format!("inklink-browser-receipts-{}.csv", app.port));
    let mut csv = String::from("phone,delivered,error_code\n");
    for n in 0..100 {
        let ok = n % 4 != 0;
        csv.push_str(&format!(
            "1390000{n:04},{ok},{}\n",
            if ok { "" } else { "E:9" }
        ));
    }
    std::fs::write(&receipts, csv).unwrap();
    client.goto(&app.url("/admin/batches/1")).await.unwrap();
    client
        .find(Locator::Css("#receipts-file"))
        .await
        .unwrap()
        .send_keys(receipts.to_str().unwrap())
        .await
        .unwrap();
    click(&client, "form[action='/admin/batches/1/receipts'] button").await;
    wait_for_text(&client, "100 receipts recorded").await;
    let page = body_text(&client).await;
    assert!(page.contains("E:9"), "{page}");
    // And in Chinese.
    click(&client, "form.switch button").await;
    let page = wait_for_text(&client, "转化漏斗").await;
    assert!(page.contains("已送达"), "{page}");
    assert!(
        page.contains("双十一 第一波"),
        "the name is not translated: {page}"
    );
    let latin = latin_words(&client).await;
    assert!(latin.is_empty(), "the batch page shows English: {latin:?}");
    screenshot(&client, "zh-CN-batch").await;
    let _ = std::fs::remove_file(&file);
    let _ = std::fs::remove_file(&receipts);
    client.close().await.unwrap();
}

/// Issue 43: a person enrols an authenticator app from their settings, then signs in with its
/// code in English and with a recovery code in Chinese, in a real browser.
#[actix_web::test]
async fn a_person_enrols_an_authenticator_and_signs_in_with_a_second_factor_in_both_languages() {
    use inklink::rules::totp::{STEP_SECONDS, TotpSecret};
    let Some(driver) = chromedriver() else { return };
    let app = spawn_app().await;
    let client = open_browser(&driver).await;
    sign_in(&client, &app).await;
    client
        .goto(&app.url("/admin/account/two-factor"))
        .await
        .unwrap();
    wait_for_text(&client, "Scan this QR code").await;
    let key = client
        .find(Locator::Css("code.secret"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let secret = TotpSecret::from_base32(&key).expect("the key shown");
    let step = chrono::Utc::now().timestamp() / STEP_SECONDS;
    fill(&client, "#code", &format!("{:06}", secret.code_at(step))).await;
    screenshot(&client, "two-factor-enrol").await;
    click(&client, "form[action='/admin/account/two-factor'] button").await;
    wait_for_text(&client, "Keep these recovery codes").await;
    let mut codes = Vec::new();
    for code in client
        .find_all(Locator::Css("ul.recovery-codes code"))
        .await
        .unwrap()
    {
        codes.push(code.text().await.unwrap());
    }
    assert_eq!(codes.len(), 10);
    client.delete_all_cookies().await.unwrap();

    // English: the password, then the app's next code.
    client.goto(&app.url("/admin/links")).await.unwrap();
    fill(&client, "#username", "ada").await;
    fill(&client, "#password", "admin-password").await;
    click(&client, "form button[type=submit]").await;
    wait_for_text(&client, "Enter the 6-digit code").await;
    assert_eq!(
        client.current_url().await.unwrap().path(),
        "/admin/login/code"
    );
    fill(
        &client,
        "#code",
        &format!("{:06}", secret.code_at(step + 1)),
    )
    .await;
    click(&client, "form button[type=submit]").await;
    wait_for_text(&client, "Sign out").await;
    assert_eq!(client.current_url().await.unwrap().path(), "/admin/links");
    client.close().await.unwrap();

    // Chinese: the password, then a recovery code.
    let chinese = open_browser_as(&driver, "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36", "zh-CN").await;
    chinese.goto(&app.url("/admin/login")).await.unwrap();
    fill(&chinese, "#username", "ada").await;
    fill(&chinese, "#password", "admin-password").await;
    click(&chinese, "form button[type=submit]").await;
    wait_for_text(&chinese, "请输入身份验证器应用中的 6 位验证码").await;
    let stray = latin_words(&chinese).await;
    assert!(
        stray.is_empty(),
        "English on the Chinese code page: {stray:?}"
    );
    screenshot(&chinese, "two-factor-code-zh").await;
    fill(&chinese, "#code", "000000").await;
    click(&chinese, "form button[type=submit]").await;
    wait_for_text(&chinese, "验证码不正确").await;
    fill(&chinese, "#code", &codes[0]).await;
    click(&chinese, "form button[type=submit]").await;
    wait_for_text(&chinese, "退出登录").await;
    chinese.close().await.unwrap();
}

/// Issue 43: a person signs in through the single sign-on provider (the real local
/// `oidc-provider-mock`), from the English and from the Chinese sign-in page.
#[actix_web::test]
async fn a_person_signs_in_through_the_single_sign_on_provider_in_both_languages() {
    use crate::sso::{RealProvider, sso_flags};
    let Some(driver) = chromedriver() else { return };
    let Some(provider) = RealProvider::start().await else {
        return;
    };
    let app = spawn_app_with(&sso_flags(
        &provider.issuer,
        &["--oidc-create-users", "true"],
    ))
    .await;
    provider
        .person(
            "zhang-3",
            serde_json::json!({"preferred_username": "zhang", "name": "张三"}),
        )
        .await;
    for (language, button, signed_in) in [
        ("en", "Sign in with Acme ID", "Sign out"),
        ("zh-CN", "使用 Acme ID 登录", "退出登录"),
    ] {
        // The English window has the driver's own profile, the Chinese one the profile whose
        // language is set.
        let client = match language {
            "en" => open_browser(&driver).await,
            _ => open_browser_as(&driver, "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36", language).await,
        };
        client.goto(&app.url("/admin/links")).await.unwrap();
        wait_for_text(&client, button).await;
        if language == "zh-CN" {
            let stray = latin_words(&client).await;
            assert!(
                stray.iter().all(|word| word == "Acme" || word == "ID"),
                "only the provider's name is not Chinese: {stray:?}"
            );
            screenshot(&client, "sso-login-zh").await;
        }
        click(&client, "a.sso").await;
        wait_for_text(&client, "Authorize Client").await;
        fill(&client, "input[name=sub]", "zhang-3").await;
        click(&client, "form button[type=submit]").await;
        wait_for_text(&client, signed_in).await;
        assert_eq!(client.current_url().await.unwrap().path(), "/admin/links");
        let page = wait_for_text(&client, "张三").await;
        assert!(page.contains("张三"), "greeted by the provider's name");
        client.close().await.unwrap();
    }
}

/// Issue 42: an admin makes a standby, sets the default domain's fail-over policy and records
/// its ICP filing and SMS templates through the Domains page's forms, in English, then turns
/// the standby off in Chinese.
#[actix_web::test]
async fn an_admin_sets_standby_fail_over_and_filing_on_the_domains_page_in_both_languages() {
    let Some(driver) = chromedriver() else { return };
    let app = spawn_app().await;
    let db = &app.core.db;
    inklink::services::domains::add(
        db,
        &inklink::rules::DomainHost::parse("s2.example").unwrap(),
        inklink::rules::Protocol::Http,
        false,
        &Actor::Cli,
    )
    .await
    .unwrap();
    let find = |host: String| async move {
        inklink::services::domains::list(db)
            .await
            .unwrap()
            .into_iter()
            .find(|d| d.host == host)
            .unwrap()
    };
    let old = find(format!("localhost:{}", app.port)).await.id;
    let s2 = find("s2.example".to_owned()).await.id;
    let open = |id: i64, form: &'static str| {
        format!("details:has(form[action='/admin/domains/{id}/{form}']) > summary")
    };

    let client = open_browser(&driver).await;
    sign_in(&client, &app).await;
    client.goto(&app.url("/admin/domains")).await.unwrap();
    click(&client, &open(s2, "failover")).await;
    click(
        &client,
        &format!("form[action='/admin/domains/{s2}/failover'] input[name=standby]"),
    )
    .await;
    click(
        &client,
        &format!("form[action='/admin/domains/{s2}/failover'] button"),
    )
    .await;
    wait_for_text(&client, "Saved the fail-over settings of s2.example").await;
    assert!(find("s2.example".to_owned()).await.standby);
    click(&client, &open(old, "failover")).await;
    client
        .find(Locator::Css(&format!("#failover-{old}")))
        .await
        .unwrap()
        .select_by_label("rotate to the first healthy standby")
        .await
        .unwrap();
    click(
        &client,
        &format!("form[action='/admin/domains/{old}/failover'] button"),
    )
    .await;
    wait_for_text(&client, "Saved the fail-over settings of localhost").await;
    assert_eq!(
        find(format!("localhost:{}", app.port)).await.failover,
        "auto"
    );
    click(&client, &open(old, "filing")).await;
    fill(&client, &format!("#icp-{old}"), "京ICP备12345678号-1").await;
    fill(&client, &format!("#templates-{old}"), "SMS_1: 【店】{link}").await;
    click(
        &client,
        &format!("form[action='/admin/domains/{old}/filing'] button"),
    )
    .await;
    wait_for_text(&client, "Saved the ICP filing and SMS templates").await;
    let page = wait_for_text(&client, "京ICP备12345678号-1").await;
    assert!(page.contains("standby"), "{page}");
    screenshot(&client, "domains-fail-over").await;
    client.close().await.unwrap();

    let chinese = open_browser_as(&driver, "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36", "zh-CN").await;
    chinese.goto(&app.url("/admin/domains")).await.unwrap();
    fill(&chinese, "#username", "ada").await;
    fill(&chinese, "#password", "admin-password").await;
    click(&chinese, "form button[type=submit]").await;
    wait_for_text(&chinese, "故障切换").await;
    click(&chinese, &open(s2, "failover")).await;
    click(
        &chinese,
        &format!("form[action='/admin/domains/{s2}/failover'] input[name=standby]"),
    )
    .await;
    click(
        &chinese,
        &format!("form[action='/admin/domains/{s2}/failover'] button"),
    )
    .await;
    wait_for_text(&chinese, "已保存 s2.example 的故障切换设置").await;
    assert!(!find("s2.example".to_owned()).await.standby);
    screenshot(&chinese, "domains-fail-over-zh").await;
    chinese.close().await.unwrap();
}

/// Issue 40: the UTM builder shows the final target as the parameters are typed.
#[actix_web::test]
async fn the_utm_builder_previews_the_final_target_as_one_types() {
    let Some(driver) = chromedriver() else { return };
    let app = spawn_app().await;
    let client = open_browser(&driver).await;
    sign_in(&client, &app).await;
    client.goto(&app.url("/admin/links/new")).await.unwrap();
    wait_for_text(&client, "Target URL").await;
    let preview = || async {
        client
            .find(Locator::Css("#utm-preview"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    };
    fill(&client, "#url", "example.com/sale?x=1&utm_source=old").await;
    assert_eq!(preview().await, "", "nothing typed, nothing shown");
    fill(&client, "#utm_source", "sms").await;
    fill(&client, "#utm_campaign", "双十一").await;
    assert_eq!(
        preview().await,
        "https://example.com/sale?x=1&utm_source=sms&utm_campaign=%E5%8F%8C%E5%8D%81%E4%B8%80"
    );
    // Ticking an app under the "open in browser" page chooses "in these apps".
    client
        .find(Locator::Css("details.campaign summary"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let chosen = || async {
        client
            .execute(
                "return document.querySelector('input[name=in_app_mode]:checked').value",
                vec![],
            )
            .await
            .unwrap()
    };
    assert_eq!(chosen().await, "domain");
    client
        .find(Locator::Css("input[name='in_app.qq']"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    assert_eq!(chosen().await, "apps");
    client.close().await.unwrap();
}

/// Issue 40: on a 375 px phone a chart's text stays at 11 px or more (the chart scrolls
/// sideways), and a tap on a day shows its values, as hovering does.
#[actix_web::test]
async fn charts_on_a_phone_keep_readable_text_and_show_values_on_a_tap() {
    let Some(driver) = chromedriver() else { return };
    let app = spawn_app().await;
    let link = crate::support::create_link(&app, "https://example.com/phone").await;
    let code = link.link.compression_code.to_string();
    let answer = app
        .client
        .get(app.url(&format!("/{code}")))
        .insert_header(("user-agent", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36"))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 302);
    crate::analytics::wait_written(&app, 1).await;
    inklink::stats::tally::drain(&app.core.db, app.core.settings.timezone)
        .await
        .unwrap();
    let phone = open_browser_as(
        &driver,
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Mobile/15E148 Safari/604.1",
        "en",
    )
    .await;
    sign_in(&phone, &app).await;
    phone
        .goto(&app.url(&format!("/admin/links/{code}/stats")))
        .await
        .unwrap();
    wait_for_text(&phone, "Visits per day").await;
    let smallest = phone
        .execute(
            "let least = 1e9;
             for (const svg of document.querySelectorAll('figure.chart svg[viewBox]')) {
               const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
               for (const text of svg.querySelectorAll('text')) {
                 const size = parseFloat(getComputedStyle(text).fontSize) || parseFloat(text.getAttribute('font-size'));
                 least = Math.min(least, size * scale);
               }
             }
             return least;",
            vec![],
        )
        .await
        .unwrap()
        .as_f64()
        .unwrap();
    let detail = phone
        .execute(
            "return [...document.querySelectorAll('figure.chart svg[viewBox]')].map(svg => [svg.getAttribute('class'), svg.getBoundingClientRect().width, svg.viewBox.baseVal.width, Math.min(...[...svg.querySelectorAll('text')].map(t => parseFloat(getComputedStyle(t).fontSize)))].join(' '));",
            vec![],
        )
        .await
        .unwrap();
    assert!(
        smallest >= 11.0,
        "chart text of {smallest:.1} px on a phone: {detail}"
    );
    assert!(
        fits_the_width(&phone).await,
        "the page itself does not scroll sideways"
    );
    let today = inklink::stats::days::today(app.core.settings.timezone).to_string();
    phone
        .execute(
            "const rect = [...document.querySelectorAll('#chart-daily rect')].find(r => r.querySelector('title'));
             rect.dispatchEvent(new MouseEvent('click', {bubbles: true}));",
            vec![],
        )
        .await
        .unwrap();
    let tapped = phone
        .find(Locator::Css("#chart-daily .tapped"))
        .await
        .expect("the tapped values")
        .text()
        .await
        .unwrap();
    assert!(tapped.contains("PV"), "{tapped}");
    let _ = today;
    phone.close().await.unwrap();
}
