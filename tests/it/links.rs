//! Creating and changing links through the shared service.

use crate::support::{TestApp, create_link, spawn_app, spawn_app_with};
use chrono::{Duration as Span, Utc};
use inklink::db::entities::audit_log;
use inklink::db::entities::domain_conf::{self, DomainStatus};
use inklink::db::entities::url_map::{LinkStatus, Strategy};
use inklink::rules::{CodeError, DomainHost, Protocol, ShortCode};
use inklink::services::links::{self, LinkError, NewLink, Outcome};
use inklink::services::{Actor, domains};
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter, QueryOrder, Set};

async fn new_link(app: &TestApp, url: &str) -> NewLink {
    NewLink::to(
        inklink::services::links::parse_target(&app.core, url)
            .await
            .unwrap(),
    )
}

async fn create(app: &TestApp, new: NewLink) -> Result<links::SavedLink, LinkError> {
    links::create(
        &app.core,
        new,
        &Actor::User(inklink::services::Principal {
            id: 1,
            name: "alice".into(),
            role: inklink::rules::Role::Operator,
        }),
    )
    .await
}

#[actix_web::test]
async fn a_custom_code_is_unique_and_a_taken_one_is_refused() {
    let app = spawn_app().await;
    let code = ShortCode::parse("spring-sale").unwrap();
    let first = create(
        &app,
        NewLink {
            custom_code: Some(code.clone()),
            ..new_link(&app, "https://example.com/1").await
        },
    )
    .await
    .unwrap();
    assert_eq!(first.link.compression_code, "spring-sale");
    assert_eq!(first.link.strategy, Strategy::Custom);
    let err = create(
        &app,
        NewLink {
            custom_code: Some(code),
            ..new_link(&app, "https://example.com/2").await
        },
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, LinkError::CodeTaken(ref c) if c == "spring-sale"),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "the code 'spring-sale' is already taken; choose another"
    );
}

#[actix_web::test]
async fn the_sequence_skips_a_code_a_custom_link_already_holds() {
    let app = spawn_app().await;
    // On a fresh database the allocator starts at id 0.
    let first = app.core.codes.code_for_id(0).unwrap().unwrap();
    let second = app.core.codes.code_for_id(1).unwrap().unwrap();
    create(
        &app,
        NewLink {
            custom_code: Some(first.clone()),
            ..new_link(&app, "https://example.com/custom").await
        },
    )
    .await
    .unwrap();
    let generated = create(&app, new_link(&app, "https://example.com/seq").await)
        .await
        .unwrap();
    assert_eq!(generated.link.compression_code, second.as_str());
    assert_eq!(generated.link.strategy, Strategy::Sequence);
}

#[actix_web::test]
async fn reuse_returns_the_existing_live_link() {
    let app = spawn_app().await;
    let first = create(&app, new_link(&app, "https://example.com/r").await)
        .await
        .unwrap();
    let again = create(
        &app,
        NewLink {
            reuse: true,
            ..new_link(&app, "https://example.com/r").await
        },
    )
    .await
    .unwrap();
    assert_eq!(again.outcome, Outcome::Reused);
    assert_eq!(again.link.id, first.link.id);
    // Without reuse, or once the old one is disabled, a new link is made.
    let fresh = create(&app, new_link(&app, "https://example.com/r").await)
        .await
        .unwrap();
    assert_ne!(fresh.link.id, first.link.id);
    for link in [&first, &fresh] {
        let code = ShortCode::parse(&link.link.compression_code).unwrap();
        links::set_status(&app.core, &code, LinkStatus::Disabled, &Actor::Cli)
            .await
            .unwrap();
    }
    let third = create(
        &app,
        NewLink {
            reuse: true,
            ..new_link(&app, "https://example.com/r").await
        },
    )
    .await
    .unwrap();
    assert_eq!(third.outcome, Outcome::Created);
}

#[actix_web::test]
async fn the_hash_strategy_gives_the_same_url_the_same_code() {
    let app = spawn_app().await;
    let hashed = |url: &'static str| {
        let app = &app;
        async move {
            NewLink {
                strategy: Strategy::Hash,
                ..new_link(app, url).await
            }
        }
    };
    let a = create(&app, hashed("https://example.com/h").await)
        .await
        .unwrap();
    let b = create(&app, hashed("https://example.com/h").await)
        .await
        .unwrap();
    assert_eq!(a.link.compression_code, b.link.compression_code);
    assert_eq!(a.outcome, Outcome::Created);
    assert_eq!(b.outcome, Outcome::Reused);
    assert_eq!(a.link.strategy, Strategy::Hash);
    let other = create(&app, hashed("https://example.com/other").await)
        .await
        .unwrap();
    assert_ne!(other.link.compression_code, a.link.compression_code);
    // A candidate taken by another URL is passed over for the next one.
    let expected: Vec<_> = app
        .core
        .codes
        .hash_candidates("https://example.com/taken")
        .take(2)
        .collect();
    create(
        &app,
        NewLink {
            custom_code: Some(expected[0].clone()),
            ..new_link(&app, "https://example.com/squatter").await
        },
    )
    .await
    .unwrap();
    let moved = create(&app, hashed("https://example.com/taken").await)
        .await
        .unwrap();
    assert_eq!(moved.link.compression_code, expected[1].as_str());
}

