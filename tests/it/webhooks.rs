//! Webhooks (issue 41) against a real HTTP receiver on loopback: signatures checked with the
//! Standard Webhooks reference implementation, a receiver down then up, clicks in batches
//! equal to the stored clicks, two instances sending each message once, a `kill -9` during
//! delivery, chat-group robots, operators' scope, bounded outboxes, and SSRF refused.

use crate::analytics::wait_written;
use crate::api::Api;
use crate::support::{TestDb, create_link, serve_binary, spawn_on};
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use inklink::rules::Role;
use sea_orm::{ConnectionTrait, Statement};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU8, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the receiver answers.
pub const ACCEPT: u8 = 0;
pub const UNAVAILABLE: u8 = 1;
/// Waits 4 s, then accepts.
pub const SLOW: u8 = 2;
/// 200 with a robot's error code.
pub const ROBOT_REFUSES: u8 = 3;
/// 200 with a 5 MB body.
pub const HUGE: u8 = 4;
/// 302 to another URL of the receiver.
pub const REDIRECT: u8 = 5;
/// Never answers.
pub const SILENT: u8 = 6;

#[derive(Clone, Debug)]
pub struct Received {
    pub path: String,
    pub headers: HashMap<String, String>,
    pub body: String,
    pub answered: u16,
}

impl Received {
    pub fn id(&self) -> &str {
        &self.headers["webhook-id"]
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("a JSON body")
    }
}

/// A local HTTP server that records what it is sent and answers as told.
pub struct Receiver {
    pub port: u16,
    pub mode: Arc<AtomicU8>,
    pub got: Arc<Mutex<Vec<Received>>>,
}

impl Receiver {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let mode = Arc::new(AtomicU8::new(ACCEPT));
        let got: Arc<Mutex<Vec<Received>>> = Arc::default();
        let (m, g) = (mode.clone(), got.clone());
        let server = HttpServer::new(move || {
            let (mode, got) = (m.clone(), g.clone());
            // A message of 1,000 clicks is larger than actix's default limit of 256 kB.
            App::new()
                .app_data(web::PayloadConfig::new(16 << 20))
                .default_service(web::to(move |req: HttpRequest, body: web::Bytes| {
                    let (mode, got) = (mode.clone(), got.clone());
                    async move {
                        let mode = mode.load(SeqCst);
                        if mode == SILENT {
                            tokio::time::sleep(Duration::from_secs(60)).await;
                        }
                        if mode == SLOW {
                            tokio::time::sleep(Duration::from_secs(4)).await;
                        }
                        let response = match mode {
                            UNAVAILABLE => {
                                HttpResponse::ServiceUnavailable().body("down for maintenance")
                            }
                            ROBOT_REFUSES => HttpResponse::Ok()
                                .json(json!({"errcode": 45009, "errmsg": "api freq out of limit"})),
                            HUGE => HttpResponse::Ok().body(vec![b'x'; 5 << 20]),
                            REDIRECT => HttpResponse::Found()
                                .insert_header(("location", "/elsewhere"))
                                .finish(),
                            _ => HttpResponse::Ok().json(json!({"errcode": 0, "errmsg": "ok"})),
                        };
                        got.lock().unwrap().push(Received {
                            path: req.path().to_owned(),
                            headers: req
                                .headers()
                                .iter()
                                .map(|(k, v)| {
                                    (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned())
                                })
                                .collect(),
                            body: String::from_utf8_lossy(&body).into_owned(),
                            answered: response.status().as_u16(),
                        });
                        response
                    }
                }))
        })
        .workers(1)
        .listen(listener)
        .unwrap()
        .run();
        actix_web::rt::spawn(server);
        Self { port, mode, got }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn set(&self, mode: u8) {
        self.mode.store(mode, SeqCst);
    }

    pub fn all(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }

    /// What was accepted (2xx), once per webhook-id.
    pub fn accepted(&self) -> BTreeMap<String, Received> {
        self.all()
            .into_iter()
            .filter(|r| (200..300).contains(&r.answered))
            .map(|r| (r.id().to_owned(), r))
            .collect()
    }

    /// Waits until `done` holds of what was received (at most `secs` seconds).
    pub async fn wait_for(&self, secs: u64, what: &str, done: impl Fn(&[Received]) -> bool) {
        for _ in 0..secs * 10 {
            if done(&self.all()) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the receiver did not get {what}: {:#?}", self.all());
    }
}

/// Flags every server of these tests has: receivers on loopback allowed, quick retries.
const LOCAL: [&str; 4] = [
    "--webhook-allow-private",
    "true",
    "--webhook-retry-seconds",
    "1",
];

/// Checks every message's signature with the Standard Webhooks reference implementation
/// (Python's `standardwebhooks`); `.ci/run` installs it.
fn verify_with_reference(secret: &str, messages: &[Received]) {
    let available = std::process::Command::new("python3")
        .args(["-c", "import standardwebhooks"])
        .status()
        .is_ok_and(|s| s.success());
    if !available {
        assert!(
            std::env::var_os("CI").is_none(),
            "standardwebhooks is missing; .ci/run installs it with pip"
        );
        eprintln!("SKIPPED: signature check needs `pip install standardwebhooks`");
        return;
    }
    let cases: Vec<Value> = messages
        .iter()
        .map(|m| json!({"headers": m.headers, "body": m.body}))
        .collect();
    let file = std::env::temp_dir().join(format!("inklink-webhooks-{}.json", std::process::id()));
    std::fs::write(&file, json!({"secret": secret, "cases": cases}).to_string()).unwrap();
    let script = r#"
import json, sys
from standardwebhooks import Webhook
data = json.load(open(sys.argv[1]))
hook = Webhook(data["secret"])
for case in data["cases"]:
    hook.verify(case["body"], case["headers"])
tampered = data["cases"][0]
try:
    hook.verify(tampered["body"] + " ", tampered["headers"])
    sys.exit("a tampered body verified")
except Exception:
    pass
print(len(data["cases"]))
"#;
    let out = std::process::Command::new("python3")
        .args(["-c", script, file.to_str().unwrap()])
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&file);
    assert!(
        out.status.success(),
        "the reference implementation refused a signature: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        messages.len().to_string()
    );
}

/// A subscription of `receiver`'s `/clicks` to `link.clicked`.
async fn subscribe_to_clicks_at(api: &Api<'_>, receiver: &Receiver) -> Value {
    let url = receiver.url("/clicks");
    subscribe(api, json!({"url": url, "events": ["link.clicked"]})).await
}

async fn subscribe(api: &Api<'_>, body: Value) -> Value {
    let made = api.call("POST", "/api/v1/webhooks", Some(body)).await;
    assert_eq!(made.status, 201, "{}", made.body);
    made.body
}

#[test]
fn the_signature_matches_the_standard_webhooks_example() {
    // The example of the Standard Webhooks specification's reference libraries.
    let secret = inklink::rules::webhook::SigningSecret::from_stored(
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into(),
    );
    assert_eq!(
        secret.sign(
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            br#"{"test": 2432232314}"#
        ),
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
    );
}

#[actix_web::test]
async fn link_events_arrive_signed_and_a_receiver_down_then_up_gets_each_once() {
    let db = Arc::new(TestDb::create().await);
    let app = spawn_on(db.clone(), &LOCAL).await;
    let receiver = Receiver::start().await;
    let admin = Api::with_role(&app, "crm", Role::Admin).await;
    let hook = subscribe(
        &admin,
        json!({"url": receiver.url("/hooks"), "events": ["link.created", "link.updated", "link.deleted"], "description": "CRM"}),
    )
    .await;
    let secret = hook["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"), "{hook}");
    assert_eq!(hook["format"], "standard");

