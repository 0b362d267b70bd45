//! The command line, run as a real process against the test database.

use crate::support::{TestDb, spawn_on};
use inklink::db::entities::{domain_conf, users};
use inklink::services::users::verify_password;
use sea_orm::{ColumnTrait, Database, EntityTrait, QueryFilter};
use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::Duration;

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub fn inklink_with(db: &TestDb, args: &[&str], stdin: Option<&str>, env: &[(&str, &str)]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_inklink"));
    command
        .args(args)
        .current_dir(std::env::temp_dir())
        .env("INKLINK_DATABASE_URL", &db.url)
        .env("INKLINK_SECRET", "test-secret")
        .env_remove("INKLINK_CONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in env {
        match value.is_empty() {
            true => command.env_remove(key),
            false => command.env(key, value),
        };
    }
    let mut child = command.spawn().expect("the inklink binary runs");
    let mut input = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        input.write_all(text.as_bytes()).unwrap();
    }
    drop(input);
    let Output {
        status,
        stdout,
        stderr,
    } = child.wait_with_output().unwrap();
    Run {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

/// [`inklink`] for a test that also runs a server: the CLI waits on a blocking thread, so that
/// the server's background tasks, which live on the test's runtime, keep running. Blocking
/// the runtime instead would freeze a write transaction one of them has open (the click
/// writer's, say), and the CLI would wait for its lock until SQLite gives up.
pub async fn inklink_live(db: &Arc<TestDb>, args: &[&str]) -> Run {
    let db = db.clone();
    let args: Vec<String> = args.iter().map(|arg| arg.to_string()).collect();
    actix_web::rt::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        inklink(&db, &args)
    })
    .await
    .expect("the CLI thread finishes")
}

pub fn inklink(db: &TestDb, args: &[&str]) -> Run {
    inklink_with(db, args, None, &[])
}

pub fn ok(run: Run) -> String {
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    run.stdout
}

fn fails(run: Run, message: &str) {
    assert_eq!(run.code, 1, "stdout: {} stderr: {}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains(message),
        "expected {message:?} in {:?}",
        run.stderr
    );
}

#[actix_web::test]
async fn link_add_prints_a_short_url_that_redirects_and_disable_enable_work() {
    let db = Arc::new(TestDb::create().await);
    let app = spawn_on(db.clone(), &["--cache-ttl", "1"]).await;
    let short = ok(inklink_live(&db, &["link", "add", "https://example.com/a?x=1"]).await);
    let short = short.trim();
    let prefix = format!("http://localhost:{}/", app.port);
    assert!(short.starts_with(&prefix), "{short}");
    let code = &short[prefix.len()..];
    assert_eq!(code.len(), 6);
    let path = format!("/{code}");
    let (status, location, _) = app.fetch(&path).await;
    assert_eq!(
        (status, location.as_deref()),
        (302, Some("https://example.com/a?x=1"))
    );

    assert!(ok(inklink_live(&db, &["link", "disable", code]).await).contains("disabled"));
    actix_web::rt::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(app.fetch(&path).await.0, 410);
    ok(inklink_live(&db, &["link", "enable", code]).await);
    actix_web::rt::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(app.fetch(&path).await.0, 302);

    let custom = ok(inklink_live(
        &db,
        &[
            "link",
            "add",
            "https://example.com/b",
            "--code",
            "Promo",
            "--description",
            "spring",
            "--expires",
            "2099-01-01T00:00:00+08:00",
            "--redirect-status",
            "301",
        ],
    )
    .await);
    assert_eq!(custom.trim(), format!("{prefix}Promo"));
    let response = app.get("/Promo").await;
    assert_eq!(response.status().as_u16(), 301);
    let hashed_a = ok(inklink_live(
        &db,
        &["link", "add", "https://example.com/h", "--strategy", "hash"],
    )
    .await);
    let hashed_b = ok(inklink_live(
        &db,
        &["link", "add", "https://example.com/h", "--strategy", "hash"],
    )
    .await);
    assert_eq!(hashed_a, hashed_b);
    let reused = inklink_live(&db, &["link", "add", "https://example.com/b", "--reuse"]).await;
    assert_eq!(reused.stdout.trim(), format!("{prefix}Promo"));
    assert!(reused.stderr.contains("reusing"));
}

