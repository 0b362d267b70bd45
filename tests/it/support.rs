//! Test databases and servers.

use actix_web::dev::ServerHandle;
use actix_web::web::Data;
use inklink::Inklink;
use inklink::config::Settings;
use inklink::startup::Application;
use inklink::state::AppState;
use sea_orm::{ConnectionTrait, Database};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::Arc;

/// A table-driven case: an input and a check of the error it must give.
pub type Case<'a, E> = (&'a str, fn(&E) -> bool);

pub const ENV_URL: &str = "INKLINK_TEST_DATABASE_URL";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
    MySql,
}

/// A database that exists for one test and is dropped after it, even when the test fails.
pub struct TestDb {
    pub url: String,
    pub backend: Backend,
    server_url: Option<String>,
    name: String,
    file: Option<PathBuf>,
}

fn unique_name() -> String {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).unwrap();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl TestDb {
    /// Where servers on this database keep their click spool.
    pub fn spool_dir(&self) -> PathBuf {
        std::env::temp_dir().join(format!("{}-spool", self.name))
    }

    pub async fn create() -> TestDb {
        let name = format!("inklink_t_{}", unique_name());
        let server = std::env::var(ENV_URL).ok().filter(|url| !url.is_empty());
        let Some(server_url) = server else {
            let file = std::env::temp_dir().join(format!("{name}.db"));
            // There, empty, as after `inklink migrate`: commands other than serve and migrate
            // refuse to make a database.
            std::fs::File::create(&file).expect("an empty SQLite file");
            return TestDb {
                url: format!("sqlite://{}?mode=rwc", file.display()),
                backend: Backend::Sqlite,
                server_url: None,
                name,
                file: Some(file),
            };
        };
        let backend = if server_url.starts_with("postgres") {
            Backend::Postgres
        } else if server_url.starts_with("mysql") || server_url.starts_with("mariadb") {
            Backend::MySql
        } else {
            panic!("{ENV_URL} must be a postgres:// or mysql:// URL, not {server_url}");
        };
        let admin = Database::connect(&server_url).await.unwrap_or_else(|err| {
            panic!("cannot reach the test database server {server_url}: {err}")
        });
        let create = match backend {
            Backend::MySql => {
                format!("CREATE DATABASE {name} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
            }
            _ => format!("CREATE DATABASE {name}"),
        };
        admin
            .execute_unprepared(&create)
            .await
            .expect("create the test database");
        admin.close().await.ok();
        let mut url = url::Url::parse(&server_url).expect("a URL");
        url.set_path(&format!("/{name}"));
        TestDb {
            url: url.to_string(),
            backend,
            server_url: Some(server_url),
            name,
            file: None,
        }
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(self.spool_dir());
        if let Some(file) = &self.file {
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
            }
            return;
        }
        let (Some(server_url), name, backend) =
            (self.server_url.clone(), self.name.clone(), self.backend)
        else {
            return;
        };
        // Drop runs outside any async context we could rely on: use a runtime of our own.
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async move {
                let Ok(admin) = Database::connect(&server_url).await else { return };
                if backend == Backend::MySql {
                    // Like PostgreSQL's WITH (FORCE): sessions of a server still shutting
                    // down would otherwise hold metadata locks that block the drop.
                    let sessions = admin
                        .query_all_raw(sea_orm::Statement::from_string(
                            sea_orm::DbBackend::MySql,
                            format!("SELECT CAST(id AS CHAR) FROM information_schema.processlist WHERE db = '{name}'"),
                        ))
                        .await
                        .unwrap_or_default();
                    for row in sessions {
                        if let Ok(id) = row.try_get_by_index::<String>(0) {
                            let _ = admin.execute_unprepared(&format!("KILL {id}")).await;
                        }
                    }
                }
                let drop = match backend {
                    Backend::Postgres => format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
                    _ => format!("DROP DATABASE IF EXISTS {name}"),
                };
                if let Err(err) = admin.execute_unprepared(&drop).await {
                    eprintln!("could not drop test database {name}: {err}");
                }
                admin.close().await.ok();
            });
        })
        .join();
    }
}

