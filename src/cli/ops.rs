//! Running and looking after a server: `serve`, `check`, `backup`, `migrate`, and the commands
//! on statistics and stored clicks (`stats rebuild`, `events purge`).

use super::*;

/// `inklink check`: every start-up condition, each on its own line.
pub(super) async fn check(settings: &Settings) -> anyhow::Result<()> {
    let mut failed = 0;
    let mut line = |ok: bool, what: &str, detail: String| {
        say!("{} {what}: {detail}", if ok { "OK  " } else { "FAIL" });
        failed += usize::from(!ok);
    };
    line(
        true,
        "configuration",
        format!(
            "listen {}, time zone {}, codes of {} characters",
            settings.listen, settings.timezone, settings.code_length
        ),
    );
    let shown = startup::redact(&settings.database_url);
    match crate::db::sqlite_file(&settings.database_url).filter(|path| !path.exists()) {
        Some(path) => line(
            true,
            "database",
            format!(
                "{} does not exist yet; `inklink serve` creates it",
                path.display()
            ),
        ),
        None => match startup::connect(settings).await {
            Err(err) => line(false, "database", err.to_string()),
            Ok(db) => {
                line(true, "database", format!("{shown} is reachable"));
                let newer = crate::db::check_not_newer(&db).await;
                match (newer, Migrator::get_pending_migrations(&db).await) {
                    (Err(err), _) => line(false, "schema", err.to_string()),
                    (Ok(()), Err(err)) => line(false, "schema", err.to_string()),
                    (Ok(()), Ok(pending)) => {
                        let applied = Migrator::get_applied_migrations(&db)
                            .await
                            .ok()
                            .and_then(|applied| applied.last().map(|m| m.name().to_owned()))
                            .unwrap_or_else(|| "none".to_owned());
                        let state = match pending.len() {
                            0 => "up to date".to_owned(),
                            n => format!("{n} migrations to apply at start"),
                        };
                        line(true, "schema", format!("at {applied}, {state}"));
                    }
                }
            }
        },
    }
    match &settings.geoip_db {
        None => line(
            true,
            "GeoIP",
            "INKLINK_GEOIP_DB is not set: clicks get no country, province or city".to_owned(),
        ),
        Some(path) => match maxminddb::Reader::open_readfile(path) {
            Ok(reader) => line(
                true,
                "GeoIP",
                format!("{} ({})", path.display(), reader.metadata().database_type),
            ),
            Err(err) => line(false, "GeoIP", format!("{}: {err}", path.display())),
        },
    }
    match crate::clicks::spool::check_dir(&settings.spool_dir) {
        Ok(()) => line(
            true,
            "spool directory",
            format!("{} is writable", settings.spool_dir.display()),
        ),
        Err(err) => line(
            false,
            "spool directory",
            format!("{}: {err}", settings.spool_dir.display()),
        ),
    }
    match std::net::TcpListener::bind(settings.listen) {
        Ok(_) => line(
            true,
            "listen address",
            format!("{} is free", settings.listen),
        ),
        Err(_) if answers_as_inklink(settings.listen) => line(
            true,
            "listen address",
            format!("{} is served by a running inklink", settings.listen),
        ),
        Err(err) => line(
            false,
            "listen address",
            format!("{}: {err}", settings.listen),
        ),
    }
    if failed > 0 {
        bail!("{failed} of the checks failed");
    }
    Ok(())
}

/// Whether the program on `address` answers `/healthz` as inklink does (so a check run beside
/// the server does not call its own port taken).
fn answers_as_inklink(address: std::net::SocketAddr) -> bool {
    use std::io::Read;
    let timeout = std::time::Duration::from_secs(2);
    let Ok(mut stream) = std::net::TcpStream::connect_timeout(&address, timeout) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(timeout));
    if stream
        .write_all(b"GET /healthz HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.take(4096).read_to_string(&mut answer);
    answer.contains("\"database\"")
}

