//! Tags (campaigns) on links: in the API, the admin UI, the CSV files and the CLI; a
//! dashboard per tag with distinct visitors over its links; UTM presets per tag; and bulk
//! actions over codes or a filter.

use crate::admin::{Browser, add_user, csrf_in, signed_in, signed_in_admin};
use crate::analytics::wait_written;
use crate::api::Api;
use crate::support::spawn_app;
use inklink::rules::{KeyName, Role, Tag};
use inklink::services::{Actor, api_keys, tags};
use inklink::stats::{days, recount};
use sea_orm::EntityTrait;
use serde_json::json;

#[actix_web::test]
async fn links_carry_tags_that_filter_lists_and_count_together_on_a_dashboard() {
    let app = spawn_app().await;
    let api = Api::with_role(&app, "tags", Role::Admin).await;
    let spring = api
        .call(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://example.com/a", "code": "sa", "tags": ["Spring", "sms", "spring"]})),
        )
        .await;
    assert_eq!(spring.status, 201, "{}", spring.body);
    assert_eq!(spring.body["tags"], json!(["sms", "spring"]));
    api.call(
        "POST",
        "/api/v1/links",
        Some(json!({"url": "https://example.com/b", "code": "sb", "tags": ["spring"]})),
    )
    .await;
    api.call(
        "POST",
        "/api/v1/links",
        Some(json!({"url": "https://example.com/c", "code": "other"})),
    )
    .await;
    let listed = api.call("GET", "/api/v1/links?tag=spring", None).await;
    assert_eq!(listed.body["total"], 2, "{}", listed.body);
    let codes: Vec<&str> = listed.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["sb", "sa"]);
    for bad in [json!(["a,b"]), json!([""]), json!(["x".repeat(33)])] {
        let reply = api
            .call(
                "POST",
                "/api/v1/links",
                Some(json!({"url": "https://example.com/x", "tags": bad})),
            )
            .await;
        assert_eq!(reply.status, 422, "{bad}: {}", reply.body);
        assert_eq!(reply.body["error"]["field"], "tags");
    }
    let version = api.call("GET", "/api/v1/links/sa", None).await.body["version"].clone();
    let patched = api
        .call(
            "PATCH",
            "/api/v1/links/sa",
            Some(json!({"version": version, "tags": ["spring", "wechat"]})),
        )
        .await;
    assert_eq!(
        patched.body["tags"],
        json!(["spring", "wechat"]),
        "{}",
        patched.body
    );

    // One visitor opens both spring links, another one of them; a third opens the other link.
    let visit = |path: &'static str, agent: &'static str| {
        let app = &app;
        async move {
            app.client
                .get(app.url(path))
                .insert_header(("user-agent", agent))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    let alice = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36";
    let bob = "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15";
    for (path, agent) in [
        ("/sa", alice),
        ("/sb", alice),
        ("/sb", bob),
        ("/other", bob),
    ] {
        assert_eq!(visit(path, agent).await, 302);
    }
    wait_written(&app, 4).await;
    let tz = app.core.settings.timezone;
    let today = days::today(tz);
    recount::rebuild(&app.core.db, tz, today, today)
        .await
        .unwrap();
    let mut browser = signed_in(&app).await;
    let dashboard = browser.get("/admin/tags/spring/stats").await;
    assert_eq!(dashboard.status, 200, "{}", dashboard.body);
    let csv = browser
        .get(&format!(
            "/admin/tags/spring/stats.csv?from={today}&to={today}"
        ))
        .await;
    let total = csv.body.lines().last().unwrap().to_owned();
    // PV 3, UV 2 (alice once over both links), IP 1 (all from 127.0.0.1), effective 3.
    assert_eq!(total, "total,3,2,1,3,0", "{}", csv.body);
    let day = csv.body.lines().nth(1).unwrap().to_owned();
    assert_eq!(day, format!("{today},3,2,1,3,0"));

    // The admin list filters by tag and says how many match.
    let list = browser.get("/admin/links?tag=spring").await;
    assert!(list.body.contains("2 links match"), "{}", list.body);
    assert!(!list.body.contains("example.com/c"));
    let tags_page = browser.get("/admin/tags").await;
    assert!(tags_page.body.contains("/admin/tags/spring/stats"));
    assert_eq!(
        app.fetch("/admin/tags/a,b/stats").await.0,
        303,
        "signed out: to the login"
    );
    let missing = browser.get("/admin/tags/a%2Cb/stats").await;
    assert_eq!(missing.status, 404);
}

#[actix_web::test]
async fn a_tags_utm_preset_fills_the_new_link_and_tags_travel_in_csv_files() {
    let app = spawn_app().await;
    let mut admin = signed_in_admin(&app).await;
    let mut browser = signed_in(&app).await;
    let page = browser.get("/admin/tags").await;
    let csrf = csrf_in(&page.body);
    let admin_csrf = csrf_in(&admin.get("/admin/tags").await.body);
    // A preset can be set (by an admin) for a tag before any link has it; an operator's new
    // links get it.
    let saved = admin
        .post(
            "/admin/tags/spring/preset",
            &[
                ("csrf", &admin_csrf),
                ("utm_source", "sms"),
                ("utm_medium", "text"),
                ("utm_campaign", "spring-2026"),
            ],
        )
        .await;
    assert_eq!(saved.status, 303);
    let host = format!("localhost:{}", app.port);
    let created = browser
        .post(
            "/admin/links",
            &[
                ("csrf", &csrf),
                ("url", "https://example.com/sale"),
                ("domain", &host),
                ("code", "preset"),
                ("tags", "Spring, sms"),
            ],
        )
        .await;
    assert_eq!(created.status, 303, "{}", created.body);
    let link = inklink::services::links::find_by_code(
        &app.core.db,
        &inklink::rules::ShortCode::parse("preset").unwrap(),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(
        link.long_url,
        "https://example.com/sale?utm_source=sms&utm_medium=text&utm_campaign=spring-2026"
    );
    let link_tags = tags::tags_of(&app.core.db, &[link.id]).await.unwrap();
    assert_eq!(link_tags[&link.id], ["sms", "spring"]);
    // Typed UTM values win over the preset.
    let typed = browser
        .post(
            "/admin/links",
            &[
                ("csrf", &csrf),
                ("url", "https://example.com/sale"),
                ("domain", &host),
                ("code", "typed"),
                ("tags", "spring"),
                ("utm_source", "wechat"),
            ],
        )
        .await;
    assert_eq!(typed.status, 303);
    let typed = inklink::services::links::find_by_code(
        &app.core.db,
        &inklink::rules::ShortCode::parse("typed").unwrap(),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(typed.long_url, "https://example.com/sale?utm_source=wechat");

    // The edit form shows and changes the tags.
    let edit = browser.get("/admin/links/preset/edit").await;
    assert!(
        edit.body.contains(r#"value="sms, spring""#),
        "{}",
        edit.body
    );
    let bad_tags = browser
        .post(
            "/admin/links",
            &[
                ("csrf", &csrf),
                ("url", "https://example.com/x"),
                ("domain", &host),
                ("tags", &"x".repeat(40)),
            ],
        )
        .await;
    assert_eq!(bad_tags.status, 422);
    assert!(bad_tags.body.contains("longer than 32 characters"));

    // CSV: a tags column in, a tags column out.
    let report = inklink::services::links::bulk::import(
        &app.core,
        b"url,code,tags,length\nhttps://example.com/1,csv1,spring;autumn,\nhttps://example.com/2,,winter,5\nhttps://example.com/3,,\"a,b|c\",\n",
        &Actor::Cli,
        app.core.settings.timezone,
    )
    .await
    .unwrap();
    assert!(
        report[0].result.is_ok() && report[1].result.is_ok(),
        "{report:?}"
    );
    assert!(
        report[1]
            .result
            .as_ref()
            .unwrap()
            .rsplit('/')
            .next()
            .unwrap()
            .len()
            == 5
    );
    assert!(report[2].result.is_ok(), "{report:?}");
    let export = browser.get("/admin/links/export.csv?tag=spring").await;
    assert!(
        export.body.lines().next().unwrap().contains(",tags,"),
        "{}",
        export.body
    );
    assert!(export.body.contains("autumn, spring"), "{}", export.body);
    assert_eq!(export.body.lines().count(), 1 + 3, "{}", export.body);
    let autumn = Tag::parse("Autumn").unwrap();
    assert_eq!(autumn.as_str(), "autumn");
}

#[actix_web::test]
async fn bulk_actions_change_many_links_by_code_or_filter_each_audited() {
    let app = spawn_app().await;
    let admin = Api::with_role(&app, "bulk-admin", Role::Admin).await;
    for n in 0..6 {
        let reply = admin
            .call(
                "POST",
                "/api/v1/links",
                Some(
                    json!({"url": format!("https://example.com/{n}"), "code": format!("b{n}"),
                            "tags": if n < 4 { json!(["wave"]) } else { json!([]) }}),
                ),
            )
            .await;
        assert_eq!(reply.status, 201);
    }
    let disabled = admin
        .call(
            "POST",
            "/api/v1/links/bulk",
            Some(json!({"action": "disable", "filter": {"tag": "wave"}})),
        )
        .await;
    assert_eq!(disabled.status, 200, "{}", disabled.body);
    assert_eq!(
        disabled.body,
        json!({"matched": 4, "changed": 4, "refused": 0, "missing": []})
    );
    for n in 0..6 {
        let expected = if n < 4 { 410 } else { 302 };
        assert_eq!(app.fetch(&format!("/b{n}")).await.0, expected, "b{n}");
    }
    let again = admin
        .call(
            "POST",
            "/api/v1/links/bulk",
            Some(json!({"action": "disable", "codes": ["b0", "b4", "nope"]})),
        )
        .await;
    assert_eq!(
        again.body,
        json!({"matched": 2, "changed": 1, "refused": 0, "missing": ["nope"]})
    );
    let tagged = admin
        .call(
            "POST",
            "/api/v1/links/bulk",
            Some(json!({"action": "tag", "codes": ["b4", "b5"], "tags": ["late"]})),
        )
        .await;
    assert_eq!(tagged.body["changed"], 2);
    let late = admin.call("GET", "/api/v1/links?tag=late", None).await;
    assert_eq!(late.body["total"], 2);
    let untagged = admin
        .call(
            "POST",
            "/api/v1/links/bulk",
            Some(json!({"action": "untag", "filter": {"tag": "late"}, "tags": ["late"]})),
        )
        .await;
    assert_eq!(untagged.body["changed"], 2);

    // An operator key changes only the links it created.
    let issued = api_keys::create(
        &app.core.db,
        &KeyName::parse("bulk-operator").unwrap(),
        Role::Operator,
        None,
        &Actor::System,
    )
    .await
    .unwrap();
    let operator = Api::with_key(&app, issued.token.as_str());
    operator
        .call(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://example.com/mine", "code": "mine"})),
        )
        .await;
    let deleted = operator
        .call(
            "POST",
            "/api/v1/links/bulk",
            Some(json!({"action": "delete", "codes": ["mine", "b5"]})),
        )
        .await;
    assert_eq!(
        deleted.body,
        json!({"matched": 2, "changed": 1, "refused": 1, "missing": []})
    );
    assert_eq!(app.fetch("/mine").await.0, 404);
    assert_eq!(app.fetch("/b5").await.0, 302);

    for (body, field) in [
        (json!({"action": "disable"}), "codes"),
        (
            json!({"action": "disable", "codes": ["b1"], "filter": {}}),
            "codes",
        ),
        (json!({"action": "tag", "codes": ["b1"]}), "tags"),
        (json!({"action": "disable", "codes": ["bad code"]}), "codes"),
    ] {
        let reply = admin
            .call("POST", "/api/v1/links/bulk", Some(body.clone()))
            .await;
        assert_eq!(reply.status, 422, "{body}: {}", reply.body);
        assert_eq!(reply.body["error"]["field"], field, "{body}");
    }
    let unknown_action = admin
        .call(
            "POST",
            "/api/v1/links/bulk",
            Some(json!({"action": "explode", "codes": []})),
        )
        .await;
    assert_eq!(unknown_action.status, 400);

    // Every change has its audit entry.
    let audit = inklink::db::entities::audit_log::Entity::find()
        .all(&app.core.db)
        .await
        .unwrap();
    let count = |action: &str| audit.iter().filter(|e| e.action == action).count();
    assert_eq!(count("link.disable"), 5);
    assert_eq!(count("link.tags"), 4);
    assert_eq!(count("link.delete"), 1);
}

#[actix_web::test]
async fn parallel_bulk_tagging_keeps_every_tag_and_tags_compare_exactly() {
    let app = spawn_app().await;
    let api = Api::with_role(&app, "parallel", Role::Admin).await;
    let mut codes = Vec::new();
    for n in 0..20 {
        let code = format!("p{n}");
        let reply = api
            .call(
                "POST",
                "/api/v1/links",
                Some(json!({"url": format!("https://example.com/{n}"), "code": code})),
            )
            .await;
        assert_eq!(reply.status, 201);
        codes.push(code);
    }
    // Two people tag the same links at the same moment, each with a tag of their own.
    let tag = |name: &'static str| {
        let api = &api;
        let codes = codes.clone();
        async move {
            api.call(
                "POST",
                "/api/v1/links/bulk",
                Some(json!({"action": "tag", "codes": codes, "tags": [name]})),
            )
            .await
        }
    };
    let (first, second) = tokio::join!(tag("alpha"), tag("beta"));
    assert_eq!(first.body["changed"], 20, "{}", first.body);
    assert_eq!(second.body["changed"], 20, "{}", second.body);
    for name in ["alpha", "beta"] {
        let listed = api
            .call(
                "GET",
                &format!("/api/v1/links?tag={name}&per_page=100"),
                None,
            )
            .await;
        assert_eq!(listed.body["total"], 20, "{name}: no tag was lost");
    }
    // Tags that differ only by an accent are two tags on every database (MySQL's default
    // collations would fold them).
    for tag in ["café", "cafe"] {
        let reply = api
            .call(
                "POST",
                "/api/v1/links",
                Some(json!({"url": "https://example.com/c", "tags": [tag]})),
            )
            .await;
        assert_eq!(reply.status, 201, "{}", reply.body);
    }
    let both = api
        .call(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://example.com/both", "code": "both", "tags": ["café", "cafe"]})),
        )
        .await;
    assert_eq!(both.status, 201, "{}", both.body);
    assert_eq!(both.body["tags"], json!(["cafe", "café"]));
    let cafe = api.call("GET", "/api/v1/links?tag=cafe", None).await;
    assert_eq!(cafe.body["total"], 2, "{}", cafe.body);
}

/// Issue 43's findings: a tag with `/` (or `+`, `?`, `#`, `%`, a space) had Stats and preset
/// links that answered 404; a tag of dots cannot be a path segment at all and is refused.
#[actix_web::test]
async fn every_tag_has_working_stats_and_preset_links_and_a_tag_of_dots_is_refused() {
    let app = spawn_app().await;
    let api = Api::with_role(&app, "crm", Role::Operator).await;
    let odd = ["a/b", "spring sale+1", "50%?#x", "..x", "春/秋"];
    let created = api
        .call(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://example.com/odd", "tags": odd})),
        )
        .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    for dots in [".", "..", "..."] {
        let refused = api
            .call(
                "POST",
                "/api/v1/links",
                Some(json!({"url": "https://example.com/dots", "tags": [dots]})),
            )
            .await;
        assert_eq!(refused.status, 422, "{dots}: {:?}", refused.body);
        assert!(
            refused.body.to_string().contains("only dots"),
            "{:?}",
            refused.body
        );
    }

    let mut admin = signed_in_admin(&app).await;
    let page = admin.get("/admin/tags").await;
    let csrf = csrf_in(&page.body);
    let attribute = |body: &str, before: &str| -> Vec<String> {
        body.split(before)
            .skip(1)
            .map(|rest| rest[..rest.find('"').unwrap()].replace("&amp;", "&"))
            .collect()
    };
    let stats = attribute(&page.body, "class=\"stats\" href=\"");
    let presets: Vec<String> = attribute(&page.body, "method=\"post\" action=\"")
        .into_iter()
        .filter(|action| action.starts_with("/admin/tags/"))
        .collect();
    assert_eq!(stats.len(), odd.len(), "{}", page.body);
    for (tag, (stats, preset)) in odd.iter().zip(stats.iter().zip(&presets)) {
        let dashboard = admin.get(stats).await;
        assert_eq!(dashboard.status, 200, "{tag}: {stats}");
        let saved = admin
            .post(preset, &[("csrf", &csrf), ("utm_source", "sms")])
            .await;
        assert_eq!(saved.status, 303, "{tag}: {preset}: {}", saved.body);
    }
    let stored = tags::presets(&app.core.db).await.unwrap();
    for tag in odd {
        assert_eq!(stored[tag].source, "sms", "{tag}");
    }
}

/// Issue 43's finding: any operator could change a tag's UTM preset, which then went into
/// every operator's new links. Presets are admins', and each change is audited with what it
/// replaced.
#[actix_web::test]
async fn only_admins_change_a_tags_utm_preset_and_each_change_is_audited() {
    let app = spawn_app().await;
    let mut admin = signed_in_admin(&app).await;
    let admin_csrf = csrf_in(&admin.get("/admin/tags").await.body);
    let set = admin
        .post(
            "/admin/tags/spring/preset",
            &[("csrf", &admin_csrf), ("utm_source", "sms")],
        )
        .await;
    assert_eq!(set.status, 303);

    add_user(&app, "otto", "operator-pass", Role::Operator).await;
    let mut operator = Browser::new(&app);
    assert_eq!(operator.sign_in("otto", "operator-pass").await.status, 303);
    let page = operator.get("/admin/tags").await;
    let csrf = csrf_in(&page.body);
    let refused = operator
        .post(
            "/admin/tags/spring/preset",
            &[("csrf", &csrf), ("utm_source", "spam")],
        )
        .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(
        refused.body.contains("only an admin can change"),
        "{}",
        refused.body
    );
    let stored = tags::presets(&app.core.db).await.unwrap();
    assert_eq!(stored["spring"].source, "sms", "unchanged");

    let changed = admin
        .post(
            "/admin/tags/spring/preset",
            &[("csrf", &admin_csrf), ("utm_source", "wechat")],
        )
        .await;
    assert_eq!(changed.status, 303);
    let entries = inklink::db::entities::audit_log::Entity::find()
        .all(&app.core.db)
        .await
        .unwrap();
    let presets: Vec<_> = entries
        .iter()
        .filter(|e| e.action == "tag.preset")
        .collect();
    assert_eq!(presets.len(), 2, "the refused change left no entry");
    let last = presets.last().unwrap();
    assert_eq!(last.actor, "ada");
    let before = last.before_state.as_deref().unwrap_or_default();
    let after = last.after_state.as_deref().unwrap_or_default();
    assert!(
        before.contains("sms") && after.contains("wechat"),
        "{before} → {after}"
    );
}

/// Issue 40: the Tags page ranks the campaigns: page views today, over 7 and 30 days, and
/// visitors over 30 days, beside the number of links.
#[actix_web::test]
async fn the_tags_page_ranks_campaigns_by_their_page_views() {
    let app = spawn_app().await;
    let api = Api::with_role(&app, "ranker", Role::Operator).await;
    for (code, tag) in [("r1", "quiet"), ("r2", "busy"), ("r3", "busy")] {
        let created = api
            .call(
                "POST",
                "/api/v1/links",
                Some(json!({"url": format!("https://example.com/{code}"), "code": code, "tags": [tag]})),
            )
            .await;
        assert_eq!(created.status, 201);
    }
    let agent = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36";
    for code in ["r2", "r2", "r3", "r1"] {
        let visit = app
            .client
            .get(app.url(&format!("/{code}")))
            .insert_header(("user-agent", agent))
            .send()
            .await
            .unwrap();
        assert_eq!(visit.status().as_u16(), 302);
    }
    wait_written(&app, 4).await;
    inklink::stats::tally::drain(&app.core.db, app.core.settings.timezone)
        .await
        .unwrap();
    let mut browser = signed_in(&app).await;
    let page = browser.get("/admin/tags").await.body;
    let busy = page.find(">busy</a>").expect("busy listed");
    let quiet = page.find(">quiet</a>").expect("quiet listed");
    assert!(busy < quiet, "most page views first");
    let row = &page[busy..page[busy..].find("</tr>").unwrap() + busy];
    assert!(
        row.contains(r#"<td class="num">3</td><td class="num">3</td><td class="num">3</td><td class="num">1</td>"#),
        "{row}"
    );
}