#[actix_web::test]
async fn cli_errors_are_clear_and_exit_non_zero() {
    let db = TestDb::create().await;
    ok(inklink(
        &db,
        &["link", "add", "https://example.com/", "--code", "taken"],
    ));
    fails(
        inklink(&db, &["link", "add", "javascript:alert(1)"]),
        "only http and https",
    );
    fails(
        inklink(&db, &["link", "add", "example.com/x"]),
        "not an absolute URL",
    );
    fails(
        inklink(
            &db,
            &["link", "add", "https://example.com/", "--code", "taken"],
        ),
        "already taken",
    );
    fails(
        inklink(
            &db,
            &["link", "add", "https://example.com/", "--code", "admin"],
        ),
        "reserved word",
    );
    fails(
        inklink(
            &db,
            &["link", "add", "https://example.com/", "--code", "a/b"],
        ),
        "only letters",
    );
    fails(
        inklink(
            &db,
            &[
                "link",
                "add",
                "https://example.com/",
                "--domain",
                "nope.example",
            ],
        ),
        "there is no domain 'nope.example'",
    );
    fails(
        inklink(
            &db,
            &[
                "link",
                "add",
                "https://example.com/",
                "--expires",
                "tomorrow",
            ],
        ),
        "RFC 3339",
    );
    fails(
        inklink(
            &db,
            &[
                "link",
                "add",
                "https://example.com/",
                "--expires",
                "2001-01-01T00:00:00Z",
            ],
        ),
        "in the past",
    );
    fails(
        inklink(&db, &["link", "disable", "missing"]),
        "there is no link with the code 'missing'",
    );
    let usage = inklink(
        &db,
        &[
            "link",
            "add",
            "https://example.com/",
            "--redirect-status",
            "200",
        ],
    );
    assert_eq!(usage.code, 2);
    assert!(
        usage.stderr.contains("301, 302, 307 or 308"),
        "{}",
        usage.stderr
    );
    let length = inklink(
        &db,
        &["--code-length", "3", "link", "add", "https://example.com/"],
    );
    assert_eq!(length.code, 2);
    let unreachable = inklink_with(
        &db,
        &["link", "add", "https://example.com/"],
        None,
        &[("INKLINK_DATABASE_URL", "postgres://nobody@127.0.0.1:1/none")],
    );
    assert_eq!(unreachable.code, 1);
    assert!(
        unreachable
            .stderr
            .contains("cannot connect to the database"),
        "{}",
        unreachable.stderr
    );
}

#[actix_web::test]
async fn users_are_added_with_a_password_from_stdin() {
    let db = TestDb::create().await;
    let added = ok(inklink_with(
        &db,
        &["user", "add", "Alice", "--role", "operator"],
        Some("s3cret-pass\n"),
        &[],
    ));
    assert!(added.contains("added operator user alice"), "{added}");
    fails(
        inklink_with(
            &db,
            &["user", "add", "alice", "--role", "admin"],
            Some("another-pass\n"),
            &[],
        ),
        "already exists",
    );
    fails(
        inklink_with(
            &db,
            &["user", "add", "bob", "--role", "admin"],
            Some("short\n"),
            &[],
        ),
        "at least 8",
    );
    fails(
        inklink_with(
            &db,
            &["user", "add", "bad name", "--role", "admin"],
            Some("long-enough\n"),
            &[],
        ),
        "user names",
    );
    assert_eq!(
        inklink_with(
            &db,
            &["user", "add", "carol", "--role", "boss"],
            Some("long-enough\n"),
            &[]
        )
        .code,
        2
    );
    ok(inklink_with(
        &db,
        &["user", "passwd", "alice"],
        Some("new-password\r\n"),
        &[],
    ));
    fails(
        inklink_with(
            &db,
            &["user", "passwd", "nobody"],
            Some("new-password\n"),
            &[],
        ),
        "there is no user 'nobody'",
    );

    let conn = Database::connect(&db.url).await.unwrap();
    let alice = users::Entity::find()
        .filter(users::Column::Username.eq("alice"))
        .one(&conn)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(alice.role, "operator");
    assert!(verify_password(&alice.password_hash, "new-password"));
    assert!(!verify_password(&alice.password_hash, "s3cret-pass"));
}

#[actix_web::test]
async fn domains_are_added_and_the_default_moves() {
    let db = TestDb::create().await;
    assert_eq!(
        ok(inklink(&db, &["domain", "add", "S.Example.CN"])).trim(),
        "added https://s.example.cn"
    );
    assert_eq!(
        ok(inklink(
            &db,
            &["domain", "add", "t.example.cn:8443", "--http", "--default"]
        ))
        .trim(),
        "added http://t.example.cn:8443 (default)"
    );
    fails(
        inklink(&db, &["domain", "add", "s.example.cn"]),
        "already exists",
    );
    fails(
        inklink(&db, &["domain", "add", "https://u.example.cn"]),
        "without a scheme",
    );
    let conn = Database::connect(&db.url).await.unwrap();
    let defaults: Vec<_> = domain_conf::Entity::find()
        .filter(domain_conf::Column::IsDefault.eq(true))
        .all(&conn)
        .await
        .unwrap();
    assert_eq!(defaults.len(), 1);
    assert_eq!(defaults[0].host, "t.example.cn:8443");
    let short = ok(inklink(&db, &["link", "add", "https://example.com/"]));
    assert!(short.starts_with("http://t.example.cn:8443/"), "{short}");
    let on_s = ok(inklink(
        &db,
        &[
            "link",
            "add",
            "https://example.com/",
            "--domain",
            "s.example.cn",
        ],
    ));
    assert!(on_s.starts_with("https://s.example.cn/"), "{on_s}");
}

#[actix_web::test]
async fn migrations_go_up_down_and_report_status() {
    let db = TestDb::create().await;
    let status = ok(inklink(&db, &["migrate", "status"]));
    assert!(
        status.contains("pending") && status.contains("initial_schema"),
        "{status}"
    );
    let up = ok(inklink(&db, &["migrate"]));
    assert!(up.contains("applied"), "{up}");
    // Reverting drops data: it takes --yes, and without it nothing changes.
    fails(inklink(&db, &["migrate", "down"]), "--yes");
    let still = ok(inklink(&db, &["migrate", "status"]));
    assert!(!still.contains("pending"), "{still}");
    let down = ok(inklink(&db, &["migrate", "down", "--yes"]));
    assert!(down.contains("pending"), "{down}");
    ok(inklink(&db, &["migrate", "up"]));
    ok(inklink(
        &db,
        &["link", "add", "https://example.com/after-migrations"],
    ));
}