/// `inklink backup FILE`: a consistent copy of a SQLite database, taken while it is in use
/// (SQLite's `VACUUM INTO` reads one snapshot); the servers' own tools for the others.
pub(super) async fn backup(settings: &Settings, file: &std::path::Path) -> anyhow::Result<()> {
    use sea_orm::{ConnectionTrait, DbBackend, Statement};
    if file.exists() {
        bail!("{} exists already; choose a new file", file.display());
    }
    let db = startup::connect(settings).await?;
    match db.get_database_backend() {
        DbBackend::Sqlite => {
            // An empty file first, readable by its owner only: the copy holds what the
            // database does (password hashes, keys, visitors' addresses).
            {
                use std::os::unix::fs::OpenOptionsExt;
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(file)
                    .with_context(|| format!("cannot create {}", file.display()))?;
            }
            let target = file.to_string_lossy().replace('\'', "''");
            db.execute_raw(Statement::from_string(
                DbBackend::Sqlite,
                format!("VACUUM INTO '{target}'"),
            ))
            .await
            .with_context(|| format!("cannot write the backup to {}", file.display()))?;
            say!("backed up to {}", file.display());
            Ok(())
        }
        DbBackend::Postgres => bail!(
            "use PostgreSQL's own tool for a consistent copy while inklink runs: \
             pg_dump --format=custom --file={} '{}'",
            file.display(),
            startup::redact(&settings.database_url)
        ),
        _ => bail!(
            "use MySQL's own tool for a consistent copy while inklink runs: \
             mysqldump --single-transaction --routines DATABASE > {}",
            file.display()
        ),
    }
}

pub(super) async fn serve(core: Inklink, listeners: startup::Listeners) -> anyhow::Result<()> {
    let generated = users::ensure_admin(&core.db, core.settings.admin_password.as_deref())
        .await
        .context("cannot create the first admin user")?;
    if let Some(password) = generated {
        // On standard error whatever the log level: it is shown this once.
        eprintln!(
            "inklink: created the admin user '{admin}' with the password {password}\n\
             inklink: it is shown only now; change it with: inklink user passwd {admin}",
            admin = users::FIRST_ADMIN,
        );
    }
    if core.settings.admin_hosts.is_restricted() {
        tracing::info!(
            hosts = %core.settings.admin_hosts,
            "the admin UI and the API answer only on these hosts"
        );
    }
    let app = Application::build(core, listeners)?;
    tracing::info!(port = app.port(), "inklink is serving");
    Ok(app.run_until_stopped().await?)
}

pub(super) async fn migrate(
    db: &sea_orm::DatabaseConnection,
    action: MigrateAction,
) -> anyhow::Result<()> {
    match action {
        MigrateAction::Up => crate::db::migrate_up(db).await?,
        MigrateAction::Down { yes: false } => bail!(
            "`inklink migrate down` reverts the newest migration: it drops what that migration \
             added (tables or columns) with their data, and the running servers then fail. \
             Take a backup first, then run `inklink migrate down --yes`"
        ),
        MigrateAction::Down { yes: true } => Migrator::down(db, Some(1)).await?,
        MigrateAction::Status => {}
    }
    crate::db::check_not_newer(db).await?;
    let migrations = Migrator::get_migration_with_status(db).await?;
    let mut out = std::io::stdout().lock();
    for migration in migrations {
        let _ = writeln!(
            out,
            "{:<10} {}",
            migration.status().to_string().to_lowercase(),
            migration.name()
        );
    }
    Ok(())
}

pub(super) async fn stats(core: &Inklink, action: StatsAction) -> anyhow::Result<()> {
    let StatsAction::Rebuild { from, to } = action;
    let tz = core.settings.timezone;
    let to = to.unwrap_or_else(|| crate::stats::days::today(tz));
    let from = match from {
        Some(from) => from,
        None => match crate::clickstore::stored::span(&core.db).await? {
            Some((first, _)) => crate::stats::days::local_day(first, tz),
            None => {
                say!("no click events stored: nothing to recompute");
                return Ok(());
            }
        },
    };
    if from > to {
        bail!("--from {from} is after --to {to}");
    }
    let days = crate::stats::recount::rebuild(&core.db, tz, from, to).await?;
    say!("recomputed {days} days of statistics, {from} to {to} ({tz})");
    if let Some(frozen) = crate::stats::frozen::purged_before(&core.db).await?
        && from < frozen
    {
        say!("days before {frozen} keep their statistics: their click events were purged");
    }
    Ok(())
}

