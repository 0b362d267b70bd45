//! Domain health (issue 42) against local doubles: a checker that can be switched to
//! "blocked" or to nonsense, a port nobody answers on, the servers' own /healthz. The state
//! machine with hysteresis, alerts (audit log, webhook, banner), recovery, and fail-over with
//! two instances: `auto` rotates once to a healthy standby, skipping a blocked one; `confirm`
//! only alerts.

use crate::api::Api;
use crate::support::{TestApp, TestDb, spawn_on};
use crate::webhooks::Receiver;
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use inklink::rules::Role;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::io::Write as _;
use std::net::TcpListener;
use std::sync::atomic::{AtomicU8, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const TRUTHFUL: u8 = 0;
const FAILING: u8 = 1;
const HTML: u8 = 2;

/// A checking service: `GET /check?url=…` answers `{"blocked": true}` for the hosts listed.
struct Checker {
    port: u16,
    blocked: Arc<Mutex<HashSet<String>>>,
    mode: Arc<AtomicU8>,
}

impl Checker {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let blocked: Arc<Mutex<HashSet<String>>> = Arc::default();
        let mode = Arc::new(AtomicU8::new(TRUTHFUL));
        let (b, m) = (blocked.clone(), mode.clone());
        let server = HttpServer::new(move || {
            let (blocked, mode) = (b.clone(), m.clone());
            App::new().default_service(web::to(move |req: HttpRequest| {
                let (blocked, mode) = (blocked.clone(), mode.clone());
                async move {
                    let query: Vec<(String, String)> =
                        url::form_urlencoded::parse(req.query_string().as_bytes())
                            .into_owned()
                            .collect();
                    let asked = query
                        .iter()
                        .find(|(k, _)| k == "url")
                        .map(|(_, v)| v.clone())
                        .unwrap_or_default();
                    let host = url::Url::parse(&asked)
                        .ok()
                        .map(|u| match u.port() {
                            Some(port) => format!("{}:{port}", u.host_str().unwrap_or("")),
                            None => u.host_str().unwrap_or("").to_owned(),
                        })
                        .unwrap_or_default();
                    match mode.load(SeqCst) {
                        FAILING => HttpResponse::InternalServerError().body("oops"),
                        HTML => HttpResponse::Ok()
                            .content_type("application/json")
                            .body("<html>blocked</html>"),
                        _ => HttpResponse::Ok()
                            .json(json!({"blocked": blocked.lock().unwrap().contains(&host)})),
                    }
                }
            }))
        })
        .workers(1)
        .listen(listener)
        .unwrap()
        .run();
        actix_web::rt::spawn(server);
        Self {
            port,
            blocked,
            mode,
        }
    }

    fn template(&self) -> String {
        format!("http://127.0.0.1:{}/check?url={{url}}", self.port)
    }

    fn block(&self, host: &str) {
        self.blocked.lock().unwrap().insert(host.to_owned());
    }

    fn unblock(&self, host: &str) {
        self.blocked.lock().unwrap().remove(host);
    }
}