    let made = admin
        .call(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://example.com/a", "code": "hooked"})),
        )
        .await;
    assert_eq!(made.status, 201);
    let patched = admin
        .call(
            "PATCH",
            "/api/v1/links/hooked",
            Some(json!({"description": "spring sale", "version": 1})),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(
        admin
            .call("DELETE", "/api/v1/links/hooked", None)
            .await
            .status,
        200
    );
    receiver
        .wait_for(20, "three link events", |got| got.len() >= 3)
        .await;
    let got = receiver.all();
    let types: BTreeSet<String> = got
        .iter()
        .map(|m| m.json()["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        types,
        BTreeSet::from(["link.created".into(), "link.updated".into()]),
        "a DELETE through the API revokes (disables) the link: an update"
    );
    let created = got
        .iter()
        .find(|m| m.json()["type"] == "link.created")
        .unwrap()
        .json();
    assert_eq!(created["data"]["target"], "hooked");
    assert_eq!(created["data"]["after"]["url"], "https://example.com/a");
    assert_eq!(created["data"]["by"]["name"], "crm");
    for message in &got {
        assert_eq!(message.path, "/hooks");
        assert!(message.headers["webhook-id"].starts_with("msg_"));
        assert!(message.headers["webhook-signature"].starts_with("v1,"));
        assert_eq!(message.headers["content-type"], "application/json");
    }
    verify_with_reference(&secret, &got);

    // Down: every attempt answers 503; the messages wait and are retried.
    receiver.set(UNAVAILABLE);
    let before = receiver.all().len();
    for n in 0..5 {
        let made = admin
            .call(
                "POST",
                "/api/v1/links",
                Some(json!({"url": format!("https://example.com/down/{n}")})),
            )
            .await;
        assert_eq!(made.status, 201);
    }
    receiver
        .wait_for(20, "failed attempts", |got| got.len() >= before + 2)
        .await;
    let deliveries = admin
        .call(
            "GET",
            &format!("/api/v1/webhooks/{}/deliveries", hook["id"]),
            None,
        )
        .await;
    assert_eq!(deliveries.status, 200);
    let waiting: Vec<&Value> = deliveries
        .body
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["state"] == "waiting")
        .collect();
    assert!(!waiting.is_empty(), "{}", deliveries.body);
    assert!(
        waiting.iter().any(|d| d["last_status"] == 503),
        "{}",
        deliveries.body
    );

    // Up again: everything arrives, each message under one id.
    receiver.set(ACCEPT);
    receiver
        .wait_for(40, "every link.created once the receiver is up", |got| {
            got.iter()
                .filter(|m| m.answered == 200 && m.body.contains("/down/"))
                .map(|m| m.id().to_owned())
                .collect::<BTreeSet<_>>()
                .len()
                == 5
        })
        .await;
    let accepted = receiver.accepted();
    let down: Vec<&Received> = accepted
        .values()
        .filter(|m| m.body.contains("/down/"))
        .collect();
    assert_eq!(down.len(), 5);
    // A retry carries the id of its first attempt.
    let failed_ids: BTreeSet<String> = receiver
        .all()
        .iter()
        .filter(|m| m.answered == 503)
        .map(|m| m.id().to_owned())
        .collect();
    assert!(failed_ids.iter().all(|id| accepted.contains_key(id)));
    verify_with_reference(&secret, &down.into_iter().cloned().collect::<Vec<_>>());

    // The admin UI lists the subscription and its deliveries.
    let list = admin.call("GET", "/api/v1/webhooks", None).await;
    assert_eq!(list.body.as_array().unwrap().len(), 1);
    assert!(
        list.body[0].get("secret").is_none(),
        "the list does not show secrets"
    );
}

#[actix_web::test]
async fn clicks_arrive_in_batches_equal_to_the_stored_clicks() {
    let db = Arc::new(TestDb::create().await);
    let app = spawn_on(db.clone(), &LOCAL).await;
    let receiver = Receiver::start().await;
    let admin = Api::with_role(&app, "bi", Role::Admin).await;
    subscribe_to_clicks_at(&admin, &receiver).await;
    for code in ["one", "two"] {
        let made = admin
            .call(
                "POST",
                "/api/v1/links",
                Some(json!({"url": format!("https://example.com/{code}"), "code": code})),
            )
            .await;
        assert_eq!(made.status, 201);
    }
    // Two more takers beside the server's own dispatcher, handing clicks on in parallel with
    // it while the clicks arrive: each click must still be carried once.
    let visiting = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let takers: Vec<_> = (0..2)
        .map(|_| {
            let (db, visiting) = (app.core.db.clone(), visiting.clone());
            actix_web::rt::spawn(async move {
                let policy = inklink::services::webhooks::deliver::Policy {
                    allow_private: true,
                    first_retry_ms: 1_000,
                    outbox_limit: 10_000,
                    keep_days: 7,
                };
                let metrics = inklink::metrics::Metrics::default();
                let mut taken = 0;
                while visiting.load(std::sync::atomic::Ordering::Relaxed) {
                    use inklink::services::webhooks::hand_on::hand_on_clicks;
                    taken += hand_on_clicks(&db, policy.outbox_limit, &metrics)
                        .await
                        .unwrap();
                    actix_web::rt::time::sleep(std::time::Duration::from_millis(5)).await;
                }
                taken
            })
        })
        .collect();
    let visits = 40;
    for n in 0..visits {
        let code = if n % 3 == 0 { "two" } else { "one" };
        let answer = app
            .client
            .get(app.url(&format!("/{code}?n={n}")))
            .insert_header(("user-agent", "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 MicroMessenger/8.0.47"))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status().as_u16(), 302);
    }
    wait_written(&app, visits).await;
    actix_web::rt::time::sleep(std::time::Duration::from_secs(2)).await;
    visiting.store(false, std::sync::atomic::Ordering::Relaxed);
    for taker in takers {
        taker.await.unwrap();
    }
    let clicked = |got: &[Received]| -> BTreeMap<String, Value> {
        got.iter()
            .filter(|m| m.answered == 200)
            .flat_map(|m| m.json()["data"].as_array().cloned().unwrap_or_default())
            .map(|click| (click["cursor"].as_str().unwrap().to_owned(), click))
            .collect()
    };
    receiver
        .wait_for(30, "every click", |got| clicked(got).len() as u64 == visits)
        .await;
    let clicks = clicked(&receiver.all());
    // Each click once: no message carried a click another one had.
    let carried: usize = receiver
        .accepted()
        .values()
        .map(|m| m.json()["data"].as_array().unwrap().len())
        .sum();
    assert_eq!(carried as u64, visits);
    assert!(
        receiver
            .accepted()
            .values()
            .all(|m| m.json()["type"] == "link.clicked")
    );
    // Equal to what the export says was stored.
    let today = chrono::Utc::now().date_naive();
    let mut export = admin
        .request(
            "GET",
            &format!(
                "/api/v1/events?from={}&to={}",
                today.pred_opt().unwrap(),
                today.succ_opt().unwrap()
            ),
        )
        .send()
        .await
        .unwrap();
    let body = export.body().limit(16 << 20).await.unwrap();
    let stored: BTreeMap<String, Value> = String::from_utf8_lossy(&body)
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .map(|click| (click["cursor"].as_str().unwrap().to_owned(), click))
        .collect();
    assert_eq!(clicks, stored);
    let sample = clicks.values().next().unwrap();
    assert_eq!(sample["browser"], "WeChat", "{sample}");
}

