//! INKLINK_ADMIN_HOSTS: the admin UI and the API answer on the admin hosts only; the public
//! short-link hosts serve redirects and nothing else.

use crate::cli::inklink;
use crate::support::{TestApp, TestDb, spawn_app_with};
use inklink::rules::{KeyName, Role};
use inklink::services::{Actor, api_keys};

/// Status and body of a request to `path` on `host`, with the API key when one is given.
async fn on_host(
    app: &TestApp,
    method: &str,
    host: &str,
    path: &str,
    key: Option<&str>,
) -> (u16, String) {
    let method = actix_web::http::Method::from_bytes(method.as_bytes()).unwrap();
    let mut request = app
        .client
        .request(method, app.url(path))
        .insert_header(("host", host));
    if let Some(key) = key {
        request = request.insert_header(("authorization", format!("Bearer {key}")));
    }
    let mut response = if request.get_method() == actix_web::http::Method::POST {
        request
            .send_json(&serde_json::json!({"url": "https://example.com/from-public-host"}))
            .await
    } else {
        request.send().await
    }
    .expect("request sent");
    let body = response.body().limit(1 << 20).await.expect("body");
    (
        response.status().as_u16(),
        String::from_utf8_lossy(&body).into_owned(),
    )
}

#[actix_web::test]
async fn admin_ui_and_api_answer_only_on_admin_hosts_and_public_hosts_only_redirect() {
    let app = spawn_app_with(&["--admin-hosts", "Admin.Example.test, ops.example.test:8443"]).await;
    let key = api_keys::create(
        &app.core.db,
        &KeyName::parse("hosts").unwrap(),
        Role::Operator,
        None,
        &Actor::System,
    )
    .await
    .unwrap()
    .token
    .as_str()
    .to_owned();
    let key = Some(key.as_str());

    // On an admin host: the login page and the API, whatever the port when none is configured,
    // and host names compare without regard to case.
    for host in [
        "admin.example.test",
        "ADMIN.example.test:8080",
        "ops.example.test:8443",
    ] {
        let (status, body) = on_host(&app, "GET", host, "/admin/login", None).await;
        assert_eq!(status, 200, "login page on {host}");
        assert!(body.contains("password"), "login form on {host}");
        let (status, _) = on_host(&app, "GET", host, "/api/v1/links", key).await;
        assert_eq!(status, 200, "API on {host}");
    }

    // A link made through the API on the admin host redirects on a public host.
    let (status, created) = on_host(&app, "POST", "admin.example.test", "/api/v1/links", key).await;
    assert_eq!(status, 201, "{created}");
    let code = serde_json::from_str::<serde_json::Value>(&created).unwrap()["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, _) = on_host(&app, "GET", "s.example.test", &format!("/{code}"), None).await;
    assert_eq!(status, 302);

    // On a public host (or the admin host's name on a port it is not configured for) the same
    // paths are unknown short codes: no login page, no API, and nothing is created.
    for host in ["s.example.test", "ops.example.test:9000", "127.0.0.1"] {
        for path in [
            "/admin",
            "/admin/login",
            "/admin/links",
            "/api/openapi.json",
        ] {
            let (status, body) = on_host(&app, "GET", host, path, None).await;
            assert_eq!(status, 404, "{path} on {host}");
            assert!(
                !body.contains("password"),
                "{path} on {host} shows no login form"
            );
        }
        let (status, _) = on_host(&app, "GET", host, "/api/v1/links", key).await;
        assert_eq!(status, 404, "API list on {host}");
        let (status, _) = on_host(&app, "POST", host, "/api/v1/links", key).await;
        assert_eq!(status, 404, "API create on {host}");
    }
    let (_, list) = on_host(&app, "GET", "admin.example.test", "/api/v1/links", key).await;
    assert_eq!(
        list.matches("from-public-host").count(),
        1,
        "only the link made on the admin host exists: {list}"
    );

    // Health stays on every host, for load balancers that ask by address.
    let (status, _) = on_host(&app, "GET", "s.example.test", "/healthz", None).await;
    assert_eq!(status, 200);
}

#[actix_web::test]
async fn an_admin_host_that_is_not_a_host_is_refused_at_start() {
    let db = TestDb::create().await;
    let run = inklink(
        &db,
        &[
            "--admin-hosts",
            "https://admin.example.test/",
            "migrate",
            "status",
        ],
    );
    assert_ne!(run.code, 0);
    assert!(
        run.stderr.contains("INKLINK_ADMIN_HOSTS") || run.stderr.contains("--admin-hosts"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("without a scheme"), "{}", run.stderr);
}
