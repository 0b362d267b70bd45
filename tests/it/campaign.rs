//! Campaign links over HTTP: code length per link, visitor passwords, visit limits (exact
//! with two instances and 100 concurrent visitors), valid-from, fallbacks, the page for
//! in-app browsers, targets by device and app, and the visitor pages in two languages.

use crate::analytics::wait_written;
use crate::api::Api;
use crate::support::{TestApp, TestDb, spawn_app, spawn_app_with, spawn_on};
use futures_util::future::join_all;
use inklink::i18n::Lang;
use inklink::rules::Role;

use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::Arc;

const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1";
const ANDROID: &str = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36";
const DESKTOP: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36";
const WECHAT: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 MicroMessenger/8.0.47(0x18002f2c) NetType/WIFI Language/zh_CN";
const QQ: &str = "Mozilla/5.0 (Linux; Android 13; V2183A Build/TP1A.220624.014; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/109.0.5414.86 MQQBrowser/6.2 TBS/047205 Mobile Safari/537.36 V1_AND_SQ_8.9.80_4614_YYB_D QQ/8.9.80.12440 NetType/WIFI WebP/0.3.0 AppId/537176863";

struct Visit {
    status: u16,
    location: Option<String>,
    body: String,
}

async fn visit(app: &TestApp, path: &str, agent: &str, language: &str) -> Visit {
    let mut response = app
        .client
        .get(app.url(path))
        .insert_header(("user-agent", agent))
        .insert_header(("accept-language", language))
        .send()
        .await
        .expect("request sent");
    let body = response.body().limit(1 << 20).await.expect("body");
    Visit {
        status: response.status().as_u16(),
        location: response
            .headers()
            .get("location")
            .map(|value| value.to_str().unwrap().to_owned()),
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

async fn post_password(app: &TestApp, path: &str, password: &str, language: &str) -> Visit {
    let mut response = app
        .client
        .post(app.url(path))
        .insert_header(("user-agent", DESKTOP))
        .insert_header(("accept-language", language))
        .send_form(&[("password", password)])
        .await
        .expect("request sent");
    let body = response.body().limit(1 << 20).await.expect("body");
    Visit {
        status: response.status().as_u16(),
        location: response
            .headers()
            .get("location")
            .map(|value| value.to_str().unwrap().to_owned()),
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

async fn create(api: &Api<'_>, body: Value) -> Value {
    let reply = api.call("POST", "/api/v1/links", Some(body.clone())).await;
    assert_eq!(reply.status, 201, "{body} gave {}", reply.body);
    reply.body
}

/// The stored outcome (`failure_reason`) and target rule of every click of a code.
async fn recorded(app: &TestApp, code: &str) -> Vec<(String, Option<String>, Option<String>)> {
    inklink::clickstore::stored::all(&app.core.db)
        .await
        .unwrap()
        .into_iter()
        .filter(|row| &*row.compression_code == code)
        .map(|row| {
            (
                row.outcome.status().to_owned(),
                row.outcome.reason().map(str::to_owned),
                row.outcome
                    .target_rule()
                    .map(|rule| rule.as_str().to_owned()),
            )
        })
        .collect()
}

#[actix_web::test]
async fn each_link_may_have_a_code_length_from_4_to_12_and_short_codes_are_custom_only() {
    let app = spawn_app().await;
    let api = Api::with_role(&app, "lengths", Role::Admin).await;
    for length in 4..=12 {
        let mut codes = HashSet::new();
        for n in 0..20 {
            let link = create(
                &api,
                json!({"url": format!("https://example.com/{length}/{n}"), "length": length}),
            )
            .await;
            let code = link["code"].as_str().unwrap().to_owned();
            assert_eq!(code.len(), length, "{code}");
            assert!(code.bytes().all(|b| b.is_ascii_alphanumeric()), "{code}");
            codes.insert(code);
        }
        assert_eq!(codes.len(), 20, "length {length} repeated a code");
        // Random-looking: consecutive links share no long common prefix.
        let prefixes: HashSet<&str> = codes.iter().map(|code| &code[..2]).collect();
        assert!(prefixes.len() >= 10, "length {length}: {codes:?}");
        let (status, location, _) = app
            .fetch(&format!("/{}", codes.iter().next().unwrap()))
            .await;
        assert_eq!(status, 302);
        assert!(location.unwrap().starts_with("https://example.com/"));
    }
    for bad in [json!(3), json!(13), json!(0), json!("six")] {
        let reply = api
            .call(
                "POST",
                "/api/v1/links",
                Some(json!({"url": "https://example.com/x", "length": bad})),
            )
            .await;
        assert_eq!(reply.status, 400, "{bad}: {}", reply.body);
        if bad.is_number() {
            assert!(
                reply.body["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("custom code"),
                "{}",
                reply.body
            );
        }
    }
    // One to three characters: as a custom code.
    let short = create(
        &api,
        json!({"url": "https://example.com/short", "code": "x1"}),
    )
    .await;
    assert_eq!(short["code"], "x1");
    assert_eq!(app.fetch("/x1").await.0, 302);
}

#[actix_web::test]
async fn codes_of_a_chosen_length_stay_unique_across_two_instances() {
    use inklink::rules::CodeLength;
    use inklink::services::Actor;
    use inklink::services::links::{self, NewLink};
    let db = Arc::new(TestDb::create().await);
    let a = spawn_on(db.clone(), &[]).await;
    let b = spawn_on(db.clone(), &[]).await;
    let creators = (0..8).map(|worker| {
        let app = if worker % 2 == 0 { &a } else { &b };
        async move {
            let mut codes = Vec::new();
            for n in 0..100 {
                let url = format!("https://example.com/{worker}/{n}");
                let new = NewLink {
                    length: Some(CodeLength::new(4).unwrap()),
                    ..NewLink::to(links::parse_target(&app.core, &url).await.unwrap())
                };
                let saved = links::create(&app.core, new, &Actor::Cli).await.unwrap();
                codes.push(saved.link.compression_code.to_string());
            }
            codes
        }
    });
    let codes: Vec<String> = join_all(creators).await.into_iter().flatten().collect();
    assert_eq!(codes.len(), 800);
    assert!(codes.iter().all(|code| code.len() == 4));
    let distinct: HashSet<&String> = codes.iter().collect();
    assert_eq!(distinct.len(), 800, "a 4-character code was issued twice");
}

#[actix_web::test]
async fn a_visit_limit_is_never_exceeded_with_two_instances_and_100_concurrent_visitors() {
    let db = Arc::new(TestDb::create().await);
    let a = spawn_on(db.clone(), &[]).await;
    let b = spawn_on(db.clone(), &[]).await;
    let api = Api::with_role(&a, "limits", Role::Admin).await;
    let link = create(
        &api,
        json!({"url": "https://example.com/prize", "code": "prize", "max_visits": 37}),
    )
    .await;
    assert_eq!(link["max_visits"], 37);
    let visits = (0..100).map(|n| {
        let app = if n % 2 == 0 { &a } else { &b };
        async move { visit(app, "/prize", DESKTOP, "en").await }
    });
    let answers = join_all(visits).await;
    let sent_on = answers.iter().filter(|v| v.status == 302).count();
    let used_up = answers.iter().filter(|v| v.status == 410).count();
    assert_eq!(sent_on, 37, "served more or fewer than the limit");
    assert_eq!(used_up, 63);
    assert!(
        answers
            .iter()
            .filter(|v| v.status == 410)
            .all(|v| v.body.contains("used up"))
    );
    let shown = api.call("GET", "/api/v1/links/prize", None).await;
    assert_eq!(shown.body["visits"], 37);
    // Raising the limit lets exactly the difference through, on either instance.
    let patched = api
        .call(
            "PATCH",
            "/api/v1/links/prize",
            Some(json!({"version": shown.body["version"], "max_visits": 40})),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    a.core.link_cache.forget("prize");
    b.core.link_cache.forget("prize");
    let more = join_all((0..10).map(|n| {
        let app = if n % 2 == 0 { &a } else { &b };
        async move { visit(app, "/prize", DESKTOP, "en").await.status }
    }))
    .await;
    assert_eq!(more.iter().filter(|s| **s == 302).count(), 3, "{more:?}");
    wait_written(&a, 55).await;
    wait_written(&b, 55).await;
    let rows = recorded(&a, "prize").await;
    assert_eq!(
        rows.iter()
            .filter(|(status, _, _)| status == "success")
            .count(),
        40
    );
    assert_eq!(
        rows.iter()
            .filter(|(_, reason, _)| reason.as_deref() == Some("used_up"))
            .count(),
        70
    );
    for bad in [json!(0), json!(-5), json!(2_000_000_000i64), json!(1.5)] {
        let reply = api
            .call(
                "POST",
                "/api/v1/links",
                Some(json!({"url": "https://example.com/x", "max_visits": bad})),
            )
            .await;
        assert_eq!(reply.status, 400, "{bad}: {}", reply.body);
        assert!(
            reply.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("maximum number of visits"),
            "{}",
            reply.body
        );
    }
}

#[actix_web::test]
async fn a_password_link_asks_for_its_password_throttles_guesses_and_then_sends_on() {
    let app = spawn_app().await;
    let api = Api::with_role(&app, "passwords", Role::Admin).await;
    let link = create(
        &api,
        json!({"url": "https://example.com/secret", "code": "vip", "password": "8888"}),
    )
    .await;
    assert_eq!(link["password_protected"], true);
    assert!(
        link.get("password").is_none(),
        "the password is never shown"
    );

    let form = visit(&app, "/vip", DESKTOP, "en").await;
    assert_eq!(form.status, 200);
    assert!(form.location.is_none());
    assert!(form.body.contains(r#"type="password""#), "{}", form.body);
    assert!(!form.body.contains("example.com/secret"));
    let chinese = visit(&app, "/vip", DESKTOP, "zh-CN,zh;q=0.9,en;q=0.8").await;
    assert!(
        chinese.body.contains("此链接受密码保护"),
        "{}",
        chinese.body
    );

    // The right password, again and again from one address (an office behind one NAT), is
    // never throttled: only wrong answers count.
    for _ in 0..12 {
        let again = post_password(&app, "/vip", "8888", "en").await;
        assert_eq!(again.status, 302);
    }
    let wrong = post_password(&app, "/vip", "1234", "en").await;
    assert_eq!(wrong.status, 401);
    assert!(wrong.body.contains("not right"));
    assert!(wrong.location.is_none());
    let right = post_password(&app, "/vip", "8888", "en").await;
    assert_eq!(right.status, 302);
    assert_eq!(
        right.location.as_deref(),
        Some("https://example.com/secret")
    );

    // Ten tries per address and link in 15 minutes, counted before the check: parallel
    // guesses cannot slip past, and after them even the right password waits.
    let guesses = join_all((0..12).map(|n| {
        let app = &app;
        async move {
            post_password(app, "/vip", &format!("guess{n}"), "en")
                .await
                .status
        }
    }))
    .await;
    let wrong_count = guesses.iter().filter(|s| **s == 401).count();
    let throttled = guesses.iter().filter(|s| **s == 429).count();
    assert_eq!(wrong_count + throttled, 12, "{guesses:?}");
    assert_eq!(
        wrong_count, 9,
        "1 wrong try was used above (the right one gave its try back): {guesses:?}"
    );
    let locked = post_password(&app, "/vip", "8888", "zh-CN").await;
    assert_eq!(locked.status, 429);
    assert!(locked.body.contains("分钟后再试"), "{}", locked.body);

    for bad in ["123", &"x".repeat(129)] {
        let reply = api
            .call(
                "POST",
                "/api/v1/links",
                Some(json!({"url": "https://example.com/x", "password": bad})),
            )
            .await;
        assert_eq!(reply.status, 422, "{}", reply.body);
        assert_eq!(reply.body["error"]["field"], "password");
    }
    // A password can be removed: the link then redirects at once.
    let shown = api.call("GET", "/api/v1/links/vip", None).await;
    let patched = api
        .call(
            "PATCH",
            "/api/v1/links/vip",
            Some(json!({"version": shown.body["version"], "password": null})),
        )
        .await;
    assert_eq!(
        patched.body["password_protected"], false,
        "{}",
        patched.body
    );
    assert_eq!(app.fetch("/vip").await.0, 302);
    wait_written(&app, 30).await;
    let reasons: Vec<Option<String>> = recorded(&app, "vip")
        .await
        .into_iter()
        .map(|(_, reason, _)| reason)
        .collect();
    assert_eq!(
        reasons
            .iter()
            .filter(|r| r.as_deref() == Some("password_asked"))
            .count(),
        2
    );
    assert_eq!(
        reasons
            .iter()
            .filter(|r| r.as_deref() == Some("wrong_password"))
            .count(),
        14
    );
    assert_eq!(reasons.iter().filter(|r| r.is_none()).count(), 14);
}

#[actix_web::test]
async fn in_app_browsers_get_a_page_in_their_language_and_others_the_redirect() {
    let app = spawn_app().await;
    let api = Api::with_role(&app, "wechat", Role::Admin).await;
    create(
        &api,
        json!({"url": "https://shop.example.com/sale", "code": "sale", "in_app_page": ["wechat", "qq"]}),
    )
    .await;
    let page = visit(&app, "/sale", WECHAT, "zh-CN,zh;q=0.9").await;
    assert_eq!(page.status, 200);
    assert!(page.location.is_none());
    assert!(page.body.contains(r#"<html lang="zh-CN">"#));
    assert!(page.body.contains("在浏览器中打开"), "{}", page.body);
    assert!(page.body.contains("https://shop.example.com/sale"));
    assert!(page.body.contains(r#"id="copy""#));
    let english = visit(&app, "/sale", QQ, "en-US,en;q=0.9").await;
    assert_eq!(english.status, 200);
    assert!(english.body.contains("Open in browser"), "{}", english.body);
    for agent in [IPHONE, ANDROID, DESKTOP] {
        let sent = visit(&app, "/sale", agent, "zh-CN").await;
        assert_eq!(sent.status, 302, "{agent}");
    }
    // Every visitor 404 speaks the visitor's language, an unknown asset's too.
    for path in ["/no-such-code", "/static/nothing.js"] {
        let missing = visit(&app, path, DESKTOP, "zh-CN,zh;q=0.9").await;
        assert_eq!(missing.status, 404, "{path}");
        assert!(
            missing.body.contains("此短链接不存在"),
            "{path}: {}",
            missing.body
        );
    }
    // A domain's default applies to its links that do not choose; a link may opt out.
    let host = inklink::services::domains::default_domain(&app.core.db)
        .await
        .unwrap()
        .unwrap();
    inklink::services::domains::set_link_defaults(
        &app.core.db,
        host.id,
        Some(inklink::rules::InAppApps::parse("wechat").unwrap()),
        Some(Some(
            inklink::services::links::parse_target(&app.core, "https://example.com/over")
                .await
                .unwrap(),
        )),
        &inklink::services::Actor::Cli,
    )
    .await
    .unwrap();
    app.core.link_cache.forget("plain");
    create(
        &api,
        json!({"url": "https://example.com/plain", "code": "plain"}),
    )
    .await;
    create(
        &api,
        json!({"url": "https://example.com/optout", "code": "optout", "in_app_page": []}),
    )
    .await;
    assert_eq!(visit(&app, "/plain", WECHAT, "zh-CN").await.status, 200);
    assert_eq!(visit(&app, "/optout", WECHAT, "zh-CN").await.status, 302);
    // The domain's fallback serves its disabled links.
    let plain = api.call("DELETE", "/api/v1/links/plain", None).await;
    assert_eq!(plain.status, 200);
    let gone = visit(&app, "/plain", DESKTOP, "en").await;
    assert_eq!(gone.status, 302);
    assert_eq!(gone.location.as_deref(), Some("https://example.com/over"));
    wait_written(&app, 8).await;
    let reasons: Vec<Option<String>> = recorded(&app, "sale")
        .await
        .into_iter()
        .map(|(_, reason, _)| reason)
        .collect();
    assert_eq!(
        reasons
            .iter()
            .filter(|r| r.as_deref() == Some("in_app_page"))
            .count(),
        2
    );
    let bad = api
        .call(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://example.com/x", "in_app_page": ["line"]})),
        )
        .await;
    assert_eq!(bad.status, 422);
    assert_eq!(bad.body["error"]["field"], "in_app_page");
}

#[actix_web::test]
async fn targets_by_device_and_app_send_each_visitor_to_the_first_matching_rule() {
    let app = spawn_app().await;
    let api = Api::with_role(&app, "targets", Role::Admin).await;
    let link = create(
        &api,
        json!({
            "url": "https://example.com/web",
            "code": "app",
            "targets": [
                {"rule": "wechat", "url": "https://example.com/wechat"},
                {"rule": "ios", "url": "https://apps.apple.com/app/id1"},
                {"rule": "android", "url": "https://example.com/app.apk"},
            ],
        }),
    )
    .await;
    assert_eq!(link["targets"].as_array().unwrap().len(), 3);
    // Its domain shows WeChat visitors the in-app page, but the link's WeChat target wins.
    let host = inklink::services::domains::default_domain(&app.core.db)
        .await
        .unwrap()
        .unwrap();
    inklink::services::domains::set_link_defaults(
        &app.core.db,
        host.id,
        Some(inklink::rules::InAppApps::parse("wechat,qq").unwrap()),
        None,
        &inklink::services::Actor::Cli,
    )
    .await
    .unwrap();
    app.core.link_cache.forget("app");
    for (agent, expected) in [
        (WECHAT, "https://example.com/wechat"),
        (IPHONE, "https://apps.apple.com/app/id1"),
        (ANDROID, "https://example.com/app.apk"),
        (DESKTOP, "https://example.com/web"),
        ("curl/8.5.0", "https://example.com/web"),
    ] {
        let sent = visit(&app, "/app", agent, "en").await;
        assert_eq!(sent.status, 302, "{agent}");
        assert_eq!(sent.location.as_deref(), Some(expected), "{agent}");
    }
    wait_written(&app, 5).await;
    let rules: Vec<Option<String>> = recorded(&app, "app")
        .await
        .into_iter()
        .map(|(status, _, rule)| {
            assert_eq!(status, "success");
            rule
        })
        .collect();
    let mut sorted = rules.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        vec![
            None,
            None,
            Some("android".to_owned()),
            Some("ios".to_owned()),
            Some("wechat".to_owned())
        ]
    );
    for (targets, message) in [
        (
            json!([{"rule": "tv", "url": "https://example.com"}]),
            "not a target rule",
        ),
        (
            json!([{"rule": "ios", "url": "ftp://example.com"}]),
            "ios target",
        ),
        (
            json!([{"rule": "ios", "url": "https://a.example"}, {"rule": "ios", "url": "https://b.example"}]),
            "twice",
        ),
    ] {
        let reply = api
            .call(
                "POST",
                "/api/v1/links",
                Some(json!({"url": "https://example.com/x", "targets": targets})),
            )
            .await;
        assert_eq!(reply.status, 422, "{}", reply.body);
        assert!(
            reply.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains(message),
            "{}",
            reply.body
        );
    }
}

#[actix_web::test]
async fn a_link_opens_at_its_valid_from_time_and_a_fallback_replaces_the_410_page() {
    let app = spawn_app().await;
    let api = Api::with_role(&app, "windows", Role::Admin).await;
    create(
        &api,
        json!({"url": "https://example.com/launch", "code": "launch", "valid_from": "2099-01-01T09:00:00+08:00"}),
    )
    .await;
    let early = visit(&app, "/launch", DESKTOP, "zh-CN").await;
    assert_eq!(early.status, 403);
    assert!(early.body.contains("尚未开放"), "{}", early.body);
    assert!(!early.body.contains("example.com/launch"));
    // Moved into the past, it opens.
    let shown = api.call("GET", "/api/v1/links/launch", None).await;
    let patched = api
        .call(
            "PATCH",
            "/api/v1/links/launch",
            Some(json!({"version": shown.body["version"], "valid_from": "2020-01-01T00:00:00Z"})),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(app.fetch("/launch").await.0, 302);

    create(
        &api,
        json!({"url": "https://example.com/old", "code": "old", "fallback_url": "https://example.com/new-campaign"}),
    )
    .await;
    api.call("DELETE", "/api/v1/links/old", None).await;
    let fallback = visit(&app, "/old", DESKTOP, "en").await;
    assert_eq!(fallback.status, 302);
    assert_eq!(
        fallback.location.as_deref(),
        Some("https://example.com/new-campaign")
    );
    let opens_after_expiry = api
        .call(
            "POST",
            "/api/v1/links",
            Some(json!({
                "url": "https://example.com/x",
                "valid_from": "2099-02-01T00:00:00Z",
                "expires_at": "2099-01-01T00:00:00Z",
            })),
        )
        .await;
    assert_eq!(opens_after_expiry.status, 422);
    assert_eq!(opens_after_expiry.body["error"]["field"], "valid_from");
    let own = api
        .call(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://example.com/x", "fallback_url": "not a url"})),
        )
        .await;
    assert_eq!(own.status, 422);
    assert_eq!(own.body["error"]["field"], "fallback_url");
}

#[test]
fn every_outcome_fits_the_event_columns() {
    for outcome in inklink::rules::Outcome::ALL {
        assert!(
            outcome.reason().is_none_or(|reason| reason.len() <= 16),
            "{outcome:?}"
        );
        assert!(outcome.status().len() <= 16);
        assert_eq!(
            inklink::rules::Outcome::from_letter(outcome.letter()),
            Some(outcome)
        );
    }
}

#[test]
fn every_visitor_text_exists_in_both_languages() {
    let english = Lang::En.keys();
    let chinese = Lang::ZhCn.keys();
    let missing_in_chinese: Vec<_> = english.iter().filter(|k| !chinese.contains(k)).collect();
    let missing_in_english: Vec<_> = chinese.iter().filter(|k| !english.contains(k)).collect();
    assert!(
        missing_in_chinese.is_empty() && missing_in_english.is_empty(),
        "missing in zh-CN: {missing_in_chinese:?}; missing in en: {missing_in_english:?}"
    );
    for key in &english {
        assert!(!Lang::ZhCn.text(key).trim().is_empty(), "{key} is empty");
    }
    assert_eq!(Lang::preferred("zh-CN,zh;q=0.9,en;q=0.8"), Lang::ZhCn);
    assert_eq!(Lang::preferred("en-US,en;q=0.9,zh;q=0.5"), Lang::En);
    assert_eq!(Lang::preferred("fr-FR, zh-TW;q=0.5"), Lang::ZhCn);
    assert_eq!(Lang::preferred("de"), Lang::En);
}

/// Issue 43's finding: the visitor password had a ceiling per address but none per link, so a
/// short password could be guessed from many addresses. Guesses in parallel from seventy
/// addresses get exactly the link's ceiling of wrong answers; then even the right password
/// waits, from any address.
#[actix_web::test]
async fn guesses_at_a_link_password_from_many_addresses_are_held_to_the_links_ceiling() {
    use inklink::services::visitors::{LINK_PASSWORD_CEILING, LINK_PASSWORD_LIMIT};
    let app = spawn_app_with(&["--trusted-proxies", "127.0.0.1"]).await;
    let api = Api::with_role(&app, "passwords", Role::Admin).await;
    create(
        &api,
        json!({"url": "https://example.com/pin", "code": "pin", "password": "4821"}),
    )
    .await;
    let from = |n: usize, password: String| {
        let app = &app;
        async move {
            app.client
                .post(app.url("/pin"))
                .insert_header(("user-agent", DESKTOP))
                .insert_header(("x-forwarded-for", format!("198.51.100.{n}")))
                .send_form(&[("password", password)])
                .await
                .expect("request sent")
                .status()
                .as_u16()
        }
    };
    // The right password from many addresses first: it gives its tries back.
    for n in 0..5 {
        assert_eq!(from(200 + n, "4821".into()).await, 302);
    }
    let addresses = LINK_PASSWORD_CEILING as usize + 20;
    assert!(addresses < 200 && (LINK_PASSWORD_LIMIT as usize) > 1);
    let guesses = join_all((0..addresses).map(|n| from(n + 1, format!("{:04}", n)))).await;
    let wrong = guesses.iter().filter(|s| **s == 401).count();
    let throttled = guesses.iter().filter(|s| **s == 429).count();
    assert_eq!(wrong + throttled, addresses, "{guesses:?}");
    assert_eq!(wrong, LINK_PASSWORD_CEILING as usize, "{guesses:?}");
    assert_eq!(from(250, "4821".into()).await, 429, "closed for the window");
}