#[actix_web::test]
async fn two_instances_deliver_each_message_once() {
    let db = Arc::new(TestDb::create().await);
    let a = spawn_on(db.clone(), &LOCAL).await;
    let b = spawn_on(db.clone(), &LOCAL).await;
    let receiver = Receiver::start().await;
    let admin_a = Api::with_role(&a, "a", Role::Admin).await;
    let admin_b = Api::with_role(&b, "b", Role::Admin).await;
    subscribe(
        &admin_a,
        json!({"url": receiver.url("/"), "events": ["link.created"]}),
    )
    .await;
    let links = 40;
    let creates = (0..links).map(|n| {
        let api = if n % 2 == 0 { &admin_a } else { &admin_b };
        async move {
            let made = api
                .call(
                    "POST",
                    "/api/v1/links",
                    Some(json!({"url": format!("https://example.com/two/{n}")})),
                )
                .await;
            assert_eq!(made.status, 201);
        }
    });
    futures_util::future::join_all(creates).await;
    receiver
        .wait_for(30, "every link.created", |got| got.len() >= links)
        .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let got = receiver.all();
    let mut per_id: BTreeMap<&str, usize> = BTreeMap::new();
    for message in &got {
        *per_id.entry(message.id()).or_default() += 1;
    }
    assert_eq!(per_id.len(), links);
    assert!(per_id.values().all(|n| *n == 1), "sent twice: {per_id:?}");
}

#[actix_web::test]
async fn a_kill_during_delivery_loses_nothing() {
    let db = TestDb::create().await;
    let receiver = Receiver::start().await;
    let env = [
        ("INKLINK_WEBHOOK_ALLOW_PRIVATE", "true"),
        ("INKLINK_WEBHOOK_RETRY_SECONDS", "1"),
    ];
    let (mut server, port) = serve_binary(&db, &env, std::process::Stdio::null()).await;
    let core = inklink::startup::open(crate::support::settings(&db, "127.0.0.1:0", &[]))
        .await
        .unwrap();
    let new = inklink::services::webhooks::NewWebhook::parse(
        &receiver.url("/slow"),
        None,
        ["link.created"],
        None,
    )
    .unwrap();
    let mut settings = (*core.settings).clone();
    settings.webhook_allow_private = true;
    let core = inklink::Inklink {
        settings: Arc::new(settings),
        ..core
    };
    inklink::services::webhooks::create(&core, new, &inklink::services::Actor::Cli, "en")
        .await
        .unwrap();
    receiver.set(SLOW);
    let client = crate::support::client();
    let key = inklink::services::api_keys::create(
        &core.db,
        &inklink::rules::KeyName::parse("killer").unwrap(),
        Role::Admin,
        None,
        &inklink::services::Actor::System,
    )
    .await
    .unwrap();
    let made = client
        .post(format!("http://127.0.0.1:{port}/api/v1/links"))
        .insert_header(("authorization", format!("Bearer {}", key.token.as_str())))
        .send_json(&json!({"url": "https://example.com/killed", "code": "killed"}))
        .await
        .unwrap();
    assert_eq!(made.status().as_u16(), 201);
    // The receiver has the message, and the server is killed before it answers.
    for _ in 0..100 {
        if !receiver.all().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    crate::support::signal(&server, "-KILL");
    let _ = server.wait();
    receiver.set(ACCEPT);
    let (mut again, _) = serve_binary(&db, &env, std::process::Stdio::null()).await;
    receiver
        .wait_for(40, "the message again after the kill", |got| {
            got.iter()
                .any(|m| m.answered == 200 && m.body.contains("killed"))
        })
        .await;
    crate::support::signal(&again, "-TERM");
    // A stop ends the delivery task before the runtime (it once panicked as it was dropped
    // holding a database connection, and the process exited with a failure).
    let stopped = again.wait().unwrap();
    assert!(stopped.success(), "a stop is clean: {stopped}");
    let ids: BTreeSet<String> = receiver.all().iter().map(|m| m.id().to_owned()).collect();
    assert_eq!(ids.len(), 1, "the same message, with the same id");
}

#[actix_web::test]
async fn chat_robots_get_one_readable_message_per_burst_and_no_clicks() {
    let db = Arc::new(TestDb::create().await);
    let app = spawn_on(db.clone(), &LOCAL).await;
    let receiver = Receiver::start().await;
    let admin = Api::with_role(&app, "ops", Role::Admin).await;
    let refused = admin
        .call(
            "POST",
            "/api/v1/webhooks",
            Some(json!({"url": receiver.url("/robot"), "format": "wecom", "events": ["link.clicked"]})),
        )
        .await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert_eq!(refused.body["error"]["field"], "events");
    let hook = subscribe(
        &admin,
        json!({"url": receiver.url("/robot"), "format": "wecom", "events": ["link.created"], "language": "zh-CN"}),
    )
    .await;
    assert_eq!(hook["format"], "wecom");
    // A burst: three links within the robot's spacing are summed into few messages.
    for code in ["spring", "summer", "autumn"] {
        let made = admin
            .call(
                "POST",
                "/api/v1/links",
                Some(json!({"url": format!("https://example.com/{code}"), "code": code})),
            )
            .await;
        assert_eq!(made.status, 201);
    }
    receiver
        .wait_for(20, "all three links", |got| {
            ["spring", "summer", "autumn"]
                .iter()
                .all(|code| got.iter().any(|m| m.body.contains(code)))
        })
        .await;
    let got = receiver.all();
    assert!(got.len() < 3, "a burst is summed up: {got:#?}");
    for message in &got {
        let body = message.json();
        assert_eq!(body["msgtype"], "markdown");
        let content = body["markdown"]["content"].as_str().unwrap();
        assert!(content.contains("链接"), "{content}");
        assert!(!message.headers.contains_key("webhook-signature"));
    }
    // A robot's error code in a 200 is a failure, retried.
    receiver.set(ROBOT_REFUSES);
    let made = admin
        .call(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://example.com/winter", "code": "winter"})),
        )
        .await;
    assert_eq!(made.status, 201);
    receiver
        .wait_for(20, "a refused robot message", |got| {
            got.iter().any(|m| m.body.contains("winter"))
        })
        .await;
    receiver.set(ACCEPT);
    receiver
        .wait_for(20, "the refused message again", |got| {
            got.iter().filter(|m| m.body.contains("winter")).count() >= 2
        })
        .await;
    let deliveries = admin
        .call(
            "GET",
            &format!("/api/v1/webhooks/{}/deliveries", hook["id"]),
            None,
        )
        .await;
    let winter = deliveries
        .body
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["state"] == "delivered" && d["attempts"].as_i64() > Some(1));
    assert!(winter.is_some(), "{}", deliveries.body);
}

