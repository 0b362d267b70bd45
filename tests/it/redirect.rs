//! The public redirect path over real HTTP.

use crate::support::{create_link, spawn_app, spawn_app_with};
use chrono::{Duration as Span, Utc};
use futures_util::future::join_all;
use inklink::db::entities::url_map::{self, LinkStatus};
use inklink::rules::{RedirectStatus, ShortCode};
use inklink::services::Actor;
use inklink::services::links::{self, NewLink};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use std::time::Duration;

#[actix_web::test]
async fn a_link_redirects_with_302_location_and_no_cache() {
    let app = spawn_app().await;
    let saved = create_link(&app, "https://example.com/a?x=1").await;
    assert!(
        saved
            .short_url()
            .starts_with(&format!("http://localhost:{}/", app.port))
    );
    let response = app.get(&format!("/{}", saved.link.compression_code)).await;
    assert_eq!(response.status().as_u16(), 302);
    assert_eq!(
        response.headers().get("location").unwrap(),
        "https://example.com/a?x=1"
    );
    assert_eq!(
        response.headers().get("cache-control").unwrap(),
        "private, max-age=0"
    );
}

#[actix_web::test]
async fn head_answers_like_get_without_a_body() {
    let app = spawn_app().await;
    let saved = create_link(&app, "https://example.com/head").await;
    let mut response = app
        .client
        .head(app.url(&format!("/{}", saved.link.compression_code)))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 302);
    assert_eq!(
        response.headers().get("location").unwrap(),
        "https://example.com/head"
    );
    assert!(response.body().await.unwrap().is_empty());
    let missing = app
        .client
        .head(app.url("/nothing-here"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status().as_u16(), 404);
}

