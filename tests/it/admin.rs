//! The admin UI over HTTP: sign-in, sessions, CSRF, throttling, and the links pages.

use crate::support::{TestApp, TestDb, create_link, spawn_app, spawn_on};
use inklink::db::entities::{admin_sessions, url_map};
use inklink::rules::{Password, Role, Username};
use inklink::services::{Actor, users};
use sea_orm::{EntityTrait, PaginatorTrait};
use std::sync::Arc;

/// A cookie jar of one cookie, the way a browser would keep the session.
pub struct Browser<'a> {
    app: &'a TestApp,
    /// Cookies by name, as a browser keeps them.
    cookies: std::collections::BTreeMap<String, String>,
    /// The `Accept-Language` it sends, if any.
    language: Option<&'static str>,
    /// The `Referer` of the next request, if any.
    pub referer: Option<String>,
}

pub struct Page {
    pub status: u16,
    pub location: Option<String>,
    pub body: String,
    pub headers: actix_web::http::header::HeaderMap,
}

impl<'a> Browser<'a> {
    pub fn new(app: &'a TestApp) -> Self {
        Self {
            app,
            cookies: Default::default(),
            language: None,
            referer: None,
        }
    }

    /// A browser whose `Accept-Language` is `accept`.
    pub fn speaking(app: &'a TestApp, accept: &'static str) -> Self {
        Self {
            language: Some(accept),
            ..Self::new(app)
        }
    }

    /// A browser that sends the `Cookie` header `cookie` (another's, replayed).
    pub fn with_cookie(app: &'a TestApp, cookie: Option<String>) -> Self {
        let mut browser = Self::new(app);
        for pair in cookie.iter().flat_map(|c| c.split("; ")) {
            let (name, value) = pair.split_once('=').unwrap();
            browser.cookies.insert(name.to_owned(), value.to_owned());
        }
        browser
    }

    /// The `Cookie` header this browser sends, if it holds any cookie.
    pub fn cookie(&self) -> Option<String> {
        (!self.cookies.is_empty()).then(|| {
            self.cookies
                .iter()
                .map(|(name, value)| format!("{name}={value}"))
                .collect::<Vec<_>>()
                .join("; ")
        })
    }

    async fn send(&mut self, request: awc::ClientRequest, form: Option<&[(&str, &str)]>) -> Page {
        let request = match self.cookie() {
            Some(cookie) => request.insert_header(("cookie", cookie)),
            None => request,
        };
        let request = match self.language {
            Some(accept) => request.insert_header(("accept-language", accept)),
            None => request,
        };
        let request = match self.referer.take() {
            Some(referer) => request.insert_header(("referer", referer)),
            None => request,
        };
        let mut response = match form {
            Some(form) => request.send_form(&form).await,
            None => request.send().await,
        }
        .expect("request sent");
        for value in response.headers().get_all("set-cookie") {
            let value = value.to_str().unwrap();
            let pair = value.split(';').next().unwrap();
            let (name, content) = pair.split_once('=').unwrap();
            match value.contains("Max-Age=0") {
                true => self.cookies.remove(name),
                false => self.cookies.insert(name.to_owned(), content.to_owned()),
            };
        }
        let body = response.body().limit(4 << 20).await.expect("body");
        Page {
            status: response.status().as_u16(),
            location: response
                .headers()
                .get("location")
                .map(|v| v.to_str().unwrap().to_owned()),
            body: String::from_utf8_lossy(&body).into_owned(),
            headers: response.headers().clone(),
        }
    }

    pub async fn get(&mut self, path: &str) -> Page {
        let request = self.app.client.get(self.app.url(path));
        self.send(request, None).await
    }

    pub async fn post(&mut self, path: &str, form: &[(&str, &str)]) -> Page {
        let request = self.app.client.post(self.app.url(path));
        self.send(request, Some(form)).await
    }

    pub async fn csrf(&mut self, path: &str) -> String {
        let page = self.get(path).await;
        csrf_in(&page.body)
    }

    pub async fn sign_in(&mut self, name: &str, password: &str) -> Page {
        let csrf = self.csrf("/admin/login").await;
        self.post(
            "/admin/login",
            &[("csrf", &csrf), ("username", name), ("password", password)],
        )
        .await
    }
}

pub fn csrf_in(body: &str) -> String {
    let start = body.find("name=\"csrf\" value=\"").expect("a CSRF field") + 19;
    body[start..start + 64].to_owned()
}

pub async fn add_user(app: &TestApp, name: &str, password: &str, role: Role) {
    users::add(
        &app.core.db,
        &Username::parse(name).unwrap(),
        &Password::parse(password).unwrap(),
        role,
        &Actor::System,
    )
    .await
    .unwrap();
}

pub async fn signed_in(app: &TestApp) -> Browser<'_> {
    add_user(app, "olivia", "operator-pass", Role::Operator).await;
    let mut browser = Browser::new(app);
    let page = browser.sign_in("olivia", "operator-pass").await;
    assert_eq!(
        (page.status, page.location.as_deref()),
        (303, Some("/admin/links"))
    );
    browser
}

#[actix_web::test]
async fn signed_out_visitors_are_sent_to_sign_in() {
    let app = spawn_app().await;
    let mut browser = Browser::new(&app);
    for path in [
        "/admin/links",
        "/admin/links/new",
        "/admin/links/import",
        "/admin/links/export.csv",
        "/admin/links/abc/edit",
        "/admin/domains",
        "/admin/users",
        "/admin/audit",
    ] {
        let page = browser.get(path).await;
        // Sign-in leads back to the page asked for (the links list is where it goes anyway).
        let expected = match path {
            "/admin/links" => "/admin/login".to_owned(),
            _ => format!(
                "/admin/login?next={}",
                url::form_urlencoded::byte_serialize(path.as_bytes()).collect::<String>()
            ),
        };
        assert_eq!(
            (page.status, page.location.as_deref()),
            (303, Some(expected.as_str())),
            "{path}"
        );
    }
    let page = browser
        .post("/admin/links", &[("url", "https://example.com/")])
        .await;
    assert_eq!(page.status, 303);
    let login = browser.get("/admin/login").await;
    assert_eq!(login.status, 200);
    assert!(login.body.contains("Sign in to inklink"));
}

#[actix_web::test]
async fn signing_in_opens_the_links_and_signing_out_ends_the_session() {
    let app = spawn_app().await;
    let mut browser = signed_in(&app).await;
    let page = browser.get("/admin/links").await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("olivia"));
    assert!(page.body.contains("No links yet"));
    let old_cookie = browser.cookie();
    let csrf = csrf_in(&page.body);
    let out = browser.post("/admin/logout", &[("csrf", &csrf)]).await;
    assert_eq!(
        (out.status, out.location.as_deref()),
        (303, Some("/admin/login"))
    );
    // The cookie from before sign-out opens nothing now, though it has not expired.
    let mut replay = Browser::with_cookie(&app, old_cookie);
    let page = replay.get("/admin/links").await;
    assert_eq!(
        (page.status, page.location.as_deref()),
        (303, Some("/admin/login"))
    );
}

#[actix_web::test]
async fn sign_in_renews_the_session_id() {
    let app = spawn_app().await;
    add_user(&app, "olivia", "operator-pass", Role::Operator).await;
    let mut browser = Browser::new(&app);
    let csrf = browser.csrf("/admin/login").await;
    let before = browser.cookie().expect("a pre-sign-in cookie");
    browser
        .post(
            "/admin/login",
            &[
                ("csrf", &csrf),
                ("username", "olivia"),
                ("password", "operator-pass"),
            ],
        )
        .await;
    assert_ne!(browser.cookie().unwrap(), before);
    // The planted pre-sign-in id does not carry the signed-in session.
    let mut attacker = Browser::with_cookie(&app, Some(before));
    assert_eq!(attacker.get("/admin/links").await.status, 303);
}

#[actix_web::test]
async fn wrong_passwords_unknown_users_and_disabled_accounts_get_one_answer() {
    let app = spawn_app().await;
    add_user(&app, "olivia", "operator-pass", Role::Operator).await;
    let mut browser = Browser::new(&app);
    let wrong = browser.sign_in("olivia", "not-her-password").await;
    let unknown = browser.sign_in("nobody", "whatever-pass").await;
    for page in [&wrong, &unknown] {
        assert_eq!(page.status, 401);
        assert!(page.body.contains("wrong user name or password"));
    }
    assert!(
        wrong.body.contains("value=\"olivia\""),
        "the user name is kept"
    );
    assert_eq!(browser.get("/admin/links").await.status, 303);
}

#[actix_web::test]
async fn repeated_failures_are_throttled_per_account() {
    let app = spawn_app().await;
    add_user(&app, "olivia", "operator-pass", Role::Operator).await;
    add_user(&app, "oscar", "operator-pass", Role::Operator).await;
    let mut browser = Browser::new(&app);
    for _ in 0..5 {
        assert_eq!(browser.sign_in("olivia", "guess-guess").await.status, 401);
    }
    let blocked = browser.sign_in("olivia", "operator-pass").await;
    assert_eq!(blocked.status, 429);
    assert!(
        blocked.body.contains("too many failed sign-ins"),
        "{}",
        blocked.body
    );
    // Another account from the same address is not locked out by these.
    let mut other = Browser::new(&app);
    assert_eq!(other.sign_in("oscar", "operator-pass").await.status, 303);
}

#[actix_web::test]
async fn forms_without_the_session_csrf_token_are_refused_and_change_nothing() {
    let app = spawn_app().await;
    add_user(&app, "olivia", "operator-pass", Role::Operator).await;
    let mut browser = Browser::new(&app);
    browser.get("/admin/login").await;
    let forged = browser
        .post(
            "/admin/login",
            &[
                ("csrf", "0"),
                ("username", "olivia"),
                ("password", "operator-pass"),
            ],
        )
        .await;
    assert_eq!(forged.status, 403);
    assert_eq!(browser.get("/admin/links").await.status, 303);

    let mut browser = Browser::new(&app);
    assert_eq!(browser.sign_in("olivia", "operator-pass").await.status, 303);
    let page = browser
        .post("/admin/links", &[("url", "https://example.com/forged")])
        .await;
    assert_eq!(page.status, 403);
    assert!(page.body.contains("did not come from this site"));
    assert_eq!(
        url_map::Entity::find().count(&app.core.db).await.unwrap(),
        0
    );
    let code = create_link(&app, "https://example.com/keep")
        .await
        .link
        .compression_code;
    let page = browser
        .post(
            &format!("/admin/links/{code}/disable"),
            &[("csrf", "wrong")],
        )
        .await;
    assert_eq!(page.status, 403);
    assert_eq!(app.fetch(&format!("/{code}")).await.0, 302);
}