/// Flags for quick checks: every second, blocked after 2 failures of the last 3.
fn flags(checker: &Checker, extra: &[&str]) -> Vec<String> {
    let mut flags: Vec<String> = [
        "--domain-check-interval",
        "1",
        "--domain-blocked-after",
        "2",
        "--domain-check-window",
        "3",
        "--domain-failover-quiet",
        "3600",
        "--webhook-allow-private",
        "true",
        "--webhook-retry-seconds",
        "1",
        "--domain-checker-url",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    flags.push(checker.template());
    flags.extend(extra.iter().map(|s| s.to_string()));
    flags
}

async fn spawn(db: Arc<TestDb>, flags: &[String]) -> TestApp {
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    spawn_on(db, &flags).await
}

async fn domains(api: &Api<'_>) -> Vec<Value> {
    let listed = api.call("GET", "/api/v1/domains", None).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    listed.body.as_array().unwrap().clone()
}

async fn health_of(api: &Api<'_>, host: &str) -> Value {
    domains(api)
        .await
        .into_iter()
        .find(|d| d["host"] == host)
        .unwrap_or_else(|| panic!("no domain {host}"))
}

async fn wait_state(api: &Api<'_>, host: &str, state: &str, secs: u64) -> Value {
    for _ in 0..secs * 5 {
        let domain = health_of(api, host).await;
        if domain["health"]["state"] == state {
            return domain;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!(
        "{host} did not become {state}: {}",
        health_of(api, host).await
    );
}

async fn audit_actions(
    app: &TestApp,
    action: &str,
) -> Vec<inklink::db::entities::audit_log::Model> {
    inklink::services::audit::list(
        &app.core.db,
        &inklink::services::audit::AuditFilter {
            action: Some(action.to_owned()),
            ..Default::default()
        },
        1000,
    )
    .await
    .unwrap()
}

/// A WeCom group robot subscribed to `event`, in Chinese: a real receiver on loopback.
async fn chinese_robot(admin: &Api<'_>, event: &str) -> Receiver {
    let robot = Receiver::start().await;
    let hooked = admin
        .call(
            "POST",
            "/api/v1/webhooks",
            Some(json!({"url": robot.url("/robot"), "format": "wecom",
                        "events": [event], "language": "zh-CN"})),
        )
        .await;
    assert_eq!(hooked.status, 201, "{}", hooked.body);
    robot
}

#[actix_web::test]
async fn states_follow_the_checks_with_hysteresis_alert_and_recover() {
    let checker = Checker::start().await;
    let db = Arc::new(TestDb::create().await);
    let app = spawn(db.clone(), &flags(&checker, &[])).await;
    let admin = Api::with_role(&app, "ops", Role::Admin).await;
    let receiver = Receiver::start().await;
    let hook = admin
        .call(
            "POST",
            "/api/v1/webhooks",
            Some(json!({"url": receiver.url("/alerts"), "events": ["domain.suspect", "domain.blocked", "domain.recovered"]})),
        )
        .await;
    assert_eq!(hook.status, 201, "{}", hook.body);
    // A Chinese team's chat group hears of it too, the reason in Chinese.
    let robot = chinese_robot(&admin, "domain.blocked").await;
    let default = format!("localhost:{}", app.port);
    // A domain nobody answers on fails reachability: suspect, then blocked.
    let added = inklink::services::domains::add(
        &app.core.db,
        &inklink::rules::DomainHost::parse("127.0.0.1:9").unwrap(),
        inklink::rules::Protocol::Http,
        false,
        &inklink::services::Actor::Cli,
    )
    .await
    .unwrap();
    let dead = wait_state(&admin, &added.host, "blocked", 20).await;
    assert!(
        dead["health"]["reason"]
            .as_str()
            .unwrap()
            .contains("127.0.0.1"),
        "{dead}"
    );
    let healthy = wait_state(&admin, &default, "healthy", 10).await;
    assert!(healthy["health"]["checked_at"].is_string(), "{healthy}");

    // The checker says blocked: one failure is suspect (no banner yet is blocked), two are
    // blocked; the banner and the alerts follow.
    checker.block(&default);
    wait_state(&admin, &default, "suspect", 10).await;
    let blocked = wait_state(&admin, &default, "blocked", 10).await;
    assert!(
        blocked["health"]["reason"]
            .as_str()
            .unwrap()
            .contains("the checker says"),
        "{blocked}"
    );
    assert_eq!(blocked["is_default"], true, "policy off: nothing rotates");
    receiver
        .wait_for(20, "domain.blocked", |got| {
            got.iter()
                .any(|m| m.body.contains("domain.blocked") && m.body.contains(&default))
        })
        .await;
    let blocked_line = format!("域名 {default} 已被封：检测服务显示 {default} 已被封");
    robot
        .wait_for(30, "the blocked domain in Chinese", |got| {
            got.iter().any(|m| m.body.contains(&blocked_line))
        })
        .await;
    // Programs get the English, as the API has it.
    let english = receiver.all();
    let program = english
        .iter()
        .find(|m| m.body.contains("domain.blocked") && m.body.contains(&default))
        .unwrap();
    let reason = program.json()["data"]["after"]["reason"].clone();
    assert!(
        reason
            .as_str()
            .is_some_and(|r| r.contains(&format!("the checker says {default} is blocked"))),
        "{reason}"
    );
    let mut browser = crate::admin::signed_in_admin(&app).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let page = browser.get("/admin/links").await;
    assert!(
        page.body.contains("alert-banner") && page.body.contains(&default),
        "{}",
        page.body
    );
    let domains_page = browser.get("/admin/domains").await;
    assert!(
        domains_page.body.contains("health-blocked"),
        "{}",
        domains_page.body
    );

    // A checker that fails or answers nonsense cannot tell: never blocked by it.
    checker.unblock(&default);
    wait_state(&admin, &default, "healthy", 15).await;
    receiver
        .wait_for(20, "domain.recovered", |got| {
            got.iter().any(|m| m.body.contains("domain.recovered"))
        })
        .await;
    checker.block(&default);
    for mode in [FAILING, HTML] {
        checker.mode.store(mode, SeqCst);
        tokio::time::sleep(Duration::from_secs(4)).await;
        let still = health_of(&admin, &default).await;
        assert_eq!(still["health"]["state"], "healthy", "{still}");
    }
    checker.mode.store(TRUTHFUL, SeqCst);
    let page = browser.get("/admin/links").await;
    assert!(!page.body.contains("alert-banner"));
    assert!(!audit_actions(&app, "domain.blocked").await.is_empty());
    assert!(!audit_actions(&app, "domain.recovered").await.is_empty());
}

#[actix_web::test]
async fn auto_fail_over_rotates_once_to_a_healthy_standby_with_two_instances() {
    let checker = Checker::start().await;
    let db = Arc::new(TestDb::create().await);
    let a = spawn(db.clone(), &flags(&checker, &[])).await;
    let b = spawn(db.clone(), &flags(&checker, &[])).await;
    let admin = Api::with_role(&a, "ops", Role::Admin).await;
    let default = format!("localhost:{}", a.port);
    let blocked_standby = format!("127.0.0.1:{}", a.port);
    let good_standby = format!("localhost:{}", b.port);
    for host in [&blocked_standby, &good_standby] {
        inklink::services::domains::add(
            &a.core.db,
            &inklink::rules::DomainHost::parse(host).unwrap(),
            inklink::rules::Protocol::Http,
            false,
            &inklink::services::Actor::Cli,
        )
        .await
        .unwrap();
        let made = admin
            .call(
                "PATCH",
                &format!("/api/v1/domains/{host}"),
                Some(json!({"standby": true})),
            )
            .await;
        assert_eq!(made.status, 200, "{}", made.body);
        assert_eq!(made.body["standby"], true);
    }
    let policy = admin
        .call(
            "PATCH",
            &format!("/api/v1/domains/{default}"),
            Some(json!({"failover": "auto"})),
        )
        .await;
    assert_eq!(policy.body["failover"], "auto", "{}", policy.body);
    // A standby takes no new links.
    let refused = admin
        .call(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://example.com/x", "domain": good_standby})),
        )
        .await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    let bad = admin
        .call(
            "PATCH",
            &format!("/api/v1/domains/{default}"),
            Some(json!({"failover": "sometimes"})),
        )
        .await;
    assert_eq!(bad.status, 422);
    let operator = Api::with_role(&a, "op", Role::Operator).await;
    let forbidden = operator
        .call(
            "PATCH",
            &format!("/api/v1/domains/{default}"),
            Some(json!({"standby": true})),
        )
        .await;
    assert_eq!(forbidden.status, 403);

    checker.block(&blocked_standby);
    wait_state(&admin, &good_standby, "healthy", 10).await;
    wait_state(&admin, &blocked_standby, "blocked", 10).await;
    checker.block(&default);
    // Blocked within two checks, rotated at once: the healthy standby is the default.
    let mut now_default = String::new();
    for _ in 0..75 {
        let all = domains(&admin).await;
        if let Some(d) = all.iter().find(|d| d["is_default"] == true) {
            now_default = d["host"].as_str().unwrap().to_owned();
            if now_default != default {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(now_default, good_standby, "rotated to the healthy standby");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let rotations = audit_actions(&a, "domain.rotate").await;
    assert_eq!(rotations.len(), 1, "exactly one rotation");
    assert_eq!(rotations[0].actor, "system");
    assert!(
        rotations[0]
            .after_state
            .as_deref()
            .unwrap_or("")
            .contains("health check"),
        "{:?}",
        rotations[0].after_state
    );
    let old = health_of(&admin, &default).await;
    assert_eq!(old["replaced_by"], good_standby.as_str());
    let new = health_of(&admin, &good_standby).await;
    assert_eq!(new["standby"], false, "the new default takes links");
    drop(b);
}

#[actix_web::test]
async fn confirm_only_alerts_and_the_cli_reports_the_checks() {
    let checker = Checker::start().await;
    let db = Arc::new(TestDb::create().await);
    let app = spawn(db.clone(), &flags(&checker, &[])).await;
    let admin = Api::with_role(&app, "ops", Role::Admin).await;
    let default = format!("localhost:{}", app.port);
    let standby = format!("127.0.0.1:{}", app.port);
    inklink::services::domains::add(
        &app.core.db,
        &inklink::rules::DomainHost::parse(&standby).unwrap(),
        inklink::rules::Protocol::Http,
        false,
        &inklink::services::Actor::Cli,
    )
    .await
    .unwrap();
    let out = crate::cli::ok(
        crate::cli::inklink_live(&db, &["domain", "set", &standby, "--standby", "true"]).await,
    );
    assert!(out.contains("standby yes"), "{out}");
    let out = crate::cli::ok(
        crate::cli::inklink_live(&db, &["domain", "set", &default, "--failover", "confirm"]).await,
    );
    assert!(out.contains("fail-over confirm"), "{out}");
    wait_state(&admin, &standby, "healthy", 10).await;
    checker.block(&default);
    wait_state(&admin, &default, "blocked", 10).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        health_of(&admin, &default).await["is_default"],
        true,
        "confirm never rotates"
    );
    assert!(audit_actions(&app, "domain.rotate").await.is_empty());
    let listed = crate::cli::ok(crate::cli::inklink_live(&db, &["domain", "list", "--json"]).await);
    let listed: Value = serde_json::from_str(&listed).unwrap();
    let row = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["host"] == default)
        .unwrap()
        .clone();
    assert_eq!(row["health"]["state"], "blocked", "{row}");
    assert_eq!(row["failover"], "confirm");
    let checked = crate::cli::inklink_live(
        &db,
        &[
            "domain",
            "check",
            &default,
            "--domain-checker-url",
            &checker.template(),
            "--webhook-allow-private",
            "true",
        ],
    )
    .await;
    let checked = crate::cli::ok(checked);
    assert!(checked.contains("reachability: passed"), "{checked}");
    assert!(checked.contains("checker: FAILED"), "{checked}");
    let bad =
        crate::cli::inklink_live(&db, &["domain", "set", &default, "--failover", "maybe"]).await;
    assert_eq!(bad.code, 1);
    assert!(
        bad.stderr.contains("off, confirm or auto"),
        "{}",
        bad.stderr
    );
}

/// Issue 42, item 6: a domain's ICP filing number and the approved SMS templates that embed it
/// are kept as typed, shown on the Domains page, listed verbatim when it is rotated away (in
/// both languages), and set and read through the API.
#[actix_web::test]
async fn a_domains_filing_and_sms_templates_are_kept_as_typed_and_listed_when_it_is_rotated() {
    use crate::admin::{Browser, add_user};
    let app = crate::support::spawn_app_with(&["--webhook-allow-private", "true"]).await;
    add_user(&app, "ada", "admin-password", Role::Admin).await;
    let admin = Api::with_role(&app, "ops", Role::Admin).await;
    // The team's chat-group robot hears of the rotation.
    let robot = chinese_robot(&admin, "domain.rotated").await;
    let mut browser = Browser::speaking(&app, "zh-CN");
    assert_eq!(browser.sign_in("ada", "admin-password").await.status, 303);
    let old_host = format!("localhost:{}", app.port);
    inklink::services::domains::add(
        &app.core.db,
        &inklink::rules::DomainHost::parse("new.example").unwrap(),
        inklink::rules::Protocol::Http,
        false,
        &inklink::services::Actor::Cli,
    )
    .await
    .unwrap();
    let all = inklink::services::domains::list(&app.core.db)
        .await
        .unwrap();
    let old = all.iter().find(|d| d.host == old_host).unwrap().id;
    let new = all.iter().find(|d| d.host == "new.example").unwrap().id;
    let csrf = browser.csrf("/admin/domains").await;
    let templates = "SMS_123: 【商城】双11 Disabled {link}\r\n\n  SMS_456  ";
    let bad = browser
        .post(
            &format!("/admin/domains/{old}/filing"),
            &[
                ("csrf", &csrf),
                ("icp_filing", "京ICP备1\u{7}号"),
                ("sms_templates", templates),
            ],
        )
        .await;
    assert_eq!(bad.status, 422, "{}", bad.body);
    assert!(
        bad.body.contains("ICP 备案号最多 64 个字符"),
        "{}",
        bad.body
    );
    let saved = browser
        .post(
            &format!("/admin/domains/{old}/filing"),
            &[
                ("csrf", &csrf),
                ("icp_filing", "京ICP备12345678号-1"),
                ("sms_templates", templates),
            ],
        )
        .await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    let page = browser.get("/admin/domains").await;
    assert!(page.body.contains("京ICP备12345678号-1"));
    assert!(
        page.body
            .contains("SMS_123: 【商城】双11 Disabled {link}\nSMS_456</textarea>")
    );

    // The rotation's confirmation lists the templates to submit again, as typed.
    let confirm = browser
        .post(
            &format!("/admin/domains/{old}/rotate"),
            &[("csrf", &csrf), ("replacement", &new.to_string())],
        )
        .await;
    assert_eq!(confirm.status, 200);
    assert!(
        confirm
            .body
            .contains(&format!("以下 2 个已审核短信模板包含 {old_host}")),
        "{}",
        confirm.body
    );
    assert!(
        confirm
            .body
            .contains("<code>SMS_123: 【商城】双11 Disabled {link}</code>")
    );
    assert!(confirm.body.contains("<code>SMS_456</code>"));
    assert!(confirm.body.contains("new.example 未登记 ICP 备案号"));
    let rotated = browser
        .post(
            &format!("/admin/domains/{old}/rotate"),
            &[
                ("csrf", &csrf),
                ("replacement", &new.to_string()),
                ("confirm", "yes"),
            ],
        )
        .await;
    assert_eq!(rotated.status, 303);
    let after = browser.get("/admin/domains").await;
    assert!(
        after.body.contains("请用新域名重新报备包含"),
        "the flash says so: {}",
        after.body
    );

    robot
        .wait_for(20, "the rotation", |got| !got.is_empty())
        .await;
    let line = robot.all()[0].json()["markdown"]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        line.contains(&format!("已将域名 {old_host} 切换到 new.example"))
            && line.contains("SMS_123: 【商城】双11 Disabled {link}; SMS_456"),
        "{line}"
    );

    // The API reads and sets them; a bad value is refused with the field named.
    let listed = health_of(&admin, &old_host).await;
    assert_eq!(listed["icp_filing"], "京ICP备12345678号-1");
    assert_eq!(
        listed["sms_templates"],
        json!(["SMS_123: 【商城】双11 Disabled {link}", "SMS_456"])
    );
    let set = admin
        .call(
            "PATCH",
            "/api/v1/domains/new.example",
            Some(json!({"icp_filing": "沪ICP备2026000001号", "sms_templates": "SMS_789"})),
        )
        .await;
    assert_eq!(set.status, 200, "{}", set.body);
    assert_eq!(set.body["icp_filing"], "沪ICP备2026000001号");
    assert_eq!(set.body["sms_templates"], json!(["SMS_789"]));
    // A request refused in part changes nothing: the default domain cannot be a standby.
    let half = admin
        .call(
            "PATCH",
            "/api/v1/domains/new.example",
            Some(json!({"standby": true, "icp_filing": "粤ICP备1号"})),
        )
        .await;
    assert_eq!(half.status, 422, "{}", half.body);
    assert_eq!(
        health_of(&admin, "new.example").await["icp_filing"],
        "沪ICP备2026000001号"
    );
    let refused = admin
        .call(
            "PATCH",
            "/api/v1/domains/new.example",
            Some(json!({"sms_templates": "a\u{1b}[31m"})),
        )
        .await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(refused.body.to_string().contains("sms_templates"));
    let cleared = admin
        .call(
            "PATCH",
            "/api/v1/domains/new.example",
            Some(json!({"icp_filing": null})),
        )
        .await;
    assert_eq!(cleared.body["icp_filing"], Value::Null);
    assert_eq!(cleared.body["sms_templates"], json!(["SMS_789"]), "kept");
}

/// A TLS server on loopback presenting a self-signed certificate for `localhost` that
/// expires in `days` days (made with the `openssl` command).
fn tls_server(days: u32) -> u16 {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    let dir = std::env::temp_dir().join(format!("inklink-tls-{}-{days}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |args: &[&str]| {
        let done = std::process::Command::new("openssl")
            .args(args)
            .current_dir(&dir)
            .output()
            .expect("the openssl command runs");
        assert!(
            done.status.success(),
            "{}",
            String::from_utf8_lossy(&done.stderr)
        );
    };
    run(&[
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-keyout",
        "key.pem",
        "-out",
        "cert.pem",
        "-days",
        &days.to_string(),
        "-subj",
        "/CN=localhost",
        "-addext",
        "subjectAltName=DNS:localhost",
    ]);
    run(&[
        "x509", "-in", "cert.pem", "-outform", "DER", "-out", "cert.der",
    ]);
    run(&[
        "pkcs8", "-topk8", "-nocrypt", "-in", "key.pem", "-outform", "DER", "-out", "key.der",
    ]);
    let cert = CertificateDer::from(std::fs::read(dir.join("cert.der")).unwrap());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        std::fs::read(dir.join("key.der")).unwrap(),
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = Arc::new(
        rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(vec![cert], key)
            .unwrap(),
    );
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for socket in listener.incoming().flatten() {
            let mut connection = rustls::ServerConnection::new(config.clone()).unwrap();
            let mut socket = socket;
            let _ = socket.set_read_timeout(Some(Duration::from_secs(5)));
            while connection.is_handshaking() {
                if connection.complete_io(&mut socket).is_err() {
                    break;
                }
            }
        }
    });
    port
}

#[actix_web::test]
async fn a_certificate_about_to_expire_is_a_warning_and_leaves_the_domain_healthy() {
    let app = crate::support::spawn_app_with(&[
        "--domain-check-reachability",
        "true",
        "--domain-checker-timeout",
        "1",
    ])
    .await;
    let soon = tls_server(5);
    let later = tls_server(90);
    let first = inklink::services::domains::list(&app.core.db)
        .await
        .unwrap()
        .remove(0);
    let domain = |port: u16| inklink::db::entities::domain_conf::Model {
        host: format!("localhost:{port}"),
        protocol: "https".to_owned(),
        ..first.clone()
    };
    let certificate_of = |port: u16| {
        let domain = domain(port);
        let core = app.core.clone();
        async move {
            inklink::services::health::check_now(&core, &domain)
                .await
                .into_iter()
                .find(|f| f.probe == "certificate")
                .expect("https domains have their certificate read")
        }
    };
    let warning = certificate_of(soon).await;
    assert_eq!(warning.outcome, inklink::rules::health::Outcome::Passed);
    assert!(
        warning
            .reason
            .as_ref()
            .is_some_and(|reason| reason.to_string().starts_with(&format!(
                "the certificate of localhost:{soon} expires in 5 days"
            ))),
        "{warning:?}"
    );
    let certificate = certificate_of(later).await;
    assert_eq!(certificate.outcome, inklink::rules::health::Outcome::Passed);
    assert_eq!(certificate.reason, None, "no warning 89 days ahead");
    // Nothing answers TLS on a closed port: unknown, never blocked.
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    assert_eq!(
        certificate_of(port).await.outcome,
        inklink::rules::health::Outcome::Unknown
    );
    // A server that answers the handshake a byte at a time, each in good time for a read's
    // timeout, would hold the check for hours: the handshake as a whole gets the timeout.
    let drip = TcpListener::bind("127.0.0.1:0").unwrap();
    let dripping = drip.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut socket in drip.incoming().flatten() {
            std::thread::spawn(move || {
                // A handshake record of 16 KiB is announced, then sent a byte every 200 ms.
                let _ = socket.write_all(&[0x16, 0x03, 0x03, 0x40, 0x00]);
                while socket.write_all(&[0]).is_ok() {
                    std::thread::sleep(Duration::from_millis(200));
                }
            });
        }
    });
    let started = std::time::Instant::now();
    let slow = certificate_of(dripping).await;
    assert_eq!(slow.outcome, inklink::rules::health::Outcome::Unknown);
    // Not a speed target: the bound that ends a check which would otherwise hang (the
    // checker's timeout is 1 s here; a byte at a time would take 55 minutes).
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );

    // As a check's result: healthy, with the warning as its reason, shown on the Domains page
    // (in the reader's language, the host and date as they are).
    let (outcome, reason) = inklink::services::health::probe::combine(&[
        inklink::services::health::probe::Finding {
            probe: "reachability",
            outcome: inklink::rules::health::Outcome::Passed,
            reason: None,
        },
        warning,
    ]);
    assert_eq!(outcome, inklink::rules::health::Outcome::Passed);
    let reason = reason.expect("the warning is the reason");
    assert!(reason.to_string().contains("expires in 5 days"));
    inklink::services::health::record(&app.core, &first, outcome, Some(&reason))
        .await
        .unwrap();
    let health = inklink::services::health::all(&app.core.db).await.unwrap();
    let stored = &health[&first.id];
    assert_eq!(stored.state.as_str(), "healthy");
    // English for the API and webhooks, and the message itself for pages.
    assert_eq!(stored.reason, reason.to_string());
    assert_eq!(stored.reason_message.as_ref(), Some(&reason));
    crate::admin::add_user(&app, "ada", "admin-password", Role::Admin).await;
    let mut browser = crate::admin::Browser::speaking(&app, "zh-CN");
    assert_eq!(browser.sign_in("ada", "admin-password").await.status, 303);
    let page = browser.get("/admin/domains").await;
    assert!(
        page.body
            .contains(&format!("localhost:{soon} 的证书将在 5 天后")),
        "{}",
        page.body
    );

    // A reason whose values run long is kept bounded: its English cut at 300 characters, and
    // no message (the page shows that English).
    let long = inklink::i18n::Message::new(inklink::t!("the checker says {} is blocked"))
        .data("", "x".repeat(5_000));
    inklink::services::health::record(&app.core, &first, outcome, Some(&long))
        .await
        .unwrap();
    let stored = &inklink::services::health::all(&app.core.db).await.unwrap()[&first.id];
    assert_eq!(stored.reason.chars().count(), 300);
    assert_eq!(stored.reason_message, None);
}