#[actix_web::test]
async fn an_operators_webhook_hears_only_of_their_own_links() {
    let db = Arc::new(TestDb::create().await);
    let app = spawn_on(db.clone(), &LOCAL).await;
    let receiver = Receiver::start().await;
    let operator = Api::with_role(&app, "team-a", Role::Operator).await;
    let other = Api::with_role(&app, "team-b", Role::Operator).await;
    let domains = operator
        .call(
            "POST",
            "/api/v1/webhooks",
            Some(json!({"url": receiver.url("/"), "events": ["domain.blocked"]})),
        )
        .await;
    assert_eq!(domains.status, 422, "{}", domains.body);
    let hook = subscribe(
        &operator,
        json!({"url": receiver.url("/a"), "events": ["link.created", "link.clicked"]}),
    )
    .await;
    // Another operator cannot see, change or delete it.
    let path = format!("/api/v1/webhooks/{}", hook["id"]);
    assert_eq!(other.call("GET", &path, None).await.status, 404);
    assert_eq!(other.call("DELETE", &path, None).await.status, 404);
    assert_eq!(
        other.call("GET", "/api/v1/webhooks", None).await.body,
        json!([])
    );
    for (api, code) in [(&operator, "ours"), (&other, "theirs")] {
        let made = api
            .call(
                "POST",
                "/api/v1/links",
                Some(json!({"url": format!("https://example.com/{code}"), "code": code})),
            )
            .await;
        assert_eq!(made.status, 201);
        assert_eq!(app.fetch(&format!("/{code}")).await.0, 302);
    }
    wait_written(&app, 2).await;
    receiver
        .wait_for(20, "our link and our click", |got| {
            got.iter().any(|m| m.body.contains("link.created"))
                && got.iter().any(|m| m.body.contains("link.clicked"))
        })
        .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let everything: String = receiver.all().iter().map(|m| m.body.clone()).collect();
    assert!(everything.contains("ours"));
    assert!(!everything.contains("theirs"), "{everything}");
}

#[actix_web::test]
async fn internal_addresses_are_refused_unless_allowed() {
    let db = Arc::new(TestDb::create().await);
    let app = spawn_on(db.clone(), &[]).await;
    let admin = Api::with_role(&app, "admin", Role::Admin).await;
    for url in [
        "http://127.0.0.1:8080/hook",
        "http://localhost:8080/hook",
        "http://[::1]/hook",
        "http://10.1.2.3/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://2130706433/hook",
        "http://0x7f000001/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://192.168.1.1/",
    ] {
        let refused = admin
            .call(
                "POST",
                "/api/v1/webhooks",
                Some(json!({"url": url, "events": ["link.created"]})),
            )
            .await;
        assert_eq!(refused.status, 422, "{url}: {}", refused.body);
        assert_eq!(refused.body["error"]["field"], "url", "{url}");
        assert!(
            refused.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("internal network"),
            "{url}: {}",
            refused.body
        );
    }
    for (body, field) in [
        (
            json!({"url": "ftp://example.com/", "events": ["link.created"]}),
            "url",
        ),
        (
            json!({"url": "https://user:pw@example.com/", "events": ["link.created"]}),
            "url",
        ),
        (
            json!({"url": "https://example.com/", "events": []}),
            "events",
        ),
        (
            json!({"url": "https://example.com/", "events": ["link.exploded"]}),
            "events",
        ),
        (
            json!({"url": "https://example.com/", "events": ["link.created"], "format": "telegram"}),
            "format",
        ),
        (
            json!({"url": "https://example.com/", "events": ["link.created"], "description": "x".repeat(201)}),
            "description",
        ),
    ] {
        let refused = admin
            .call("POST", "/api/v1/webhooks", Some(body.clone()))
            .await;
        assert_eq!(refused.status, 422, "{body}: {}", refused.body);
        assert_eq!(refused.body["error"]["field"], field, "{body}");
    }
    let bad = admin
        .call("POST", "/api/v1/webhooks", Some(json!({"url": 5})))
        .await;
    assert_eq!(bad.status, 400);
    // An array of the fields in order is no object (serde would read it as one).
    let array = admin
        .call(
            "POST",
            "/api/v1/webhooks",
            Some(json!([
                "https://example.com/",
                ["link.created"],
                null,
                null,
                null
            ])),
        )
        .await;
    assert_eq!(array.status, 400, "{}", array.body);
    let domain = format!("/api/v1/domains/localhost:{}", app.port);
    let patched = admin
        .call("PATCH", &domain, Some(json!([null, null])))
        .await;
    assert_eq!(patched.status, 400, "{}", patched.body);
    assert_eq!(
        admin.call("GET", "/api/v1/webhooks/99", None).await.status,
        404
    );
    assert_eq!(
        admin
            .call("GET", "/api/v1/webhooks/nine", None)
            .await
            .status,
        400
    );
}

#[actix_web::test]
async fn redirects_are_not_followed_and_a_slow_huge_or_silent_receiver_costs_one_bounded_attempt() {
    let db = Arc::new(TestDb::create().await);
    let app = spawn_on(db.clone(), &LOCAL).await;
    let admin = Api::with_role(&app, "admin", Role::Admin).await;
    let redirecting = Receiver::start().await;
    redirecting.set(REDIRECT);
    let huge = Receiver::start().await;
    huge.set(HUGE);
    let silent = Receiver::start().await;
    silent.set(SILENT);
    let mut hooks = Vec::new();
    for receiver in [&redirecting, &huge, &silent] {
        hooks.push(
            subscribe(
                &admin,
                json!({"url": receiver.url("/hook"), "events": ["link.created"]}),
            )
            .await,
        );
    }
    let made = admin
        .call(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://example.com/x", "code": "bounded"})),
        )
        .await;
    assert_eq!(made.status, 201);
    tokio::time::sleep(Duration::from_secs(14)).await;
    assert!(
        redirecting.all().iter().all(|m| m.path == "/hook"),
        "a redirect was followed"
    );
    let state = |hook: &Value| {
        let path = format!("/api/v1/webhooks/{}/deliveries", hook["id"]);
        let admin = &admin;
        async move { admin.call("GET", &path, None).await.body[0].clone() }
    };
    let redirected = state(&hooks[0]).await;
    assert_eq!(redirected["state"], "waiting", "{redirected}");
    assert_eq!(redirected["last_status"], 302);
    let delivered = state(&hooks[1]).await;
    assert_eq!(delivered["state"], "delivered", "{delivered}");
    let timed_out = state(&hooks[2]).await;
    assert_eq!(timed_out["state"], "waiting", "{timed_out}");
    assert!(
        timed_out["last_error"]
            .as_str()
            .unwrap_or("")
            .contains("no answer within 10 s"),
        "{timed_out}"
    );
}