#[actix_web::test]
async fn a_link_is_created_through_the_form_and_bad_input_is_kept_with_its_error() {
    let app = spawn_app().await;
    let mut browser = signed_in(&app).await;
    let form = browser.get("/admin/links/new").await;
    assert_eq!(form.status, 200);
    let default_host = format!("localhost:{}", app.port);
    assert!(
        form.body
            .contains(&format!("value=\"{default_host}\" selected")),
        "default domain preselected"
    );
    let csrf = csrf_in(&form.body);

    let bad = browser
        .post(
            "/admin/links",
            &[
                ("csrf", &csrf),
                ("url", "javascript:alert('x')"),
                ("code", "ok-code"),
                ("domain", &default_host),
            ],
        )
        .await;
    assert_eq!(bad.status, 422);
    assert!(bad.body.contains("only http and https"), "{}", bad.body);
    assert!(
        bad.body
            .contains("value=\"javascript:alert(&#x27;x&#x27;)\"")
            || bad.body.contains("value=\"javascript:alert(&#39;x&#39;)\""),
        "input kept, escaped"
    );
    assert!(bad.body.contains("value=\"ok-code\""));

    let created = browser
        .post(
            "/admin/links",
            &[
                ("csrf", &csrf),
                ("url", "https://example.com/spring?x=1"),
                ("code", "spring"),
                ("domain", &default_host),
                ("description", "Spring <sale>"),
                ("expires", "2099-12-31T23:59"),
                ("redirect_status", "307"),
            ],
        )
        .await;
    assert_eq!(
        (created.status, created.location.as_deref()),
        (303, Some("/admin/links")),
        "{}",
        created.body
    );
    let list = browser.get("/admin/links").await;
    assert!(
        list.body
            .contains(&format!("Created http://{default_host}/spring")),
        "flash shown"
    );
    assert!(!list.body.contains("<sale>"), "description escaped");
    assert!(
        list.body.contains("Spring &#60;sale&#62;") || list.body.contains("Spring &lt;sale&gt;")
    );
    let again = browser.get("/admin/links").await;
    assert!(!again.body.contains("Created http://"), "flash shown once");
    let response = app.get("/spring").await;
    assert_eq!(response.status().as_u16(), 307);
    assert_eq!(
        response.headers().get("location").unwrap(),
        "https://example.com/spring?x=1"
    );

    let taken = browser
        .post(
            "/admin/links",
            &[
                ("csrf", &csrf),
                ("url", "https://example.com/other"),
                ("code", "spring"),
            ],
        )
        .await;
    assert_eq!(taken.status, 422);
    assert!(taken.body.contains("already taken"));
    let past = browser
        .post(
            "/admin/links",
            &[
                ("csrf", &csrf),
                ("url", "https://example.com/other"),
                ("expires", "2001-01-01T00:00"),
            ],
        )
        .await;
    assert!(past.body.contains("in the past"));
    let garbled = browser
        .post(
            "/admin/links",
            &[
                ("csrf", &csrf),
                ("url", "https://example.com/other"),
                ("expires", "soon"),
                ("redirect_status", "200"),
            ],
        )
        .await;
    assert!(
        garbled.body.contains("2026-12-31T23:59") && garbled.body.contains("301, 302, 307 or 308")
    );
}

#[actix_web::test]
async fn disabling_from_the_list_takes_effect_at_once() {
    let app = spawn_app().await;
    // An admin: operators change only their own links, and this one was made by the CLI.
    let mut browser = signed_in_admin(&app).await;
    let code = create_link(&app, "https://example.com/now")
        .await
        .link
        .compression_code;
    let path = format!("/{code}");
    assert_eq!(app.fetch(&path).await.0, 302);
    let csrf = browser.csrf("/admin/links").await;
    let page = browser
        .post(&format!("/admin/links/{code}/disable"), &[("csrf", &csrf)])
        .await;
    assert_eq!(page.status, 303);
    assert_eq!(app.fetch(&path).await.0, 410, "no wait for the cache");
    let list = browser.get("/admin/links?status=disabled").await;
    assert!(list.body.contains(&format!("Disabled {code}")));
    assert!(list.body.contains(code.as_str()));
    browser
        .post(&format!("/admin/links/{code}/enable"), &[("csrf", &csrf)])
        .await;
    assert_eq!(app.fetch(&path).await.0, 302);
    let missing = browser
        .post("/admin/links/nope/disable", &[("csrf", &csrf)])
        .await;
    assert_eq!(missing.status, 404);
}

#[actix_web::test]
async fn the_list_searches_filters_and_pages() {
    let app = spawn_app().await;
    let mut browser = signed_in(&app).await;
    for n in 0..55 {
        create_link(&app, &format!("https://example.com/item/{n}")).await;
    }
    let first = browser.get("/admin/links").await;
    assert_eq!(first.body.matches("<tr>").count(), 51, "header + 50 rows");
    assert!(first.body.contains("/item/54") && !first.body.contains("/item/4\""));
    let start = first.body.find("before=").expect("a next-page link") + 7;
    let before: String = first.body[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let second = browser.get(&format!("/admin/links?before={before}")).await;
    assert_eq!(second.body.matches("<tr>").count(), 6);
    assert!(second.body.contains("/item/0\""));
    assert!(!second.body.contains("before="));
    let found = browser.get("/admin/links?q=item/42").await;
    assert_eq!(found.body.matches("<tr>").count(), 2);
    let none = browser.get("/admin/links?q=nothing-like-this").await;
    assert!(none.body.contains("No link matches"));
    let disabled = browser.get("/admin/links?status=disabled").await;
    assert!(disabled.body.contains("No link matches"));
}

#[actix_web::test]
async fn admin_pages_carry_security_headers_and_a_strict_cookie() {
    let app = spawn_app().await;
    let mut browser = Browser::new(&app);
    let page = browser.get("/admin/login").await;
    let header = |name: &str| {
        page.headers
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default()
    };
    assert!(header("content-security-policy").contains("script-src 'self'"));
    assert!(header("content-security-policy").contains("frame-ancestors 'none'"));
    assert!(!page.body.contains("<script>"), "no inline script");
    assert_eq!(header("x-frame-options"), "DENY");
    assert_eq!(header("referrer-policy"), "same-origin");
    assert_eq!(header("x-content-type-options"), "nosniff");
    let cookie = header("set-cookie");
    assert!(
        cookie.contains("HttpOnly")
            && cookie.contains("SameSite=Lax")
            && cookie.contains("Path=/admin"),
        "{cookie}"
    );
    assert!(!cookie.contains("Secure"));
    let secure_app = crate::support::spawn_app_with(&["--secure-cookie", "true"]).await;
    let mut secure = Browser::new(&secure_app);
    let page = secure.get("/admin/login").await;
    assert!(
        page.headers
            .get("set-cookie")
            .unwrap()
            .to_str()
            .unwrap()
            .contains("Secure")
    );
}

#[actix_web::test]
async fn a_session_works_on_every_instance_and_survives_a_restart() {
    let db = Arc::new(TestDb::create().await);
    let first = spawn_on(db.clone(), &[]).await;
    let mut browser = signed_in(&first).await;
    let cookie = browser.cookie();
    assert_eq!(browser.get("/admin/links").await.status, 200);
    let second = spawn_on(db.clone(), &[]).await;
    let mut elsewhere = Browser::with_cookie(&second, cookie);
    assert_eq!(elsewhere.get("/admin/links").await.status, 200);
    assert!(
        admin_sessions::Entity::find()
            .count(&second.core.db)
            .await
            .unwrap()
            >= 1
    );
}

pub async fn signed_in_admin(app: &TestApp) -> Browser<'_> {
    add_user(app, "ada", "admin-password", Role::Admin).await;
    let mut browser = Browser::new(app);
    assert_eq!(browser.sign_in("ada", "admin-password").await.status, 303);
    browser
}

#[actix_web::test]
async fn operators_are_refused_on_admin_pages() {
    let app = spawn_app().await;
    let mut browser = signed_in(&app).await;
    let links = browser.get("/admin/links").await;
    assert!(
        !links.body.contains("/admin/domains"),
        "no link to a page they cannot open"
    );
    let csrf = csrf_in(&links.body);
    assert_eq!(browser.get("/admin/domains").await.status, 403);
    let page = browser
        .post(
            "/admin/domains",
            &[("csrf", &csrf), ("host", "sneaky.example")],
        )
        .await;
    assert_eq!(page.status, 403);
    let hosts: Vec<_> = inklink::services::domains::list(&app.core.db)
        .await
        .unwrap()
        .into_iter()
        .map(|d| d.host)
        .collect();
    assert!(!hosts.iter().any(|h| h == "sneaky.example"));
    let mut admin = signed_in_admin(&app).await;
    let page = admin.get("/admin/domains").await;
    assert_eq!(page.status, 200);
    assert!(
        page.body
            .contains(&format!("http://localhost:{}/", app.port))
    );
}