/// Issue 42's traffic probe: a domain whose WeChat visitors vanish while another domain still
/// gets them becomes suspect, and stays suspect (a sign, never a block) however often it is
/// checked.
#[actix_web::test]
async fn a_domain_whose_wechat_visitors_vanish_while_another_keeps_them_is_suspect() {
    use inklink::rules::health::Outcome;
    use inklink::services::health::{self, probe::Probes};
    const WECHAT: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 MicroMessenger/8.0.47(0x18002f2f) NetType/WIFI Language/zh_CN";
    let app = crate::support::spawn_app_with(&[
        "--domain-traffic-window",
        "2",
        "--domain-check-reachability",
        "false",
    ])
    .await;
    for host in ["a.example", "b.example"] {
        inklink::services::domains::add(
            &app.core.db,
            &inklink::rules::DomainHost::parse(host).unwrap(),
            inklink::rules::Protocol::Http,
            false,
            &inklink::services::Actor::Cli,
        )
        .await
        .unwrap();
    }
    let code = crate::support::create_link(&app, "https://example.com/sale")
        .await
        .link
        .compression_code;
    let visit = |host: &'static str| {
        app.client
            .get(app.url(&format!("/{code}")))
            .insert_header(("host", host))
            .insert_header(("user-agent", WECHAT))
            .send()
    };
    let enough = inklink::services::health::probe::TRAFFIC_BASELINE as u64;
    for host in ["a.example", "b.example"] {
        for _ in 0..enough {
            assert_eq!(visit(host).await.unwrap().status().as_u16(), 302);
        }
    }
    crate::analytics::wait_written(&app, 2 * enough).await;
    tokio::time::sleep(Duration::from_millis(2200)).await;
    // WeChat stops delivering a.example's visitors; b.example's keep coming.
    for _ in 0..3 {
        assert_eq!(visit("b.example").await.unwrap().status().as_u16(), 302);
    }
    crate::analytics::wait_written(&app, 2 * enough + 3).await;
    let all = inklink::services::domains::list(&app.core.db)
        .await
        .unwrap();
    let a = all.iter().find(|d| d.host == "a.example").unwrap().clone();
    let b = all.iter().find(|d| d.host == "b.example").unwrap().clone();
    let probes = Probes::new(&app.core.settings, &app.core.db);
    let of = |findings: Vec<health::probe::Finding>| {
        findings
            .into_iter()
            .find(|f| f.probe == "traffic")
            .expect("a traffic finding")
    };
    let found = of(probes.check(&a).await);
    assert_eq!(found.outcome, Outcome::Suspicious, "{found:?}");
    assert!(
        found
            .reason
            .as_ref()
            .is_some_and(|r| r.to_string().contains("while b.example still gets them")),
        "{found:?}"
    );
    assert_eq!(of(probes.check(&b).await).outcome, Outcome::Passed);
    // Recorded round after round: suspect, never blocked by signs alone.
    for _ in 0..5 {
        health::check_round(&app.core, &probes).await.unwrap();
    }
    let states = health::all(&app.core.db).await.unwrap();
    assert_eq!(states[&a.id].state.as_str(), "suspect");
    assert!(states[&a.id].reason.contains("WeChat"));
    assert_eq!(states[&b.id].state.as_str(), "healthy");
}