#[actix_web::test]
async fn an_unknown_code_gets_the_friendly_404_page() {
    let app = spawn_app().await;
    let mut response = app.get("/NoSuchCode").await;
    assert_eq!(response.status().as_u16(), 404);
    assert!(
        response
            .headers()
            .get("content-type")
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let body = String::from_utf8(response.body().await.unwrap().to_vec()).unwrap();
    assert!(body.contains("This short link does not exist"), "{body}");
    assert!(body.contains("/static/inklink.css"));
    let (status, _, css) = app.fetch("/static/inklink.css").await;
    assert_eq!(status, 200);
    assert!(css.contains("font"));
}

#[actix_web::test]
async fn a_disabled_link_answers_410_and_comes_back_when_enabled() {
    let app = spawn_app_with(&["--cache-ttl", "1"]).await;
    let saved = create_link(&app, "https://example.com/campaign").await;
    let path = format!("/{}", saved.link.compression_code);
    let code = ShortCode::parse(&saved.link.compression_code).unwrap();
    assert_eq!(app.fetch(&path).await.0, 302);

    links::set_status(&app.core, &code, LinkStatus::Disabled, &Actor::Cli)
        .await
        .unwrap();
    // Another process (the CLI) changed it: this instance notices within the cache TTL.
    actix_web::rt::time::sleep(Duration::from_millis(1100)).await;
    let (status, location, body) = app.fetch(&path).await;
    assert_eq!(status, 410);
    assert_eq!(location, None);
    assert!(body.contains("no longer available"), "{body}");

    links::set_status(&app.core, &code, LinkStatus::Active, &Actor::Cli)
        .await
        .unwrap();
    assert_eq!(app.fetch(&path).await.0, 302);
}

#[actix_web::test]
async fn an_expired_link_answers_410_even_while_cached() {
    let app = spawn_app().await;
    let target =
        inklink::services::links::parse_target(&app.core, "https://example.com/flash-sale")
            .await
            .unwrap();
    let new = NewLink {
        expires_at: Some(Utc::now() + Span::milliseconds(1500)),
        ..NewLink::to(target)
    };
    let saved = links::create(&app.core, new, &Actor::Cli).await.unwrap();
    let path = format!("/{}", saved.link.compression_code);
    assert_eq!(app.fetch(&path).await.0, 302);
    actix_web::rt::time::sleep(Duration::from_millis(1600)).await;
    let (status, _, body) = app.fetch(&path).await;
    assert_eq!(status, 410);
    assert!(body.contains("disabled or has expired"));
}

#[actix_web::test]
async fn query_parameters_of_the_short_url_are_merged_into_the_target() {
    let app = spawn_app().await;
    let plain = create_link(&app, "https://example.com/p")
        .await
        .link
        .compression_code;
    let with_query = create_link(&app, "https://example.com/q?x=1&keep=yes#top")
        .await
        .link
        .compression_code;
    let cases = [
        (
            format!("/{plain}?utm_source=sms"),
            "https://example.com/p?utm_source=sms",
        ),
        (format!("/{plain}?a=1&b=2"), "https://example.com/p?a=1&b=2"),
        (
            format!("/{with_query}?y=2"),
            "https://example.com/q?x=1&keep=yes&y=2#top",
        ),
        // The target's own parameters win over a visitor's.
        (
            format!("/{with_query}?keep=no&z=3"),
            "https://example.com/q?x=1&keep=yes&z=3#top",
        ),
        (
            format!("/{with_query}?keep=no"),
            "https://example.com/q?x=1&keep=yes#top",
        ),
        (
            format!("/{plain}?q=%E4%BD%A0%20x"),
            "https://example.com/p?q=%E4%BD%A0%20x",
        ),
        (format!("/{plain}?"), "https://example.com/p"),
    ];
    for (path, expected) in cases {
        let (status, location, _) = app.fetch(&path).await;
        assert_eq!(status, 302, "{path}");
        assert_eq!(location.as_deref(), Some(expected), "{path}");
    }
}

#[actix_web::test]
async fn query_merge_can_be_switched_off() {
    let app = spawn_app_with(&["--query-merge", "false"]).await;
    let code = create_link(&app, "https://example.com/p")
        .await
        .link
        .compression_code;
    let (_, location, _) = app.fetch(&format!("/{code}?utm_source=sms")).await;
    assert_eq!(location.as_deref(), Some("https://example.com/p"));
}

#[actix_web::test]
async fn redirect_status_per_link_and_global() {
    let app = spawn_app_with(&["--redirect-status", "307"]).await;
    let default = create_link(&app, "https://example.com/d")
        .await
        .link
        .compression_code;
    let response = app.get(&format!("/{default}")).await;
    assert_eq!(response.status().as_u16(), 307);
    assert_eq!(
        response.headers().get("cache-control").unwrap(),
        "private, max-age=0"
    );
    for status in [
        RedirectStatus::MovedPermanently,
        RedirectStatus::PermanentRedirect,
        RedirectStatus::Found,
    ] {
        let target = inklink::services::links::parse_target(&app.core, "https://example.com/s")
            .await
            .unwrap();
        let new = NewLink {
            redirect_status: Some(status),
            ..NewLink::to(target)
        };
        let code = links::create(&app.core, new, &Actor::Cli)
            .await
            .unwrap()
            .link
            .compression_code;
        let response = app.get(&format!("/{code}")).await;
        assert_eq!(response.status().as_u16(), status.code());
        assert_eq!(
            response.headers().get("location").unwrap(),
            "https://example.com/s"
        );
        assert_eq!(
            response.headers().contains_key("cache-control"),
            status.is_temporary()
        );
    }
}

#[actix_web::test]
async fn codes_are_case_sensitive() {
    let app = spawn_app().await;
    for (code, url) in [
        ("abc", "https://example.com/lower"),
        ("ABC", "https://example.com/upper"),
        ("aBc", "https://example.com/mixed"),
    ] {
        let target = inklink::services::links::parse_target(&app.core, url)
            .await
            .unwrap();
        let new = NewLink {
            custom_code: Some(ShortCode::parse(code).unwrap()),
            ..NewLink::to(target)
        };
        links::create(&app.core, new, &Actor::Cli).await.unwrap();
    }
    assert_eq!(
        app.fetch("/abc").await.1.as_deref(),
        Some("https://example.com/lower")
    );
    assert_eq!(
        app.fetch("/ABC").await.1.as_deref(),
        Some("https://example.com/upper")
    );
    assert_eq!(
        app.fetch("/aBc").await.1.as_deref(),
        Some("https://example.com/mixed")
    );
    assert_eq!(app.fetch("/Abc").await.0, 404);
}

/// Codes may be the first segment of a fixed route's path (`/lang/{tag}`): the code still
/// redirects, and the route still answers.
#[actix_web::test]
async fn a_code_named_like_a_fixed_routes_prefix_redirects() {
    let app = spawn_app().await;
    let target = inklink::services::links::parse_target(&app.core, "https://example.com/lang")
        .await
        .unwrap();
    let new = NewLink {
        custom_code: Some(ShortCode::parse("lang").unwrap()),
        ..NewLink::to(target)
    };
    links::create(&app.core, new, &Actor::Cli).await.unwrap();
    let (status, location, _) = app.fetch("/lang").await;
    assert_eq!(
        (status, location.as_deref()),
        (302, Some("https://example.com/lang"))
    );
    let switched = app.get("/lang/en").await;
    assert_eq!(switched.status().as_u16(), 303, "{switched:?}");
    assert_eq!(app.get("/lang/").await.status().as_u16(), 404);
}

/// The redirect answers any path no other route claims, so it must claim only `GET` and
/// `HEAD` of exactly one segment; the fixed routes beside it keep working.
#[actix_web::test]
async fn only_get_or_head_of_one_segment_is_a_redirect() {
    let app = spawn_app().await;
    let code = create_link(&app, "https://example.com/one")
        .await
        .link
        .compression_code;
    let encoded: String = code.bytes().map(|b| format!("%{b:02X}")).collect();
    assert_eq!(
        app.fetch(&format!("/{encoded}")).await.0,
        302,
        "percent-encoded"
    );
    for path in [
        format!("/{code}/"),
        format!("/{code}/x"),
        format!("//{code}"),
        format!("/static/{code}"),
    ] {
        assert_eq!(app.fetch(&path).await.0, 404, "{path}");
    }
    for method in [
        actix_web::http::Method::POST,
        actix_web::http::Method::PUT,
        actix_web::http::Method::DELETE,
        actix_web::http::Method::OPTIONS,
    ] {
        let response = app
            .client
            .request(method.clone(), app.url(&format!("/{code}")))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 404, "{method}");
    }
    let metrics = app.state.clicks.metrics();
    assert_eq!(
        metrics.events_queued.get(),
        1,
        "only the redirect was recorded"
    );
    let (status, _, css) = app.fetch("/static/inklink.css").await;
    assert_eq!(status, 200);
    assert!(!css.is_empty());
    assert_eq!(app.fetch("/static").await.0, 404);
    assert_eq!(app.fetch("/robots.txt").await.0, 200);
    assert_eq!(app.fetch("/healthz").await.0, 200);
}