#[actix_web::test]
async fn a_blocked_domain_is_rotated_and_its_links_move_while_the_old_host_still_redirects() {
    let app = spawn_app().await;
    let mut browser = signed_in_admin(&app).await;
    let old_host = format!("localhost:{}", app.port);
    let csrf = browser.csrf("/admin/domains").await;
    let bad = browser
        .post(
            "/admin/domains",
            &[("csrf", &csrf), ("host", "https://x.example")],
        )
        .await;
    assert_eq!(bad.status, 422);
    assert!(
        bad.body.contains("without a scheme") && bad.body.contains("value=\"https://x.example\"")
    );
    let added = browser
        .post(
            "/admin/domains",
            &[("csrf", &csrf), ("host", "New.Example"), ("http", "yes")],
        )
        .await;
    assert_eq!(added.status, 303);
    let again = browser
        .post(
            "/admin/domains",
            &[("csrf", &csrf), ("host", "new.example")],
        )
        .await;
    assert!(again.body.contains("already exists"));

    let code = create_link(&app, "https://example.com/campaign")
        .await
        .link
        .compression_code;
    let domains = inklink::services::domains::list(&app.core.db)
        .await
        .unwrap();
    let old = domains.iter().find(|d| d.host == old_host).unwrap().id;
    let new = domains.iter().find(|d| d.host == "new.example").unwrap().id;
    let page = browser.get("/admin/domains").await;
    assert!(
        page.body.contains("<td>1</td>"),
        "the old domain carries one link"
    );

    let unconfirmed = browser
        .post(
            &format!("/admin/domains/{old}/rotate"),
            &[("csrf", &csrf), ("replacement", &new.to_string())],
        )
        .await;
    // Nothing happens before a confirmation that says what will.
    assert_eq!(unconfirmed.status, 200);
    assert!(
        unconfirmed.body.contains("1 link moves to new.example"),
        "{}",
        unconfirmed.body
    );
    assert!(unconfirmed.body.contains(r#"name="confirm" value="yes""#));
    let none_chosen = browser
        .post(
            &format!("/admin/domains/{old}/rotate"),
            &[("csrf", &csrf), ("replacement", "")],
        )
        .await;
    assert_eq!(none_chosen.status, 422);
    assert!(
        none_chosen
            .body
            .contains("choose the domain that takes over")
    );
    let page = browser.get("/admin/domains").await;
    assert!(
        page.body
            .contains(r#"<option value="" selected>Choose a domain…</option>"#),
        "no replacement is preselected"
    );
    let itself = browser
        .post(
            &format!("/admin/domains/{old}/rotate"),
            &[
                ("csrf", &csrf),
                ("replacement", &old.to_string()),
                ("confirm", "yes"),
            ],
        )
        .await;
    assert!(itself.body.contains("cannot replace itself"));
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

    let list = browser.get("/admin/links").await;
    assert!(
        list.body.contains(&format!("http://new.example/{code}")),
        "links are shown on the new domain"
    );
    assert!(!list.body.contains(&format!("http://{old_host}/{code}")));
    let domains_page = browser.get("/admin/domains").await;
    assert!(domains_page.body.contains("links shown on new.example"));
    // Messages already sent with the old host keep working.
    let response = app
        .client
        .get(app.url(&format!("/{code}")))
        .insert_header(("host", old_host.as_str()))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 302);
    // New links go on the new default; the blocked one takes no more.
    let fresh = create_link(&app, "https://example.com/next").await;
    assert_eq!(fresh.domain.host, "new.example");
    let form = browser.get("/admin/links/new").await;
    assert!(!form.body.contains(&format!("value=\"{old_host}\"")));
    let refused = browser
        .post(
            "/admin/links",
            &[
                ("csrf", &csrf),
                ("url", "https://example.com/x"),
                ("domain", &old_host),
            ],
        )
        .await;
    assert!(refused.body.contains("is disabled"), "{}", refused.body);
    // The default cannot be disabled.
    let page = browser
        .post(
            &format!("/admin/domains/{new}/disable"),
            &[("csrf", &csrf), ("confirm", "yes")],
        )
        .await;
    assert!(page.body.contains("is the default domain"));
}

fn field_value(body: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let start = body
        .find(&marker)
        .unwrap_or_else(|| panic!("no field {name}"))
        + marker.len();
    body[start..].split('"').next().unwrap().to_owned()
}

#[actix_web::test]
async fn a_link_is_edited_and_a_stale_edit_is_refused() {
    let app = spawn_app().await;
    // An admin: operators change only their own links, and this one was made by the CLI.
    let mut browser = signed_in_admin(&app).await;
    let code = create_link(&app, "https://example.com/before")
        .await
        .link
        .compression_code;
    let path = format!("/admin/links/{code}/edit");
    let form = browser.get(&path).await;
    assert_eq!(form.status, 200);
    assert!(form.body.contains("value=\"https://example.com/before\""));
    assert!(form.body.contains(&format!(
        "data-copy=\"http://localhost:{}/{code}\"",
        app.port
    )));
    let csrf = csrf_in(&form.body);
    let version = field_value(&form.body, "version");

    // Someone else saves first…
    let mut colleague = Browser::new(&app);
    add_user(&app, "carl", "carl-password", Role::Admin).await;
    colleague.sign_in("carl", "carl-password").await;
    let their_form = colleague.get(&path).await;
    let saved = colleague
        .post(
            &path,
            &[
                ("csrf", &csrf_in(&their_form.body)),
                ("version", &version),
                ("url", "https://example.com/theirs"),
            ],
        )
        .await;
    assert_eq!(saved.status, 303);
    // …so this edit, made on the old version, is refused and keeps what was typed.
    let stale = browser
        .post(
            &path,
            &[
                ("csrf", &csrf),
                ("version", &version),
                ("url", "https://example.com/mine"),
            ],
        )
        .await;
    assert_eq!(stale.status, 422);
    assert!(stale.body.contains("changed by someone else"));
    assert!(stale.body.contains("value=\"https://example.com/mine\""));
    assert_eq!(
        app.fetch(&format!("/{code}")).await.1.as_deref(),
        Some("https://example.com/theirs")
    );

    let fresh = browser.get(&path).await;
    let version = field_value(&fresh.body, "version");
    let bad = browser
        .post(
            &path,
            &[
                ("csrf", &csrf),
                ("version", &version),
                ("url", "ftp://example.com/"),
            ],
        )
        .await;
    assert_eq!(bad.status, 422);
    assert!(bad.body.contains("only http and https"));
    let ok = browser
        .post(
            &path,
            &[
                ("csrf", &csrf),
                ("version", &version),
                ("url", "https://example.com/after"),
                ("description", "edited"),
                ("redirect_status", "301"),
            ],
        )
        .await;
    assert_eq!(ok.status, 303);
    // The change shows at once on this instance.
    let response = app.get(&format!("/{code}")).await;
    assert_eq!(response.status().as_u16(), 301);
    assert_eq!(
        response.headers().get("location").unwrap(),
        "https://example.com/after"
    );
    let no_csrf = browser
        .post(
            &path,
            &[("version", "99"), ("url", "https://example.com/x")],
        )
        .await;
    assert_eq!(no_csrf.status, 403);
}

#[actix_web::test]
async fn a_deleted_link_leaves_the_list_answers_404_and_its_code_stays_taken() {
    let app = spawn_app().await;
    // An admin: operators change only their own links, and this one was made by the CLI.
    let mut browser = signed_in_admin(&app).await;
    let code = create_link(&app, "https://example.com/gone")
        .await
        .link
        .compression_code;
    let confirm = browser.get(&format!("/admin/links/{code}/delete")).await;
    assert_eq!(confirm.status, 200);
    assert!(confirm.body.contains("https://example.com/gone"));
    let csrf = csrf_in(&confirm.body);
    let deleted = browser
        .post(&format!("/admin/links/{code}/delete"), &[("csrf", &csrf)])
        .await;
    assert_eq!(deleted.status, 303);
    assert_eq!(app.fetch(&format!("/{code}")).await.0, 404);
    let list = browser.get("/admin/links").await;
    assert!(list.body.contains(&format!("Deleted {code}")));
    assert!(!list.body.contains(&format!("/{code}/edit")));
    assert!(!list.body.contains(&format!("href=\"/admin/links/{code}\"")));
    assert_eq!(
        browser
            .get(&format!("/admin/links/{code}/edit"))
            .await
            .status,
        404
    );
    let form = browser.get("/admin/links/new").await;
    let reuse = browser
        .post(
            "/admin/links",
            &[
                ("csrf", &csrf_in(&form.body)),
                ("url", "https://example.com/new"),
                ("code", &code),
            ],
        )
        .await;
    assert!(reuse.body.contains("already taken"));
}

#[actix_web::test]
async fn qr_codes_encode_the_short_url_as_svg_and_png() {
    let app = spawn_app().await;
    let mut browser = signed_in(&app).await;
    let code = create_link(&app, "https://example.com/qr")
        .await
        .link
        .compression_code;
    let svg = browser.get(&format!("/admin/links/{code}/qr.svg")).await;
    assert_eq!(svg.status, 200);
    assert_eq!(svg.headers.get("content-type").unwrap(), "image/svg+xml");
    assert!(svg.body.contains("<svg") && svg.body.contains("<path"));
    let request = app
        .client
        .get(app.url(&format!("/admin/links/{code}/qr.png?scale=4")));
    let request = request.insert_header(("cookie", browser.cookie().unwrap()));
    let mut png = request.send().await.unwrap();
    assert_eq!(png.status().as_u16(), 200);
    assert!(
        png.headers()
            .get("content-disposition")
            .unwrap()
            .to_str()
            .unwrap()
            .contains(&format!("inklink-{code}.png"))
    );
    let bytes = png.body().await.unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes.to_vec()));
    let reader = decoder.read_info().unwrap();
    let (width, height) = (reader.info().width, reader.info().height);
    assert_eq!(width, height);
    assert_eq!(width % 4, 0, "whole modules of 4 pixels");
    assert!(
        width >= (21 + 8) * 4,
        "at least a version-1 code with its quiet zone"
    );
    let mut signed_out = Browser::new(&app);
    assert_eq!(
        signed_out
            .get(&format!("/admin/links/{code}/qr.svg"))
            .await
            .status,
        303
    );
}

/// A multipart body as a browser sends a file upload.
fn multipart(csrf: &str, file: &[u8]) -> (String, Vec<u8>) {
    let boundary = "----inklinktestboundary";
    let mut body = Vec::new();
    body.extend_from_slice(
        format!("--{boundary}\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n{csrf}\r\n")
            .as_bytes(),
    );
    body.extend_from_slice(
        format!("--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"links.csv\"\r\nContent-Type: text/csv\r\n\r\n").as_bytes(),
    );
    body.extend_from_slice(file);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

async fn upload(browser: &mut Browser<'_>, csrf: &str, file: &[u8]) -> Page {
    let (content_type, body) = multipart(csrf, file);
    let request = browser
        .app
        .client
        .post(browser.app.url("/admin/links/import"))
        .insert_header(("content-type", content_type))
        .insert_header(("cookie", browser.cookie().unwrap()));
    let mut response = request.send_body(body).await.unwrap();
    let body = response.body().limit(16 << 20).await.unwrap();
    Page {
        status: response.status().as_u16(),
        location: None,
        body: String::from_utf8_lossy(&body).into_owned(),
        headers: response.headers().clone(),
    }
}

fn results_of(page: &Page) -> String {
    use base64::Engine;
    let start = page.body.find("base64,").expect("a results download") + 7;
    let encoded: String = page.body[start..]
        .chars()
        .take_while(|c| *c != '"')
        .collect();
    String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .unwrap(),
    )
    .unwrap()
}

