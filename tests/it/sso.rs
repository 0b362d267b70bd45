//! Single sign-on with OpenID Connect (issue 43), end to end: against the real local provider
//! `oidc-provider-mock` (PyPI; `.ci/run` installs it), and against a provider served here that
//! signs tokens wrongly on purpose (a bad signature, another audience, an expired token, a
//! wrong nonce or issuer, no signature), which no standard provider can be asked to do.

use crate::admin::{Browser, Page, add_user};
use crate::support::{TestApp, client, spawn_app_with};
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use futures_util::future::join_all;
use inklink::rules::Role;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

/// `oidc-provider-mock` on a free port, stopped when dropped.
pub struct RealProvider {
    pub issuer: String,
    child: Child,
}

impl RealProvider {
    /// The provider, or `None` (the test skipped) where it is not installed and this is not
    /// CI.
    pub async fn start() -> Option<Self> {
        let available = Command::new("python3")
            .args(["-c", "import oidc_provider_mock"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !available {
            assert!(
                std::env::var_os("CI").is_none(),
                "oidc-provider-mock is missing; .ci/run installs it with pip"
            );
            eprintln!("SKIPPED: single sign-on test needs `pip install oidc-provider-mock`");
            return None;
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        // Owned at once, so that Drop kills and reaps it on every path.
        let provider = Self {
            issuer: format!("http://127.0.0.1:{port}"),
            child: Command::new("python3")
                .args(["-m", "oidc_provider_mock", "--port", &port.to_string()])
                .args(["--require-nonce", "true"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("python3 runs"),
        };
        for _ in 0..100 {
            let found = client()
                .get(format!(
                    "{}/.well-known/openid-configuration",
                    provider.issuer
                ))
                .send()
                .await;
            if found.is_ok_and(|answer| answer.status().is_success()) {
                return Some(provider);
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        panic!("oidc-provider-mock did not start (pip install oidc-provider-mock)");
    }

    /// Gives the person `sub` these claims at the provider.
    pub async fn person(&self, sub: &str, claims: Value) {
        let answer = client()
            .put(format!("{}/users/{sub}", self.issuer))
            .send_json(&claims)
            .await
            .unwrap();
        assert_eq!(answer.status().as_u16(), 204);
    }

    /// The person `sub` approves at the provider: the callback URL it sends the browser to.
    async fn approve(&self, authorize: &str, sub: &str) -> String {
        let answer = client()
            .post(authorize)
            .send_form(&[("sub", sub)])
            .await
            .unwrap();
        assert_eq!(answer.status().as_u16(), 302, "the provider approves");
        answer
            .headers()
            .get("location")
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned()
    }
}

impl Drop for RealProvider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn sso_flags<'a>(issuer: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut flags = vec![
        "--oidc-issuer",
        issuer,
        "--oidc-client-id",
        "inklink-test",
        "--oidc-client-secret",
        "s3cret",
        "--oidc-name",
        "Acme ID",
    ];
    flags.extend_from_slice(extra);
    flags
}

/// The path and query of an absolute URL on inklink.
fn local(url: &str) -> String {
    let url = url::Url::parse(url).unwrap();
    format!("{}?{}", url.path(), url.query().unwrap_or(""))
}

/// Starts a sign-in in `browser`: the provider's authorization URL.
async fn start(browser: &mut Browser<'_>) -> String {
    let begun = browser.get("/admin/sso").await;
    assert_eq!(begun.status, 303, "{}", begun.body);
    begun.location.unwrap()
}

async fn user_named(app: &TestApp, name: &str) -> Option<inklink::db::entities::users::Model> {
    inklink::services::users::find(
        &app.core.db,
        &inklink::rules::Username::parse(name).unwrap(),
    )
    .await
    .unwrap()
}

async fn user_count(app: &TestApp) -> usize {
    inklink::services::users::list(&app.core.db)
        .await
        .unwrap()
        .len()
}

#[actix_web::test]
async fn a_person_signs_in_through_the_provider_matched_by_subject_with_the_role_it_gives() {
    let Some(provider) = RealProvider::start().await else {
        return;
    };
    let app = spawn_app_with(&sso_flags(
        &provider.issuer,
        &[
            "--oidc-create-users",
            "true",
            "--oidc-admin-values",
            "inklink-admins",
        ],
    ))
    .await;
    add_user(&app, "admin", "admin-password-1", Role::Admin).await;
    // The sign-in page offers the provider, by the configured name, in both languages.
    let mut english = Browser::new(&app);
    let login = english.get("/admin/login").await;
    assert!(
        login.body.contains("Sign in with Acme ID"),
        "{}",
        login.body
    );
    let mut chinese = Browser::speaking(&app, "zh-CN");
    let login = chinese.get("/admin/login").await;
    assert!(login.body.contains("使用 Acme ID 登录"), "{}", login.body);

    provider
        .person(
            "u-1001",
            json!({"email": "wang@example.com", "preferred_username": "Wang.Xiaomei",
                   "name": "王小美", "groups": ["staff", "inklink-admins"]}),
        )
        .await;
    let before = user_count(&app).await;
    let mut browser = Browser::new(&app);
    let authorize = start(&mut browser).await;
    assert!(authorize.starts_with(&provider.issuer));
    for param in [
        "state=",
        "nonce=",
        "code_challenge=",
        "code_challenge_method=S256",
    ] {
        assert!(authorize.contains(param), "{authorize} has {param}");
    }
    let callback = provider.approve(&authorize, "u-1001").await;
    let done = browser.get(&local(&callback)).await;
    assert_eq!(done.status, 303, "{}", done.body);
    assert_eq!(done.location.as_deref(), Some("/admin/links"));
    let links = browser.get("/admin/links").await;
    assert_eq!(links.status, 200);
    assert!(links.body.contains("王小美"), "greeted by the display name");
    let made = user_named(&app, "wang.xiaomei").await.expect("a user made");
    assert_eq!(made.role, Role::Admin, "the group the provider gives");
    assert_eq!(user_count(&app).await, before + 1);

    // The callback again, even with the cookie it came with, opens nothing: the state is spent.
    let mut replay = Browser::new(&app);
    let authorize = start(&mut replay).await;
    let callback = provider.approve(&authorize, "u-1001").await;
    let cookie = replay.cookie();
    assert_eq!(replay.get(&local(&callback)).await.status, 303);
    let mut thief = Browser::with_cookie(&app, cookie);
    let again = thief.get(&local(&callback)).await;
    assert_eq!(again.status, 400, "a replayed state is refused");
    assert!(again.body.contains("already used"), "{}", again.body);
    assert_eq!(user_count(&app).await, before + 1, "the same person, once");

    // A callback this browser did not start (someone else's code) is refused.
    let mut victim = Browser::new(&app);
    let mut attacker = Browser::new(&app);
    let authorize = start(&mut attacker).await;
    let callback = provider.approve(&authorize, "u-1001").await;
    let planted = victim.get(&local(&callback)).await;
    assert_eq!(planted.status, 400);
    assert_eq!(
        victim.get("/admin/links").await.status,
        303,
        "not signed in"
    );

    // Another person who claims the same e-mail is another user: subjects decide, not e-mails.
    provider
        .person(
            "u-2002",
            json!({"email": "wang@example.com", "preferred_username": "Wang.Xiaomei",
                   "groups": ["staff"]}),
        )
        .await;
    let mut other = Browser::new(&app);
    let authorize = start(&mut other).await;
    let callback = provider.approve(&authorize, "u-2002").await;
    assert_eq!(other.get(&local(&callback)).await.status, 303);
    let second = user_named(&app, "wang.xiaomei-2")
        .await
        .expect("a second user");
    assert_eq!(second.role, Role::Operator, "no admin group: an operator");
    assert_eq!(user_count(&app).await, before + 2);

    // The provider takes the admin group away: the next sign-in is an operator's.
    provider
        .person(
            "u-1001",
            json!({"email": "wang@example.com", "preferred_username": "Wang.Xiaomei",
                   "groups": ["staff"]}),
        )
        .await;
    let mut later = Browser::new(&app);
    let authorize = start(&mut later).await;
    let callback = provider.approve(&authorize, "u-1001").await;
    assert_eq!(later.get(&local(&callback)).await.status, 303);
    let made = user_named(&app, "wang.xiaomei").await.unwrap();
    assert_eq!(made.role, Role::Operator);

    // Denied at the provider: the reason, and no session.
    let mut denied = Browser::new(&app);
    let authorize = start(&mut denied).await;
    let answer = client()
        .post(&authorize)
        .send_form(&[("action", "deny")])
        .await
        .unwrap();
    let callback = answer.headers().get("location").unwrap().to_str().unwrap();
    let page = denied.get(&local(callback)).await;
    assert_eq!(page.status, 400, "{}", page.body);
    assert!(page.body.contains("refused"), "{}", page.body);
}

#[actix_web::test]
async fn only_linked_people_sign_in_when_users_are_not_created_and_passwords_can_be_turned_off() {
    let Some(provider) = RealProvider::start().await else {
        return;
    };
    let app = spawn_app_with(&sso_flags(
        &provider.issuer,
        &["--password-signin", "false"],
    ))
    .await;
    add_user(&app, "admin", "admin-password-1", Role::Admin).await;
    add_user(&app, "liu", "liu-password-1", Role::Operator).await;
    let before = user_count(&app).await;
    let mut browser = Browser::speaking(&app, "zh-CN");
    let authorize = start(&mut browser).await;
    let callback = provider.approve(&authorize, "liu-at-acme").await;
    let refused = browser.get(&local(&callback)).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(
        refused.body.contains("请联系管理员"),
        "said in Chinese: {}",
        refused.body
    );
    assert_eq!(user_count(&app).await, before, "nobody created");

    // The break-glass admin links the provider's subject to liu on the Users page (what
    // `inklink user link-sso` does).
    let mut admin = Browser::new(&app);
    assert_eq!(admin.sign_in("admin", "admin-password-1").await.status, 303);
    let users = admin.get("/admin/users").await;
    let liu = user_named(&app, "liu").await.unwrap().id;
    assert!(
        users
            .body
            .contains(&format!("action=\"/admin/users/{liu}/sso\""))
    );
    let csrf = crate::admin::csrf_in(&users.body);
    let linked = admin
        .post(
            &format!("/admin/users/{liu}/sso"),
            &[("csrf", &csrf), ("subject", " liu-at-acme ")],
        )
        .await;
    assert_eq!(linked.status, 303, "{}", linked.body);
    let users = admin.get("/admin/users").await;
    assert!(
        users
            .body
            .contains("liu signs in through single sign-on as liu-at-acme")
    );
    assert!(users.body.contains("title=\"liu-at-acme\""));
    let taken = inklink::services::sso::link(
        &app.core,
        app.core.sso.as_ref(),
        &inklink::rules::Username::parse("admin").unwrap(),
        "liu-at-acme",
        &inklink::services::Actor::Cli,
    )
    .await
    .unwrap_err();
    assert!(taken.to_string().contains("already linked to user 'liu'"));
    let authorize = start(&mut browser).await;
    let callback = provider.approve(&authorize, "liu-at-acme").await;
    assert_eq!(browser.get(&local(&callback)).await.status, 303);
    let page = browser.get("/admin/account").await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("liu"));

    // Password sign-in is off for everyone but the break-glass admin.
    let mut liu = Browser::new(&app);
    let off = liu.sign_in("liu", "liu-password-1").await;
    assert_eq!(off.status, 403, "{}", off.body);
    assert!(off.body.contains("use single sign-on"), "{}", off.body);
    let mut admin = Browser::new(&app);
    let login = admin.get("/admin/login").await;
    assert!(
        login.body.contains("<details"),
        "the password form folded away"
    );
    assert_eq!(
        admin.sign_in("admin", "admin-password-1").await.status,
        303,
        "the break-glass admin still signs in with a password"
    );
}

/// What the provider served here does to the next token it issues.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Twist {
    None,
    BadSignature,
    WrongAudience,
    Expired,
    WrongNonce,
    WrongIssuer,
    Unsigned,
}

struct Fake {
    key: EcdsaKeyPair,
    impostor: EcdsaKeyPair,
    issuer: String,
    twist: Twist,
    sub: String,
    /// Per code: the nonce and PKCE challenge its authorization asked with.
    codes: Vec<(String, String, String)>,
    /// Whether every token request's verifier matched its challenge.
    verifiers_right: bool,
    token_requests: usize,
}

/// An OpenID provider that signs with ES256 and issues what `Twist` says.
struct FakeProvider {
    issuer: String,
    inner: Arc<Mutex<Fake>>,
}

fn new_key() -> EcdsaKeyPair {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap()
}

fn jwt(key: &EcdsaKeyPair, header: Value, claims: Value) -> String {
    let signed = format!(
        "{}.{}",
        B64.encode(header.to_string()),
        B64.encode(claims.to_string())
    );
    let signature = key.sign(&SystemRandom::new(), signed.as_bytes()).unwrap();
    format!("{signed}.{}", B64.encode(signature.as_ref()))
}

fn param(query: &str, name: &str) -> String {
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default()
}

impl FakeProvider {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let issuer = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let inner = Arc::new(Mutex::new(Fake {
            key: new_key(),
            impostor: new_key(),
            issuer: issuer.clone(),
            twist: Twist::None,
            sub: "fake-1".to_owned(),
            codes: Vec::new(),
            verifiers_right: true,
            token_requests: 0,
        }));
        let shared = inner.clone();
        let server = HttpServer::new(move || {
            let fake = shared.clone();
            App::new().default_service(web::to(move |req: HttpRequest, body: web::Bytes| {
                let fake = fake.clone();
                async move { FakeProvider::answer(&fake, &req, &body) }
            }))
        })
        .workers(1)
        .listen(listener)
        .unwrap()
        .run();
        actix_web::rt::spawn(server);
        Self { issuer, inner }
    }

    fn answer(fake: &Mutex<Fake>, req: &HttpRequest, body: &[u8]) -> HttpResponse {
        let mut fake = fake.lock().unwrap();
        let issuer = fake.issuer.clone();
        match req.path() {
            "/.well-known/openid-configuration" => HttpResponse::Ok().json(json!({
                "issuer": issuer,
                "authorization_endpoint": format!("{issuer}/authorize"),
                "token_endpoint": format!("{issuer}/token"),
                "jwks_uri": format!("{issuer}/jwks"),
                "token_endpoint_auth_methods_supported": ["client_secret_post"],
            })),
            "/jwks" => {
                let point = fake.key.public_key().as_ref();
                HttpResponse::Ok().json(json!({"keys": [{
                    "kty": "EC", "crv": "P-256", "kid": "k1", "use": "sig",
                    "x": B64.encode(&point[1..33]), "y": B64.encode(&point[33..65]),
                }]}))
            }
            "/authorize" => {
                let query = req.query_string();
                let code = format!("code-{}", fake.codes.len());
                fake.codes.push((
                    code.clone(),
                    param(query, "nonce"),
                    param(query, "code_challenge"),
                ));
                let back = format!(
                    "{}?code={code}&state={}",
                    param(query, "redirect_uri"),
                    param(query, "state")
                );
                HttpResponse::Found()
                    .insert_header(("location", back))
                    .finish()
            }
            "/token" => {
                fake.token_requests += 1;
                let form = std::str::from_utf8(body).unwrap();
                let code = param(form, "code");
                let Some((_, nonce, challenge)) =
                    fake.codes.iter().find(|(c, _, _)| *c == code).cloned()
                else {
                    return HttpResponse::BadRequest().json(json!({"error": "invalid_grant"}));
                };
                let verifier = param(form, "code_verifier");
                let right = inklink::rules::oidc::pkce_challenge(&verifier) == challenge
                    && param(form, "client_secret") == "s3cret";
                fake.verifiers_right &= right;
                let now = chrono::Utc::now().timestamp();
                let mut claims = json!({
                    "iss": issuer, "aud": "inklink-test", "sub": fake.sub,
                    "iat": now, "exp": now + 300, "nonce": nonce,
                    "preferred_username": "fake.person",
                });
                match fake.twist {
                    Twist::WrongAudience => claims["aud"] = json!("another-app"),
                    Twist::Expired => {
                        claims["iat"] = json!(now - 7200);
                        claims["exp"] = json!(now - 3600);
                    }
                    Twist::WrongNonce => claims["nonce"] = json!("not-the-nonce"),
                    Twist::WrongIssuer => claims["iss"] = json!("https://evil.example"),
                    _ => {}
                }
                let header = json!({"alg": "ES256", "kid": "k1", "typ": "JWT"});
                let token = match fake.twist {
                    Twist::BadSignature => jwt(&fake.impostor, header, claims),
                    Twist::Unsigned => format!(
                        "{}.{}.",
                        B64.encode(json!({"alg": "none"}).to_string()),
                        B64.encode(claims.to_string())
                    ),
                    _ => jwt(&fake.key, header, claims),
                };
                HttpResponse::Ok().json(json!({
                    "access_token": "at", "token_type": "Bearer", "id_token": token,
                }))
            }
            _ => HttpResponse::NotFound().finish(),
        }
    }

    fn twist(&self, twist: Twist) {
        self.inner.lock().unwrap().twist = twist;
    }

    /// Through the provider in `browser`: the page inklink's callback answers.
    async fn sign_in(&self, browser: &mut Browser<'_>) -> Page {
        let authorize = start(browser).await;
        let answer = client().get(&authorize).send().await.unwrap();
        let callback = answer.headers().get("location").unwrap().to_str().unwrap();
        browser.get(&local(callback)).await
    }
}

#[actix_web::test]
async fn tokens_not_signed_by_the_provider_for_this_sign_in_are_refused() {
    let provider = FakeProvider::start();
    let app = spawn_app_with(&sso_flags(
        &provider.issuer,
        &["--oidc-create-users", "true"],
    ))
    .await;
    let before = user_count(&app).await;
    let cases = [
        (Twist::BadSignature, "signature is not valid"),
        (Twist::WrongAudience, "another application"),
        (Twist::Expired, "has expired"),
        (Twist::WrongNonce, "nonce"),
        (Twist::WrongIssuer, "another provider"),
        (Twist::Unsigned, "not accepted"),
    ];
    for (twist, reason) in cases {
        provider.twist(twist);
        let mut browser = Browser::new(&app);
        let page = provider.sign_in(&mut browser).await;
        assert_eq!(page.status, 400, "{twist:?}: {}", page.body);
        assert!(page.body.contains(reason), "{twist:?}: {}", page.body);
        assert_eq!(
            browser.get("/admin/links").await.status,
            303,
            "{twist:?} opened nothing"
        );
    }
    assert_eq!(
        user_count(&app).await,
        before,
        "no user made by a bad token"
    );

    // The same provider's right token signs in, the PKCE verifier matching its challenge.
    provider.twist(Twist::None);
    let mut browser = Browser::new(&app);
    let page = provider.sign_in(&mut browser).await;
    assert_eq!(page.status, 303, "{}", page.body);
    assert_eq!(browser.get("/admin/links").await.status, 200);
    assert!(provider.inner.lock().unwrap().verifiers_right);

    // A callback without the cookie its sign-in started with never reaches the provider.
    let requests = provider.inner.lock().unwrap().token_requests;
    let mut stranger = Browser::new(&app);
    let page = stranger
        .get("/admin/sso/callback?code=code-0&state=guessed")
        .await;
    assert_eq!(page.status, 400);
    assert_eq!(provider.inner.lock().unwrap().token_requests, requests);
}

#[actix_web::test]
async fn a_persons_first_sign_ins_at_once_make_one_user_and_a_second_factor_still_follows() {
    let provider = FakeProvider::start();
    let app = spawn_app_with(&sso_flags(
        &provider.issuer,
        &["--oidc-create-users", "true", "--require-2fa", "true"],
    ))
    .await;
    let before = user_count(&app).await;
    provider.inner.lock().unwrap().sub = "parallel-person".to_owned();
    let mut browsers: Vec<Browser> = (0..8).map(|_| Browser::new(&app)).collect();
    let pages = join_all(browsers.iter_mut().map(|b| provider.sign_in(b))).await;
    for page in &pages {
        assert_eq!(page.status, 303, "{}", page.body);
        // INKLINK_REQUIRE_2FA: the provider's word is not the second factor.
        assert_eq!(page.location.as_deref(), Some("/admin/login/enrol"));
    }
    assert_eq!(user_count(&app).await, before + 1, "one person, one user");
    assert_eq!(
        browsers[0].get("/admin/links").await.status,
        303,
        "no page opens before the second factor"
    );
}

#[actix_web::test]
async fn failed_single_sign_ins_from_one_address_are_held_to_the_limit_in_parallel() {
    use inklink::services::sso::ADDRESS_LIMIT;
    let provider = FakeProvider::start();
    let app = spawn_app_with(&sso_flags(
        &provider.issuer,
        &["--oidc-create-users", "true"],
    ))
    .await;
    provider.twist(Twist::BadSignature);
    let tries = ADDRESS_LIMIT as usize + 6;
    let mut browsers: Vec<Browser> = (0..tries).map(|_| Browser::new(&app)).collect();
    let pages = join_all(browsers.iter_mut().map(|b| provider.sign_in(b))).await;
    let refused = pages.iter().filter(|p| p.status == 400).count();
    let throttled = pages.iter().filter(|p| p.status == 429).count();
    assert_eq!(
        refused, ADDRESS_LIMIT as usize,
        "every try up to the limit checked"
    );
    assert_eq!(throttled, 6, "the rest held back");
    assert!(
        pages
            .iter()
            .any(|p| p.body.contains("too many failed sign-ins"))
    );
    // A right sign-in afterwards from the same address waits for the window, too: failures
    // are what the limit counts, and a stranger's cannot be undone by anyone's success.
    provider.twist(Twist::None);
    let mut browser = Browser::new(&app);
    assert_eq!(provider.sign_in(&mut browser).await.status, 429);
}

#[actix_web::test]
async fn a_provider_that_cannot_be_reached_is_named_and_nothing_is_signed_in() {
    let dead = TcpListener::bind("127.0.0.1:0").unwrap();
    let issuer = format!("http://127.0.0.1:{}", dead.local_addr().unwrap().port());
    drop(dead);
    let app = spawn_app_with(&sso_flags(&issuer, &[])).await;
    let mut browser = Browser::speaking(&app, "zh-CN");
    let page = browser.get("/admin/sso").await;
    assert_eq!(page.status, 502, "{}", page.body);
    assert!(page.body.contains("无法连接登录服务商"), "{}", page.body);
    assert!(
        page.body.contains("name=\"password\""),
        "the password form is still there"
    );
}
