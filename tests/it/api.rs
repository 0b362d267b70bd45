//! The REST API over HTTP: every endpoint, every error status, keys and their roles, and
//! many clients shortening at once.

use crate::support::{TestApp, create_link, spawn_app, spawn_app_with};
use inklink::rules::{KeyName, Role};
use inklink::services::{Actor, api_keys};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};

pub struct Api<'a> {
    app: &'a TestApp,
    key: String,
}

pub struct Reply {
    pub status: u16,
    pub body: Value,
    pub headers: actix_web::http::header::HeaderMap,
}

impl<'a> Api<'a> {
    pub async fn with_role(app: &'a TestApp, name: &str, role: Role) -> Api<'a> {
        let issued = api_keys::create(
            &app.core.db,
            &KeyName::parse(name).unwrap(),
            role,
            None,
            &Actor::System,
        )
        .await
        .unwrap();
        Api {
            app,
            key: issued.token.as_str().to_owned(),
        }
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    /// A client with a key issued elsewhere.
    pub fn with_key(app: &'a TestApp, key: &str) -> Api<'a> {
        Api {
            app,
            key: key.to_owned(),
        }
    }

    pub fn request(&self, method: &str, path: &str) -> awc::ClientRequest {
        let method = actix_web::http::Method::from_bytes(method.as_bytes()).unwrap();
        let request = self.app.client.request(method, self.app.url(path));
        match self.key.is_empty() {
            true => request,
            false => request.insert_header(("authorization", format!("Bearer {}", self.key))),
        }
    }

    async fn finish(
        response: Result<
            awc::ClientResponse<
                impl futures_util::Stream<
                    Item = Result<actix_web::web::Bytes, awc::error::PayloadError>,
                > + Unpin,
            >,
            awc::error::SendRequestError,
        >,
    ) -> Reply {
        let mut response = response.expect("request sent");
        let bytes = response.body().limit(64 << 20).await.expect("body");
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or_else(|_| {
                panic!(
                    "not JSON ({}): {}",
                    response.status(),
                    String::from_utf8_lossy(&bytes)
                )
            })
        };
        Reply {
            status: response.status().as_u16(),
            body,
            headers: response.headers().clone(),
        }
    }

    pub async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Reply {
        let request = self.request(method, path);
        match body {
            Some(body) => Self::finish(request.send_json(&body).await).await,
            None => Self::finish(request.send().await).await,
        }
    }

    pub async fn raw(&self, method: &str, path: &str, body: &'static str) -> Reply {
        Self::finish(
            self.request(method, path)
                .insert_header(("content-type", "application/json"))
                .send_body(body)
                .await,
        )
        .await
    }
}

fn error_code(reply: &Reply) -> &str {
    reply.body["error"]["code"].as_str().unwrap_or_else(|| {
        panic!("an error body: {}", reply.body);
    })
}

fn assert_error(reply: &Reply, status: u16, code: &str, field: Option<&str>) {
    assert_eq!(reply.status, status, "{}", reply.body);
    assert_eq!(error_code(reply), code, "{}", reply.body);
    assert!(
        !reply.body["error"]["message"].as_str().unwrap().is_empty(),
        "a message"
    );
    assert_eq!(
        reply.body["error"]["field"].as_str(),
        field,
        "{}",
        reply.body
    );
}

#[actix_web::test]
async fn shorten_restore_list_edit_revoke_and_stats() {
    let app = spawn_app().await;
    let api = Api::with_role(&app, "crm", Role::Operator).await;
    let empty = api.call("GET", "/api/v1/links", None).await;
    assert_eq!(
        (empty.status, &empty.body),
        (
            200,
            &json!({"items": [], "total": 0, "page": 1, "per_page": 20})
        )
    );
    let beyond = api.call("GET", "/api/v1/links?page=9", None).await;
    assert_eq!(beyond.body["items"], json!([]));

    let created = api
        .call(
            "POST",
            "/api/v1/links",
            Some(json!({
                "url": "https://example.com/spring?utm_source=sms",
                "description": "SMS March",
                "expires_at": "2099-12-31T23:59:59+08:00",
                "redirect_status": 307,
            })),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let link = &created.body;
    let code = link["code"].as_str().unwrap().to_owned();
    assert_eq!(link["url"], "https://example.com/spring?utm_source=sms");
    assert_eq!(
        link["short_url"],
        format!("http://localhost:{}/{code}", app.port)
    );
    assert_eq!(link["domain"], format!("localhost:{}", app.port));
    assert_eq!(link["status"], "active");
    assert_eq!(link["redirect_status"], 307);
    assert_eq!(link["description"], "SMS March");
    assert_eq!(link["expires_at"], "2099-12-31T15:59:59Z");
    assert_eq!(link["version"], 1);
    assert!(link["created_at"].as_str().unwrap().ends_with('Z'));
    let (status, location, _) = app.fetch(&format!("/{code}")).await;
    assert_eq!(
        (status, location.as_deref()),
        (307, Some("https://example.com/spring?utm_source=sms"))
    );

    // Reuse answers 200 with the same link; hash gives the same code for the same URL.
    let reused = api
        .call(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://example.com/spring?utm_source=sms", "reuse": true})),
        )
        .await;
    assert_eq!(
        (reused.status, reused.body["code"].as_str()),
        (200, Some(code.as_str()))
    );
    let custom = api
        .call(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://example.com/c", "code": "Spring-26", "strategy": "hash"})),
        )
        .await;
    assert_eq!(
        (custom.status, custom.body["code"].as_str()),
        (201, Some("Spring-26"))
    );
    let hashed = api
        .call(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://example.com/h", "strategy": "hash"})),
        )
        .await;
    assert_eq!(hashed.status, 201);

    // Restore.
    let got = api
        .call("GET", &format!("/api/v1/links/{code}"), None)
        .await;
    assert_eq!((got.status, &got.body), (200, link));

    // List with a total, filters and pages.
    let page = api.call("GET", "/api/v1/links?per_page=2", None).await;
    assert_eq!(page.status, 200);
    assert_eq!(page.body["total"], 3);
    assert_eq!(page.body["items"].as_array().unwrap().len(), 2);
    assert_eq!(page.body["items"][0]["code"], hashed.body["code"]);
    let second = api
        .call("GET", "/api/v1/links?per_page=2&page=2", None)
        .await;
    assert_eq!(second.body["items"][0]["code"], code.as_str());
    let found = api.call("GET", "/api/v1/links?q=Spring-", None).await;
    assert_eq!(found.body["total"], 1);
    let on_domain = api
        .call(
            "GET",
            &format!("/api/v1/links?domain=localhost:{}&status=active", app.port),
            None,
        )
        .await;
    assert_eq!(on_domain.body["total"], 3);

    // Edit with the version; a stale version is refused.
    let edited = api
        .call(
            "PATCH",
            &format!("/api/v1/links/{code}"),
            Some(json!({"version": 1, "url": "https://example.com/summer", "description": null, "expires_at": null})),
        )
        .await;
    assert_eq!(edited.status, 200, "{}", edited.body);
    assert_eq!(edited.body["url"], "https://example.com/summer");
    assert_eq!(edited.body["description"], Value::Null);
    assert_eq!(edited.body["expires_at"], Value::Null);
    assert_eq!(edited.body["redirect_status"], 307, "absent fields stay");
    assert_eq!(edited.body["version"], 2);
    let (_, location, _) = app.fetch(&format!("/{code}")).await;
    assert_eq!(
        location.as_deref(),
        Some("https://example.com/summer"),
        "the cache was dropped"
    );
    let stale = api
        .call(
            "PATCH",
            &format!("/api/v1/links/{code}"),
            Some(json!({"version": 1, "description": "x"})),
        )
        .await;
    assert_error(&stale, 409, "stale_version", None);
    let disabled = api
        .call(
            "PATCH",
            &format!("/api/v1/links/{code}"),
            Some(json!({"version": 2, "status": "disabled"})),
        )
        .await;
    assert_eq!(
        (disabled.status, &disabled.body["status"]),
        (200, &json!("disabled"))
    );
    assert_eq!(app.fetch(&format!("/{code}")).await.0, 410);
    let enabled = api
        .call(
            "PATCH",
            &format!("/api/v1/links/{code}"),
            Some(json!({"version": 3, "status": "active"})),
        )
        .await;
    assert_eq!(enabled.body["status"], "active");

    // Revoke: 410 at once.
    assert_eq!(app.fetch(&format!("/{code}")).await.0, 307);
    let revoked = api
        .call("DELETE", &format!("/api/v1/links/{code}"), None)
        .await;
    assert_eq!(
        (revoked.status, &revoked.body["status"]),
        (200, &json!("disabled"))
    );
    assert_eq!(app.fetch(&format!("/{code}")).await.0, 410);

    // Stats: zeros for every day of the range before any aggregation.
    let stats = api
        .call(
            "GET",
            &format!("/api/v1/links/{code}/stats?from=2026-01-01&to=2026-01-03"),
            None,
        )
        .await;
    assert_eq!(stats.status, 200, "{}", stats.body);
    assert_eq!(stats.body["days"].as_array().unwrap().len(), 3);
    assert_eq!(
        stats.body["days"][0],
        json!({"date": "2026-01-01", "pv": 0, "uv": 0, "ip": 0, "effective": 0, "ineffective": 0})
    );

    // Domains.
    let domains = api.call("GET", "/api/v1/domains", None).await;
    assert_eq!(domains.status, 200);
    assert_eq!(
        domains.body,
        json!([{"host": format!("localhost:{}", app.port), "protocol": "http", "status": "active", "is_default": true, "replaced_by": null, "health": {"state": "unknown", "checked_at": null, "reason": null}, "standby": false, "failover": "off", "icp_filing": null, "sms_templates": []}])
    );

    // Every action is in the audit log under the key's name.
    let audit: Vec<(String, String)> = inklink::db::entities::audit_log::Entity::find()
        .all(&app.core.db)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.actor_kind == "api_key")
        .map(|e| (e.actor, e.action))
        .collect();
    for action in ["link.create", "link.edit", "link.disable", "link.enable"] {
        assert!(
            audit.iter().any(|(actor, a)| actor == "crm" && a == action),
            "{action} by crm in {audit:?}"
        );
    }
}

use sea_orm::EntityTrait;

#[actix_web::test]
async fn stats_show_real_numbers_once_visits_are_aggregated() {
    let app = spawn_app_with(&["--stats-interval", "3600"]).await;
    let api = Api::with_role(&app, "crm", Role::Operator).await;
    let created = api
        .call(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://example.com/counted"})),
        )
        .await;
    let code = created.body["code"].as_str().unwrap().to_owned();
    for agent in [
        "Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0",
        "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    ] {
        let response = app
            .client
            .get(app.url(&format!("/{code}")))
            .insert_header(("user-agent", agent))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 302);
    }
    crate::analytics::wait_written(&app, 2).await;
    let today = inklink::stats::days::today(app.core.settings.timezone);
    inklink::stats::recount::recompute_day(&app.core.db, app.core.settings.timezone, today)
        .await
        .unwrap();
    let stats = api
        .call("GET", &format!("/api/v1/links/{code}/stats"), None)
        .await;
    let days = stats.body["days"].as_array().unwrap();
    assert_eq!(days.len(), 7, "the last 7 days by default");
    assert_eq!(
        days[6],
        json!({"date": today.to_string(), "pv": 1, "uv": 1, "ip": 1, "effective": 2, "ineffective": 0})
    );
}

#[actix_web::test]
async fn every_error_is_json_with_its_status() {
    let app = spawn_app_with(&["--api-rate-limit", "1000"]).await;
    let api = Api::with_role(&app, "crm", Role::Operator).await;
    let post = |body: Value| api.call("POST", "/api/v1/links", Some(body));

    // 400: malformed JSON, wrong types, unknown fields, bad parameters.
    assert_error(
        &api.raw("POST", "/api/v1/links", "{\"url\": ").await,
        400,
        "bad_request",
        Some("url"),
    );
    assert_error(
        &api.raw("POST", "/api/v1/links", "").await,
        400,
        "bad_request",
        None,
    );
    assert_error(
        &post(json!({"url": 5})).await,
        400,
        "bad_request",
        Some("url"),
    );
    assert_error(
        &post(json!({"url": "https://e.com", "resue": true})).await,
        400,
        "bad_request",
        Some("resue"),
    );
    assert_error(
        &post(json!({"url": "https://e.com", "expires_at": "next week"})).await,
        400,
        "bad_request",
        Some("expires_at"),
    );
    assert_error(
        &post(json!({"url": "https://e.com", "redirect_status": 303})).await,
        400,
        "bad_request",
        Some("redirect_status"),
    );
    assert_error(
        &post(json!({"url": "https://e.com", "strategy": "random"})).await,
        400,
        "bad_request",
        Some("strategy"),
    );
    // serde reads a struct from an array of its fields in order too; the API reads objects.
    let positional = api
        .raw(
            "POST",
            "/api/v1/links",
            "[\"https://example.com/by-position\"]",
        )
        .await;
    assert_error(&positional, 400, "bad_request", None);
    assert!(
        positional.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("expected a JSON object"),
        "{}",
        positional.body
    );
    assert_error(
        &api.call(
            "POST",
            "/api/v1/links/bulk",
            Some(json!({"action": "disable", "filter": ["x"]})),
        )
        .await,
        400,
        "bad_request",
        Some("filter"),
    );
    assert_error(
        &api.call("GET", "/api/v1/links?per_page=500", None).await,
        400,
        "bad_request",
        Some("per_page"),
    );
    assert_error(
        &api.call("GET", "/api/v1/links?page=0", None).await,
        400,
        "bad_request",
        Some("page"),
    );
    assert_error(
        &api.call("GET", "/api/v1/links?page=x", None).await,
        400,
        "bad_request",
        None,
    );
    assert_error(
        &api.call("GET", "/api/v1/links?status=gone", None).await,
        400,
        "bad_request",
        None,
    );
    let link = create_link(&app, "https://example.com/stats").await;
    let code = link.link.compression_code.clone();
    assert_error(
        &api.call(
            "GET",
            &format!("/api/v1/links/{code}/stats?from=2026-13-01"),
            None,
        )
        .await,
        400,
        "bad_request",
        Some("from"),
    );
    assert_error(
        &api.call(
            "GET",
            &format!("/api/v1/links/{code}/stats?to=31.01.2026"),
            None,
        )
        .await,
        400,
        "bad_request",
        Some("to"),
    );
    assert_error(
        &api.call(
            "GET",
            &format!("/api/v1/links/{code}/stats?from=2026-02-01&to=2026-01-01"),
            None,
        )
        .await,
        400,
        "bad_request",
        Some("from"),
    );
    assert_error(
        &api.call(
            "GET",
            &format!("/api/v1/links/{code}/stats?from=2020-01-01&to=2026-01-01"),
            None,
        )
        .await,
        400,
        "bad_request",
        Some("from"),
    );

    // 401: no key, a malformed one, an unknown one, an expired one, a revoked one.
    let anonymous = app.client.get(app.url("/api/v1/domains")).send().await;
    let anonymous = Api::finish(anonymous).await;
    assert_error(&anonymous, 401, "unauthorized", None);
    assert!(anonymous.headers.contains_key("www-authenticate"));
    for key in [
        "nonsense",
        "ik_AAAAAAAA_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    ] {
        let wrong = Api {
            app: &app,
            key: key.to_owned(),
        };
        assert_error(
            &wrong.call("GET", "/api/v1/domains", None).await,
            401,
            "unauthorized",
            None,
        );
    }
    let expiring = api_keys::create(
        &app.core.db,
        &KeyName::parse("old").unwrap(),
        Role::Admin,
        Some(chrono::Utc::now() + chrono::Duration::milliseconds(300)),
        &Actor::System,
    )
    .await
    .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    let expired = Api {
        app: &app,
        key: expiring.token.as_str().to_owned(),
    };
    let reply = expired.call("GET", "/api/v1/domains", None).await;
    assert_error(&reply, 401, "unauthorized", None);
    assert!(
        reply.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("expired")
    );
    let doomed = Api::with_role(&app, "doomed", Role::Admin).await;
    assert_eq!(
        doomed.call("GET", "/api/v1/domains", None).await.status,
        200
    );
    let id = api_keys::list(&app.core.db)
        .await
        .unwrap()
        .into_iter()
        .find(|k| k.name == "doomed")
        .unwrap()
        .id;
    api_keys::revoke(&app.core.db, id, &Actor::System)
        .await
        .unwrap();
    let reply = doomed.call("GET", "/api/v1/domains", None).await;
    assert_error(&reply, 401, "unauthorized", None);
    assert!(
        reply.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("revoked")
    );

    // 403: an operator key changing a link it did not create.
    let theirs = api
        .call(
            "PATCH",
            &format!("/api/v1/links/{code}"),
            Some(json!({"version": 1, "description": "mine now"})),
        )
        .await;
    assert_error(&theirs, 403, "forbidden", None);
    assert_error(
        &api.call("DELETE", &format!("/api/v1/links/{code}"), None)
            .await,
        403,
        "forbidden",
        None,
    );
    let admin = Api::with_role(&app, "ops", Role::Admin).await;
    assert_eq!(
        admin
            .call("DELETE", &format!("/api/v1/links/{code}"), None)
            .await
            .status,
        200
    );

    // 404: unknown codes, malformed codes, unknown endpoints.
    for path in [
        "/api/v1/links/NoSuchCode",
        "/api/v1/links/%00",
        "/api/v1/links/NoSuchCode/stats",
        "/api/v1/nothing",
        "/api/v2/links",
    ] {
        assert_error(&api.call("GET", path, None).await, 404, "not_found", None);
    }
    assert_error(
        &api.call("DELETE", "/api/v1/links/NoSuchCode", None).await,
        404,
        "not_found",
        None,
    );
    assert_error(
        &api.call(
            "PATCH",
            "/api/v1/links/NoSuchCode",
            Some(json!({"version": 1})),
        )
        .await,
        404,
        "not_found",
        None,
    );

    // 405 with Allow.
    let wrong_method = api.call("PUT", "/api/v1/links", None).await;
    assert_error(&wrong_method, 405, "method_not_allowed", None);
    assert_eq!(wrong_method.headers.get("allow").unwrap(), "GET, POST");

    // 409: a custom code that is taken.
    assert_eq!(
        post(json!({"url": "https://e.com/1", "code": "taken"}))
            .await
            .status,
        201
    );
    assert_error(
        &post(json!({"url": "https://e.com/2", "code": "taken"})).await,
        409,
        "code_taken",
        None,
    );

    // 413: a body over the limit.
    let huge = format!("{{\"url\": \"https://e.com/{}\"}}", "a".repeat(300 * 1024));
    let reply = Api::finish(
        api.request("POST", "/api/v1/links")
            .insert_header(("content-type", "application/json"))
            .send_body(huge)
            .await,
    )
    .await;
    assert_error(&reply, 413, "payload_too_large", None);

    // 422: values that parse but break a rule.
    for (body, code, field) in [
        (json!({"url": "ftp://e.com/x"}), "invalid_url", "url"),
        (json!({"url": "not a url"}), "invalid_url", "url"),
        (
            json!({"url": format!("http://localhost:{}/loop", app.port)}),
            "invalid_url",
            "url",
        ),
        (
            json!({"url": "https://e.com", "code": "admin"}),
            "invalid_code",
            "code",
        ),
        (
            json!({"url": "https://e.com", "code": "bad code!"}),
            "invalid_code",
            "code",
        ),
        (
            json!({"url": "https://e.com", "expires_at": "2001-01-01T00:00:00Z"}),
            "expiry_in_past",
            "expires_at",
        ),
        (
            json!({"url": "https://e.com", "domain": "nowhere.example"}),
            "unknown_domain",
            "domain",
        ),
        (
            json!({"url": "https://e.com", "description": "x".repeat(2001)}),
            "invalid_value",
            "description",
        ),
    ] {
        assert_error(&post(body.clone()).await, 422, code, Some(field));
    }
    assert_error(
        &api.call("GET", "/api/v1/links?domain=nowhere.example", None)
            .await,
        422,
        "unknown_domain",
        Some("domain"),
    );

    // Nothing under /api answers with HTML.
    let openapi = app.get("/api/openapi.json").await;
    assert_eq!(openapi.status().as_u16(), 200);
}

#[actix_web::test]
async fn each_key_is_held_to_its_rate_limit() {
    let app = spawn_app_with(&["--api-rate-limit", "5"]).await;
    let api = Api::with_role(&app, "chatty", Role::Operator).await;
    let other = Api::with_role(&app, "quiet", Role::Operator).await;
    for _ in 0..5 {
        assert_eq!(api.call("GET", "/api/v1/domains", None).await.status, 200);
    }
    let limited = api.call("GET", "/api/v1/domains", None).await;
    assert_error(&limited, 429, "rate_limited", None);
    let retry: u64 = limited
        .headers
        .get("retry-after")
        .unwrap()
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "Retry-After {retry}");
    assert_eq!(
        other.call("GET", "/api/v1/domains", None).await.status,
        200,
        "per key"
    );
}