#[actix_web::test]
async fn a_1000_row_csv_imports_good_rows_and_reports_bad_ones() {
    let app = spawn_app().await;
    let mut browser = signed_in(&app).await;
    let csrf = browser.csrf("/admin/links/import").await;
    let mut csv = String::from("\u{feff}URL,code,description,expires_at\n");
    for n in 0..1000 {
        match n {
            7 => csv.push_str("javascript:alert(1),,bad scheme,\n"),
            8 => csv.push_str("https://example.com/dup,taken-code,first,\n"),
            9 => csv.push_str("https://example.com/dup2,taken-code,second,\n"),
            10 => csv.push_str("https://example.com/when,,,next tuesday\n"),
            11 => csv.push_str(
                "\"https://example.com/quoted,comma\",,\"描述, with comma\",2099-12-31\n",
            ),
            _ => csv.push_str(&format!("https://example.com/bulk/{n},,row {n},\n")),
        }
    }
    let page = upload(&mut browser, &csrf, csv.as_bytes()).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body
            .contains("Created 997 links; 3 rows had a problem"),
        "{}",
        &page.body[..page.body.len().min(3000)]
    );
    let results = results_of(&page);
    let lines: Vec<&str> = results.lines().collect();
    // The results file opens in Excel as UTF-8 (byte-order mark).
    assert_eq!(
        lines[0],
        "\u{feff}line,url,code,description,expires_at,domain,length,tags,short_url,error"
    );
    assert_eq!(lines.len(), 1001);
    assert!(
        lines[8].starts_with("9,javascript:alert(1)") && lines[8].contains("only http and https"),
        "{}",
        lines[8]
    );
    assert!(lines[10].contains("already taken"));
    assert!(lines[11].contains("not a date"));
    assert!(lines[12].contains("描述, with comma"));
    let first_short = lines[1].split(',').nth(8).unwrap();
    assert!(first_short.starts_with(&format!("http://localhost:{}/", app.port)));
    let code = first_short.rsplit('/').next().unwrap();
    assert_eq!(
        app.fetch(&format!("/{code}")).await.1.as_deref(),
        Some("https://example.com/bulk/0")
    );
    assert_eq!(
        url_map::Entity::find().count(&app.core.db).await.unwrap(),
        997
    );

    let export = browser.get("/admin/links/export.csv?q=bulk").await;
    assert_eq!(export.status, 200);
    assert!(
        export
            .headers
            .get("content-disposition")
            .unwrap()
            .to_str()
            .unwrap()
            .contains("attachment")
    );
    assert_eq!(export.body.lines().count(), 1 + 995);
    assert!(
        export
            .body
            // A byte-order mark first: Excel on Chinese Windows reads UTF-8 by it.
            .starts_with(
                "\u{feff}code,short_url,url,description,status,expires_at,created_at,creator"
            )
    );
}

#[actix_web::test]
async fn import_refuses_unusable_files_with_a_reason() {
    let app = spawn_app().await;
    let mut browser = signed_in(&app).await;
    let csrf = browser.csrf("/admin/links/import").await;
    let cases: [(&[u8], &str); 4] = [
        (b"", "the file is empty"),
        (
            b"link,name\nhttps://example.com/,x\n",
            "one of them must be",
        ),
        (b"url\nhttps://example.com/\xff\n", "not UTF-8"),
        (b"url\n\n", "no rows below its header"),
    ];
    for (file, message) in cases {
        let page = upload(&mut browser, &csrf, file).await;
        assert!(page.status == 422 || page.status == 200, "{}", page.status);
        assert!(page.body.contains(message), "{message}: {}", page.body);
    }
    let too_many = format!("url\n{}", "https://example.com/\n".repeat(10_001));
    let page = upload(&mut browser, &csrf, too_many.as_bytes()).await;
    assert!(
        page.body.contains("10001 rows; at most 10000"),
        "{}",
        page.body
    );
    let forged = upload(&mut browser, "wrong", b"url\nhttps://example.com/\n").await;
    assert_eq!(forged.status, 403);
    assert_eq!(
        url_map::Entity::find().count(&app.core.db).await.unwrap(),
        0
    );
}

#[actix_web::test]
async fn exports_neutralise_spreadsheet_formulas() {
    let app = spawn_app().await;
    let mut browser = signed_in(&app).await;
    let target = inklink::services::links::parse_target(&app.core, "https://example.com/f")
        .await
        .unwrap();
    let new = inklink::services::links::NewLink {
        description: Some("=HYPERLINK(\"http://evil\")".into()),
        ..inklink::services::links::NewLink::to(target)
    };
    inklink::services::links::create(&app.core, new, &Actor::Cli)
        .await
        .unwrap();
    let export = browser.get("/admin/links/export.csv").await;
    assert!(export.body.contains("'=HYPERLINK"), "{}", export.body);
}

#[actix_web::test]
async fn admins_manage_users_and_nobody_locks_the_service_out() {
    let app = spawn_app().await;
    let mut admin = signed_in_admin(&app).await;
    let page = admin.get("/admin/users").await;
    assert_eq!(page.status, 200);
    let csrf = csrf_in(&page.body);
    let added = admin
        .post(
            "/admin/users",
            &[
                ("csrf", &csrf),
                ("name", "Bob"),
                ("password", "bob-password"),
                ("role", "operator"),
            ],
        )
        .await;
    assert_eq!(added.status, 303);
    let short = admin
        .post(
            "/admin/users",
            &[
                ("csrf", &csrf),
                ("name", "carol"),
                ("password", "short"),
                ("role", "operator"),
            ],
        )
        .await;
    assert_eq!(short.status, 422);
    assert!(short.body.contains("at least 8") && short.body.contains("value=\"carol\""));
    let again = admin
        .post(
            "/admin/users",
            &[
                ("csrf", &csrf),
                ("name", "bob"),
                ("password", "bob-password"),
                ("role", "admin"),
            ],
        )
        .await;
    assert!(again.body.contains("already exists"));

    let all = users::list(&app.core.db).await.unwrap();
    let bob = all.iter().find(|u| u.username == "bob").unwrap().id;
    let ada = all.iter().find(|u| u.username == "ada").unwrap().id;
    // Bob signs in, then is disabled: his open session stops working.
    let mut bob_browser = Browser::new(&app);
    assert_eq!(bob_browser.sign_in("bob", "bob-password").await.status, 303);
    assert_eq!(
        admin
            .post(
                &format!("/admin/users/{bob}/disable"),
                &[("csrf", &csrf), ("confirm", "yes")]
            )
            .await
            .status,
        303
    );
    assert_eq!(bob_browser.get("/admin/links").await.status, 303);
    assert_eq!(
        Browser::new(&app)
            .sign_in("bob", "bob-password")
            .await
            .status,
        401
    );
    admin
        .post(&format!("/admin/users/{bob}/enable"), &[("csrf", &csrf)])
        .await;
    admin
        .post(
            &format!("/admin/users/{bob}/password"),
            &[("csrf", &csrf), ("password", "new-bob-password")],
        )
        .await;
    assert_eq!(
        Browser::new(&app)
            .sign_in("bob", "new-bob-password")
            .await
            .status,
        303
    );
    assert_eq!(
        admin
            .post(
                &format!("/admin/users/{bob}/role"),
                &[("csrf", &csrf), ("role", "admin")]
            )
            .await
            .status,
        303
    );

    let myself = admin
        .post(
            &format!("/admin/users/{ada}/disable"),
            &[("csrf", &csrf), ("confirm", "yes")],
        )
        .await;
    assert!(myself.body.contains("your own account"), "{}", myself.body);
    // With Bob an admin, Ada may step down; Bob, now the last admin, may not be demoted.
    let mut bob_admin = Browser::new(&app);
    bob_admin.sign_in("bob", "new-bob-password").await;
    let bob_csrf = bob_admin.csrf("/admin/users").await;
    assert_eq!(
        bob_admin
            .post(
                &format!("/admin/users/{ada}/role"),
                &[("csrf", &bob_csrf), ("role", "operator")]
            )
            .await
            .status,
        303
    );
    let last = admin
        .post(
            &format!("/admin/users/{bob}/role"),
            &[("csrf", &csrf), ("role", "operator")],
        )
        .await;
    assert_eq!(last.status, 403, "Ada is an operator now");
    let last = bob_admin
        .post(
            &format!("/admin/users/{bob}/role"),
            &[("csrf", &bob_csrf), ("role", "operator")],
        )
        .await;
    assert!(last.body.contains("your own admin role"), "{}", last.body);
}