#[actix_web::test]
async fn malformed_paths_get_4xx_never_5xx() {
    let app = spawn_app().await;
    let long = format!("/{}", "a".repeat(5000));
    let paths = [
        "/%00",
        "/a/b/c",
        "/%FF%FE",
        "/%",
        "/%zz",
        "/..",
        "/.%2e/etc/passwd",
        "/a%2Fb",
        "/admin",
        "/api",
        "/static/nothing.js",
        "/favicon.ico",
        "/%E4%BD%A0%E5%A5%BD",
        "/a b",
        "/<script>",
        "/a;b",
        "/robots.txt",
        "/healthz/x",
        "/-",
        "/_",
        long.as_str(),
    ];
    for path in paths {
        let request = app.client.get(app.url(path)).send().await;
        let status = match request {
            Ok(response) => response.status().as_u16(),
            // A path the client itself refuses to send cannot reach the server at all.
            Err(_) => continue,
        };
        assert!(
            (200..500).contains(&status) && status != 302,
            "{path}: {status}"
        );
    }
    // And over a raw socket, bytes no client library would send. Blocking reads run off the
    // test's runtime thread, which also runs the server's link lookups.
    let port = app.port;
    actix_web::rt::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        for raw in [
            &b"GET /\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n"[..],
            b"GET /%00%00 HTTP/1.1\r\nHost: x\r\n\r\n",
            b"POST /abc HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
        ] {
            let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            stream.write_all(raw).unwrap();
            let mut head = [0u8; 12];
            stream
                .read_exact(&mut head)
                .unwrap_or_else(|err| panic!("{:?}: {err}", String::from_utf8_lossy(raw)));
            let status: u16 = std::str::from_utf8(&head[9..12]).unwrap().parse().unwrap();
            assert!(
                (400..500).contains(&status),
                "{:?}: {status}",
                String::from_utf8_lossy(raw)
            );
        }
    })
    .await
    .unwrap();
}