#[actix_web::test]
async fn a_batch_gives_one_result_per_item_in_order() {
    let app = spawn_app().await;
    let api = Api::with_role(&app, "sms", Role::Operator).await;
    let mut items: Vec<Value> = (0..10)
        .map(|i| json!({"url": format!("https://example.com/batch/{i}")}))
        .collect();
    items[3] = json!({"url": "ftp://bad"});
    items[5] = json!({"url": "https://example.com/x", "code": "dup"});
    items[6] = json!({"url": "https://example.com/y", "code": "dup"});
    let reply = api
        .call("POST", "/api/v1/links/batch", Some(json!({"items": items})))
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let results = reply.body["results"].as_array().unwrap();
    assert_eq!(results.len(), 10);
    for (i, result) in results.iter().enumerate() {
        assert_eq!(result["index"], i);
        match i {
            3 => assert_eq!(
                (result["status"].as_u64(), result["error"]["code"].as_str()),
                (Some(422), Some("invalid_url"))
            ),
            6 => assert_eq!(
                (result["status"].as_u64(), result["error"]["code"].as_str()),
                (Some(409), Some("code_taken"))
            ),
            _ => {
                assert_eq!(result["status"], 201, "{result}");
                let code = result["link"]["code"].as_str().unwrap();
                assert_eq!(app.fetch(&format!("/{code}")).await.0, 302);
            }
        }
    }
    // A malformed item makes the request malformed; nothing is created.
    let before = api.call("GET", "/api/v1/links", None).await.body["total"].clone();
    let reply = api
        .call(
            "POST",
            "/api/v1/links/batch",
            Some(json!({"items": [{"url": "https://e.com/ok"}, {"url": 7}]})),
        )
        .await;
    assert_error(&reply, 400, "bad_request", Some("items[1].url"));
    assert_eq!(
        api.call("GET", "/api/v1/links", None).await.body["total"],
        before
    );
    let too_many: Vec<Value> = (0..1001)
        .map(|i| json!({"url": format!("https://e.com/{i}")}))
        .collect();
    assert_error(
        &api.call(
            "POST",
            "/api/v1/links/batch",
            Some(json!({"items": too_many})),
        )
        .await,
        400,
        "bad_request",
        Some("items"),
    );
    assert_error(
        &api.call("POST", "/api/v1/links/batch", Some(json!({"items": []})))
            .await,
        400,
        "bad_request",
        Some("items"),
    );
}