#[actix_web::test]
async fn settings_come_from_flags_then_environment_then_inklink_toml() {
    let db = TestDb::create().await;
    let file = std::env::temp_dir().join(format!("inklink-{}.toml", std::process::id()));
    std::fs::write(
        &file,
        format!(
            "database_url = \"{}\"\ncode_length = 8\nquery-merge = false\n",
            db.url
        ),
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let from_file = inklink_with(
        &db,
        &["--config", path, "link", "add", "https://example.com/"],
        None,
        &[("INKLINK_DATABASE_URL", "")],
    );
    let from_file = ok(from_file);
    assert_eq!(
        from_file.trim().rsplit('/').next().unwrap().len(),
        8,
        "{from_file}"
    );
    let from_env = ok(inklink_with(
        &db,
        &["--config", path, "link", "add", "https://example.com/"],
        None,
        &[("INKLINK_CODE_LENGTH", "9")],
    ));
    assert_eq!(from_env.trim().rsplit('/').next().unwrap().len(), 9);
    let from_flag = ok(inklink_with(
        &db,
        &[
            "--config",
            path,
            "--code-length",
            "10",
            "link",
            "add",
            "https://example.com/",
        ],
        None,
        &[("INKLINK_CODE_LENGTH", "9")],
    ));
    assert_eq!(from_flag.trim().rsplit('/').next().unwrap().len(), 10);
    let via_env = ok(inklink_with(
        &db,
        &["link", "add", "https://example.com/"],
        None,
        &[("INKLINK_CONFIG", path)],
    ));
    assert_eq!(via_env.trim().rsplit('/').next().unwrap().len(), 8);

    std::fs::write(&file, "databse_url = \"typo\"\n").unwrap();
    fails(
        inklink(
            &db,
            &["--config", path, "link", "add", "https://example.com/"],
        ),
        "unknown setting 'databse_url'",
    );
    std::fs::write(&file, "code_length = [\n").unwrap();
    fails(
        inklink(
            &db,
            &["--config", path, "link", "add", "https://example.com/"],
        ),
        "not valid TOML",
    );
    std::fs::remove_file(&file).unwrap();
    fails(
        inklink(
            &db,
            &["--config", path, "link", "add", "https://example.com/"],
        ),
        "cannot read",
    );
}

#[test]
fn help_documents_commands_options_and_environment() {
    let output = Command::new(env!("CARGO_BIN_EXE_inklink"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8(output.stdout).unwrap();
    for needle in [
        "serve",
        "migrate",
        "user",
        "link",
        "domain",
        "INKLINK_DATABASE_URL",
        "INKLINK_LISTEN",
        "INKLINK_SECRET",
        "INKLINK_ADMIN_PASSWORD",
        "INKLINK_CODE_LENGTH",
        "INKLINK_CODE_CHECK_CHAR",
        "INKLINK_REDIRECT_STATUS",
        "INKLINK_CACHE_TTL",
        "INKLINK_ADMIN_HOSTS",
        "inklink.toml",
    ] {
        assert!(help.contains(needle), "--help lacks {needle}");
    }
    let link_help = Command::new(env!("CARGO_BIN_EXE_inklink"))
        .args(["link", "add", "--help"])
        .output()
        .unwrap();
    let link_help = String::from_utf8(link_help.stdout).unwrap();
    for needle in [
        "--code",
        "--domain",
        "--expires",
        "--description",
        "RFC 3339",
    ] {
        assert!(link_help.contains(needle), "link add --help lacks {needle}");
    }
}

#[actix_web::test]
async fn link_import_creates_links_from_a_csv_file_and_reports_each_row() {
    let db = TestDb::create().await;
    let dir = std::env::temp_dir();
    let input = dir.join(format!("inklink-import-{}.csv", std::process::id()));
    let output = dir.join(format!("inklink-import-{}-results.csv", std::process::id()));
    std::fs::write(
        &input,
        "url,code\nhttps://example.com/a,\nhttps://example.com/b,cli-b\n",
    )
    .unwrap();
    let path = input.to_str().unwrap();
    let results = ok(inklink(&db, &["link", "import", path]));
    assert_eq!(results.lines().count(), 3, "{results}");
    assert!(results.lines().nth(2).unwrap().ends_with("/cli-b,"));
    std::fs::write(
        &input,
        "url,code\nhttps://example.com/c,\nnot a url,\nhttps://example.com/d,cli-b\n",
    )
    .unwrap();
    let run = inklink(
        &db,
        &[
            "link",
            "import",
            path,
            "--results",
            output.to_str().unwrap(),
        ],
    );
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("created 1 links; 2 rows failed"),
        "{}",
        run.stderr
    );
    let written = std::fs::read_to_string(&output).unwrap();
    assert!(written.contains("not an absolute URL") && written.contains("already taken"));
    fails(
        inklink(&db, &["link", "import", "/nonexistent/links.csv"]),
        "cannot read /nonexistent/links.csv",
    );
    let _ = std::fs::remove_file(&input);
    let _ = std::fs::remove_file(&output);
}

#[actix_web::test]
async fn apikey_add_prints_a_working_key_once() {
    let db = Arc::new(TestDb::create().await);
    let key = ok(inklink(
        &db,
        &["apikey", "add", "provisioned", "--role", "admin"],
    ));
    let key = key.trim();
    assert!(inklink::rules::ApiToken::parse(key).is_some(), "{key}");
    let app = spawn_on(db.clone(), &[]).await;
    let status = app
        .client
        .get(app.url("/api/v1/domains"))
        .insert_header(("authorization", format!("Bearer {key}")))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16();
    assert_eq!(status, 200);
    for (args, message) in [
        (
            &["apikey", "add", "provisioned", "--role", "admin"][..],
            "exists already",
        ),
        (
            &["apikey", "add", "bad name", "--role", "admin"],
            "key name",
        ),
        (&["apikey", "add", "x", "--role", "boss"], "--role"),
        (
            &[
                "apikey",
                "add",
                "x",
                "--role",
                "operator",
                "--expires",
                "tomorrow",
            ],
            "RFC 3339",
        ),
        (
            &[
                "apikey",
                "add",
                "x",
                "--role",
                "operator",
                "--expires",
                "2001-01-01T00:00:00Z",
            ],
            "in the past",
        ),
    ] {
        let run = inklink_live(&db, args).await;
        assert_ne!(run.code, 0, "{args:?}");
        assert!(run.stderr.contains(message), "{args:?}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "no key printed on failure");
    }
}

#[actix_web::test]
async fn commands_other_than_serve_and_migrate_never_make_a_new_sqlite_file() {
    let db = TestDb::create().await;
    let missing = std::env::temp_dir().join(format!("inklink-nowhere-{}.db", std::process::id()));
    let url = format!("sqlite://{}?mode=rwc", missing.display());
    let run = inklink_with(
        &db,
        &["link", "add", "https://example.com/lost"],
        None,
        &[("INKLINK_DATABASE_URL", &url)],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("no inklink database at"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains(&missing.display().to_string()));
    assert!(!missing.exists(), "no file was made");
    assert!(run.stdout.is_empty(), "no short URL that would never work");

    // `migrate` makes it, readable by its owner only.
    let made = inklink_with(&db, &["migrate"], None, &[("INKLINK_DATABASE_URL", &url)]);
    assert_eq!(made.code, 0, "{}", made.stderr);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&missing).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{mode:o}");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", missing.display()));
    }
}