#[actix_web::test]
async fn a_cached_code_costs_no_database_query() {
    let app = spawn_app().await;
    let code = create_link(&app, "https://example.com/hot")
        .await
        .link
        .compression_code;
    let path = format!("/{code}");
    assert_eq!(app.fetch(&path).await.0, 302);
    let after_first = app.state.resolver.queries();
    for _ in 0..50 {
        assert_eq!(app.fetch(&path).await.0, 302);
    }
    assert_eq!(app.state.resolver.queries(), after_first);
    // Proof that the answers come from memory: remove the row behind the cache's back.
    url_map::Entity::delete_many()
        .filter(url_map::Column::CompressionCode.eq(code.as_str()))
        .exec(&app.core.db)
        .await
        .unwrap();
    assert_eq!(app.fetch(&path).await.0, 302);
    // Unknown codes are cached too.
    assert_eq!(app.fetch("/unknown1").await.0, 404);
    let after_unknown = app.state.resolver.queries();
    for _ in 0..20 {
        assert_eq!(app.fetch("/unknown1").await.0, 404);
    }
    assert_eq!(app.state.resolver.queries(), after_unknown);
}

#[actix_web::test]
async fn a_flood_of_random_codes_is_looked_up_in_batches() {
    let app = spawn_app().await;
    let known = create_link(&app, "https://example.com/known")
        .await
        .link
        .compression_code;
    let mut codes: Vec<ShortCode> = (0..1000)
        .map(|n| ShortCode::parse(&format!("rnd{n:05}")).unwrap())
        .collect();
    codes.push(ShortCode::parse(&known).unwrap());
    let before = app.state.resolver.queries();
    let answers = join_all(codes.iter().map(|code| app.state.resolver.resolve(code))).await;
    let queries = app.state.resolver.queries() - before;
    // Batches grow while queries are in flight; how large depends on the database's speed
    // (and join_all hands the executor back every 32 futures), so the bound is loose: without
    // batching this would be 1,001 queries.
    assert!(
        queries <= 100,
        "{queries} queries for {} lookups",
        codes.len()
    );
    let found: Vec<_> = answers
        .into_iter()
        .map(|a| a.unwrap())
        .filter(Option::is_some)
        .collect();
    assert_eq!(found.len(), 1);
    // The same flood again is answered from the cache of unknown codes.
    join_all(codes.iter().map(|code| app.state.resolver.resolve(code))).await;
    assert_eq!(app.state.resolver.queries() - before, queries);
}