#[actix_web::test]
async fn twenty_clients_shorten_10000_urls_at_once_with_colliding_custom_codes() {
    let app = spawn_app_with(&["--api-rate-limit", "100000"]).await;
    let api = Api::with_role(&app, "load", Role::Operator).await;
    let key = api.key.clone();
    let base = app.address.clone();
    let mut clients = Vec::new();
    for client in 0..20 {
        let (key, base) = (key.clone(), base.clone());
        clients.push(actix_web::rt::spawn(async move {
            let http = crate::support::client();
            let mut outcomes = Vec::new();
            for i in 0..500 {
                // Every client also asks for the same 50 custom codes.
                let body = if i % 10 == 0 {
                    json!({"url": format!("https://example.com/c{client}/{i}"), "code": format!("race-{}", i / 10)})
                } else {
                    json!({"url": format!("https://example.com/c{client}/{i}")})
                };
                let mut response = http
                    .post(format!("{base}/api/v1/links"))
                    .insert_header(("authorization", format!("Bearer {key}")))
                    .send_json(&body)
                    .await
                    .expect("sent");
                let status = response.status().as_u16();
                let reply: Value = response.json().limit(1 << 20).await.expect("JSON");
                outcomes.push((body["code"].as_str().map(str::to_owned), status, reply));
            }
            outcomes
        }));
    }
    let mut codes = HashSet::new();
    let mut winners: HashMap<String, usize> = HashMap::new();
    let mut created = 0;
    for client in clients {
        for (custom, status, reply) in client.await.unwrap() {
            match (custom, status) {
                (Some(custom), 201) => {
                    *winners.entry(custom.clone()).or_default() += 1;
                    assert_eq!(reply["code"], custom.as_str());
                    assert!(codes.insert(custom));
                    created += 1;
                }
                (Some(custom), 409) => {
                    assert_eq!(reply["error"]["code"], "code_taken");
                    winners.entry(custom).or_default();
                }
                (None, 201) => {
                    assert!(
                        codes.insert(reply["code"].as_str().unwrap().to_owned()),
                        "a duplicate code"
                    );
                    created += 1;
                }
                (custom, status) => panic!("{custom:?}: {status} {reply}"),
            }
        }
    }
    assert_eq!(winners.len(), 50);
    assert!(
        winners.values().all(|wins| *wins == 1),
        "one winner per custom code: {winners:?}"
    );
    assert_eq!(created, 9000 + 50);
    let stored = inklink::db::entities::url_map::Entity::find()
        .all(&app.core.db)
        .await
        .unwrap()
        .len();
    assert_eq!(stored, created);
}