#[test]
fn in_app_visitors_who_all_stop_at_the_open_in_browser_page_are_a_sign_and_quiet_hosts_say_nothing()
{
    use inklink::clickstore::traffic::HostTraffic;
    use inklink::rules::health::Outcome;
    use inklink::services::health::probe::judge_traffic;
    let window = Duration::from_secs(1800);
    let row = |host: &str, latest, visits, stopped| HostTraffic {
        host: host.to_owned(),
        latest,
        visits,
        stopped,
    };
    // They used to go through; now every one stops at the page.
    let traffic = [
        row("a.example", false, 30, 0),
        row("a.example", true, 25, 25),
    ];
    let found = judge_traffic("a.example", window, &traffic);
    assert_eq!(found.outcome, Outcome::Suspicious);
    assert!(
        found
            .reason
            .as_ref()
            .is_some_and(|r| r.to_string().contains("30 min")),
        "{found:?}"
    );
    // A domain that always shows the page (its links ask for it) is not suspicious.
    let always = [
        row("a.example", false, 30, 30),
        row("a.example", true, 25, 25),
    ];
    assert_eq!(
        judge_traffic("a.example", window, &always).outcome,
        Outcome::Passed
    );
    // Gone while nobody else gets any either (a quiet night): no sign.
    let quiet = [row("a.example", false, 30, 0)];
    assert_eq!(
        judge_traffic("a.example", window, &quiet).outcome,
        Outcome::Passed
    );
    // Too few before to miss; no traffic at all: nothing to say.
    let few = [
        row("a.example", false, 19, 0),
        row("b.example", true, 50, 0),
    ];
    assert_eq!(
        judge_traffic("a.example", window, &few).outcome,
        Outcome::Passed
    );
    assert_eq!(
        judge_traffic("c.example", window, &few).outcome,
        Outcome::Unknown
    );
    // Host names compare as DNS does.
    let gone = [
        row("A.Example.", false, 20, 0),
        row("b.example", true, 1, 0),
    ];
    assert_eq!(
        judge_traffic("a.example", window, &gone).outcome,
        Outcome::Suspicious
    );
}