#[actix_web::test]
async fn check_characters_turn_away_typos_without_a_lookup() {
    let app = spawn_app_with(&["--code-check-char", "true"]).await;
    let code = create_link(&app, "https://example.com/checked")
        .await
        .link
        .compression_code;
    assert_eq!(code.len(), 7);
    assert_eq!(app.fetch(&format!("/{code}")).await.0, 302);
    let mut typo = code.to_string().into_bytes();
    typo[2] = if typo[2] == b'a' { b'b' } else { b'a' };
    let typo = String::from_utf8(typo).unwrap();
    let before = app.state.resolver.queries();
    assert_eq!(app.fetch(&format!("/{typo}")).await.0, 404);
    assert_eq!(app.state.resolver.queries(), before);
}

#[actix_web::test]
async fn healthz_reports_the_database() {
    let app = spawn_app().await;
    let (status, _, body) = app.fetch("/healthz").await;
    assert_eq!(status, 200);
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(json["status"], "ok");
    assert_eq!(json["database"], "ok");
    let (status, _, home) = app.fetch("/").await;
    assert_eq!(status, 200);
    assert!(home.contains("serves short links"));
}

#[actix_web::test]
async fn unchanged_links_stay_cached_past_the_ttl_and_changes_still_show_within_it() {
    let app = spawn_app_with(&["--cache-ttl", "1"]).await;
    let saved = create_link(&app, "https://example.com/hot").await;
    let path = format!("/{}", saved.link.compression_code);
    // Its creation is a change too, handled at the next two looks; after that it is hot.
    actix_web::rt::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(app.fetch(&path).await.0, 302);
    let queries = app.state.resolver.queries();
    // Three TTLs later, nothing changed: the hot link is still answered from the cache.
    actix_web::rt::time::sleep(Duration::from_millis(3200)).await;
    assert_eq!(app.fetch(&path).await.0, 302);
    assert_eq!(
        app.state.resolver.queries(),
        queries,
        "no lookup for an unchanged link"
    );
    // A change made elsewhere (not through this instance's cache) shows within the TTL.
    let code = ShortCode::parse(&saved.link.compression_code).unwrap();
    links::set_status(&app.core, &code, LinkStatus::Disabled, &Actor::Cli)
        .await
        .unwrap();
    actix_web::rt::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(app.fetch(&path).await.0, 410);
    // So does a new link for a code that was asked for before it existed.
    assert_eq!(app.fetch("/LaterCode").await.0, 404);
    let target = inklink::services::links::parse_target(&app.core, "https://example.com/later")
        .await
        .unwrap();
    links::create(
        &app.core,
        links::NewLink {
            custom_code: Some(ShortCode::parse("LaterCode").unwrap()),
            ..links::NewLink::to(target)
        },
        &Actor::Cli,
    )
    .await
    .unwrap();
    actix_web::rt::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(app.fetch("/LaterCode").await.0, 302);
}

/// An import of more links than the watcher reads one by one clears the cache, and must not
/// go on clearing it at every look while the import is recent.
#[actix_web::test]
async fn after_a_bulk_import_the_cache_fills_again_at_once() {
    let app = spawn_app_with(&["--cache-ttl", "1"]).await;
    let target = inklink::services::links::parse_target(&app.core, "https://example.com/bulk")
        .await
        .unwrap();
    let created =
        links::create_many(&app.core, vec![NewLink::to(target); 10_050], &Actor::Cli).await;
    let code = created[0].as_ref().unwrap().link.compression_code.clone();
    let path = format!("/{code}");
    // The import is seen (and the cache cleared) at the next two looks.
    actix_web::rt::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(app.fetch(&path).await.0, 302);
    let queries = app.state.resolver.queries();
    // Well within the import's overlap window (ten seconds), the link stays cached.
    actix_web::rt::time::sleep(Duration::from_millis(3200)).await;
    assert_eq!(app.fetch(&path).await.0, 302);
    assert_eq!(
        app.state.resolver.queries(),
        queries,
        "the imported link is answered from the cache"
    );
}