#[actix_web::test]
async fn the_openapi_document_describes_every_path_and_error() {
    let app = spawn_app().await;
    let mut response = app.get("/api/openapi.json").await;
    assert_eq!(response.status().as_u16(), 200);
    let doc: Value = response.json().limit(1 << 20).await.unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    let paths = doc["paths"].as_object().unwrap();
    for (path, methods) in [
        ("/api/v1/links", &["get", "post"][..]),
        ("/api/v1/links/batch", &["post"]),
        ("/api/v1/links/{code}", &["get", "patch", "delete"]),
        ("/api/v1/links/{code}/stats", &["get"]),
        ("/api/v1/domains", &["get"]),
    ] {
        for method in methods {
            let op = &paths[path][method];
            assert!(op.is_object(), "{method} {path}");
            assert!(
                op["responses"]["401"].is_object(),
                "{method} {path} documents 401"
            );
            assert!(
                op["responses"]["429"].is_object(),
                "{method} {path} documents 429"
            );
        }
    }
    assert!(paths["/api/v1/links"]["post"]["responses"]["422"].is_object());
    // Every operation a key may call says what a missing key and the rate limit answer.
    let mut undocumented = Vec::new();
    for (path, methods) in paths {
        for (method, op) in methods.as_object().unwrap() {
            let keyed = op["security"]
                .as_array()
                .is_some_and(|ways| ways.iter().any(|way| way.get("api_key").is_some()));
            for status in ["401", "429"] {
                if keyed && !op["responses"][status].is_object() {
                    undocumented.push(format!("{method} {path}: {status}"));
                }
            }
        }
    }
    assert!(undocumented.is_empty(), "{undocumented:#?}");
    // Counting an SMS needs only its text.
    assert_eq!(
        paths["/api/v1/sms/count"]["post"]["requestBody"]["content"]["application/json"]["schema"]
            ["$ref"],
        "#/components/schemas/SmsCountRequest"
    );
    assert!(doc["components"]["securitySchemes"]["api_key"].is_object());
    assert!(doc["components"]["schemas"]["ErrorBody"].is_object());
}