/// Settings as the binary would parse them, pointed at `db`, plus `extra` flags.
pub fn settings(db: &TestDb, listen: &str, extra: &[&str]) -> Settings {
    settings_via(db, &db.url, listen, extra)
}

/// Like [`settings`], reaching the database at `url` (through a proxy, say).
pub fn settings_via(db: &TestDb, url: &str, listen: &str, extra: &[&str]) -> Settings {
    let spool = db.spool_dir();
    let mut args = vec![
        "inklink",
        "--spool-dir",
        spool.to_str().expect("a UTF-8 temp path"),
        "--database-url",
        url,
        "--listen",
        listen,
        "--secret",
        "test-secret",
        "--db-max-connections",
        "5",
        "--workers",
        "2",
    ];
    args.extend_from_slice(extra);
    inklink::cli::parse_from(args)
        .expect("valid test settings")
        .settings
}

pub struct TestApp {
    pub address: String,
    pub port: u16,
    pub core: Arc<Inklink>,
    pub state: Data<AppState>,
    pub client: awc::Client,
    /// Keeps the database alive as long as the server.
    _db: Arc<TestDb>,
    handle: ServerHandle,
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.address)
    }

    pub async fn get(
        &self,
        path: &str,
    ) -> awc::ClientResponse<
        impl futures_util::Stream<Item = Result<actix_web::web::Bytes, awc::error::PayloadError>>
        + use<>,
    > {
        self.client
            .get(self.url(path))
            .send()
            .await
            .expect("request sent")
    }

    /// Status, Location and body of a GET.
    pub async fn fetch(&self, path: &str) -> (u16, Option<String>, String) {
        let mut response = self.get(path).await;
        let status = response.status().as_u16();
        let location = response
            .headers()
            .get("location")
            .map(|value| value.to_str().unwrap().to_owned());
        let body = response.body().limit(1 << 20).await.expect("body");
        (
            status,
            location,
            String::from_utf8_lossy(&body).into_owned(),
        )
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        let handle = self.handle.clone();
        actix_web::rt::spawn(async move { handle.stop(false).await });
    }
}

pub fn client() -> awc::Client {
    awc::Client::builder()
        .disable_redirects()
        .timeout(std::time::Duration::from_secs(30))
        .finish()
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(&[]).await
}

pub async fn spawn_app_with(extra: &[&str]) -> TestApp {
    spawn_on(Arc::new(TestDb::create().await), extra).await
}

/// A server on its own port over `db`: call it twice for two instances on one database.
pub async fn spawn_on(db: Arc<TestDb>, extra: &[&str]) -> TestApp {
    let url = db.url.clone();
    spawn_via(db, &url, extra).await
}

/// A server over `db` that reaches it at `url`.
pub async fn spawn_via(db: Arc<TestDb>, url: &str, extra: &[&str]) -> TestApp {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    let port = listener.local_addr().unwrap().port();
    let settings = settings_via(&db, url, &format!("127.0.0.1:{port}"), extra);
    let core = Arc::new(
        inklink::startup::open(settings)
            .await
            .expect("inklink opens the test database"),
    );
    let app = Application::with_listener(core.clone(), listener).expect("server starts");
    let state = app.state();
    let handle = app.handle();
    actix_web::rt::spawn(app.run_until_stopped());
    TestApp {
        address: format!("http://127.0.0.1:{port}"),
        port,
        core,
        state,
        client: client(),
        _db: db,
        handle,
    }
}

/// Creates a link through the same service every front end uses.
pub async fn create_link(app: &TestApp, url: &str) -> inklink::services::links::SavedLink {
    create_link_in(&app.core, url).await
}