#[actix_web::test]
async fn link_add_follows_one_rule_for_custom_codes_and_redirect_status() {
    use inklink::db::entities::url_map;
    let db = TestDb::create().await;
    fails(
        inklink(
            &db,
            &[
                "link",
                "add",
                "https://example.com/c",
                "--strategy",
                "custom",
            ],
        ),
        "no code was given",
    );
    ok(inklink(
        &db,
        &["link", "add", "https://example.com/d", "--code", "plain"],
    ));
    ok(inklink(
        &db,
        &[
            "link",
            "add",
            "https://example.com/e",
            "--code",
            "moved",
            "--redirect-status",
            "301",
        ],
    ));
    let conn = Database::connect(&db.url).await.unwrap();
    let status_of = |code: &'static str| {
        let conn = conn.clone();
        async move {
            url_map::Entity::find()
                .filter(url_map::Column::CompressionCode.eq(code))
                .one(&conn)
                .await
                .unwrap()
                .unwrap()
                .redirect_status
        }
    };
    // Like the API and the import: no status of its own unless one is given.
    assert_eq!(status_of("plain").await, None);
    assert_eq!(status_of("moved").await, Some(301));
}

#[actix_web::test]
async fn serve_refuses_an_unusable_spool_directory_and_prints_the_first_password() {
    let db = TestDb::create().await;
    let blocker = std::env::temp_dir().join(format!("inklink-not-a-dir-{}", std::process::id()));
    std::fs::write(&blocker, b"a file").unwrap();
    let spool = blocker.join("spool");
    let run = inklink_with(
        &db,
        &["serve"],
        None,
        &[
            ("INKLINK_SPOOL_DIR", &spool.display().to_string()),
            ("INKLINK_LISTEN", "127.0.0.1:0"),
            ("INKLINK_LOG", "error"),
        ],
    );
    std::fs::remove_file(&blocker).unwrap();
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("spool directory"), "{}", run.stderr);
    assert!(run.stderr.contains("INKLINK_SPOOL_DIR"), "{}", run.stderr);
    // Quiet logs or not, the generated password of the first admin reached standard error.
    assert!(
        run.stderr
            .contains("created the admin user 'admin' with the password")
            && run.stderr.contains("inklink user passwd admin"),
        "{}",
        run.stderr
    );
}