#[actix_web::test]
async fn a_batch_whose_generated_codes_were_taken_by_custom_codes_still_creates_every_link() {
    let app = spawn_app().await;
    let api = Api::with_role(&app, "sms", Role::Operator).await;
    let first = create_link(&app, "https://example.com/first").await;
    // The id behind the first generated code; the next ones follow it in this process.
    let id = (0..100_000u64)
        .find(|id| {
            app.core
                .codes
                .code_for_id(*id)
                .unwrap()
                .map(|c| c.to_string())
                == Some(first.link.compression_code.to_string())
        })
        .expect("the first code's id");
    let mut squatted = HashSet::new();
    for next in id + 1..id + 4 {
        let code = app
            .core
            .codes
            .code_for_id(next)
            .unwrap()
            .unwrap()
            .to_string();
        let reply = api
            .call(
                "POST",
                "/api/v1/links",
                Some(json!({"url": "https://example.com/squat", "code": code})),
            )
            .await;
        assert_eq!(reply.status, 201, "{}", reply.body);
        squatted.insert(code);
    }
    let items: Vec<Value> = (0..10)
        .map(|i| json!({"url": format!("https://example.com/after/{i}")}))
        .collect();
    let reply = api
        .call("POST", "/api/v1/links/batch", Some(json!({"items": items})))
        .await;
    assert_eq!(reply.status, 200);
    let mut codes = HashSet::new();
    for result in reply.body["results"].as_array().unwrap() {
        assert_eq!(result["status"], 201, "{result}");
        let code = result["link"]["code"].as_str().unwrap().to_owned();
        assert!(!squatted.contains(&code));
        assert!(codes.insert(code));
    }
    assert_eq!(codes.len(), 10);
}