#[actix_web::test]
async fn the_audit_log_records_changes_and_sign_ins_and_filters_them() {
    let app = spawn_app().await;
    let mut admin = signed_in_admin(&app).await;
    let code = create_link(&app, "https://example.com/audited")
        .await
        .link
        .compression_code;
    let csrf = admin.csrf("/admin/links").await;
    admin
        .post(&format!("/admin/links/{code}/disable"), &[("csrf", &csrf)])
        .await;
    let page = admin.get("/admin/audit").await;
    assert_eq!(page.status, 200);
    // Actions in words (the identifiers are the filter's values).
    for needle in [
        "<td>Signed in</td>",
        "<td>Link created</td>",
        "<td>Link disabled</td>",
        &code,
    ] {
        assert!(page.body.contains(needle), "{needle} missing");
    }
    let filtered = admin.get("/admin/audit?action=link.disable").await;
    assert!(
        filtered.body.contains("<td>Link disabled</td>")
            && !filtered.body.contains("<td>Signed in</td>")
            && filtered
                .body
                .contains(r#"<option value="link.disable" selected>"#)
    );
    let by_actor = admin.get("/admin/audit?actor=nobody").await;
    assert!(by_actor.body.contains("Nothing recorded matches"));
    let mut operator = signed_in(&app).await;
    assert_eq!(operator.get("/admin/audit").await.status, 403);
    assert_eq!(operator.get("/admin/users").await.status, 403);
}

#[actix_web::test]
async fn an_idle_session_ends_and_too_many_failures_from_one_address_are_throttled() {
    let app = spawn_app().await;
    let mut browser = signed_in(&app).await;
    // Two idle hours pass.
    admin_sessions::Entity::update_many()
        .col_expr(
            admin_sessions::Column::ExpiresAt,
            sea_orm::sea_query::Expr::value(inklink::db::now() - chrono::TimeDelta::minutes(1)),
        )
        .exec(&app.core.db)
        .await
        .unwrap();
    assert_eq!(browser.get("/admin/links").await.status, 303);

    let mut attacker = Browser::new(&app);
    for n in 0..20 {
        attacker
            .sign_in(&format!("guess{n}"), "whatever-pass")
            .await;
    }
    let blocked = Browser::new(&app).sign_in("olivia", "operator-pass").await;
    assert_eq!(
        blocked.status, 429,
        "the address is throttled, whichever account"
    );
}

#[actix_web::test]
async fn dates_are_shown_and_typed_in_the_configured_time_zone() {
    let app = crate::support::spawn_app_with(&["--timezone", "Asia/Shanghai"]).await;
    let mut browser = signed_in(&app).await;
    let form = browser.get("/admin/links/new").await;
    assert!(form.body.contains("(optional, Asia/Shanghai)"));
    let csrf = csrf_in(&form.body);
    // 2099-01-01 08:00 in Shanghai is midnight UTC.
    let created = browser
        .post(
            "/admin/links",
            &[
                ("csrf", &csrf),
                ("url", "https://example.com/tz"),
                ("code", "tz-link"),
                ("expires", "2099-01-01T08:00"),
            ],
        )
        .await;
    assert_eq!(created.status, 303);
    let code = inklink::rules::ShortCode::parse("tz-link").unwrap();
    let link = inklink::services::links::find_by_code(&app.core.db, &code)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(link.expires_at.unwrap().to_string(), "2099-01-01 00:00:00");
    let list = browser.get("/admin/links").await;
    assert!(
        list.body.contains("expires 2099-01-01 08:00 UTC+8"),
        "{}",
        list.body
    );
    let edit = browser.get("/admin/links/tz-link/edit").await;
    assert!(edit.body.contains("value=\"2099-01-01T08:00\""));
    // CSV expiries without an offset are read in the same zone.
    let when = inklink::rules::time::parse(
        "2099-01-01 08:00",
        app.core.settings.timezone,
        inklink::rules::time::DateAlone::Ends,
    )
    .unwrap();
    assert_eq!(when.to_rfc3339(), "2099-01-01T00:00:00+00:00");

    let ny = crate::support::spawn_app_with(&["--timezone", "America/New_York"]).await;
    let mut browser = signed_in(&ny).await;
    let csrf = browser.csrf("/admin/links/new").await;
    // 02:30 on the morning US clocks spring forward does not exist.
    let skipped = browser
        .post(
            "/admin/links",
            &[
                ("csrf", &csrf),
                ("url", "https://example.com/dst"),
                ("expires", "2099-03-08T02:30"),
            ],
        )
        .await;
    assert_eq!(skipped.status, 422);
    assert!(
        skipped.body.contains("does not exist in America/New_York"),
        "{}",
        skipped.body
    );
}

#[actix_web::test]
async fn the_list_filters_by_domain_creator_and_expiry_and_sorts_by_expiry() {
    let app = spawn_app().await;
    let mut browser = signed_in(&app).await;
    let other = inklink::services::domains::add(
        &app.core.db,
        &inklink::rules::DomainHost::parse("s.example.cn").unwrap(),
        inklink::rules::Protocol::Https,
        false,
        &Actor::Cli,
    )
    .await
    .unwrap();
    let make = |url: &'static str,
                domain: Option<&'static str>,
                in_secs: Option<i64>,
                by: &'static str| {
        let app = &app;
        async move {
            let target = inklink::services::links::parse_target(&app.core, url)
                .await
                .unwrap();
            let new = inklink::services::links::NewLink {
                domain: domain.map(|d| inklink::rules::DomainHost::parse(d).unwrap()),
                expires_at: in_secs.map(|s| chrono::Utc::now() + chrono::TimeDelta::seconds(s)),
                ..inklink::services::links::NewLink::to(target)
            };
            inklink::services::links::create(
                &app.core,
                new,
                &Actor::User(inklink::services::Principal {
                    id: 9,
                    name: by.into(),
                    role: inklink::rules::Role::Operator,
                }),
            )
            .await
            .unwrap();
        }
    };
    make("https://example.com/late", None, Some(86_400 * 30), "ann").await;
    make("https://example.com/soon", None, Some(86_400), "ann").await;
    make(
        "https://example.com/never",
        Some("s.example.cn"),
        None,
        "ben",
    )
    .await;
    make("https://example.com/brief", None, Some(1), "ben").await;
    actix_web::rt::time::sleep(std::time::Duration::from_millis(1100)).await;

    let on_cn = browser
        .get(&format!("/admin/links?domain={}", other.id))
        .await;
    assert!(on_cn.body.contains("example.com/never") && !on_cn.body.contains("example.com/soon"));
    let by_ben = browser.get("/admin/links?creator=ben").await;
    assert!(by_ben.body.contains("example.com/never") && by_ben.body.contains("example.com/brief"));
    assert!(!by_ben.body.contains("example.com/late"));
    let expired = browser.get("/admin/links?status=expired").await;
    assert_eq!(
        expired.body.matches("<tr>").count(),
        2,
        "header + the one expired link"
    );
    assert!(expired.body.contains("example.com/brief"));
    let by_expiry = browser.get("/admin/links?sort=expiry").await;
    let (brief, soon, late) = (
        by_expiry.body.find("example.com/brief").unwrap(),
        by_expiry.body.find("example.com/soon").unwrap(),
        by_expiry.body.find("example.com/late").unwrap(),
    );
    assert!(brief < soon && soon < late, "soonest expiry first");
    assert!(
        !by_expiry.body.contains("example.com/never"),
        "links without expiry are not in that order"
    );
    let export = browser.get("/admin/links/export.csv?creator=ann").await;
    assert_eq!(export.body.lines().count(), 3);
    let bad = browser
        .get("/admin/links?domain=abc&before=xyz&page=-3&sort=weird")
        .await;
    assert_eq!(
        bad.status, 200,
        "nonsense filters are ignored, not a 400 or 500"
    );
}

#[actix_web::test]
async fn behind_a_trusted_proxy_throttling_counts_real_clients_and_https_secures_the_cookie() {
    let app = crate::support::spawn_app_with(&["--trusted-proxies", "127.0.0.1"]).await;
    add_user(&app, "olivia", "operator-pass", Role::Operator).await;
    async fn sign_in_from(app: &TestApp, client_ip: &str, name: &str, password: &str) -> u16 {
        let mut browser = Browser::new(app);
        let login = browser.get("/admin/login").await;
        let csrf = csrf_in(&login.body);
        let request = app
            .client
            .post(app.url("/admin/login"))
            .insert_header(("x-forwarded-for", client_ip))
            .insert_header(("cookie", browser.cookie().unwrap()));
        let form = [
            ("csrf", csrf.as_str()),
            ("username", name),
            ("password", password),
        ];
        request.send_form(&form).await.unwrap().status().as_u16()
    }
    for n in 0..20 {
        let guess = format!("guess{n}");
        assert_eq!(
            sign_in_from(&app, "203.0.113.5", &guess, "guess-guess").await,
            401
        );
    }
    // The address that failed is throttled, even for a good password…
    assert_eq!(
        sign_in_from(&app, "203.0.113.5", "olivia", "operator-pass").await,
        429
    );
    // …while another visitor behind the same proxy signs in.
    assert_eq!(
        sign_in_from(&app, "198.51.100.7", "olivia", "operator-pass").await,
        303
    );

    let over_https = app
        .client
        .get(app.url("/admin/login"))
        .insert_header(("x-forwarded-proto", "https"))
        .send()
        .await
        .unwrap();
    let cookie = over_https
        .headers()
        .get("set-cookie")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    assert!(cookie.contains("; Secure"), "{cookie}");
    // Without a trusted proxy the same header changes nothing.
    let direct = spawn_app().await;
    let response = direct
        .client
        .get(direct.url("/admin/login"))
        .insert_header(("x-forwarded-proto", "https"))
        .send()
        .await
        .unwrap();
    assert!(
        !response
            .headers()
            .get("set-cookie")
            .unwrap()
            .to_str()
            .unwrap()
            .contains("Secure")
    );
}

#[actix_web::test]
async fn malformed_admin_addresses_and_forms_get_the_error_page() {
    let app = spawn_app().await;
    let mut admin = signed_in_admin(&app).await;
    let csrf = admin.csrf("/admin/links").await;
    let path = admin
        .post("/admin/domains/abc/default", &[("csrf", &csrf)])
        .await;
    assert_eq!(path.status, 404);
    assert!(
        path.body.contains("there is nothing at this address"),
        "{}",
        path.body
    );
    let query = admin.get("/admin/audit?before=abc").await;
    assert_eq!(query.status, 400);
    assert!(
        query.body.contains("not valid") && query.body.contains("<html"),
        "{}",
        query.body
    );
    let request = app
        .client
        .post(app.url("/admin/links"))
        .insert_header(("cookie", admin.cookie().unwrap()))
        .insert_header(("content-type", "application/json"));
    let mut response = request.send_body("{}").await.unwrap();
    let status = response.status().as_u16();
    let body = String::from_utf8_lossy(&response.body().await.unwrap()).into_owned();
    assert_eq!(status, 400);
    assert!(body.contains("the form could not be read"), "{body}");
}

