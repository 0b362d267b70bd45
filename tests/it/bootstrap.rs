//! First start: migrations, secret, first domain, first admin.

use crate::support::{TestDb, settings};
use inklink::Inklink;
use inklink::db::entities::{domain_conf, settings as settings_table, users};
use inklink::rules::{CodeFormat, CodeGenerator};
use inklink::services::users::{ensure_admin, verify_password};
use sea_orm::{EntityTrait, PaginatorTrait};

#[actix_web::test]
async fn instances_starting_together_share_one_secret_and_one_first_domain() {
    let db = TestDb::create().await;
    // No --secret: it must be generated once and stored.
    let mut config = settings(&db, "127.0.0.1:18080", &[]);
    config.secret = None;
    // Several at once: on a new SQLite file they race to switch it to WAL, which SQLite
    // refuses the losers at once ("database is locked") instead of making them wait.
    let opened =
        futures_util::future::join_all((0..6).map(|_| inklink::startup::open(config.clone())))
            .await;
    let opened: Vec<Inklink> = opened.into_iter().map(Result::unwrap).collect();
    let (a, b) = (&opened[0], &opened[5]);
    let secrets = settings_table::Entity::find().all(&a.db).await.unwrap();
    assert_eq!(secrets.len(), 1);
    assert_eq!(secrets[0].value.len(), 64);
    assert_eq!(
        a.codes.code_for_id(7).unwrap(),
        b.codes.code_for_id(7).unwrap()
    );
    let expected = CodeGenerator::new(CodeFormat::new(6, false), secrets[0].value.as_bytes());
    assert_eq!(
        a.codes.code_for_id(7).unwrap(),
        expected.code_for_id(7).unwrap()
    );
    let domains = domain_conf::Entity::find().all(&a.db).await.unwrap();
    assert_eq!(domains.len(), 1);
    assert_eq!(domains[0].host, "localhost:18080");
    assert_eq!(domains[0].protocol, "http");
    assert!(domains[0].is_default);
    // A restart reads the same secret back.
    let again = inklink::startup::open(config).await.unwrap();
    assert_eq!(
        again.codes.code_for_id(7).unwrap(),
        a.codes.code_for_id(7).unwrap()
    );
}

#[actix_web::test]
async fn the_first_admin_gets_the_configured_or_a_random_password() {
    let db = TestDb::create().await;
    let core = inklink::startup::open(settings(&db, "127.0.0.1:0", &[]))
        .await
        .unwrap();
    assert_eq!(
        ensure_admin(&core.db, Some("correct horse")).await.unwrap(),
        None
    );
    let admin = users::Entity::find().one(&core.db).await.unwrap().unwrap();
    assert_eq!(
        (admin.username.as_str(), admin.role.as_str()),
        ("admin", "admin")
    );
    assert!(admin.password_hash.starts_with("$argon2id$"));
    assert!(verify_password(&admin.password_hash, "correct horse"));
    assert!(!verify_password(&admin.password_hash, "wrong horse"));
    // Once a user exists nothing more is created.
    assert_eq!(ensure_admin(&core.db, None).await.unwrap(), None);
    assert_eq!(users::Entity::find().count(&core.db).await.unwrap(), 1);

    let other = TestDb::create().await;
    let core = inklink::startup::open(settings(&other, "127.0.0.1:0", &[]))
        .await
        .unwrap();
    let generated = ensure_admin(&core.db, None)
        .await
        .unwrap()
        .expect("a generated password");
    assert_eq!(generated.len(), 20);
    let admin = users::Entity::find().one(&core.db).await.unwrap().unwrap();
    assert!(verify_password(&admin.password_hash, &generated));

    let third = TestDb::create().await;
    let core = inklink::startup::open(settings(&third, "127.0.0.1:0", &[]))
        .await
        .unwrap();
    let err = ensure_admin(&core.db, Some("short")).await.unwrap_err();
    assert!(err.to_string().contains("at least 8"), "{err}");
}

/// The click writer and counting open connections of their own, except to an in-memory SQLite
/// database, which exists only in the pool that opened it.
#[test]
fn only_in_memory_sqlite_databases_are_kept_to_the_one_pool() {
    for url in [
        "sqlite::memory:",
        "sqlite://:memory:",
        "sqlite::memory:?cache=shared",
        "sqlite://inklink.db?mode=memory",
    ] {
        assert!(inklink::db::sqlite_in_memory(url), "{url}");
    }
    for url in [
        "sqlite://inklink.db?mode=rwc",
        "sqlite:/var/lib/inklink/memory.db",
        "postgres://postgres@127.0.0.1:5432/memory",
        "mysql://root@127.0.0.1:3306/inklink",
    ] {
        assert!(!inklink::db::sqlite_in_memory(url), "{url}");
    }
}