#[actix_web::test]
async fn key_names_differing_only_in_case_are_one_name_on_every_database() {
    let app = spawn_app().await;
    let api = Api::with_role(&app, "CRM", Role::Operator).await;
    let taken = api_keys::create(
        &app.core.db,
        &KeyName::parse("crm").unwrap(),
        Role::Admin,
        None,
        &Actor::System,
    )
    .await;
    assert!(
        matches!(taken, Err(api_keys::KeyError::NameTaken(ref name)) if name == "crm"),
        "{:?}",
        taken.map(|k| k.key.name)
    );
    // The key owns what it created, whatever case its name was typed in.
    let created = api
        .call(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://example.com/mine"})),
        )
        .await;
    let code = created.body["code"].as_str().unwrap().to_owned();
    let edited = api
        .call(
            "PATCH",
            &format!("/api/v1/links/{code}"),
            Some(json!({"version": 1, "description": "still mine"})),
        )
        .await;
    assert_eq!(edited.status, 200, "{}", edited.body);
    let names: Vec<String> = api_keys::list(&app.core.db)
        .await
        .unwrap()
        .into_iter()
        .map(|k| k.name)
        .collect();
    assert_eq!(names, vec!["crm".to_owned()]);
}

/// A link whose code a later version reserved (here `Metrics`, set in the database as an
/// older version could have stored it) is still read, edited and revoked through the API.
#[actix_web::test]
async fn a_link_whose_code_was_reserved_later_stays_reachable() {
    use sea_orm::ConnectionTrait;
    let app = spawn_app().await;
    let api = Api::with_role(&app, "crm", Role::Admin).await;
    let link = create_link(&app, "https://example.com/older").await;
    let backend = app.core.db.get_database_backend();
    app.core
        .db
        .execute_raw(inklink::db::sql::statement(
            backend,
            "UPDATE url_map SET compression_code = ? WHERE id = ?",
            vec!["Metrics".into(), link.link.id.into()],
        ))
        .await
        .unwrap();
    let read = api.call("GET", "/api/v1/links/Metrics", None).await;
    assert_eq!(read.status, 200, "{}", read.body);
    assert_eq!(read.body["url"], "https://example.com/older");
    let version = read.body["version"].clone();
    let edited = api
        .call(
            "PATCH",
            "/api/v1/links/Metrics",
            Some(json!({"version": version, "description": "kept"})),
        )
        .await;
    assert_eq!(edited.status, 200, "{}", edited.body);
    assert_eq!(edited.body["description"], "kept");
    let revoked = api.call("DELETE", "/api/v1/links/Metrics", None).await;
    assert_eq!(revoked.status, 200, "{}", revoked.body);
    assert_eq!(revoked.body["status"], "disabled");
    // A new link still cannot take a reserved word.
    let refused = api
        .call(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://example.com/new", "code": "metrics"})),
        )
        .await;
    assert_error(&refused, 422, "invalid_code", Some("code"));
}