#[actix_web::test]
async fn admins_issue_api_keys_that_show_their_secret_once_and_can_be_revoked() {
    let app = spawn_app().await;
    let mut operator = signed_in(&app).await;
    assert_eq!(operator.get("/admin/keys").await.status, 403);
    assert!(
        !operator
            .get("/admin/links")
            .await
            .body
            .contains("/admin/keys")
    );
    assert_eq!(
        operator.get("/admin/api").await.status,
        200,
        "the API page is for everyone"
    );

    let mut admin = signed_in_admin(&app).await;
    let csrf = admin.csrf("/admin/keys").await;
    let page = admin
        .post(
            "/admin/keys",
            &[
                ("csrf", &csrf),
                ("name", "crm"),
                ("role", "operator"),
                ("expires", ""),
            ],
        )
        .await;
    assert_eq!(page.status, 200);
    assert_eq!(page.headers.get("cache-control").unwrap(), "no-store");
    let start = page
        .body
        .find("<code id=\"new-secret\">")
        .expect("the secret is shown")
        + 22;
    let secret = page.body[start..].split('<').next().unwrap().to_owned();
    assert!(secret.starts_with("ik_"), "{secret}");
    let listed = admin.get("/admin/keys").await;
    assert!(!listed.body.contains(&secret), "shown only once");
    assert!(
        listed.body.contains(&secret[..11]),
        "the prefix identifies it"
    );
    let stored = inklink::services::api_keys::list(&app.core.db)
        .await
        .unwrap();
    assert_eq!(stored.len(), 1);
    assert_ne!(stored[0].secret_sha256, secret, "only a digest is stored");

    let call = |key: String| {
        let request = app
            .client
            .get(app.url("/api/v1/domains"))
            .insert_header(("authorization", format!("Bearer {key}")));
        async move { request.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(call(secret.clone()).await, 200);
    let refused = admin
        .post(
            "/admin/keys",
            &[
                ("csrf", &csrf),
                ("name", "crm"),
                ("role", "operator"),
                ("expires", ""),
            ],
        )
        .await;
    assert_eq!(refused.status, 422);
    assert!(refused.body.contains("exists already"));
    let refused = admin
        .post(
            "/admin/keys",
            &[
                ("csrf", &csrf),
                ("name", "no spaces"),
                ("role", "admin"),
                ("expires", ""),
            ],
        )
        .await;
    assert_eq!(refused.status, 422);
    let refused = admin
        .post(
            "/admin/keys",
            &[
                ("csrf", &csrf),
                ("name", "late"),
                ("role", "admin"),
                ("expires", "2001-01-01T10:00"),
            ],
        )
        .await;
    assert_eq!(refused.status, 422);
    assert!(refused.body.contains("in the past"));

    let id = stored[0].id.to_string();
    // Revoking asks first, saying what it does.
    let asked = admin
        .post(&format!("/admin/keys/{id}/revoke"), &[("csrf", &csrf)])
        .await;
    assert_eq!(asked.status, 200);
    assert!(
        asked.body.contains("is refused from then on"),
        "{}",
        asked.body
    );
    assert_eq!(
        call(secret.clone()).await,
        200,
        "not revoked before the confirmation"
    );
    let done = admin
        .post(
            &format!("/admin/keys/{id}/revoke"),
            &[("csrf", &csrf), ("confirm", "yes")],
        )
        .await;
    assert_eq!(
        (done.status, done.location.as_deref()),
        (303, Some("/admin/keys"))
    );
    assert_eq!(call(secret).await, 401);
    assert!(admin.get("/admin/keys").await.body.contains("revoked"));
    let audit = admin.get("/admin/audit?action=api_key").await;
    assert!(audit.body.contains("api_key.create") && audit.body.contains("api_key.revoke"));
}

/// WCAG 2 contrast ratio of two `#rrggbb` colours.
fn contrast(a: &str, b: &str) -> f64 {
    let luminance = |hex: &str| {
        let channel = |i: usize| {
            let c = f64::from(u8::from_str_radix(&hex[1 + 2 * i..3 + 2 * i], 16).unwrap()) / 255.0;
            if c <= 0.03928 {
                c / 12.92
            } else {
                ((c + 0.055) / 1.055).powf(2.4)
            }
        };
        0.2126 * channel(0) + 0.7152 * channel(1) + 0.0722 * channel(2)
    };
    let (x, y) = (luminance(a), luminance(b));
    (x.max(y) + 0.05) / (x.min(y) + 0.05)
}

#[test]
fn text_has_a_contrast_of_at_least_4_5_in_light_and_dark_mode() {
    let css = include_str!("../../static/admin.css");
    // The two `:root` blocks: light first, then the one inside prefers-color-scheme: dark.
    let blocks: Vec<&str> = css
        .match_indices(":root {")
        .map(|(at, _)| &css[at..at + css[at..].find('}').unwrap()])
        .collect();
    assert_eq!(blocks.len(), 2, "a light and a dark palette");
    for (scheme, block) in ["light", "dark"].iter().zip(blocks) {
        let var = |name: &str| {
            let at = block.find(&format!("--{name}:")).unwrap() + name.len() + 3;
            let value = block[at..].split(';').next().unwrap().trim();
            match value.len() {
                // #rgb is #rrggbb with every digit doubled.
                4 => value.chars().flat_map(|c| [c, c]).skip(1).collect(),
                _ => value.to_owned(),
            }
        };
        for (text, background) in [
            ("fg", "bg"),
            ("fg", "card"),
            ("muted", "card"),
            ("accent", "card"),
            ("danger", "card"),
            ("on-accent", "accent"),
            ("on-danger", "danger"),
        ] {
            let ratio = contrast(&var(text), &var(background));
            assert!(
                ratio >= 4.5,
                "{scheme}: --{text} on --{background} is {ratio:.2}:1"
            );
        }
    }
    // Buttons and the current preset take their text colour from the palette.
    assert!(
        !css.contains("color: #fff"),
        "no fixed white text on the accent"
    );
}

#[actix_web::test]
async fn every_admin_page_starts_with_a_skip_link_to_its_content() {
    let app = spawn_app().await;
    let mut browser = signed_in(&app).await;
    for path in ["/admin/links", "/admin/dashboard", "/admin/links/new"] {
        let page = browser.get(path).await;
        assert_eq!(page.status, 200, "{path}");
        let skip = page.body.find("<a class=\"skip\" href=\"#main\">").unwrap();
        let header = page.body.find("<header").unwrap();
        assert!(skip < header, "{path}: the skip link comes first");
        assert!(page.body.contains("<main id=\"main\""), "{path}");
    }
}

#[actix_web::test]
async fn the_new_link_form_takes_a_code_length_campaign_settings_and_utm_parameters() {
    let app = spawn_app().await;
    let mut browser = signed_in(&app).await;
    let form = browser.get("/admin/links/new").await;
    assert!(
        form.body
            .contains(r#"<option value="6" selected>6</option>"#),
        "the configured length is preselected"
    );
    let csrf = csrf_in(&form.body);
    let host = format!("localhost:{}", app.port);
    let bad = browser
        .post(
            "/admin/links",
            &[
                ("csrf", &csrf),
                ("url", "https://example.com/sale"),
                ("domain", &host),
                ("length", "3"),
                ("max_visits", "zero"),
                ("target.ios", "ftp://example.com/app"),
                ("in_app_page", "line"),
            ],
        )
        .await;
    assert_eq!(bad.status, 422);
    for message in [
        "for a shorter code choose a custom code",
        "maximum number of visits",
        "the ios target: the scheme &#39;ftp:&#39; is not allowed",
        "is not an app inklink knows",
    ] {
        assert!(bad.body.contains(message), "{message}: {}", bad.body);
    }
    assert!(bad.body.contains("ftp://example.com/app"), "input kept");
    let created = browser
        .post(
            "/admin/links",
            &[
                ("csrf", &csrf),
                ("url", "https://example.com/sale?utm_source=old&x=1"),
                ("domain", &host),
                ("length", "4"),
                ("max_visits", "5"),
                ("in_app_page", "wechat"),
                (
                    "targets",
                    "ios=https://apps.apple.com/app/id1\nandroid=https://example.com/a.apk",
                ),
                ("utm_source", "sms"),
                ("utm_campaign", "spring sale"),
            ],
        )
        .await;
    assert_eq!(created.status, 303, "{}", created.body);
    let link = inklink::db::entities::url_map::Entity::find()
        .one(&app.core.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(link.compression_code.len(), 4);
    assert_eq!(
        link.long_url,
        "https://example.com/sale?x=1&utm_source=sms&utm_campaign=spring+sale"
    );
    assert_eq!(link.max_visits, Some(5));
    assert_eq!(link.in_app_page.as_deref(), Some("wechat"));
    assert_eq!(
        link.alt_targets.as_deref(),
        Some("ios=https://apps.apple.com/app/id1\nandroid=https://example.com/a.apk")
    );

    // The SMS composer works without JavaScript: the server counts on submit.
    let page = browser.get("/admin/sms").await;
    assert_eq!(page.status, 200);
    let csrf = csrf_in(&page.body);
    let preview = browser
        .post(
            "/admin/sms",
            &[
                ("csrf", &csrf),
                ("message", "春季大促 {link} 回TD退订"),
                ("url", "https://example.com/sms"),
                ("signature", "好店"),
                ("rule", "china"),
                ("segments", "1"),
                ("action", "preview"),
            ],
        )
        .await;
    assert_eq!(preview.status, 200, "{}", preview.body);
    assert!(preview.body.contains("China · "), "{}", preview.body);
    assert!(preview.body.contains("<strong>1 segment</strong>"));
    let too_long = browser
        .post(
            "/admin/sms",
            &[
                ("csrf", &csrf),
                ("message", &format!("{{link}} {}", "好".repeat(80))),
                ("url", "https://example.com/sms"),
                ("rule", "china"),
                ("segments", "1"),
                ("action", "create"),
            ],
        )
        .await;
    assert_eq!(too_long.status, 422);
    assert!(too_long.body.contains("shorten it by"), "{}", too_long.body);
}

#[actix_web::test]
async fn the_link_page_shows_the_link_whole_and_the_list_shows_clicks_at_a_glance() {
    let app = spawn_app().await;
    let mut browser = signed_in(&app).await;
    let csrf = browser.csrf("/admin/links/new").await;
    let host = format!("localhost:{}", app.port);
    // Typed without a scheme: https:// is added.
    let created = browser
        .post(
            "/admin/links",
            &[
                ("csrf", &csrf),
                ("url", "example.com/路径?q=短链"),
                ("domain", &host),
                ("code", "glance"),
                ("tags", "spring"),
            ],
        )
        .await;
    assert_eq!(created.status, 303, "{}", created.body);
    let link = url_map::Entity::find()
        .one(&app.core.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        link.long_url,
        "https://example.com/%E8%B7%AF%E5%BE%84?q=%E7%9F%AD%E9%93%BE"
    );
    for _ in 0..3 {
        let visit = app
            .client
            .get(app.url("/glance"))
            .insert_header(("user-agent", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36"))
            .send()
            .await
            .unwrap();
        assert_eq!(visit.status().as_u16(), 302);
    }
    crate::analytics::wait_written(&app, 3).await;
    let tz = app.core.settings.timezone;
    let today = inklink::stats::days::today(tz);
    inklink::stats::recount::rebuild(&app.core.db, tz, today, today)
        .await
        .unwrap();

    let list = browser.get("/admin/links").await;
    // The target as people read it; the link itself stays encoded.
    assert!(
        list.body.contains(">https://example.com/路径?q=短链</a>"),
        "{}",
        list.body
    );
    assert!(
        list.body.contains("3 · 3 · 3"),
        "clicks today, over 7 days and in all"
    );
    assert!(list.body.contains("<svg class=\"spark\""));
    assert!(list.body.contains("href=\"/admin/links/glance\""));

    // Most clicked first, though newer links come first by default.
    crate::support::create_link(&app, "https://example.com/later").await;
    let newest = browser.get("/admin/links").await.body;
    let by_clicks = browser.get("/admin/links?sort=clicks").await.body;
    let at = |body: &str, needle: &str| body.find(needle).unwrap();
    assert!(at(&newest, "example.com/later") < at(&newest, "/admin/links/glance\""));
    assert!(at(&by_clicks, "/admin/links/glance\"") < at(&by_clicks, "example.com/later"));
    // The export has the clicks, and times in the configured zone as the import reads them.
    let export = browser.get("/admin/links/export.csv").await.body;
    let header = export.lines().next().unwrap();
    assert!(
        header.ends_with(",tags,clicks_today,clicks_7_days,clicks_total"),
        "{header}"
    );
    let row = export.lines().find(|l| l.starts_with("glance,")).unwrap();
    assert!(row.ends_with(",spring,3,3,3"), "{row}");
    let created_at = row.split(',').nth(6).unwrap();
    assert_eq!(created_at.len(), "2026-11-23 10:00".len(), "{row}");
    let template = browser.get("/admin/links/import/template.csv").await;
    assert_eq!(template.status, 200);
    assert!(
        template
            .body
            .starts_with("\u{feff}url,code,description,expires_at,domain,length,tags")
    );
    let page = browser.get("/admin/links/glance").await;
    assert_eq!(page.status, 200, "{}", page.body);
    for needle in [
        r#"<dd id="clicks-today">3</dd>"#,
        r#"<dd id="clicks-week">3</dd>"#,
        r#"<dd id="clicks-total">3</dd>"#,
        "<td>Link created</td>",
        "/admin/links/glance/qr.svg",
        "/admin/links/glance/edit",
        "/admin/links/glance/disable",
        "spring",
    ] {
        assert!(page.body.contains(needle), "{needle}: {}", page.body);
    }
    assert_eq!(browser.get("/admin/links/missing").await.status, 404);
    // Its dashboard: values on hover, and the period before beside the totals.
    let stats = browser.get("/admin/links/glance/stats?range=7").await;
    assert!(
        stats
            .body
            .contains(&format!("<title>{today}: PV 3, UV 1, IP 1</title>")),
        "{}",
        stats.body
    );
    assert!(stats.body.contains(r#"id="previous-pv">0 before"#));
    // The hour-of-day chart and table (the tests' zone is UTC; the visits were just now,
    // unless the hour turned meanwhile).
    assert!(stats.body.contains(r#"id="chart-hours""#));
    let hour = chrono::Timelike::hour(&chrono::Utc::now());
    let previous_hour = (hour + 23) % 24;
    assert!(
        stats
            .body
            .contains(&format!("<td>{hour:02}:00</td><td>3</td>"))
            || stats
                .body
                .contains(&format!("<td>{previous_hour:02}:00</td><td>3</td>")),
        "{}",
        stats.body
    );
    assert!(
        stats.body.contains("▲ UV"),
        "the legend is outside the plot"
    );
    // The PNG is at least 1024 pixels a side.
    let png = browser.get("/admin/links/glance/qr.png").await;
    assert_eq!(png.status, 200);
    let bytes = png.body.as_bytes();
    let width = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    assert!(width >= 1024, "{width}");

    // Disabling offers Undo, which enables the link again.
    let disabled = browser
        .post("/admin/links/glance/disable", &[("csrf", &csrf)])
        .await;
    assert_eq!(disabled.status, 303);
    assert_eq!(app.fetch("/glance").await.0, 410);
    let list = browser.get("/admin/links").await;
    assert!(
        list.body
            .contains(r#"action="/admin/links/glance/enable" class="undo""#),
        "{}",
        list.body
    );
    let undone = browser
        .post("/admin/links/glance/enable", &[("csrf", &csrf)])
        .await;
    assert_eq!(undone.status, 303);
    app.core.link_cache.forget("glance");
    assert_eq!(app.fetch("/glance").await.0, 302);
    let list = browser.get("/admin/links").await;
    assert!(
        !list.body.contains("class=\"undo\""),
        "Undo is offered once"
    );
}

#[actix_web::test]
async fn signing_in_leads_back_to_the_page_asked_for_and_never_elsewhere() {
    let app = spawn_app().await;
    add_user(&app, "olivia", "operator-pass", Role::Operator).await;
    let mut browser = Browser::new(&app);
    let asked = browser.get("/admin/tags?x=1").await;
    assert_eq!(asked.status, 303);
    assert_eq!(
        asked.location.as_deref(),
        Some("/admin/login?next=%2Fadmin%2Ftags%3Fx%3D1")
    );
    let form = browser
        .get("/admin/login?next=%2Fadmin%2Ftags%3Fx%3D1")
        .await;
    assert!(
        form.body.contains(r#"name="next" value="/admin/tags?x=1""#),
        "{}",
        form.body
    );
    let csrf = csrf_in(&form.body);
    let signed = browser
        .post(
            "/admin/login",
            &[
                ("csrf", &csrf),
                ("username", "olivia"),
                ("password", "operator-pass"),
                ("next", "/admin/tags?x=1"),
            ],
        )
        .await;
    assert_eq!(signed.location.as_deref(), Some("/admin/tags?x=1"));
    for evil in [
        "https://evil.example/",
        "//evil.example/admin",
        "/admin/../../x",
        "/other",
    ] {
        let mut other = Browser::new(&app);
        let csrf = other.csrf("/admin/login").await;
        let signed = other
            .post(
                "/admin/login",
                &[
                    ("csrf", &csrf),
                    ("username", "olivia"),
                    ("password", "operator-pass"),
                    ("next", evil),
                ],
            )
            .await;
        assert_eq!(signed.location.as_deref(), Some("/admin/links"), "{evil}");
    }
}

#[actix_web::test]
async fn links_selected_in_the_list_are_changed_together_after_a_confirmation() {
    let app = spawn_app().await;
    let mut browser = signed_in(&app).await;
    let csrf = browser.csrf("/admin/links/new").await;
    let host = format!("localhost:{}", app.port);
    for code in ["s1", "s2", "s3"] {
        let created = browser
            .post(
                "/admin/links",
                &[
                    ("csrf", &csrf),
                    ("url", &format!("https://example.com/{code}")),
                    ("domain", &host),
                    ("code", code),
                ],
            )
            .await;
        assert_eq!(created.status, 303);
    }
    // Someone else's link: an operator may not change it.
    let theirs = create_link(&app, "https://example.com/theirs").await;
    let list = browser.get("/admin/links").await;
    assert!(
        list.body
            .contains(r#"name="codes" value="s1" form="selection""#)
    );

    let asked = browser
        .post(
            "/admin/links/selection",
            &[
                ("csrf", &csrf),
                ("action", "disable"),
                ("codes", "s1"),
                ("codes", "s2"),
            ],
        )
        .await;
    assert_eq!(asked.status, 200, "{}", asked.body);
    assert!(asked.body.contains("Disable 2 links?"), "{}", asked.body);
    assert_eq!(
        app.fetch("/s1").await.0,
        302,
        "nothing changes before the confirmation"
    );
    let csrf_confirm = csrf_in(&asked.body);
    let done = browser
        .post(
            "/admin/links/selection",
            &[
                ("csrf", &csrf_confirm),
                ("action", "disable"),
                ("codes", "s1"),
                ("codes", "s2"),
                ("confirm", "yes"),
            ],
        )
        .await;
    assert_eq!(done.status, 303);
    for (code, status) in [("s1", 410), ("s2", 410), ("s3", 302)] {
        app.core.link_cache.forget(code);
        assert_eq!(app.fetch(&format!("/{code}")).await.0, status, "{code}");
    }
    let list = browser.get("/admin/links").await;
    assert!(
        list.body.contains("2 of 2 selected links changed"),
        "{}",
        list.body
    );

    // Every matching link: tags for all four, of which one is not the operator's.
    let tagged = browser
        .post(
            "/admin/links/selection",
            &[
                ("csrf", &csrf),
                ("action", "tag"),
                ("tags", "wave"),
                ("all", "yes"),
                ("q", "example.com"),
                ("confirm", "yes"),
            ],
        )
        .await;
    assert_eq!(tagged.status, 303);
    let list = browser.get("/admin/links?tag=wave").await;
    assert!(list.body.contains("3 links match"), "{}", list.body);
    assert!(
        list.body
            .contains("3 of 4 selected links changed; 1 left alone (not yours)"),
        "{}",
        list.body
    );
    let export = browser
        .post(
            "/admin/links/selection",
            &[
                ("csrf", &csrf),
                ("action", "export"),
                ("codes", "s3"),
                ("codes", "s1"),
            ],
        )
        .await;
    assert_eq!(export.status, 200);
    assert_eq!(export.body.lines().count(), 3, "{}", export.body);
    assert!(export.body.contains("wave"));
    let nothing = browser
        .post(
            "/admin/links/selection",
            &[("csrf", &csrf), ("action", "disable")],
        )
        .await;
    assert_eq!(nothing.status, 422);
    assert!(nothing.body.contains("no link is selected"));
    let deleted = browser
        .post(
            "/admin/links/selection",
            &[
                ("csrf", &csrf),
                ("action", "delete"),
                ("codes", "s3"),
                ("confirm", "yes"),
            ],
        )
        .await;
    assert_eq!(deleted.status, 303);
    assert_eq!(app.fetch("/s3").await.0, 404);
    assert_eq!(
        app.fetch(&format!("/{}", theirs.link.compression_code))
            .await
            .0,
        302
    );
}

#[actix_web::test]
async fn each_user_sees_and_types_times_in_their_own_time_zone() {
    let app = spawn_app().await;
    let mut browser = signed_in(&app).await;
    let page = browser.get("/admin/account").await;
    assert_eq!(page.status, 200);
    let csrf = csrf_in(&page.body);
    let bad = browser
        .post(
            "/admin/account",
            &[("csrf", &csrf), ("time_zone", "Mars/Olympus")],
        )
        .await;
    assert_eq!(bad.status, 422);
    assert!(bad.body.contains("is not a time zone"), "{}", bad.body);
    assert!(bad.body.contains(r#"value="Mars/Olympus""#), "input kept");
    let saved = browser
        .post(
            "/admin/account",
            &[("csrf", &csrf), ("time_zone", "Asia/Shanghai")],
        )
        .await;
    assert_eq!(saved.status, 303);
    let host = format!("localhost:{}", app.port);
    let created = browser
        .post(
            "/admin/links",
            &[
                ("csrf", &csrf),
                ("url", "https://example.com/tz"),
                ("domain", &host),
                ("code", "tz-user"),
                ("expires", "2030-01-01T08:00"),
            ],
        )
        .await;
    assert_eq!(created.status, 303, "{}", created.body);
    let link = url_map::Entity::find()
        .one(&app.core.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        link.expires_at.unwrap().to_string(),
        "2030-01-01 00:00:00",
        "08:00 in Shanghai is midnight UTC"
    );
    let list = browser.get("/admin/links").await;
    assert!(
        list.body.contains("2030-01-01 08:00 UTC+8"),
        "{}",
        list.body
    );
    let edit = browser.get("/admin/links/tz-user/edit").await;
    assert!(edit.body.contains(r#"value="2030-01-01T08:00""#));
    // Cleared: the server's zone (UTC in the tests) again.
    browser
        .post("/admin/account", &[("csrf", &csrf), ("time_zone", "")])
        .await;
    let list = browser.get("/admin/links").await;
    assert!(list.body.contains("2030-01-01 00:00 UTC"), "{}", list.body);
}

#[actix_web::test]
async fn the_edit_form_changes_a_links_campaign_settings() {
    let app = spawn_app().await;
    let mut browser = signed_in(&app).await;
    let csrf = browser.csrf("/admin/links/new").await;
    let host = format!("localhost:{}", app.port);
    let created = browser
        .post(
            "/admin/links",
            &[
                ("csrf", &csrf),
                ("url", "https://example.com/c"),
                ("domain", &host),
                ("code", "camp"),
                ("password", "8888"),
                ("max_visits", "5"),
            ],
        )
        .await;
    assert_eq!(created.status, 303, "{}", created.body);
    let edit = browser.get("/admin/links/camp/edit").await;
    assert!(
        edit.body
            .contains(r#"name="max_visits" type="text" value="5""#),
        "{}",
        edit.body
    );
    assert!(edit.body.contains("remove the password"));
    assert!(!edit.body.contains(r#"id="length""#), "the code stays");
    let version = url_map::Entity::find()
        .one(&app.core.db)
        .await
        .unwrap()
        .unwrap()
        .version
        .to_string();
    let saved = browser
        .post(
            "/admin/links/camp/edit",
            &[
                ("csrf", &csrf),
                ("version", &version),
                ("url", "https://example.com/c"),
                ("max_visits", ""),
                ("targets", "ios=https://apps.apple.com/app/id9"),
                ("in_app_page", "none"),
                ("remove_password", "yes"),
            ],
        )
        .await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    let link = url_map::Entity::find()
        .one(&app.core.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(link.password_hash, None);
    assert_eq!(link.max_visits, None);
    assert_eq!(link.in_app_page.as_deref(), Some("none"));
    assert_eq!(
        link.alt_targets.as_deref(),
        Some("ios=https://apps.apple.com/app/id9")
    );
    app.core.link_cache.forget("camp");
    assert_eq!(
        app.fetch("/camp").await.0,
        302,
        "no password asked any more"
    );
    // The home page speaks the visitor's language too.
    let home = app
        .client
        .get(app.url("/"))
        .insert_header(("accept-language", "zh-CN,zh;q=0.9"))
        .send()
        .await
        .unwrap()
        .body()
        .await
        .unwrap();
    let home = String::from_utf8_lossy(&home);
    assert!(home.contains("此地址提供短链接服务"), "{home}");
}

/// Issue 40: the link form fits the task: campaign settings folded until wanted (open when one
/// is set or refused), the tags in use offered as one types, and a copy button beside the
/// "created" message.
#[actix_web::test]
async fn the_link_form_folds_campaign_settings_suggests_tags_and_offers_to_copy_the_new_link() {
    let app = spawn_app().await;
    let mut browser = signed_in(&app).await;
    let host = format!("localhost:{}", app.port);
    let form = browser.get("/admin/links/new").await.body;
    assert!(
        form.contains(r#"<details class="campaign">"#),
        "folded: {form}"
    );
    let csrf = csrf_in(&form);
    let created = browser
        .post(
            "/admin/links",
            &[
                ("csrf", &csrf),
                ("url", "https://example.com/fold"),
                ("domain", &host),
                ("code", "fold"),
                ("tags", "双十一"),
            ],
        )
        .await;
    assert_eq!(created.status, 303);
    let list = browser.get("/admin/links").await.body;
    assert!(
        list.contains(&format!(
            r#"<button type="button" class="copy" data-copy="http://{host}/fold">"#
        )),
        "{list}"
    );
    let again = browser.get("/admin/links").await.body;
    assert!(!again.contains(r#"class="flash""#), "offered once");
    let form = browser.get("/admin/links/new").await.body;
    assert!(form.contains(r#"<option value="双十一">"#), "{form}");
    let refused = browser
        .post(
            "/admin/links",
            &[
                ("csrf", &csrf),
                ("url", "https://example.com/fold2"),
                ("domain", &host),
                ("max_visits", "zero"),
            ],
        )
        .await;
    assert_eq!(refused.status, 422);
    assert!(
        refused.body.contains(r#"<details class="campaign" open>"#),
        "a refused setting shows: {}",
        refused.body
    );
}

/// Issue 40: in-app browsers are boxes to tick and device targets are rows, not syntax to
/// type; what they say is stored, shown again on the edit page, changed and removed there, and
/// a bad row is refused beside the rows with everything typed kept.
#[actix_web::test]
async fn in_app_browsers_are_ticked_and_device_targets_are_rows() {
    let app = spawn_app().await;
    let mut browser = signed_in(&app).await;
    let host = format!("localhost:{}", app.port);
    let form = browser.get("/admin/links/new").await.body;
    for shown in [
        r#"name="in_app_mode" value="domain" checked"#,
        r#"name="in_app.wechat" value="on""#,
        r#"name="in_app.taobao" value="on""#,
        r#"name="target.ios""#,
        r#"name="target.wechat""#,
    ] {
        assert!(form.contains(shown), "{shown}");
    }
    let csrf = csrf_in(&form);
    let stored = |app: &TestApp| {
        let db = app.core.db.clone();
        async move {
            let link = url_map::Entity::find().one(&db).await.unwrap().unwrap();
            (link.in_app_page, link.alt_targets, link.version.to_string())
        }
    };
    // The new-link form with two apps ticked and the Android row as given.
    let form = |android: &'static str| {
        vec![
            ("csrf", csrf.clone()),
            ("url", "https://example.com/app".to_owned()),
            ("domain", host.clone()),
            ("code", "apps".to_owned()),
            ("in_app_mode", "apps".to_owned()),
            ("in_app.wechat", "on".to_owned()),
            ("in_app.douyin", "on".to_owned()),
            ("target.ios", "https://apps.apple.com/app/id1".to_owned()),
            ("target.android", android.to_owned()),
            ("target.desktop", String::new()),
            ("target.wechat", String::new()),
        ]
    };
    // A bad row: refused beside the rows, every tick and row kept as typed.
    let fields = form("ftp://example.com/app.apk");
    let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let refused = browser.post("/admin/links", &fields).await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(
        refused.body.contains(r#"id="targets-error""#),
        "{}",
        refused.body
    );
    for kept in [
        r#"value="apps" checked"#,
        r#"name="in_app.wechat" value="on" data-in-app checked"#,
        r#"name="in_app.douyin" value="on" data-in-app checked"#,
        r#"value="https://apps.apple.com/app/id1""#,
        r#"value="ftp://example.com/app.apk""#,
    ] {
        assert!(refused.body.contains(kept), "{kept}: {}", refused.body);
    }
    assert!(
        !refused
            .body
            .contains(r#"name="in_app.qq" value="on" data-in-app checked"#)
    );
    assert_eq!(
        url_map::Entity::find().count(&app.core.db).await.unwrap(),
        0
    );
    let fields = form(" https://example.com/app.apk ");
    let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let created = browser.post("/admin/links", &fields).await;
    assert_eq!(created.status, 303, "{}", created.body);
    let (in_app, targets, version) = stored(&app).await;
    assert_eq!(in_app.as_deref(), Some("wechat,douyin"));
    assert_eq!(
        targets.as_deref(),
        Some("ios=https://apps.apple.com/app/id1\nandroid=https://example.com/app.apk")
    );
    let edit = browser.get("/admin/links/apps/edit").await.body;
    for shown in [
        r#"value="apps" checked"#,
        r#"name="in_app.douyin" value="on" data-in-app checked"#,
        r#"id="target-ios" name="target.ios" type="text" value="https://apps.apple.com/app/id1""#,
        r#"id="target-desktop" name="target.desktop" type="text" value="""#,
    ] {
        assert!(edit.contains(shown), "{shown}: {edit}");
    }
    // "Never", and the iPhone row emptied: no page, one target left.
    let saved = browser
        .post(
            "/admin/links/apps/edit",
            &[
                ("csrf", &csrf),
                ("version", &version),
                ("url", "https://example.com/app"),
                ("in_app_mode", "none"),
                ("in_app.wechat", "on"),
                ("target.ios", ""),
                ("target.android", "https://example.com/app.apk"),
                ("target.desktop", ""),
                ("target.wechat", "https://example.com/wx"),
            ],
        )
        .await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    let (in_app, targets, version) = stored(&app).await;
    assert_eq!(in_app.as_deref(), Some("none"));
    assert_eq!(
        targets.as_deref(),
        Some("wechat=https://example.com/wx\nandroid=https://example.com/app.apk")
    );
    // The domain's choice, and every row emptied: neither setting is left.
    let saved = browser
        .post(
            "/admin/links/apps/edit",
            &[
                ("csrf", &csrf),
                ("version", &version),
                ("url", "https://example.com/app"),
                ("in_app_mode", "domain"),
                ("target.ios", ""),
                ("target.android", ""),
                ("target.desktop", ""),
                ("target.wechat", ""),
            ],
        )
        .await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    let (in_app, targets, _) = stored(&app).await;
    assert_eq!((in_app, targets), (None, None));
}
