//! A newcomer's first minutes: the mistakes of a first start get a message that says what to
//! do, and a failed start leaves nothing behind.

use crate::cli::{Run, inklink_with};
use crate::support::{Backend, ENV_URL, TestDb};
use std::process::{Command, Stdio};

/// The binary as `cli::inklink_with` runs it, with its spool beside the test database and no
/// configured admin password.
fn run(db: &TestDb, args: &[&str], env: &[(&str, &str)]) -> Run {
    let spool = db.spool_dir().display().to_string();
    let mut all = vec![
        ("INKLINK_SPOOL_DIR", spool.as_str()),
        ("INKLINK_ADMIN_PASSWORD", ""),
    ];
    all.extend_from_slice(env);
    inklink_with(db, args, None, &all)
}

/// Whether the database has any table at all (SQLite: any byte in its file).
async fn database_is_untouched(db: &TestDb) -> bool {
    use sea_orm::{ConnectionTrait, Database, DbBackend, Statement};
    if db.backend == Backend::Sqlite {
        let file = db
            .url
            .trim_start_matches("sqlite://")
            .split('?')
            .next()
            .unwrap();
        return std::fs::metadata(file).map(|m| m.len()).unwrap_or(0) == 0;
    }
    let conn = Database::connect(&db.url).await.unwrap();
    let sql = match db.backend {
        Backend::Postgres => {
            "SELECT CAST(COUNT(*) AS BIGINT) FROM information_schema.tables WHERE table_schema = 'public'"
        }
        _ => {
            "SELECT CAST(COUNT(*) AS SIGNED) FROM information_schema.tables WHERE table_schema = DATABASE()"
        }
    };
    let backend = match db.backend {
        Backend::Postgres => DbBackend::Postgres,
        _ => DbBackend::MySql,
    };
    let row = conn
        .query_one_raw(Statement::from_string(backend, sql))
        .await
        .unwrap()
        .unwrap();
    let tables: i64 = row.try_get_by_index(0).unwrap();
    conn.close().await.ok();
    tables == 0
}

#[actix_web::test]
async fn a_second_serve_on_a_taken_port_fails_before_it_makes_a_database_or_a_password() {
    let db = TestDb::create().await;
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let started = run(&db, &["serve"], &[("INKLINK_LISTEN", &address)]);
    assert_eq!(started.code, 1, "{}", started.stderr);
    assert!(
        started
            .stderr
            .contains(&format!("cannot listen on {address}"))
            && started.stderr.contains("INKLINK_LISTEN"),
        "{}",
        started.stderr
    );
    // The cause once, not once more as a chained source.
    assert_eq!(
        started.stderr.matches("Address already in use").count(),
        1,
        "{}",
        started.stderr
    );
    assert!(
        !started.stderr.contains("created the admin user"),
        "a password was printed for a server that never ran: {}",
        started.stderr
    );
    assert!(
        database_is_untouched(&db).await,
        "a failed start migrated the database"
    );
}

#[actix_web::test]
async fn a_listen_address_or_database_url_of_the_wrong_form_says_what_to_write() {
    let db = TestDb::create().await;
    let port = run(&db, &["migrate", "status"], &[("INKLINK_LISTEN", "8080")]);
    assert_eq!(port.code, 1, "{}", port.stderr);
    assert!(
        port.stderr.contains("INKLINK_LISTEN is '8080'")
            && port.stderr.contains("such as 127.0.0.1:8080")
            && !port.stderr.contains("Allowed:"),
        "{}",
        port.stderr
    );
    let file = run(
        &db,
        &["migrate", "status"],
        &[("INKLINK_DATABASE_URL", "inklink.db")],
    );
    assert_eq!(file.code, 1, "{}", file.stderr);
    assert!(
        file.stderr.contains("INKLINK_DATABASE_URL is 'inklink.db'")
            && file.stderr.contains("sqlite://inklink.db?mode=rwc")
            && !file.stderr.contains("cannot be parsed"),
        "{}",
        file.stderr
    );
    // A host name is an address too.
    let named = run(
        &db,
        &["migrate", "status"],
        &[("INKLINK_LISTEN", "localhost:8080")],
    );
    assert_eq!(named.code, 0, "{}", named.stderr);
}

#[actix_web::test]
async fn a_database_user_that_does_not_exist_is_named_with_what_to_do() {
    let db = TestDb::create().await;
    let Some(server) = std::env::var(ENV_URL).ok().filter(|url| !url.is_empty()) else {
        // SQLite has no users; the servers' answers are checked on their runs.
        return;
    };
    let mut url = url::Url::parse(&server).unwrap();
    url.set_username("inklink_nobody").unwrap();
    let answered = run(
        &db,
        &["migrate", "status"],
        &[("INKLINK_DATABASE_URL", url.as_str())],
    );
    assert_eq!(answered.code, 1, "{}", answered.stderr);
    let expected = match db.backend {
        Backend::Postgres => "role \"inklink_nobody\" does not exist; create the role first",
        _ => "Access denied for user 'inklink_nobody'",
    };
    assert!(
        answered.stderr.contains(expected) && !answered.stderr.contains(" at line "),
        "{}",
        answered.stderr
    );
}

#[actix_web::test]
async fn output_into_a_closed_pipe_ends_quietly_instead_of_panicking() {
    let db = TestDb::create().await;
    let mut child = Command::new(env!("CARGO_BIN_EXE_inklink"))
        .arg("check")
        .current_dir(std::env::temp_dir())
        .env("INKLINK_DATABASE_URL", &db.url)
        .env("INKLINK_SPOOL_DIR", std::env::temp_dir())
        .env("INKLINK_LISTEN", "127.0.0.1:0")
        .env_remove("INKLINK_CONFIG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // `inklink check | head -0`: the reader is gone before (nearly) every line.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(141), "{stderr}");
}