/// Like [`create_link`], without a server.
pub async fn create_link_in(core: &Inklink, url: &str) -> inklink::services::links::SavedLink {
    let target = inklink::services::links::parse_target(core, url)
        .await
        .expect("a valid URL");
    inklink::services::links::create(
        core,
        inklink::services::links::NewLink::to(target),
        &inklink::services::Actor::Cli,
    )
    .await
    .expect("link created")
}

/// A TCP forwarder between the app and a database server that a test can cut (every
/// connection closed, new ones refused) and restore, without disturbing other tests.
pub struct TcpProxy {
    pub port: u16,
    cut: Arc<std::sync::atomic::AtomicBool>,
    connections: Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl TcpProxy {
    pub async fn start(target: std::net::SocketAddr) -> Self {
        use std::sync::atomic::Ordering;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let connections: Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>> = Arc::default();
        let (cut_flag, open) = (cut.clone(), connections.clone());
        let accept = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if cut_flag.load(Ordering::SeqCst) {
                    drop(inbound);
                    continue;
                }
                let task = tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                open.lock().unwrap().push(task);
            }
        });
        Self {
            port,
            cut,
            connections,
            accept,
        }
    }

    /// `url` with its host and port replaced by this proxy's.
    pub fn url_for(&self, url: &str) -> String {
        let mut url = url::Url::parse(url).unwrap();
        url.set_host(Some("127.0.0.1")).unwrap();
        url.set_port(Some(self.port)).unwrap();
        url.to_string()
    }

    pub fn cut(&self) {
        self.cut.store(true, std::sync::atomic::Ordering::SeqCst);
        for task in self.connections.lock().unwrap().drain(..) {
            task.abort();
        }
    }

    pub fn restore(&self) {
        self.cut.store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.accept.abort();
        for task in self.connections.lock().unwrap().drain(..) {
            task.abort();
        }
    }
}

impl TestDb {
    /// host:port of the database server, for a proxy to forward to.
    pub fn server_addr(&self) -> Option<std::net::SocketAddr> {
        let url = url::Url::parse(self.server_url.as_deref()?).ok()?;
        let host = url.host_str()?;
        let port = url.port_or_known_default().or(match self.backend {
            Backend::Postgres => Some(5432),
            Backend::MySql => Some(3306),
            Backend::Sqlite => None,
        })?;
        std::net::ToSocketAddrs::to_socket_addrs(&(host, port))
            .ok()?
            .next()
    }
}

/// The real `inklink serve` on a free port over `db`, with `env` added, its standard error
/// going to `stderr`. Returns once it answers.
pub async fn serve_binary(
    db: &TestDb,
    env: &[(&str, &str)],
    stderr: std::process::Stdio,
) -> (std::process::Child, u16) {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    serve_binary_on(db, port, env, stderr).await
}