#[actix_web::test]
async fn links_go_on_the_requested_or_default_domain() {
    let app = spawn_app().await;
    let host = DomainHost::parse("s.example.cn").unwrap();
    domains::add(&app.core.db, &host, Protocol::Https, false, &Actor::Cli)
        .await
        .unwrap();
    let on_default = create(&app, new_link(&app, "https://example.com/x").await)
        .await
        .unwrap();
    assert_eq!(
        on_default.short_url(),
        format!(
            "http://localhost:{}/{}",
            app.port, on_default.link.compression_code
        )
    );
    let on_cn = create(
        &app,
        NewLink {
            domain: Some(host.clone()),
            ..new_link(&app, "https://example.com/x").await
        },
    )
    .await
    .unwrap();
    assert_eq!(
        on_cn.short_url(),
        format!("https://s.example.cn/{}", on_cn.link.compression_code)
    );
    // A target on one of our own domains is refused.
    let err = inklink::services::links::parse_target(&app.core, "https://s.example.cn/abc")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("own domains"));

    let unknown = create(
        &app,
        NewLink {
            domain: Some(DomainHost::parse("nope.example").unwrap()),
            ..new_link(&app, "https://example.com/x").await
        },
    )
    .await
    .unwrap_err();
    assert!(matches!(unknown, LinkError::UnknownDomain(_)), "{unknown}");
    let domain = domains::find_by_host(&app.core.db, &host)
        .await
        .unwrap()
        .unwrap();
    domain_conf::ActiveModel {
        id: Set(domain.id),
        status: Set(DomainStatus::Disabled),
        ..Default::default()
    }
    .update(&app.core.db)
    .await
    .unwrap();
    let disabled = create(
        &app,
        NewLink {
            domain: Some(host),
            ..new_link(&app, "https://example.com/x").await
        },
    )
    .await
    .unwrap_err();
    assert!(
        matches!(disabled, LinkError::DomainDisabled(_)),
        "{disabled}"
    );
}

#[actix_web::test]
async fn bad_link_fields_are_refused() {
    let app = spawn_app().await;
    let past = create(
        &app,
        NewLink {
            expires_at: Some(Utc::now() - Span::minutes(1)),
            ..new_link(&app, "https://example.com/x").await
        },
    )
    .await
    .unwrap_err();
    assert!(matches!(past, LinkError::ExpiryInPast(_)), "{past}");
    let long = create(
        &app,
        NewLink {
            description: Some("d".repeat(2001)),
            ..new_link(&app, "https://example.com/x").await
        },
    )
    .await
    .unwrap_err();
    assert!(
        matches!(long, LinkError::DescriptionTooLong(2001)),
        "{long}"
    );
    let described = create(
        &app,
        NewLink {
            description: Some("双十一 campaign".into()),
            ..new_link(&app, "https://example.com/x").await
        },
    )
    .await
    .unwrap();
    assert_eq!(
        described.link.description.as_deref(),
        Some("双十一 campaign")
    );
}

#[actix_web::test]
async fn check_character_mode_guards_custom_codes_of_the_generated_shape() {
    let app = spawn_app_with(&["--code-check-char", "true", "--code-length", "5"]).await;
    let err = create(
        &app,
        NewLink {
            custom_code: Some(ShortCode::parse("Promo1").unwrap()),
            ..new_link(&app, "https://example.com/x").await
        },
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            err,
            LinkError::InvalidCode(CodeError::CheckCharacter { .. })
        ) || err.to_string().contains("check character"),
        "{err}"
    );
    // Other shapes are free.
    create(
        &app,
        NewLink {
            custom_code: Some(ShortCode::parse("promo-1").unwrap()),
            ..new_link(&app, "https://example.com/x").await
        },
    )
    .await
    .unwrap();
    let generated = create(&app, new_link(&app, "https://example.com/y").await)
        .await
        .unwrap();
    assert_eq!(generated.link.compression_code.len(), 6);
}