#[actix_web::test]
async fn a_full_outbox_drops_the_oldest_clicks_and_counts_them() {
    let db = Arc::new(TestDb::create().await);
    let mut flags = LOCAL.to_vec();
    flags.extend(["--webhook-outbox-limit", "1"]);
    let app = spawn_on(db.clone(), &flags).await;
    let receiver = Receiver::start().await;
    receiver.set(UNAVAILABLE);
    let admin = Api::with_role(&app, "admin", Role::Admin).await;
    let hook = subscribe(
        &admin,
        json!({"url": receiver.url("/"), "events": ["link.clicked", "link.created"]}),
    )
    .await;
    let made = admin
        .call(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://example.com/full", "code": "full"})),
        )
        .await;
    assert_eq!(made.status, 201);
    for wave in 1..=3u64 {
        assert_eq!(app.fetch(&format!("/full?wave={wave}")).await.0, 302);
        wait_written(&app, wave).await;
        // Counted and handed on before the next wave.
        tokio::time::sleep(Duration::from_millis(2500)).await;
    }
    let deliveries = admin
        .call(
            "GET",
            &format!("/api/v1/webhooks/{}/deliveries", hook["id"]),
            None,
        )
        .await;
    let states: Vec<(String, String)> = deliveries
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["event"].as_str().unwrap().to_owned(),
                d["state"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let dropped = states
        .iter()
        .filter(|(e, s)| e == "link.clicked" && s == "dropped")
        .count();
    let waiting = states
        .iter()
        .filter(|(e, s)| e == "link.clicked" && s == "waiting")
        .count();
    assert_eq!((dropped, waiting), (2, 1), "{states:?}");
    assert!(
        states.contains(&("link.created".into(), "waiting".into())),
        "link events are never dropped: {states:?}"
    );
    let metrics = app.fetch("/metrics").await.2;
    assert!(
        metrics.contains("inklink_webhook_click_batches_dropped_total 2"),
        "{metrics}"
    );
    // Sent again on demand once the receiver is back.
    receiver.set(ACCEPT);
    let resent = admin
        .call(
            "POST",
            &format!("/api/v1/webhooks/{}/resend", hook["id"]),
            None,
        )
        .await;
    assert_eq!(resent.body["resent"], 2);
    receiver
        .wait_for(20, "every click", |got| {
            got.iter()
                .filter(|m| m.answered == 200 && m.body.contains("link.clicked"))
                .count()
                == 3
        })
        .await;
}

#[actix_web::test]
async fn replay_sends_a_range_again_with_the_same_ids() {
    let db = Arc::new(TestDb::create().await);
    let app = spawn_on(db.clone(), &LOCAL).await;
    let receiver = Receiver::start().await;
    let admin = Api::with_role(&app, "admin", Role::Admin).await;
    let hook = subscribe(
        &admin,
        json!({"url": receiver.url("/"), "events": ["link.created"]}),
    )
    .await;
    for n in 0..3 {
        let made = admin
            .call(
                "POST",
                "/api/v1/links",
                Some(json!({"url": format!("https://example.com/r/{n}")})),
            )
            .await;
        assert_eq!(made.status, 201);
    }
    receiver
        .wait_for(20, "three messages", |got| got.len() == 3)
        .await;
    let first: BTreeSet<String> = receiver.all().iter().map(|m| m.id().to_owned()).collect();
    let today = chrono::Utc::now().date_naive().to_string();
    let out = crate::cli::ok(
        crate::cli::inklink_live(
            &db,
            &[
                "webhooks",
                "replay",
                "--from",
                &today,
                "--subscription",
                &hook["id"].to_string(),
            ],
        )
        .await,
    );
    assert!(out.contains("3 messages"), "{out}");
    receiver
        .wait_for(20, "the three again", |got| got.len() == 6)
        .await;
    let all: Vec<String> = receiver.all().iter().map(|m| m.id().to_owned()).collect();
    assert_eq!(all.iter().cloned().collect::<BTreeSet<_>>(), first);
    let listed = crate::cli::ok(crate::cli::inklink_live(&db, &["webhooks", "list"]).await);
    assert!(listed.contains(&receiver.url("/")), "{listed}");
    let bad = crate::cli::inklink_live(&db, &["webhooks", "replay", "--from", "yesterday"]).await;
    assert_eq!(bad.code, 1);
    assert!(bad.stderr.contains("neither a day"), "{}", bad.stderr);

    // Delivered messages are forgotten after INKLINK_WEBHOOK_KEEP_DAYS; on PostgreSQL without
    // autovacuum the table is vacuumed then, or it would keep every version of its rows.
    let backend = app.core.db.get_database_backend();
    let age = "UPDATE webhook_message SET created_at = created_at - 8 * 86400000";
    app.core
        .db
        .execute_raw(Statement::from_string(backend, age))
        .await
        .unwrap();
    use inklink::services::webhooks::deliver::prune;
    let mut forgotten = 0;
    for _ in 0..100 {
        // The receiver may have the replay before its delivery is written down.
        forgotten += prune(&app.core.db, 7).await.unwrap();
        if forgotten == 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(forgotten, 3);
    if backend == sea_orm::DbBackend::Postgres {
        let sql = "SELECT current_setting('autovacuum') = 'on' OR last_vacuum IS NOT NULL AS done \
                   FROM pg_stat_user_tables WHERE relname = 'webhook_message'";
        let row = app
            .core
            .db
            .query_one_raw(Statement::from_string(backend, sql))
            .await
            .unwrap()
            .unwrap();
        assert!(row.try_get::<bool>("", "done").unwrap());
    }
}

#[actix_web::test]
async fn the_admin_page_makes_a_webhook_shows_its_secret_once_and_lists_deliveries() {
    let db = Arc::new(TestDb::create().await);
    let app = spawn_on(db.clone(), &LOCAL).await;
    let receiver = Receiver::start().await;
    let mut admin = crate::admin::signed_in_admin(&app).await;
    let page = admin.get("/admin/webhooks").await;
    assert!(page.body.contains("Add a webhook"), "{}", page.body);
    let csrf = crate::admin::csrf_in(&page.body);
    let url = receiver.url("/ui");
    let made = admin
        .post(
            "/admin/webhooks",
            &[
                ("csrf", &csrf),
                ("url", &url),
                ("format", ""),
                ("events", "link.created"),
                ("events", "link.deleted"),
                ("description", "CRM 客户系统"),
            ],
        )
        .await;
    assert_eq!(made.status, 201, "{}", made.body);
    assert!(made.body.contains("whsec_"), "{}", made.body);
    let again = admin.get("/admin/webhooks").await;
    assert!(!again.body.contains("whsec_"), "the secret is shown once");
    assert!(again.body.contains(&url) && again.body.contains("CRM 客户系统"));
    let hooks = inklink::services::webhooks::list(&app.core.db, &inklink::services::Actor::Cli)
        .await
        .unwrap();
    assert_eq!(hooks[0].events.names(), ["link.created", "link.deleted"]);
    let id = hooks[0].id;
    let sent = admin
        .post(&format!("/admin/webhooks/{id}/test"), &[("csrf", &csrf)])
        .await;
    assert_eq!(sent.status, 303);
    receiver
        .wait_for(20, "the test message", |got| {
            got.iter().any(|m| m.body.contains("webhook.test"))
        })
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let detail = admin.get(&format!("/admin/webhooks/{id}")).await;
    assert!(
        detail.body.contains("webhook.test") && detail.body.contains("delivered"),
        "{}",
        detail.body
    );
    // A failed attempt says why in the reader's language; the receiver's words stay as sent.
    receiver.set(UNAVAILABLE);
    let sent = admin
        .post(&format!("/admin/webhooks/{id}/test"), &[("csrf", &csrf)])
        .await;
    assert_eq!(sent.status, 303);
    receiver
        .wait_for(20, "the refused test message", |got| {
            got.iter().any(|m| m.answered == 503)
        })
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let detail = admin.get(&format!("/admin/webhooks/{id}")).await;
    assert!(
        detail.body.contains("answered 503: down for maintenance"),
        "{}",
        detail.body
    );
    admin.get("/lang/zh-CN").await;
    let detail = admin.get(&format!("/admin/webhooks/{id}")).await;
    assert!(
        detail.body.contains("对方应答 503：down for maintenance"),
        "{}",
        detail.body
    );
    admin.get("/lang/en").await;
    receiver.set(ACCEPT);
    // A bad URL keeps what was typed and says why.
    let refused = admin
        .post(
            "/admin/webhooks",
            &[
                ("csrf", &csrf),
                ("url", "ftp://x"),
                ("events", "link.created"),
                ("description", "kept"),
            ],
        )
        .await;
    assert_eq!(refused.status, 422);
    assert!(
        refused.body.contains("must start with http://") && refused.body.contains("value=\"kept\""),
        "{}",
        refused.body
    );
    // Another person's webhook is not theirs to see.
    crate::admin::add_user(&app, "olga", "operator-password", Role::Operator).await;
    let mut operator = crate::admin::Browser::new(&app);
    assert_eq!(
        operator.sign_in("olga", "operator-password").await.status,
        303
    );
    assert_eq!(
        operator.get(&format!("/admin/webhooks/{id}")).await.status,
        404
    );
    let deleted = admin
        .post(&format!("/admin/webhooks/{id}/delete"), &[("csrf", &csrf)])
        .await;
    assert_eq!(deleted.status, 303);
    assert!(
        inklink::services::webhooks::list(&app.core.db, &inklink::services::Actor::Cli)
            .await
            .unwrap()
            .is_empty()
    );
}

#[actix_web::test]
async fn parallel_subscriptions_are_held_to_the_per_person_limit() {
    use inklink::services::webhooks::PER_OWNER;
    let db = Arc::new(TestDb::create().await);
    let app = spawn_on(db.clone(), &LOCAL).await;
    let receiver = Receiver::start().await;
    let operator = Api::with_role(&app, "op", Role::Operator).await;
    let tries = PER_OWNER as usize + 8;
    let made = futures_util::future::join_all((0..tries).map(|n| {
        operator.call(
            "POST",
            "/api/v1/webhooks",
            Some(json!({"url": receiver.url(&format!("/hook/{n}")), "events": ["link.created"]})),
        )
    }))
    .await;
    let created = made.iter().filter(|r| r.status == 201).count();
    let refused: Vec<_> = made.iter().filter(|r| r.status != 201).collect();
    let statuses: Vec<u16> = refused.iter().map(|r| r.status).collect();
    assert_eq!(created, PER_OWNER as usize, "{statuses:?}");
    assert_eq!(refused.len(), 8);
    for reply in refused {
        assert_eq!(reply.status, 409, "{}", reply.body);
        assert!(
            reply
                .body
                .to_string()
                .contains("the most one person may have")
        );
    }
    let listed = operator.call("GET", "/api/v1/webhooks", None).await;
    assert_eq!(listed.body.as_array().unwrap().len(), PER_OWNER as usize);
}

/// A subscription to `link.clicked` at a port where nobody listens.
async fn subscribe_to_clicks(core: &inklink::state::Inklink) {
    use inklink::services::webhooks::{self, NewWebhook};
    let new = NewWebhook::parse("http://127.0.0.1:9/clicks", None, ["link.clicked"], None).unwrap();
    webhooks::create(core, new, &inklink::services::audit::Actor::System, "en")
        .await
        .unwrap();
}

/// When the clicks of the handing-on tests begin.
fn clicks_from() -> chrono::NaiveDateTime {
    chrono::NaiveDate::from_ymd_opt(2026, 6, 1)
        .unwrap()
        .and_hms_opt(8, 0, 0)
        .unwrap()
}

/// Clicks of `link.clicked` come from the click writer's transaction, not from counting: a
/// click is handed on as soon as it is stored, however far behind counting is, and once, even
/// when its batch is written again; clicks stored before any subscription are not.
#[actix_web::test]
async fn clicks_are_handed_on_as_they_are_stored_without_waiting_for_counting() {
    use crate::event_insert::{core_with_link_and, rows, rows_in};
    use inklink::clickstore::insert::insert_rows;
    use inklink::services::webhooks::{deliver, hand_on};
    use sea_orm::ConnectionTrait;
    let db = TestDb::create().await;
    // The core alone: no dispatcher and no counting run beside the test.
    let (core, link) = core_with_link_and(&db, "https://example.com/out", &LOCAL).await;
    let batch = rows(1_500, clicks_from(), link);
    insert_rows(&core.db, &batch[..500]).await.unwrap();
    subscribe_to_clicks(&core).await;
    // A batch stored in part before, and one written again (a retry, a replayed spool).
    insert_rows(&core.db, &batch[400..1_000]).await.unwrap();
    insert_rows(&core.db, &batch[400..]).await.unwrap();
    assert_eq!(
        rows_in(&core.db, "click_waiting").await,
        1_500,
        "nothing is counted yet"
    );
    let policy = deliver::Policy {
        allow_private: true,
        first_retry_ms: 1_000,
        outbox_limit: 10_000,
        keep_days: 7,
    };
    let metrics = inklink::metrics::Metrics::default();
    let mut handed = 0;
    loop {
        let taken = hand_on::hand_on_clicks(&core.db, policy.outbox_limit, &metrics)
            .await
            .unwrap();
        if taken == 0 {
            break;
        }
        handed += taken;
    }
    assert_eq!(
        handed, 1_000,
        "the clicks stored after the subscription, once"
    );
    let backend = core.db.get_database_backend();
    let bodies = core
        .db
        .query_all_raw(sea_orm::Statement::from_string(
            backend,
            "SELECT body FROM webhook_message WHERE event = 'link.clicked'",
        ))
        .await
        .unwrap();
    let carried: BTreeSet<String> = bodies
        .iter()
        .flat_map(|row| {
            let body: String = row.try_get_by_index(0).unwrap();
            let body: Value = serde_json::from_str(&body).unwrap();
            body["data"].as_array().unwrap().clone()
        })
        .map(|click| click["time"].as_str().unwrap().to_owned())
        .collect();
    let expected: BTreeSet<String> = batch[500..]
        .iter()
        .map(|row| {
            let at = inklink::clickstore::insert::micros(row.record_time);
            inklink::clickstore::insert::from_micros(at)
                .and_utc()
                .to_rfc3339()
        })
        .collect();
    assert_eq!(carried, expected);
    // Counting them afterwards hands nothing on again.
    assert_eq!(
        inklink::stats::tally::drain(&core.db, chrono_tz::UTC)
            .await
            .unwrap(),
        1_500
    );
    assert_eq!(
        hand_on::hand_on_clicks(&core.db, policy.outbox_limit, &metrics)
            .await
            .unwrap(),
        0
    );
    assert_eq!(rows_in(&core.db, "click_outgoing").await, 0);
}

/// A server whose runtime is dropped while it works, as a test's runtime is at its end, lets
/// go of its pooled connections where a runtime still is: sqlx panics when a connection is
/// given back outside one (tokio swallows one such panic; a second while unwinding aborts the
/// whole process). Each server below is dropped while its webhook dispatcher hands on clicks.
#[actix_web::test]
async fn a_server_dropped_with_its_runtime_mid_work_does_not_abort_the_process() {
    use crate::event_insert::{core_with_link_and, rows, rows_in};
    use inklink::clickstore::insert::insert_rows;
    static PANICS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    const THREAD: &str = "dropped-server";
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let earlier = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().name() == Some(THREAD) {
                PANICS.fetch_add(1, SeqCst);
            }
            earlier(info);
        }));
    });
    let db = Arc::new(TestDb::create().await);
    let (core, link) = core_with_link_and(&db, "https://example.com/out", &LOCAL).await;
    // Deliveries fail at once: handing on does the work.
    subscribe_to_clicks(&core).await;
    for chunk in rows(80_000, clicks_from(), link).chunks(5_000) {
        insert_rows(&core.db, chunk).await.unwrap();
    }
    for after_ms in [0, 30, 60, 90, 120] {
        let db = db.clone();
        let thread = std::thread::Builder::new()
            .name(THREAD.into())
            .spawn(move || {
                actix_web::rt::System::new().block_on(async move {
                    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                    let listen = listener.local_addr().unwrap().to_string();
                    let settings = crate::support::settings(&db, &listen, &LOCAL);
                    let core = Arc::new(inklink::startup::open(settings).await.unwrap());
                    let listed = || rows_in(&core.db, "click_outgoing");
                    let before = listed().await;
                    assert!(before > 0, "clicks left to hand on");
                    let app = inklink::startup::Application::with_listener(core.clone(), listener)
                        .unwrap();
                    actix_web::rt::spawn(app.run_until_stopped());
                    // Once a turn of handing on is done, the next one is under way.
                    while listed().await == before {
                        actix_web::rt::time::sleep(Duration::from_millis(10)).await;
                    }
                    actix_web::rt::time::sleep(Duration::from_millis(after_ms)).await;
                });
                // The runtime and every task on it are dropped here.
            });
        assert!(
            thread.unwrap().join().is_ok(),
            "dropped after {after_ms} ms"
        );
        assert_eq!(PANICS.load(SeqCst), 0, "dropped after {after_ms} ms");
    }
}