/// [`serve_binary`] on a given port (a restart finds its spool and journal by the port).
pub async fn serve_binary_on(
    db: &TestDb,
    port: u16,
    env: &[(&str, &str)],
    stderr: std::process::Stdio,
) -> (std::process::Child, u16) {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_inklink"));
    command
        .current_dir(std::env::temp_dir())
        .env("INKLINK_DATABASE_URL", &db.url)
        .env("INKLINK_SECRET", "test-secret")
        .env("INKLINK_LISTEN", format!("127.0.0.1:{port}"))
        .env("INKLINK_ADMIN_PASSWORD", "an-admin-password")
        .env("INKLINK_SPOOL_DIR", db.spool_dir())
        .env_remove("INKLINK_CONFIG")
        .stdout(std::process::Stdio::null())
        .stderr(stderr);
    for (key, value) in env {
        command.env(key, value);
    }
    let server = command.spawn().expect("the inklink binary runs");
    let client = client();
    for _ in 0..100 {
        let health = client.get(format!("http://127.0.0.1:{port}/healthz"));
        if health.send().await.is_ok() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    (server, port)
}

/// Sends `signal` (`-TERM`, `-HUP`, …) to `server`.
pub fn signal(server: &std::process::Child, signal: &str) {
    let sent = std::process::Command::new("kill")
        .args([signal, &server.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill {signal}");
}

/// How `server` exited, waiting up to 30 s (then it is killed and the test fails).
pub async fn exit_of(server: &mut std::process::Child) -> std::process::ExitStatus {
    for _ in 0..300 {
        if let Some(exit) = server.try_wait().unwrap() {
            return exit;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let _ = server.kill();
    panic!("the server did not exit")
}

/// A page view of `code` (link `link_id`) by a desktop browser at `client_ip`, recorded at
/// `at`: the event a redirect hands to the click sink.
pub fn page_view(
    code: &str,
    link_id: i64,
    at: chrono::NaiveDateTime,
    client_ip: std::net::IpAddr,
) -> inklink::clicks::ClickEvent {
    inklink::clicks::ClickEvent {
        at,
        code: code.into(),
        link_id: Some(link_id),
        host: None,
        client_ip,
        user_agent: Some(
            "Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0".into(),
        ),
        referer: None,
        query: None,
        outcome: inklink::rules::Outcome::Redirected,
        head: false,
        key: None,
        generation: 0,
    }
}

/// Runs one migration's `up` (or `down`) alone, in a write transaction of its own as the
/// migrator runs each. A pooled SQLite connection that last read the schema before another
/// connection changed it parses statements that change the schema by the one it knew ("index …
/// already exists", "duplicate column name") until it reads the database again: the
/// transaction reads first.
pub async fn migrate_one(
    db: &sea_orm::DatabaseConnection,
    migration: &dyn migration::MigrationTrait,
    up: bool,
) {
    let txn = inklink::db::begin_write(db).await.unwrap();
    let read = "SELECT COUNT(*) FROM seaql_migrations";
    (txn.query_one_raw(sea_orm::Statement::from_string(
        db.get_database_backend(),
        read,
    )))
    .await
    .unwrap();
    let manager = migration::SchemaManager::new(&txn);
    match up {
        true => migration.up(&manager).await.unwrap(),
        false => migration.down(&manager).await.unwrap(),
    }
    txn.commit().await.unwrap();
}

/// Every breakdown row as stored: the rows of `visit_statistics_breakdown` (all links', and
/// links' below the migration that packs them), and the links' days' values unpacked from
/// `visit_day_values` (day, link, dimension, value, PV, UV).
pub async fn breakdown_rows(
    db: &impl ConnectionTrait,
) -> Vec<(chrono::NaiveDate, i64, String, String, i64, i64)> {
    use sea_orm::Statement;
    let backend = db.get_database_backend();
    let sql =
        "SELECT stat_date, url_map_id, dimension, value, pv, uv FROM visit_statistics_breakdown";
    let mut out: Vec<_> = (db.query_all_raw(Statement::from_string(backend, sql)).await)
        .unwrap()
        .into_iter()
        .map(|r| {
            (
                r.try_get_by_index(0).unwrap(),
                r.try_get_by_index(1).unwrap(),
                r.try_get_by_index(2).unwrap(),
                r.try_get_by_index(3).unwrap(),
                r.try_get_by_index(4).unwrap(),
                r.try_get_by_index(5).unwrap(),
            )
        })
        .collect();
    // Absent below the migration that packs them.
    let sql = "SELECT stat_date, url_map_id, vals FROM visit_day_values";
    let packed = db.query_all_raw(Statement::from_string(backend, sql)).await;
    for r in packed.unwrap_or_default() {
        let day: chrono::NaiveDate = r.try_get_by_index(0).unwrap();
        let link: i64 = r.try_get_by_index(1).unwrap();
        let vals: String = r.try_get_by_index(2).unwrap();
        let values: Vec<(String, String, i64, i64)> = serde_json::from_str(&vals).unwrap();
        let mut keys = std::collections::BTreeSet::new();
        for (dimension, value, pv, uv) in values {
            assert!(keys.insert((dimension.clone(), value.clone())), "{vals}");
            out.push((day, link, dimension, value, pv, uv));
        }
    }
    out
}