#[actix_web::test]
async fn changes_are_audited() {
    let app = spawn_app().await;
    let saved = create_link(&app, "https://example.com/audited").await;
    let code = ShortCode::parse(&saved.link.compression_code).unwrap();
    links::set_status(
        &app.core,
        &code,
        LinkStatus::Disabled,
        &Actor::User(inklink::services::Principal {
            id: 2,
            name: "bob".into(),
            role: inklink::rules::Role::Admin,
        }),
    )
    .await
    .unwrap();
    // Disabling twice changes nothing and records nothing.
    links::set_status(
        &app.core,
        &code,
        LinkStatus::Disabled,
        &Actor::User(inklink::services::Principal {
            id: 2,
            name: "bob".into(),
            role: inklink::rules::Role::Admin,
        }),
    )
    .await
    .unwrap();
    let entries = audit_log::Entity::find()
        .filter(audit_log::Column::TargetId.eq(code.as_str()))
        .order_by_asc(audit_log::Column::Id)
        .all(&app.core.db)
        .await
        .unwrap();
    let actions: Vec<_> = entries
        .iter()
        .map(|e| (e.action.as_str(), e.actor.as_str()))
        .collect();
    assert_eq!(actions, [("link.create", "cli"), ("link.disable", "bob")]);
    assert!(
        entries[1]
            .before_state
            .as_deref()
            .unwrap()
            .contains("\"active\"")
    );
    assert!(
        entries[1]
            .after_state
            .as_deref()
            .unwrap()
            .contains("\"disabled\"")
    );
    let missing = links::set_status(
        &app.core,
        &ShortCode::parse("nope").unwrap(),
        LinkStatus::Disabled,
        &Actor::Cli,
    )
    .await
    .unwrap_err();
    assert_eq!(missing.to_string(), "there is no link with the code 'nope'");
}

/// One reading of a new link's fields: the same mistake gets the same message from the API,
/// the admin form, the command line and the CSV import, and creates nothing anywhere.
#[actix_web::test]
async fn a_bad_field_gets_the_same_message_from_every_front_end() {
    let db = std::sync::Arc::new(crate::support::TestDb::create().await);
    let app = crate::support::spawn_on(db.clone(), &[]).await;
    let long = "x".repeat(40);
    let expected = inklink::rules::Tag::parse(&long).unwrap_err().to_string();
    let target = "https://example.com/same-message";

    let api = crate::api::Api::with_role(&app, "crm", inklink::rules::Role::Admin).await;
    let reply = api
        .call(
            "POST",
            "/api/v1/links",
            Some(serde_json::json!({"url": target, "tags": [long]})),
        )
        .await;
    assert_eq!(reply.status, 422, "{}", reply.body);
    assert_eq!(reply.body["error"]["code"], "invalid_value");
    assert_eq!(reply.body["error"]["field"], "tags");
    assert_eq!(reply.body["error"]["message"], expected.as_str());

    let mut browser = crate::admin::signed_in_admin(&app).await;
    let csrf = browser.csrf("/admin/links/new").await;
    let page = browser
        .post(
            "/admin/links",
            &[("csrf", &csrf), ("url", target), ("tags", &long)],
        )
        .await;
    assert_eq!(page.status, 422);
    let shown = page.body.replace("&#x27;", "'").replace("&#39;", "'");
    assert!(shown.contains(&expected), "the form says: {}", page.body);

    let run = crate::cli::inklink(&db, &["link", "add", target, "--tag", &long]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stderr.contains(&format!("--tag: {expected}")),
        "{}",
        run.stderr
    );

    // A row with two mistakes reports its first, whole (the page translates it as one message).
    let csv = format!("url,tags\n{target},{long}\nnot a url,{long}\n");
    let rows = links::bulk::import(&app.core, csv.as_bytes(), &Actor::Cli, chrono_tz::UTC)
        .await
        .unwrap();
    let result = |row: &links::bulk::RowOutcome| row.result.clone().map_err(|m| m.to_string());
    assert_eq!(result(&rows[0]), Err(expected.clone()));
    let bad_url = links::parse_target(&app.core, "not a url")
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(result(&rows[1]), Err(bad_url));

    let made = inklink::db::entities::url_map::Entity::find()
        .filter(inklink::db::entities::url_map::Column::LongUrl.eq(target))
        .all(&app.core.db)
        .await
        .unwrap();
    assert!(made.is_empty(), "nothing was created");
}

/// The command line reads a time without an offset in INKLINK_TIMEZONE, as the admin forms
/// and the import read it in the person's zone; a date alone is the end of that day.
#[actix_web::test]
async fn the_command_line_takes_a_local_expiry() {
    let db = crate::support::TestDb::create().await;
    let zone = [("INKLINK_TIMEZONE", "Asia/Shanghai")];
    let run = crate::cli::inklink_with(
        &db,
        &[
            "link",
            "add",
            "https://example.com/local-time",
            "--code",
            "localtime",
            "--expires",
            "2099-12-31 23:59",
            "--valid-from",
            "2099-01-01",
        ],
        None,
        &zone,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let shown =
        crate::cli::inklink_with(&db, &["link", "show", "localtime", "--json"], None, &zone);
    let link: serde_json::Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(link["expires_at"], "2099-12-31T15:59:00+00:00", "{link}");
    assert_eq!(link["valid_from"], "2098-12-31T16:00:00+00:00", "{link}");

    let skipped = crate::cli::inklink_with(
        &db,
        &[
            "link",
            "add",
            "https://example.com/local-time",
            "--expires",
            "2099-03-08 02:30",
        ],
        None,
        &[("INKLINK_TIMEZONE", "America/New_York")],
    );
    assert_eq!(skipped.code, 1);
    assert!(
        skipped
            .stderr
            .contains("--expires: 2099-03-08 02:30 does not exist in America/New_York"),
        "{}",
        skipped.stderr
    );
}