pub(super) async fn events(core: &Inklink, action: EventsAction) -> anyhow::Result<()> {
    let before = match action {
        EventsAction::Purge { before } => before,
        EventsAction::Export {
            from,
            to,
            link,
            tag,
            format,
            after,
        } => return export_events(core, from, to, link, tag, &format, after).await,
    };
    let tz = core.settings.timezone;
    let purged = crate::stats::retention::purge(&core.db, tz, before)
        .await
        .context("cannot purge click events")?;
    say!(
        "deleted {} click events recorded before {before} ({tz}); the statistics of those days are kept",
        purged.events
    );
    if purged.values > 0 {
        say!(
            "deleted {} user agents, referrers, places and texts that only those events used",
            purged.values
        );
    }
    Ok(())
}

async fn export_events(
    core: &Inklink,
    from: chrono::NaiveDate,
    to: Option<chrono::NaiveDate>,
    link: Option<String>,
    tag: Option<String>,
    format: &str,
    after: Option<String>,
) -> anyhow::Result<()> {
    use crate::services::events::{self, Cursor, ExportFilter, Format};
    use futures_util::StreamExt;
    use std::io::Write;
    let format = Format::parse(Some(format))?;
    let after = after.as_deref().map(Cursor::parse).transpose()?;
    let link = match link {
        Some(code) => {
            let code = crate::rules::ShortCode::parse(&code)?;
            let found = crate::services::links::find_by_code(&core.db, &code)
                .await
                .context("cannot read the links")?
                .with_context(|| format!("there is no link with the code '{code}'"))?;
            Some(found.id)
        }
        None => None,
    };
    let tag = tag.as_deref().map(crate::rules::Tag::parse).transpose()?;
    let filter = ExportFilter::new(from, to.unwrap_or(from), link, tag, &Actor::Cli)?;
    let stream = events::stream(
        core.db.clone(),
        core.settings.timezone,
        filter,
        after,
        format,
    );
    futures_util::pin_mut!(stream);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.context("the export stopped: the database failed")?;
        out.write_all(chunk.as_bytes())
            .context("cannot write to standard output")?;
    }
    out.flush().context("cannot write to standard output")?;
    Ok(())
}

pub(super) async fn webhooks(core: &Inklink, action: WebhooksAction) -> anyhow::Result<()> {
    use crate::services::webhooks;
    match action {
        WebhooksAction::List => {
            let all = webhooks::list(&core.db, &Actor::Cli)
                .await
                .context("cannot read the webhooks")?;
            if all.is_empty() {
                say!(
                    "no webhooks; make one in the admin UI (Webhooks) or with POST /api/v1/webhooks"
                );
            }
            for hook in all {
                say!(
                    "{}\t{}\t{}\t{}\t{}",
                    hook.id,
                    if hook.enabled { "on" } else { "off" },
                    hook.format.as_str(),
                    hook.events.to_stored(),
                    hook.url
                );
            }
            Ok(())
        }
        WebhooksAction::Replay {
            from,
            to,
            subscription,
        } => {
            let tz = core.settings.timezone;
            let from = moment(&from, tz, false)?;
            let to = match to {
                Some(to) => moment(&to, tz, true)?,
                None => chrono::Utc::now().timestamp_millis() + 1,
            };
            if from >= to {
                anyhow::bail!("--from must be before --to");
            }
            if let Some(id) = subscription {
                webhooks::get(&core.db, id, &Actor::Cli)
                    .await
                    .with_context(|| {
                        format!("there is no webhook {id}; see `inklink webhooks list`")
                    })?;
            }
            let count = webhooks::replay(&core.db, from, to, subscription)
                .await
                .context("cannot put the messages back in the outbox")?;
            say!("{count} messages will be sent again by the running server");
            Ok(())
        }
    }
}

/// Milliseconds since 1970 of a day's start (or, for `end`, the next day's start) in `tz`, or
/// of an RFC 3339 time.
fn moment(text: &str, tz: chrono_tz::Tz, end: bool) -> anyhow::Result<i64> {
    let text = text.trim();
    if let Ok(day) = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        let day = if end {
            day.succ_opt().unwrap_or(day)
        } else {
            day
        };
        let start = crate::stats::days::day_start(day, tz)
            .with_context(|| format!("{day} has no start in {tz}"))?;
        return Ok(start.and_utc().timestamp_millis());
    }
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.timestamp_millis())
        .with_context(|| format!("'{text}' is neither a day (YYYY-MM-DD) nor an RFC 3339 time"))
}