/// A burst's clicks reach the receiver each once; on PostgreSQL the hand-over refreshed the
/// planner's statistics of the clicks on its own (counting is an hour away here: it refreshes
/// them too, but falls behind in a burst), without autovacuum vacuumed the outbox, and never
/// read the list of clicks on their way whole.
#[actix_web::test]
async fn a_burst_of_clicks_reaches_the_receiver_and_refreshes_the_planners_statistics() {
    let db = Arc::new(TestDb::create().await);
    let mut args = LOCAL.to_vec();
    args.extend(["--stats-interval", "3600"]);
    let app = spawn_on(db, &args).await;
    let receiver = Receiver::start().await;
    let admin = Api::with_role(&app, "bi", Role::Admin).await;
    subscribe_to_clicks_at(&admin, &receiver).await;
    let mut links = Vec::new();
    for n in 0..4 {
        let saved = create_link(&app, &format!("https://example.com/burst/{n}")).await;
        links.push((saved.link.id, saved.link.compression_code.to_string()));
    }
    let burst = 21_000;
    for click in crate::analytics::synthesize(&links, burst) {
        app.state.clicks.sink().record(click.event);
    }
    wait_written(&app, burst as u64).await;
    let cursors = |got: &[Received]| -> BTreeSet<String> {
        got.iter()
            .filter(|m| m.answered == 200)
            .flat_map(|m| m.json()["data"].as_array().cloned().unwrap_or_default())
            .map(|click| click["cursor"].as_str().unwrap().to_owned())
            .collect()
    };
    receiver
        .wait_for(120, "every click of the burst", |got| {
            cursors(got).len() == burst
        })
        .await;
    let carried: usize = receiver
        .accepted()
        .values()
        .map(|m| m.json()["data"].as_array().unwrap().len())
        .sum();
    assert_eq!(carried, burst, "each click once");

    let backend = app.core.db.get_database_backend();
    if backend == sea_orm::DbBackend::Postgres {
        let ask = async |sql: &str| {
            app.core
                .db
                .query_all_raw(Statement::from_string(backend, sql))
                .await
                .unwrap()
        };
        // The refresh follows the hand-over's turn that crossed 20,000 clicks, and may end after
        // the receiver has them all.
        let mut refreshed: Vec<String> = Vec::new();
        for _ in 0..300 {
            refreshed = ask("SELECT relname FROM pg_stat_user_tables WHERE \
                 (relname = 'click' AND last_analyze IS NOT NULL) OR \
                 (relname = 'webhook_message' AND (last_vacuum IS NOT NULL OR \
                 (current_setting('autovacuum') = 'on' AND last_analyze IS NOT NULL))) \
                 ORDER BY relname")
            .await
            .iter()
            .map(|row| row.try_get::<String>("", "relname").unwrap())
            .collect();
            if refreshed.len() == 2 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert_eq!(refreshed, ["click", "webhook_message"]);
        // The list of clicks on their way was read and emptied by key, through its index: at
        // the burst's tens of thousands of rows the planner read it whole for each chunk of
        // keys. (A backend reports its counts within a second or so of its transactions.)
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        let read_whole: i64 = ask(
            "SELECT COALESCE(seq_tup_read, 0) AS n FROM pg_stat_user_tables \
             WHERE relname = 'click_outgoing'",
        )
        .await[0]
            .try_get("", "n")
            .unwrap();
        assert_eq!(
            read_whole, 0,
            "rows of click_outgoing read by sequential scans"
        );
    }
}

/// A new `link.created` subscription to `url` with `n` messages in its outbox; its id.
async fn subscription_with_messages(core: &inklink::state::Inklink, url: &str, n: usize) -> i64 {
    use inklink::services::audit::Actor;
    use inklink::services::outbox;
    use inklink::services::webhooks::{self, NewWebhook};
    let new = NewWebhook::parse(url, None, ["link.created"], None).unwrap();
    let made = webhooks::create(core, new, &Actor::System, "en")
        .await
        .unwrap();
    for n in 0..n {
        let body = outbox::envelope("link.created", json!({"n": n}));
        outbox::put(&core.db, made.id, "link.created", &body, 1)
            .await
            .unwrap();
    }
    made.id
}

/// A subscription deleted while instances claim, attempt and put back its messages: each
/// delete succeeds, and neither waits for the other. (PostgreSQL once picked the delete as a deadlock's victim, the
/// two transactions having locked the same messages in different orders, and the API
/// answered 503.)
#[actix_web::test]
async fn a_subscription_is_deleted_while_its_messages_are_being_delivered() {
    use crate::event_insert::core_with_link_and;
    use inklink::services::audit::Actor;
    use inklink::services::outbox;
    use inklink::services::webhooks::{self, deliver};
    use std::cell::Cell;
    let db = TestDb::create().await;
    let (core, _) = core_with_link_and(&db, "https://example.com/gone", &LOCAL).await;
    let receiver = Receiver::start().await;
    receiver.set(UNAVAILABLE);
    // Failed messages are due again at once, so delivery keeps rewriting them.
    let policy = deliver::Policy {
        allow_private: true,
        first_retry_ms: 0,
        outbox_limit: 10_000,
        keep_days: 7,
    };
    let metrics = inklink::metrics::Metrics::default();
    let outbound = inklink::net::outbound::Outbound::new(true, deliver::TIMEOUT);
    let mut hooks_deleted = Vec::new();
    for round in 0..6 {
        let mut hooks = Vec::new();
        for n in 0..3 {
            let url = receiver.url(&format!("/{round}/{n}"));
            hooks.push(subscription_with_messages(&core, &url, 150).await);
        }
        let deleted = Cell::new(false);
        let failures = Cell::new(0);
        let delivering = || async {
            while !deleted.get() {
                if let Err(err) = deliver::deliver_due(&core.db, &outbound, &policy, &metrics).await
                {
                    eprintln!("delivery: {err}");
                    failures.set(failures.get() + 1);
                }
            }
        };
        let deleting = async {
            tokio::time::sleep(Duration::from_millis(150)).await;
            for id in &hooks {
                let done = webhooks::delete(&core, *id, &Actor::System).await;
                assert!(done.is_ok(), "round {round}, subscription {id}: {done:?}");
            }
            deleted.set(true);
        };
        futures_util::future::join3(delivering(), delivering(), deleting).await;
        assert_eq!(failures.get(), 0, "round {round}: delivery failed");
        hooks_deleted.extend(hooks);
    }
    let backend = core.db.get_database_backend();
    let ask = async |sql: &str| -> i64 {
        let row = core
            .db
            .query_one_raw(Statement::from_string(backend, sql))
            .await
            .unwrap()
            .unwrap();
        row.try_get_by_index(0).unwrap()
    };
    assert_eq!(
        ask("SELECT COUNT(*) FROM webhook_message").await,
        0,
        "a deleted subscription's messages go with it"
    );
    // A message put for a subscription as it was being deleted (its change read the
    // subscriptions before the delete committed) is forgotten, not put back for ever.
    let gone = *hooks_deleted.last().unwrap();
    let body = outbox::envelope("link.created", json!({"late": true}));
    outbox::put(&core.db, gone, "link.created", &body, 1)
        .await
        .unwrap();
    let claimed = deliver::deliver_due(&core.db, &outbound, &policy, &metrics)
        .await
        .unwrap();
    assert_eq!(claimed, 1);
    assert_eq!(ask("SELECT COUNT(*) FROM webhook_message").await, 0);
    if backend == sea_orm::DbBackend::Postgres {
        // Not even one the delete's retry hid (this test's own database; a backend reports
        // its counts within a second or so).
        tokio::time::sleep(Duration::from_secs(2)).await;
        let deadlocks =
            ask("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()").await;
        assert_eq!(deadlocks, 0, "deadlocks");
    }
}

/// `inklink webhooks replay` changes many messages in the order PostgreSQL finds them in the
/// table, while another writer may lock the same messages in another order; when PostgreSQL
/// picks the replay as the deadlock's victim, the replay runs again instead of failing.
/// (PostgreSQL only: SQLite has one writer; MariaDB picks the victim by the size of each
/// transaction, so which side loses is not this test's to choose.)
#[actix_web::test]
async fn a_replay_picked_as_a_deadlocks_victim_runs_again() {
    use crate::event_insert::core_with_link_and;
    use inklink::services::webhooks;
    let db = TestDb::create().await;
    let (core, _) = core_with_link_and(&db, "https://example.com/replayed", &LOCAL).await;
    let backend = core.db.get_database_backend();
    if backend != sea_orm::DbBackend::Postgres {
        return;
    }
    subscription_with_messages(&core, "http://127.0.0.1:9/", 2).await;
    // Delivered (state 1): a replay sends them again.
    core.db
        .execute_raw(Statement::from_string(
            backend,
            "UPDATE webhook_message SET state = 1",
        ))
        .await
        .unwrap();
    let ids: Vec<i64> = core
        .db
        .query_all_raw(Statement::from_string(
            backend,
            "SELECT id FROM webhook_message ORDER BY id",
        ))
        .await
        .unwrap()
        .iter()
        .map(|row| row.try_get_by_index(0).unwrap())
        .collect();
    let (first, second) = (ids[0], ids[1]);

    // Another writer holds the second message, the replay takes the first and waits for
    // the second, then the other writer asks for the first: each waits for the other.
    let other = inklink::db::begin_write(&core.db).await.unwrap();
    let lock = |id: i64| {
        Statement::from_string(
            backend,
            format!("UPDATE webhook_message SET attempts = attempts WHERE id = {id}"),
        )
    };
    other.execute_raw(lock(second)).await.unwrap();
    let replaying = webhooks::replay(&core.db, 0, i64::MAX, None);
    let crossing = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        other.execute_raw(lock(first)).await.unwrap();
        other.commit().await.unwrap();
    };
    let (replayed, ()) = futures_util::future::join(replaying, crossing).await;

    assert_eq!(replayed.unwrap(), 2, "both messages are sent again");
    let waiting: i64 = core
        .db
        .query_one_raw(Statement::from_string(
            backend,
            "SELECT COUNT(*) FROM webhook_message WHERE state = 0",
        ))
        .await
        .unwrap()
        .unwrap()
        .try_get_by_index(0)
        .unwrap();
    assert_eq!(waiting, 2);
    // The deadlock did happen (a backend reports its counts within a second or so).
    tokio::time::sleep(Duration::from_secs(2)).await;
    let deadlocks: i64 = core
        .db
        .query_one_raw(Statement::from_string(
            backend,
            "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()",
        ))
        .await
        .unwrap()
        .unwrap()
        .try_get_by_index(0)
        .unwrap();
    assert!(
        deadlocks >= 1,
        "no deadlock happened: the test proves nothing"
    );
}