#[actix_web::test]
async fn a_database_migrated_by_a_newer_inklink_is_refused_with_the_versions() {
    use sea_orm::ConnectionTrait;
    let db = TestDb::create().await;
    ok(inklink(&db, &["migrate"]));
    let conn = Database::connect(&db.url).await.unwrap();
    conn.execute_unprepared(
        "INSERT INTO seaql_migrations (version, applied_at) VALUES ('m20991231_000001_from_the_future', 0)",
    )
    .await
    .unwrap();
    let run = inklink(&db, &["link", "add", "https://example.com/old-binary"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("migrated by a newer inklink")
            && run.stderr.contains("m20991231_000001_from_the_future"),
        "{}",
        run.stderr
    );
}

#[actix_web::test]
async fn a_bad_setting_is_named_by_where_it_came_from_with_what_is_allowed() {
    let db = TestDb::create().await;
    let env = |key: &'static str, value: &'static str| {
        inklink_with(&db, &["migrate", "status"], None, &[(key, value)])
    };
    let length = env("INKLINK_CODE_LENGTH", "99");
    assert_eq!(length.code, 1, "{}", length.stderr);
    assert!(
        length.stderr.contains("INKLINK_CODE_LENGTH is '99'")
            && length.stderr.contains("4..=12")
            && !length.stderr.contains("--code-length"),
        "{}",
        length.stderr
    );
    let zone = env("INKLINK_TIMEZONE", "Mars/Base");
    assert_eq!(zone.code, 1, "{}", zone.stderr);
    assert!(
        zone.stderr.contains("INKLINK_TIMEZONE is 'Mars/Base'")
            && zone.stderr.contains("IANA name such as Asia/Shanghai"),
        "{}",
        zone.stderr
    );
    // From the file: named as the file's key.
    let dir = std::env::temp_dir().join(format!("inklink-bad-toml-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("inklink.toml");
    std::fs::write(&file, "redirect_status = 200\n").unwrap();
    let run = inklink_with(
        &db,
        &["migrate", "status"],
        None,
        &[("INKLINK_CONFIG", &file.display().to_string())],
    );
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("the setting 'redirect_status' in")
            && run.stderr.contains("301, 302, 307 or 308"),
        "{}",
        run.stderr
    );
    // A flag typed on the command line keeps clap's own message.
    let typed = inklink(&db, &["--code-length", "99", "migrate", "status"]);
    assert_eq!(typed.code, 2);
    assert!(typed.stderr.contains("--code-length"), "{}", typed.stderr);
}

#[actix_web::test]
async fn a_wrong_database_port_says_connection_refused_at_once() {
    let db = TestDb::create().await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for url in [
        format!("postgres://postgres@127.0.0.1:{port}/inklink"),
        format!("mysql://root@127.0.0.1:{port}/inklink"),
    ] {
        let run = inklink_with(
            &db,
            &["migrate", "status"],
            None,
            &[("INKLINK_DATABASE_URL", &url)],
        );
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert!(
            run.stderr.to_lowercase().contains("connection refused")
                && run.stderr.contains(&format!("127.0.0.1:{port}")),
            "{}",
            run.stderr
        );
    }
}

#[actix_web::test]
async fn check_reports_each_condition_and_fails_on_any_problem() {
    let db = TestDb::create().await;
    ok(inklink(&db, &["migrate"]));
    let good = inklink_with(
        &db,
        &["check"],
        None,
        &[
            ("INKLINK_SPOOL_DIR", &db.spool_dir().display().to_string()),
            ("INKLINK_LISTEN", "127.0.0.1:0"),
        ],
    );
    assert_eq!(good.code, 0, "{}{}", good.stdout, good.stderr);
    for what in [
        "configuration",
        "database",
        "schema",
        "GeoIP",
        "spool directory",
        "listen address",
    ] {
        assert!(
            good.stdout.contains(&format!("OK   {what}:")),
            "{what}: {}",
            good.stdout
        );
    }
    assert!(good.stdout.contains("up to date"), "{}", good.stdout);

    let blocker = std::env::temp_dir().join(format!("inklink-check-file-{}", std::process::id()));
    std::fs::write(&blocker, b"x").unwrap();
    let bad = inklink_with(
        &db,
        &["check"],
        None,
        &[
            (
                "INKLINK_SPOOL_DIR",
                &blocker.join("spool").display().to_string(),
            ),
            ("INKLINK_GEOIP_DB", "/nonexistent/GeoLite2-City.mmdb"),
            ("INKLINK_LISTEN", "127.0.0.1:0"),
        ],
    );
    std::fs::remove_file(&blocker).unwrap();
    assert_eq!(bad.code, 1, "{}", bad.stdout);
    assert!(
        bad.stdout.contains("FAIL spool directory:"),
        "{}",
        bad.stdout
    );
    assert!(bad.stdout.contains("FAIL GeoIP:"), "{}", bad.stdout);
    assert!(bad.stdout.contains("OK   database:"), "{}", bad.stdout);
    assert!(
        bad.stderr.contains("2 of the checks failed"),
        "{}",
        bad.stderr
    );
}

#[actix_web::test]
async fn backup_copies_a_database_in_use_and_the_copy_opens() {
    let db = Arc::new(TestDb::create().await);
    let app = spawn_on(db.clone(), &[]).await;
    let saved = crate::support::create_link(&app, "https://example.com/kept").await;
    let file = std::env::temp_dir().join(format!("inklink-backup-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&file);
    let run = inklink_live(&db, &["backup", &file.display().to_string()]).await;
    if db.url.starts_with("sqlite") {
        assert_eq!(run.code, 0, "{}", run.stderr);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the copy is private: {mode:o}");
        // The copy is a database of its own, with the link in it.
        let copy = format!("sqlite://{}?mode=rw", file.display());
        let conn = Database::connect(&copy).await.unwrap();
        let found = inklink::db::entities::url_map::Entity::find()
            .filter(
                inklink::db::entities::url_map::Column::CompressionCode
                    .eq(saved.link.compression_code.as_str()),
            )
            .one(&conn)
            .await
            .unwrap();
        assert!(found.is_some());
        conn.close().await.unwrap();
        // An existing file is never overwritten.
        let again = inklink_live(&db, &["backup", &file.display().to_string()]).await;
        assert_eq!(again.code, 1);
        assert!(again.stderr.contains("exists already"), "{}", again.stderr);
        std::fs::remove_file(&file).unwrap();
    } else {
        assert_eq!(run.code, 1);
        assert!(
            run.stderr.contains("pg_dump") || run.stderr.contains("mysqldump"),
            "{}",
            run.stderr
        );
        assert!(!file.exists());
    }
}

#[actix_web::test]
async fn logs_are_plain_text_in_a_file_and_json_when_asked() {
    let db = TestDb::create().await;
    for format in ["text", "json"] {
        let log =
            std::env::temp_dir().join(format!("inklink-log-{format}-{}.log", std::process::id()));
        let env = [
            ("INKLINK_LOG_FORMAT", format),
            ("INKLINK_LOG", "info"),
            ("NO_COLOR", ""),
        ];
        let stderr = Stdio::from(std::fs::File::create(&log).unwrap());
        let (mut server, port) = crate::support::serve_binary(&db, &env, stderr).await;
        // A wrong password: the log says who failed from where.
        let client = crate::support::client();
        let base = format!("http://127.0.0.1:{port}");
        let mut form = client
            .get(format!("{base}/admin/login"))
            .send()
            .await
            .unwrap();
        let cookie = form
            .headers()
            .get("set-cookie")
            .unwrap()
            .to_str()
            .unwrap()
            .split(';')
            .next()
            .unwrap()
            .to_owned();
        let body = String::from_utf8(form.body().await.unwrap().to_vec()).unwrap();
        let start = body.find("name=\"csrf\" value=\"").unwrap() + 19;
        let csrf = body[start..start + 64].to_owned();
        let refused = client
            .post(format!("{base}/admin/login"))
            .insert_header(("cookie", cookie))
            .send_form(&[
                ("csrf", csrf.as_str()),
                ("username", "mallory"),
                ("password", "guess-guess"),
            ])
            .await
            .unwrap();
        assert_eq!(refused.status().as_u16(), 401);
        crate::support::signal(&server, "-TERM");
        crate::support::exit_of(&mut server).await;
        let text = std::fs::read_to_string(&log).unwrap();
        std::fs::remove_file(&log).unwrap();
        assert!(text.contains("inklink is serving"), "{text}");
        assert!(
            text.contains("failed sign-in") && text.contains("mallory"),
            "{text}"
        );
        assert!(
            !text.contains('\u{1b}'),
            "no colour codes in a file: {text:?}"
        );
        if format == "json" {
            for line in text.lines().filter(|line| !line.is_empty()) {
                let value: serde_json::Value = serde_json::from_str(line)
                    .unwrap_or_else(|err| panic!("not JSON ({err}): {line}"));
                assert!(value.get("level").is_some(), "{line}");
            }
        }
    }
}

#[actix_web::test]
async fn links_domains_users_and_keys_are_managed_from_the_cli() {
    let db = TestDb::create().await;
    ok(inklink(
        &db,
        &["link", "add", "https://example.com/a", "--code", "first"],
    ));
    ok(inklink(
        &db,
        &["link", "add", "https://example.com/b", "--code", "second"],
    ));
    ok(inklink(&db, &["link", "disable", "second"]));
    ok(inklink(&db, &["domain", "add", "s.example.cn"]));

    // Links: a table, JSON, one link whole, and deletion.
    let table = ok(inklink(&db, &["link", "list"]));
    assert!(table.starts_with("CODE"), "{table}");
    assert!(
        table.contains("first") && table.contains("second"),
        "{table}"
    );
    let disabled: serde_json::Value = serde_json::from_str(&ok(inklink(
        &db,
        &["link", "list", "--status", "disabled", "--json"],
    )))
    .unwrap();
    assert_eq!(disabled.as_array().unwrap().len(), 1);
    assert_eq!(disabled[0]["code"], "second");
    assert_eq!(disabled[0]["status"], "disabled");
    let shown = ok(inklink(&db, &["link", "show", "first"]));
    assert!(
        shown.contains("https://example.com/a") && shown.contains("active"),
        "{shown}"
    );
    ok(inklink(&db, &["link", "delete", "first"]));
    fails(
        inklink(&db, &["link", "show", "first"]),
        "no link with the code 'first'",
    );

    // Domains: list, rotate (the replacement becomes the default), disable, enable.
    let domains: serde_json::Value =
        serde_json::from_str(&ok(inklink(&db, &["domain", "list", "--json"]))).unwrap();
    assert_eq!(domains.as_array().unwrap().len(), 2);
    let first = domains[0]["host"].as_str().unwrap().to_owned();
    let rotated = ok(inklink(
        &db,
        &["domain", "rotate", &first, "--to", "s.example.cn"],
    ));
    assert!(rotated.contains("keeps redirecting"), "{rotated}");
    let after: serde_json::Value =
        serde_json::from_str(&ok(inklink(&db, &["domain", "list", "--json"]))).unwrap();
    let cn = after
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["host"] == "s.example.cn")
        .unwrap();
    assert_eq!(cn["default"], true);
    fails(
        inklink(&db, &["domain", "disable", "s.example.cn"]),
        "default domain",
    );
    fails(
        inklink(&db, &["domain", "default", "nowhere.example"]),
        "no domain",
    );

    // Users: list, role, disable, enable; the last admin stays.
    ok(inklink_with(
        &db,
        &["user", "add", "bob", "--role", "admin"],
        Some("bob-password\n"),
        &[],
    ));
    ok(inklink_with(
        &db,
        &["user", "add", "ann", "--role", "operator"],
        Some("ann-password\n"),
        &[],
    ));
    fails(
        inklink(&db, &["user", "disable", "bob"]),
        "last active admin",
    );
    ok(inklink(&db, &["user", "role", "ann", "admin"]));
    ok(inklink(&db, &["user", "disable", "bob"]));
    let people: serde_json::Value =
        serde_json::from_str(&ok(inklink(&db, &["user", "list", "--json"]))).unwrap();
    let bob = people
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["name"] == "bob")
        .unwrap();
    assert_eq!(bob["disabled"], true);
    ok(inklink(&db, &["user", "enable", "bob"]));

    // Keys: list and revoke by name.
    ok(inklink(
        &db,
        &["apikey", "add", "crm", "--role", "operator"],
    ));
    assert!(ok(inklink(&db, &["apikey", "list"])).contains("crm"));
    ok(inklink(&db, &["apikey", "revoke", "crm"]));
    let keys: serde_json::Value =
        serde_json::from_str(&ok(inklink(&db, &["apikey", "list", "--json"]))).unwrap();
    assert_eq!(keys[0]["revoked"], true);
    fails(
        inklink(&db, &["apikey", "revoke", "nobody"]),
        "no API key 'nobody'",
    );
}

#[actix_web::test]
async fn a_password_typed_at_a_terminal_is_not_shown() {
    use std::io::Read;
    let db = TestDb::create().await;
    ok(inklink(&db, &["migrate"]));
    // `script` (util-linux) runs the command on a pseudo-terminal, as a person would.
    let command = format!(
        "{} user add zed --role operator",
        env!("CARGO_BIN_EXE_inklink")
    );
    let mut child = Command::new("script")
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .current_dir(std::env::temp_dir())
        .env("INKLINK_DATABASE_URL", &db.url)
        .env("INKLINK_SECRET", "test-secret")
        .env_remove("INKLINK_CONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script runs");
    let mut stdout = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut chunk = [0u8; 256];
    // Type only once the prompt is there (and echo is off).
    while !String::from_utf8_lossy(&seen).contains("Password:") {
        let read = stdout.read(&mut chunk).unwrap();
        assert!(read > 0, "no prompt: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&chunk[..read]);
    }
    // The prompt is written just before echo is switched off; give that a moment, as a
    // person's typing would.
    std::thread::sleep(Duration::from_millis(500));
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"secret-password-1\r").unwrap();
    stdin.flush().unwrap();
    stdout.read_to_end(&mut seen).unwrap();
    drop(stdin);
    let status = child.wait().unwrap();
    let shown = String::from_utf8_lossy(&seen);
    assert!(status.success(), "{shown}");
    assert!(shown.contains("added operator user zed"), "{shown}");
    assert!(
        !shown.contains("secret-password-1"),
        "the password was echoed: {shown}"
    );
    let conn = Database::connect(&db.url).await.unwrap();
    let zed = users::Entity::find()
        .filter(users::Column::Username.eq("zed"))
        .one(&conn)
        .await
        .unwrap()
        .unwrap();
    assert!(verify_password(&zed.password_hash, "secret-password-1"));
}

#[test]
fn a_subcommands_help_shows_its_own_arguments_not_every_server_option() {
    let help = |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_inklink"))
            .args(args)
            .output()
            .unwrap();
        assert!(output.status.success(), "{args:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    let link_add = help(&["link", "add", "--help"]);
    assert!(link_add.contains("--code") && link_add.contains("--description"));
    assert!(link_add.contains("A note for the people who manage the link"));
    assert!(!link_add.contains("--cache-ttl"), "{link_add}");
    assert!(link_add.contains("inklink --help"), "{link_add}");
    // Its own options (campaign links have a dozen), not the server's ~30.
    assert!(link_add.lines().count() < 80, "{link_add}");
    // The server's options are where they belong, and still accepted anywhere.
    assert!(help(&["serve", "--help"]).contains("--cache-ttl"));
    assert!(help(&["--help"]).contains("INKLINK_CACHE_TTL"));
}

#[actix_web::test]
async fn check_beside_a_running_server_finds_its_address_served_not_taken() {
    let db = Arc::new(TestDb::create().await);
    let app = spawn_on(db.clone(), &[]).await;
    let listen = format!("127.0.0.1:{}", app.port);
    let spool = db.spool_dir().display().to_string();
    let db_for_cli = db.clone();
    let run = actix_web::rt::task::spawn_blocking(move || {
        inklink_with(
            &db_for_cli,
            &["check"],
            None,
            &[("INKLINK_LISTEN", &listen), ("INKLINK_SPOOL_DIR", &spool)],
        )
    })
    .await
    .unwrap();
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("is served by a running inklink"),
        "{}",
        run.stdout
    );
}

#[actix_web::test]
async fn events_purge_deletes_old_events_and_refuses_future_days() {
    let db = Arc::new(TestDb::create().await);
    ok(inklink(&db, &["migrate"]));
    let out = ok(inklink(&db, &["events", "purge", "--before", "2020-01-01"]));
    assert!(
        out.contains("deleted 0 click events recorded before 2020-01-01"),
        "{out}"
    );
    let tomorrow = (chrono::Utc::now() + chrono::Duration::days(2)).date_naive();
    fails(
        inklink(&db, &["events", "purge", "--before", &tomorrow.to_string()]),
        "only the events of past days can be purged",
    );
    let bad = inklink(&db, &["events", "purge", "--before", "last week"]);
    assert_eq!(bad.code, 2, "a usage error");
    assert!(
        bad.stderr.contains("invalid value 'last week'"),
        "{}",
        bad.stderr
    );
    let help = ok(inklink(&db, &["events", "purge", "--help"]));
    assert!(help.contains("INKLINK_EVENT_RETENTION_DAYS"), "{help}");
}

#[actix_web::test]
async fn link_add_takes_a_code_length_and_campaign_options_and_domain_set_its_defaults() {
    let db = Arc::new(TestDb::create().await);
    let app = spawn_on(db.clone(), &["--cache-ttl", "1"]).await;
    let prefix = format!("http://localhost:{}/", app.port);
    let four = ok(inklink_live(
        &db,
        &["link", "add", "https://example.com/4", "--length", "4"],
    )
    .await);
    assert_eq!(four.trim().len(), prefix.len() + 4, "{four}");
    let limited = ok(inklink_live(
        &db,
        &[
            "link",
            "add",
            "https://example.com/limited",
            "--code",
            "cli-lim",
            "--max-visits",
            "1",
            "--fallback",
            "https://example.com/over",
            "--target",
            "android=https://example.com/app.apk",
        ],
    )
    .await);
    assert_eq!(limited.trim(), format!("{prefix}cli-lim"));
    assert_eq!(app.fetch("/cli-lim").await.0, 302);
    let (status, location, _) = app.fetch("/cli-lim").await;
    assert_eq!(
        (status, location.as_deref()),
        (302, Some("https://example.com/over"))
    );
    let shown = ok(inklink(&db, &["link", "show", "cli-lim", "--json"]));
    let shown: serde_json::Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(shown["max_visits"], 1);
    assert_eq!(shown["visits"], 1);
    assert_eq!(shown["targets"][0], "android=https://example.com/app.apk");
    let protected = inklink_with(
        &db,
        &[
            "link",
            "add",
            "https://example.com/secret",
            "--code",
            "cli-pw",
            "--password",
            "-",
        ],
        Some("8888\n"),
        &[],
    );
    ok(protected);
    assert_eq!(app.fetch("/cli-pw").await.0, 200);
    fails(
        inklink(
            &db,
            &["link", "add", "https://example.com/x", "--length", "3"],
        ),
        "for a shorter code choose a custom code",
    );
    fails(
        inklink(
            &db,
            &[
                "link",
                "add",
                "https://example.com/x",
                "--target",
                "tv=https://e.com",
            ],
        ),
        "'tv' is not a target rule",
    );
    fails(
        inklink(
            &db,
            &[
                "link",
                "add",
                "https://example.com/x",
                "--in-app-page",
                "line",
            ],
        ),
        "'line' is not an app",
    );
    let host = format!("localhost:{}", app.port);
    let set = ok(inklink(
        &db,
        &[
            "domain",
            "set",
            &host,
            "--in-app-page",
            "wechat,qq",
            "--fallback",
            "https://example.com/gone",
        ],
    ));
    assert!(
        set.contains("wechat,qq") && set.contains("https://example.com/gone"),
        "{set}"
    );
    fails(inklink(&db, &["domain", "set", &host]), "nothing to set");
    fails(
        inklink(&db, &["domain", "set", &host, "--in-app-page", "line"]),
        "'line' is not an app",
    );
    let cleared = ok(inklink(
        &db,
        &["domain", "set", &host, "--fallback", "none"],
    ));
    assert!(cleared.contains("the 410 page"), "{cleared}");
}

/// While the server counts a backlog turn after turn, a writer of another process on the same
/// database (the CLI here) still gets in between the turns, within its wait: on SQLite a
/// turn holds the file's write lock, and a turn taken again at once would leave the CLI,
/// polling for the lock, nothing to take.
#[actix_web::test]
async fn the_cli_writes_while_the_server_counts_a_backlog() {
    use inklink::clickstore::waiting::any_waiting;
    let db = Arc::new(TestDb::create().await);
    let app = spawn_on(db.clone(), &["--timezone", "UTC", "--stats-interval", "1"]).await;
    let link = crate::support::create_link(&app, "https://example.com/backlog").await;
    // Yesterday's (kept, not purged), a click a second: 80,000 fit in the day.
    let day = chrono::Utc::now().date_naive().pred_opt().unwrap();
    let start = day.and_hms_opt(0, 0, 0).unwrap();
    let clicks = crate::event_insert::rows(80_000, start, link.link.id);
    inklink::clickstore::insert::insert_rows(&app.core.db, &clicks)
        .await
        .unwrap();

    // Links added one after another until every click is counted; those added while clicks
    // waited both before and after were added while turns ran.
    let mut during = 0;
    for n in 0.. {
        let before = any_waiting(&app.core.db).await.unwrap();
        let url = format!("https://example.com/while-counting-{n}");
        ok(inklink_live(&db, &["link", "add", &url]).await);
        let after = any_waiting(&app.core.db).await.unwrap();
        during += usize::from(before && after);
        if !after {
            break;
        }
        assert!(n < 1_000, "the backlog is never counted");
    }

    assert!(
        during >= 2,
        "the backlog was counted before the CLI ran: {during}"
    );
    crate::event_insert::assert_day_counted(&app.core.db, day, link.link.id, &clicks).await;
}
