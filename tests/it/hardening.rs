//! What an outsider, a crash or a race must not be able to do: one test per class of problem
//! found when inklink was tried as an attacker would.

use crate::admin::{Browser, add_user, signed_in, signed_in_admin};
use crate::api::Api;
use crate::support::{
    TcpProxy, TestApp, TestDb, client, create_link, spawn_app, spawn_app_with, spawn_via,
};
use actix_session::storage::SessionStore;
use chrono::NaiveDate;
use futures_util::future::join_all;
use inklink::admin::access::session_store::DbSessionStore;
use inklink::clicks::spool::{Spool, Spooled, append_rows};
use inklink::db::entities::admin_sessions;
use inklink::db::entities::url_map::{self, LinkStatus};
use inklink::rules::KeyName;
use inklink::rules::{
    DomainHost, OwnHost, Password, Protocol, Role, ShortCode, TargetUrl, TargetUrlError, UrlRules,
    Username,
};
use inklink::services::links::{self, listing};
use inklink::services::signin::{NEW_ADDRESS_LIMIT, PAIR_LIMIT};
use inklink::services::users::{self, UserChange};
use inklink::services::{Actor, Principal, api_keys, domains};
use migration::{Migrator, MigratorTrait};
use sea_orm::{EntityTrait, PaginatorTrait};
use serde_json::json;
use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// An empty directory for a spool test named `name`, and the time its clicks are at.
fn spool_scratch(name: &str) -> (std::path::PathBuf, chrono::NaiveDateTime) {
    let dir = std::env::temp_dir().join(format!("inklink-{name}-spool-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let start = NaiveDate::from_ymd_opt(2026, 5, 1)
        .unwrap()
        .and_hms_opt(8, 0, 0)
        .unwrap();
    (dir, start)
}

/// Appends the first half of `line` to the file at `path`, as a crash mid-write leaves it.
fn append_half(path: &std::path::Path, line: &[u8]) {
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(&line[..line.len() / 2]).unwrap();
}

#[test]
fn a_spool_line_torn_by_a_crash_does_not_swallow_the_next_event() {
    // Arrange: one stored line, then half a line, as a crash mid-write leaves it.
    let (dir, start) = spool_scratch("torn");
    let path = dir.join("spool.jsonl");
    let rows = crate::event_insert::rows(3, start, 1);
    append_rows(&path, &rows[..1]).unwrap();
    append_half(&path, serde_json::to_string(&rows[1]).unwrap().as_bytes());

    // Act: the next run appends after it.
    append_rows(&path, &rows[2..]).unwrap();
    let (read, _) = Spool::open(&path).unwrap().peek(10).unwrap();

    // Assert: only the torn event is lost.
    assert_eq!(
        read,
        vec![
            Spooled::Row(Box::new(rows[0].clone())),
            Spooled::Row(Box::new(rows[2].clone()))
        ]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_spool_reads_back_rows_and_clicks_in_the_order_written_and_skips_a_torn_click() {
    // Arrange: a row as older versions (and a shutdown) write them, then clicks as the
    // overflow writes them, the second cut short by a crash, then one more click.
    let (dir, start) = spool_scratch("mixed");
    let path = dir.join("spool.jsonl");
    let row = crate::event_insert::rows(1, start, 1).remove(0);
    let clicks: Vec<_> = (0..3u8)
        .map(|i| {
            let mut click = crate::support::page_view("mixed", 7, start, [10, 0, 0, i].into());
            click.key = Some(inklink::clickstore::row::EventKey(u128::from(i) + 1));
            click.referer = Some("https://www.baidu.com/s?wd=短链接\tx".into());
            click
        })
        .collect();
    append_rows(&path, std::slice::from_ref(&row)).unwrap();
    let mut spool = Spool::open(&path).unwrap();
    spool.append_clicks(&clicks[..1]).unwrap();
    let mut line = Vec::new();
    inklink::clicks::journal::line::encode(&clicks[1], &mut line);
    append_half(&path, &line);

    // Act: the next run appends after it and reads everything back.
    let mut spool = Spool::open(&path).unwrap();
    spool.append_clicks(&clicks[2..]).unwrap();
    let (read, end) = spool.peek(10).unwrap();

    // Assert: in order, each as written; only the torn click is lost.
    assert_eq!(
        read,
        vec![
            Spooled::Row(Box::new(row)),
            Spooled::Click(clicks[0].clone()),
            Spooled::Click(clicks[2].clone()),
        ]
    );
    // The appended clicks are synced later: after everything was read and the file removed,
    // there is nothing to sync, and the next click starts a new file.
    spool.consume(end, 3).unwrap();
    assert!(!path.exists(), "a spool read to its end is removed");
    spool.sync().unwrap();
    spool.append_clicks(&clicks[..1]).unwrap();
    spool.sync().unwrap();
    assert_eq!(spool.pending(), 1);
    assert_eq!(
        spool.peek(10).unwrap().0,
        vec![Spooled::Click(clicks[0].clone())]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Posts the sign-in form `n` times at once with one token, each from `from(i)` (an address
/// the trusted proxy reports, or none), and returns the statuses.
async fn sign_in_in_parallel(
    app: &TestApp,
    n: usize,
    name: &str,
    password: impl Fn(usize) -> String,
    from: impl Fn(usize) -> Option<String>,
) -> Vec<u16> {
    let mut browser = Browser::new(app);
    let csrf = browser.csrf("/admin/login").await;
    let cookie = browser.cookie().expect("the sign-in cookie");
    let attempts = (0..n).map(|i| {
        let mut request = app
            .client
            .post(app.url("/admin/login"))
            .insert_header(("cookie", cookie.clone()));
        if let Some(ip) = from(i) {
            request = request.insert_header(("x-forwarded-for", ip));
        }
        let form = [
            ("csrf", csrf.clone()),
            ("username", name.to_owned()),
            ("password", password(i)),
        ];
        async move { request.send_form(&form).await.unwrap().status().as_u16() }
    });
    join_all(attempts).await
}

fn count(statuses: &[u16], status: u16) -> usize {
    statuses.iter().filter(|s| **s == status).count()
}

#[actix_web::test]
async fn parallel_guesses_get_no_more_password_checks_than_the_limit() {
    // Arrange
    let app = spawn_app().await;
    add_user(&app, "olivia", "operator-pass", Role::Operator).await;

    // Act: 50 wrong passwords at once from one address.
    let statuses =
        sign_in_in_parallel(&app, 50, "olivia", |i| format!("guess-{i}-x"), |_| None).await;

    // Assert: exactly the limit was checked (401); the rest were refused unchecked (429),
    // and the right password from this address now waits too.
    assert_eq!(count(&statuses, 401), PAIR_LIMIT as usize, "{statuses:?}");
    assert_eq!(
        count(&statuses, 429),
        50 - PAIR_LIMIT as usize,
        "{statuses:?}"
    );
    let right = Browser::new(&app).sign_in("olivia", "operator-pass").await;
    assert_eq!(right.status, 429);
}

#[actix_web::test]
async fn strangers_cannot_lock_a_person_out_of_their_account() {
    // Arrange: olivia has signed in from her office before.
    let app = spawn_app_with(&["--trusted-proxies", "127.0.0.1"]).await;
    add_user(&app, "olivia", "operator-pass", Role::Operator).await;
    let office = || Some("198.51.100.7".to_owned());
    let first =
        sign_in_in_parallel(&app, 1, "olivia", |_| "operator-pass".into(), |_| office()).await;
    assert_eq!(first, [303]);

    // Act: 100 guesses at once from 50 addresses elsewhere.
    let statuses = sign_in_in_parallel(
        &app,
        100,
        "olivia",
        |i| format!("guess-{i}-x"),
        |i| Some(format!("203.0.113.{}", i % 50)),
    )
    .await;

    // Assert: the guesses from new addresses stopped at their limit, and olivia still signs
    // in from her office with her password.
    assert_eq!(
        count(&statuses, 401),
        NEW_ADDRESS_LIMIT as usize,
        "{statuses:?}"
    );
    assert_eq!(count(&statuses, 429), 100 - NEW_ADDRESS_LIMIT as usize);
    let again =
        sign_in_in_parallel(&app, 1, "olivia", |_| "operator-pass".into(), |_| office()).await;
    assert_eq!(again, [303]);
}

#[actix_web::test]
async fn a_session_deleted_while_a_request_holds_it_stays_deleted() {
    // Arrange: a stored session, loaded by a request…
    let app = spawn_app().await;
    let store = DbSessionStore::new(app.core.db.clone());
    let ttl = actix_web::cookie::time::Duration::hours(1);
    let state: HashMap<String, String> = [("uid".to_owned(), "1".to_owned())].into();
    let key = store.save(state.clone(), &ttl).await.unwrap();
    assert!(store.load(&key).await.unwrap().is_some());

    // Act: …that signs out meanwhile, then the request writes its changed state back.
    store.delete(&key).await.unwrap();
    let written = store.update(key, state, &ttl).await.unwrap();

    // Assert: nothing came back, under any key.
    assert!(store.load(&written).await.unwrap().is_none());
    assert_eq!(
        admin_sessions::Entity::find()
            .count(&app.core.db)
            .await
            .unwrap(),
        0
    );
}

#[actix_web::test]
async fn sign_out_ends_a_session_that_parallel_requests_are_using() {
    // Arrange: a signed-in operator with a link, and requests that write the session (each
    // sets a flash message).
    let app = spawn_app().await;
    let mut browser = signed_in(&app).await;
    let saved = create_link(&app, "https://example.com/race").await;
    let code = saved.link.compression_code.to_string();
    let csrf = browser.csrf("/admin/links").await;
    let cookie = browser.cookie().unwrap();
    let writes = (0..20).map(|i| {
        let action = if i % 2 == 0 { "disable" } else { "enable" };
        let request = app
            .client
            .post(app.url(&format!("/admin/links/{code}/{action}")))
            .insert_header(("cookie", cookie.clone()));
        let form = [("csrf", csrf.clone())];
        async move {
            let response = request.send_form(&form).await.unwrap();
            response
                .headers()
                .get_all("set-cookie")
                .filter_map(|v| v.to_str().ok().map(str::to_owned))
                .collect::<Vec<_>>()
        }
    });

    // Act: sign out while they run.
    let logout_form = [("csrf", csrf.as_str())];
    let (cookies, out) = tokio::join!(
        join_all(writes),
        browser.post("/admin/logout", &logout_form)
    );
    assert_eq!(out.status, 303);

    // Assert: no session row is left, and no cookie any request got opens a page.
    assert_eq!(
        admin_sessions::Entity::find()
            .count(&app.core.db)
            .await
            .unwrap(),
        0
    );
    for set_cookie in cookies.into_iter().flatten() {
        let pair = set_cookie.split(';').next().unwrap().to_owned();
        let mut replay = Browser::with_cookie(&app, Some(pair));
        assert_eq!(replay.get("/admin/links").await.status, 303);
    }
    let mut replay = Browser::with_cookie(&app, Some(cookie));
    assert_eq!(replay.get("/admin/links").await.status, 303);
}

#[actix_web::test]
async fn a_password_reset_ends_the_users_sessions_from_the_ui_and_the_cli() {
    // Arrange: olivia is signed in twice; an admin is signed in.
    let app = spawn_app().await;
    let mut olivia = signed_in(&app).await;
    let mut olivia_elsewhere = Browser::new(&app);
    assert_eq!(
        olivia_elsewhere
            .sign_in("olivia", "operator-pass")
            .await
            .status,
        303
    );
    let mut admin = signed_in_admin(&app).await;
    let id = users::find(&app.core.db, &Username::parse("olivia").unwrap())
        .await
        .unwrap()
        .unwrap()
        .id;

    // Act: the admin resets her password in the admin UI.
    let csrf = admin.csrf("/admin/users").await;
    let reset = admin
        .post(
            &format!("/admin/users/{id}/password"),
            &[("csrf", &csrf), ("password", "a-new-password")],
        )
        .await;
    assert_eq!(reset.status, 303);

    // Assert: both of her sessions are over; the admin's is not.
    assert_eq!(olivia.get("/admin/links").await.status, 303);
    assert_eq!(olivia_elsewhere.get("/admin/links").await.status, 303);
    assert_eq!(admin.get("/admin/links").await.status, 200);

    // And the same through what `inklink user passwd` calls.
    let mut olivia = Browser::new(&app);
    assert_eq!(olivia.sign_in("olivia", "a-new-password").await.status, 303);
    users::set_password(
        &app.core.db,
        &Username::parse("olivia").unwrap(),
        &Password::parse("third-password").unwrap(),
        &Actor::Cli,
    )
    .await
    .unwrap();
    assert_eq!(olivia.get("/admin/links").await.status, 303);
}

#[actix_web::test]
async fn visitors_who_only_look_at_the_sign_in_form_store_nothing() {
    let app = spawn_app().await;
    let looks = (0..200).map(|_| {
        let request = app.client.get(app.url("/admin/login"));
        async move { request.send().await.unwrap().status().as_u16() }
    });
    assert!(join_all(looks).await.iter().all(|status| *status == 200));
    assert_eq!(
        admin_sessions::Entity::find()
            .count(&app.core.db)
            .await
            .unwrap(),
        0
    );
    // The form still works, and a form without the cookie is refused.
    add_user(&app, "olivia", "operator-pass", Role::Operator).await;
    assert_eq!(
        Browser::new(&app)
            .sign_in("olivia", "operator-pass")
            .await
            .status,
        303
    );
    let forged = app
        .client
        .post(app.url("/admin/login"))
        .send_form(&[
            ("csrf", "0".repeat(64).as_str()),
            ("username", "olivia"),
            ("password", "operator-pass"),
        ])
        .await
        .unwrap();
    assert_eq!(forged.status().as_u16(), 403);
}

#[actix_web::test]
async fn two_admins_disabling_each_other_at_once_leave_one_active_admin() {
    // Arrange
    let app = spawn_app().await;
    let mut ada = signed_in_admin(&app).await;
    add_user(&app, "bob", "bob-password", Role::Admin).await;
    let mut bob = Browser::new(&app);
    assert_eq!(bob.sign_in("bob", "bob-password").await.status, 303);
    let id_of = |name: &'static str| {
        let db = app.core.db.clone();
        async move {
            users::find(&db, &Username::parse(name).unwrap())
                .await
                .unwrap()
                .unwrap()
                .id
        }
    };
    let (ada_id, bob_id) = (id_of("ada").await, id_of("bob").await);
    let ada_csrf = ada.csrf("/admin/users").await;
    let bob_csrf = bob.csrf("/admin/users").await;

    for round in 0..5 {
        // Act: each disables the other at the same moment.
        let (disable_bob, disable_ada) = (
            format!("/admin/users/{bob_id}/disable"),
            format!("/admin/users/{ada_id}/disable"),
        );
        let (ada_form, bob_form) = (
            [("csrf", ada_csrf.as_str()), ("confirm", "yes")],
            [("csrf", bob_csrf.as_str()), ("confirm", "yes")],
        );
        let (a, b) = tokio::join!(
            ada.post(&disable_bob, &ada_form),
            bob.post(&disable_ada, &bob_form),
        );

        // Assert: one of them won; the other was refused; an active admin is left.
        let active = users::list(&app.core.db)
            .await
            .unwrap()
            .into_iter()
            .filter(|u| u.role == Role::Admin && !u.disabled)
            .count();
        assert_eq!(active, 1, "round {round}: {} and {}", a.status, b.status);
        let mut statuses = [a.status, b.status];
        statuses.sort();
        assert!(
            statuses == [303, 422] || statuses == [303, 303],
            "round {round}: {statuses:?}"
        );
        // Both again, for the next round.
        for id in [ada_id, bob_id] {
            users::change(&app.core.db, id, UserChange::Enable, None, &Actor::Cli)
                .await
                .unwrap();
        }
    }
}

#[actix_web::test]
async fn huge_page_numbers_get_an_answer_not_a_panic() {
    let app = spawn_app().await;
    let mut browser = signed_in(&app).await;
    for path in [
        "/admin/links?sort=expiry&page=18446744073709551615",
        "/admin/links?status=expired&page=18446744073709551615",
        "/admin/links?page=99999999999999999999999",
        "/admin/links?before=-9223372036854775808",
        "/admin/audit?before=9223372036854775807",
    ] {
        let page = browser.get(path).await;
        assert!(
            page.status == 200 || page.status == 400 || page.status == 403,
            "{path}: {}",
            page.status
        );
    }
}

#[actix_web::test]
async fn during_a_database_outage_admin_pages_are_the_503_page() {
    // A SQLite file has no outage to speak of (a locked file still reads); the servers do.
    let db = Arc::new(TestDb::create().await);
    let Some(server) = db.server_addr() else {
        return;
    };
    let proxy = TcpProxy::start(server).await;
    let app = spawn_via(db.clone(), &proxy.url_for(&db.url), &[]).await;
    let mut browser = signed_in(&app).await;
    assert_eq!(browser.get("/admin/links").await.status, 200);

    proxy.cut();
    let page = browser.get("/admin/links").await;

    assert_eq!(page.status, 503);
    assert!(
        page.body
            .contains("database is busy or could not be reached"),
        "{}",
        page.body
    );
    proxy.restore();
    assert_eq!(browser.get("/admin/links").await.status, 200);
}

#[test]
fn hosts_are_compared_as_dns_compares_them() {
    // One normal form for our hosts…
    assert_eq!(
        DomainHost::parse("S.Example.COM.").unwrap().to_string(),
        "s.example.com"
    );
    assert_eq!(
        DomainHost::parse("bücher.example:8443")
            .unwrap()
            .to_string(),
        "xn--bcher-kva.example:8443"
    );
    // …and no host that DNS would not resolve.
    for bad in [
        "a\"b.com",
        "*.example.com",
        "a..b.com",
        "-a.example.com",
        "a_b.example.com",
    ] {
        assert!(DomainHost::parse(bad).is_err(), "{bad} was accepted");
    }
    // A target on our host, written another way, is still a loop.
    let own = [
        OwnHost {
            host: "s.example.com".into(),
            port: None,
        },
        OwnHost {
            host: "localhost".into(),
            port: Some(8080),
        },
    ];
    let rules = UrlRules {
        max_length: 4096,
        own_hosts: &own,
    };
    for looping in [
        "https://S.EXAMPLE.COM/x",
        "https://s.example.com./x",
        "http://s.example.com.:8080/x",
        "https://%73.example.com/x",
        "https://s.example.com../x",
        "https://s.example.com.../x",
        "http://localhost..:8080/x",
        "http://LOCALHOST.:8080/x",
        "http://%6Cocalhost...:8080/x",
    ] {
        assert!(
            matches!(
                TargetUrl::parse(looping, &rules),
                Err(TargetUrlError::OwnDomain(_))
            ),
            "{looping}"
        );
    }
    // Another port of the machine is not ours, nor is an address (another host, even when it
    // reaches this machine); a name DNS cannot hold is no host at all.
    assert!(TargetUrl::parse("http://localhost:9090/x", &rules).is_ok());
    assert!(TargetUrl::parse("http://127.0.0.1:8080/healthz", &rules).is_ok());
    for empty_label in ["https://example.com../x", "https://a..example.com/x"] {
        assert!(
            matches!(
                TargetUrl::parse(empty_label, &rules),
                Err(TargetUrlError::InvalidHost(_))
            ),
            "{empty_label}"
        );
    }
    assert!(TargetUrl::parse("https://example.com./x", &rules).is_ok());
    assert!(matches!(
        TargetUrl::parse("https://example.com:0/x", &rules),
        Err(TargetUrlError::InvalidPort)
    ));
}

#[actix_web::test]
async fn no_url_field_of_a_link_may_point_at_our_own_host_spelled_another_way() {
    let app = spawn_app().await;
    let api = Api::with_role(&app, "crm", Role::Operator).await;
    let port = app.port;
    for own in [
        format!("http://localhost..:{port}/x"),
        format!("http://LOCALHOST.:{port}/x"),
        format!("http://localhost...:{port}/x"),
    ] {
        for body in [
            json!({"url": own}),
            json!({"url": "https://example.com/a", "fallback_url": own}),
            json!({"url": "https://example.com/a", "targets": [{"rule": "ios", "url": own}]}),
        ] {
            let reply = api.call("POST", "/api/v1/links", Some(body.clone())).await;
            assert_eq!(reply.status, 422, "{body} was accepted: {:?}", reply.body);
            assert!(
                reply.body.to_string().contains("own domains"),
                "{body}: {:?}",
                reply.body
            );
        }
    }
    let listed = api.call("GET", "/api/v1/links", None).await;
    assert_eq!(listed.body["total"], 0, "nothing was stored");
}

#[actix_web::test]
async fn percent_and_underscore_in_a_search_are_characters_not_wildcards() {
    let app = spawn_app().await;
    for url in [
        "https://example.com/a_b",
        "https://example.com/100%25-off",
        "https://example.com/plain",
    ] {
        create_link(&app, url).await;
    }
    let mut browser = signed_in(&app).await;
    let rows = |body: &str| body.matches("class=\"target\"").count();
    assert_eq!(rows(&browser.get("/admin/links?q=_").await.body), 1);
    assert_eq!(rows(&browser.get("/admin/links?q=%25").await.body), 1);
    assert_eq!(rows(&browser.get("/admin/links?q=!").await.body), 0);
    assert_eq!(rows(&browser.get("/admin/links?q=example").await.body), 3);
}

#[actix_web::test]
async fn metrics_answer_only_on_the_admin_hosts_or_their_own_address() {
    let app = spawn_app_with(&["--admin-hosts", "admin.example.test"]).await;
    let status_on = |host: &'static str| {
        let request = app
            .client
            .get(app.url("/metrics"))
            .insert_header(("host", host))
            .insert_header(("x-forwarded-host", "admin.example.test"));
        async move { request.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(status_on("s.example.test").await, 404);
    assert_eq!(status_on("admin.example.test").await, 200);

    // On a separate address, and only there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let address = format!("127.0.0.1:{port}");
    let app = spawn_app_with(&["--metrics-listen", &address]).await;
    let main = app.client.get(app.url("/metrics")).send().await.unwrap();
    assert_eq!(main.status().as_u16(), 404);
    let mut scrape = app
        .client
        .get(format!("http://{address}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(scrape.status().as_u16(), 200);
    let body = scrape.body().await.unwrap();
    assert!(String::from_utf8_lossy(&body).contains("inklink_"));
}

fn operator(id: i64, name: &str) -> Principal {
    Principal {
        id,
        name: name.to_owned(),
        role: Role::Operator,
    }
}

async fn link_by(app: &TestApp, url: &str, actor: &Actor) -> String {
    let target = links::parse_target(&app.core, url).await.unwrap();
    links::create(&app.core, links::NewLink::to(target), actor)
        .await
        .unwrap()
        .link
        .compression_code
        .to_string()
}

#[actix_web::test]
async fn a_key_named_like_a_user_or_the_cli_cannot_change_their_links() {
    // Arrange: links by the user 'admin' and by the CLI; operator keys named 'admin' and 'cli'.
    let app = spawn_app().await;
    add_user(&app, "admin", "admin-password", Role::Admin).await;
    let admin = users::find(&app.core.db, &Username::parse("admin").unwrap())
        .await
        .unwrap()
        .unwrap();
    let by_admin = link_by(
        &app,
        "https://example.com/admins",
        &Actor::User(Principal {
            id: admin.id,
            name: "admin".into(),
            role: Role::Admin,
        }),
    )
    .await;
    let by_cli = link_by(&app, "https://example.com/clis", &Actor::Cli).await;
    let key_admin = Api::with_role(&app, "admin", Role::Operator).await;
    let key_cli = Api::with_role(&app, "cli", Role::Operator).await;

    // Act and assert: neither key may change the other principal's link…
    for (api, code) in [(&key_admin, &by_admin), (&key_cli, &by_cli)] {
        let reply = api
            .call("DELETE", &format!("/api/v1/links/{code}"), None)
            .await;
        assert_eq!(reply.status, 403, "{}", reply.body);
    }
    // …but each changes the links it made itself.
    let created = key_admin
        .call(
            "POST",
            "/api/v1/links",
            Some(serde_json::json!({"url": "https://example.com/keys-own"})),
        )
        .await;
    let own = created.body["code"].as_str().unwrap().to_owned();
    let reply = key_admin
        .call("DELETE", &format!("/api/v1/links/{own}"), None)
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
}

#[actix_web::test]
async fn operators_change_only_their_own_links_in_the_admin_ui_too() {
    // Arrange: a link by the CLI, and olivia signed in as an operator.
    let app = spawn_app().await;
    let theirs = link_by(&app, "https://example.com/theirs", &Actor::Cli).await;
    let mut olivia = signed_in(&app).await;
    let csrf = olivia.csrf("/admin/links/new").await;
    let made = olivia
        .post(
            "/admin/links",
            &[("csrf", &csrf), ("url", "https://example.com/olivias")],
        )
        .await;
    assert_eq!(made.status, 303);
    let mine = listing::list(
        &app.core.db,
        &Default::default(),
        listing::Order::Newest,
        listing::Paging::Before(None),
        1,
    )
    .await
    .unwrap()[0]
        .compression_code
        .to_string();

    // The list offers her the actions on her own link only.
    let list = olivia.get("/admin/links").await;
    assert!(
        !list
            .body
            .contains(&format!("/admin/links/{theirs}/disable"))
    );
    assert!(list.body.contains(&format!("/admin/links/{mine}/disable")));

    // Act and assert: someone else's link is refused, her own is not.
    for action in ["disable", "enable"] {
        let page = olivia
            .post(
                &format!("/admin/links/{theirs}/{action}"),
                &[("csrf", &csrf)],
            )
            .await;
        assert_eq!(page.status, 403, "{action}");
    }
    let page = olivia
        .post(&format!("/admin/links/{theirs}/delete"), &[("csrf", &csrf)])
        .await;
    assert_eq!(page.status, 403);
    let page = olivia
        .post(&format!("/admin/links/{mine}/disable"), &[("csrf", &csrf)])
        .await;
    assert_eq!(page.status, 303);
    // An admin changes anyone's.
    let mut ada = signed_in_admin(&app).await;
    let csrf = ada.csrf("/admin/links").await;
    let page = ada
        .post(
            &format!("/admin/links/{theirs}/disable"),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(page.status, 303);
}

#[actix_web::test]
async fn existing_links_get_their_creator_by_id_when_the_migration_runs() {
    // Arrange: a user and a key both named 'alice', and the CLI, each made a link.
    let app = spawn_app().await;
    let db = &app.core.db;
    add_user(&app, "alice", "alice-password", Role::Operator).await;
    let user = users::find(db, &Username::parse("alice").unwrap())
        .await
        .unwrap()
        .unwrap();
    let key = api_keys::create(
        db,
        &KeyName::parse("alice").unwrap(),
        Role::Operator,
        None,
        &Actor::System,
    )
    .await
    .unwrap()
    .key;
    link_by(
        &app,
        "https://example.com/u",
        &Actor::User(operator(user.id, "alice")),
    )
    .await;
    link_by(
        &app,
        "https://example.com/k",
        &Actor::ApiKey(operator(key.id, "alice")),
    )
    .await;
    link_by(&app, "https://example.com/c", &Actor::Cli).await;
    let creators = || async {
        let mut rows: Vec<_> = url_map::Entity::find()
            .all(db)
            .await
            .unwrap()
            .into_iter()
            .map(|l| (l.long_url, l.creator_kind, l.creator_id))
            .collect();
        rows.sort();
        rows
    };
    let made = creators().await;
    assert_eq!(
        made,
        [
            ("https://example.com/c".into(), Some("cli".into()), None),
            (
                "https://example.com/k".into(),
                Some("api_key".into()),
                Some(key.id)
            ),
            (
                "https://example.com/u".into(),
                Some("user".into()),
                Some(user.id)
            ),
        ]
    );

    // Act: as if they were made before the principal was recorded: that migration undone and
    // run again, alone (the migrations after it keep their tables), each in a transaction as
    // the migrator runs it.
    let migrations = Migrator::migrations();
    let principal = migrations
        .iter()
        .find(|m| m.name().contains("link_creator_principal"))
        .unwrap();
    crate::support::migrate_one(db, principal.as_ref(), false).await;
    assert!(
        url_map::Entity::find().all(db).await.is_err(),
        "the principal's columns are gone"
    );
    crate::support::migrate_one(db, principal.as_ref(), true).await;

    // Assert
    assert_eq!(creators().await, made);
}

/// Clicks are stored and counted all the time. An operator's change waits for that writer;
/// it must never fail because the writer committed while the change was reading (SQLite
/// answers a transaction that reads and then writes "database is locked" at once, with no
/// wait that could help).
#[actix_web::test]
async fn operators_changes_succeed_while_clicks_are_stored_and_counted() {
    // Arrange: visitors click one link without pause.
    let app = spawn_app().await;
    let db = &app.core.db;
    let link = create_link(&app, "https://example.com/busy").await;
    let code = ShortCode::parse(&link.link.compression_code).unwrap();
    add_user(&app, "olivia", "operator-pass", Role::Operator).await;
    let olivia = users::find(db, &Username::parse("olivia").unwrap())
        .await
        .unwrap()
        .unwrap()
        .id;
    let clicking = Arc::new(AtomicBool::new(true));
    let visitors: Vec<_> = (0..4)
        .map(|_| {
            let (client, url, clicking) =
                (client(), app.url(&format!("/{code}")), clicking.clone());
            actix_web::rt::spawn(async move {
                let mut answered = 0u32;
                while clicking.load(Ordering::Relaxed) {
                    if client.get(&url).send().await.is_ok() {
                        answered += 1;
                    }
                }
                answered
            })
        })
        .collect();
    crate::analytics::wait_written(&app, 1).await;
    let written = || {
        app.state
            .clicks
            .metrics()
            .events_written
            .load(Ordering::Relaxed)
    };
    let before = written();

    // Act: the changes an operator makes while a campaign runs, again and again.
    for round in 0..40 {
        let host = DomainHost::parse(&format!("busy-{round}.example")).unwrap();
        let new = domains::add(db, &host, Protocol::Https, false, &Actor::Cli)
            .await
            .unwrap_or_else(|err| panic!("round {round}: adding {host}: {err}"));
        let old = domains::default_domain(db).await.unwrap().unwrap().id;
        domains::rotate(db, old, new.id, &Actor::Cli)
            .await
            .unwrap_or_else(|err| panic!("round {round}: rotating to {host}: {err}"));
        for status in [LinkStatus::Disabled, LinkStatus::Active] {
            links::set_status(&app.core, &code, status, &Actor::Cli)
                .await
                .unwrap_or_else(|err| panic!("round {round}: setting {status:?}: {err}"));
        }
        create_link(&app, &format!("https://example.com/busy/{round}")).await;
        for change in [UserChange::Disable, UserChange::Enable] {
            users::change(db, olivia, change, None, &Actor::Cli)
                .await
                .unwrap_or_else(|err| panic!("round {round}: changing olivia: {err}"));
        }
    }

    // Assert: every change above went through (it would have panicked) while clicks were
    // being stored.
    let during = written() - before;
    clicking.store(false, Ordering::Relaxed);
    for visitor in visitors {
        assert!(visitor.await.unwrap() > 0);
    }
    let default = domains::default_domain(db).await.unwrap().unwrap();
    assert_eq!(default.host, "busy-39.example");
    assert!(during > 40, "only {during} clicks were stored meanwhile");
}

/// The journal, the spool and the file of refused rows hold visitors' addresses, agents and
/// referrers: the service's user alone may read them, and a directory inklink makes for them is
/// its alone too. A spool file an older version left readable is closed when it is next written.
#[test]
fn journal_and_spool_files_are_readable_by_the_service_alone() {
    use std::os::unix::fs::PermissionsExt;
    let mode =
        |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    let root = std::env::temp_dir().join(format!("inklink-private-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let dir = root.join("spool");
    inklink::clicks::spool::check_dir(&dir).unwrap();
    assert_eq!(mode(&dir), 0o700, "a spool directory inklink makes");

    let journal = inklink::clicks::journal::Journal::new(&dir, 8080, 7);
    let at = NaiveDate::from_ymd_opt(2026, 11, 26)
        .unwrap()
        .and_hms_opt(9, 0, 0)
        .unwrap();
    let mut click = crate::support::page_view("abc", 1, at, "203.0.113.9".parse().unwrap());
    journal.append(&mut click);
    let journals: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.to_string_lossy().contains("inklink-journal-"))
        .collect();
    assert!(!journals.is_empty(), "the click is journaled");
    for path in &journals {
        assert_eq!(mode(path), 0o600, "{}", path.display());
    }

    let mut spool = Spool::open(&dir.join("inklink-spool-8080.jsonl")).unwrap();
    spool.append_clicks(std::slice::from_ref(&click)).unwrap();
    assert_eq!(mode(&dir.join("inklink-spool-8080.jsonl")), 0o600);

    let older = dir.join("inklink-rejected-8080.jsonl");
    std::fs::write(&older, "").unwrap();
    std::fs::set_permissions(&older, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut enricher = inklink::clicks::enrich::Enricher::new(
        inklink::clicks::geoip::GeoIp::open(None, "en"),
        [1; 16],
        7,
    );
    append_rows(&older, &[enricher.enrich(click)]).unwrap();
    assert_eq!(mode(&older), 0o600, "closed when next written");
    std::fs::remove_dir_all(&root).unwrap();
}
