//! The command line: each subcommand parses its arguments into domain types, calls a service,
//! and prints the result. Errors come back as text for `main` to print.

use crate::config::{
    ApikeyAction, Cli, Command, DomainAction, LinkAction, MigrateAction, StatsAction, UserAction,
};
use crate::context::{self, Inklink, StartupError};
use crate::db::entities::url_map::LinkStatus;
use crate::rules::{DomainHost, Password, Protocol, ShortCode, Username};
use crate::services::bulk;
use crate::services::links::{self, NewLink, Outcome};
use crate::services::{Actor, domains, users};
use crate::web::Application;
use migration::{Migrator, MigratorTrait};
use std::io::{BufRead, IsTerminal, Write};

pub async fn run(cli: Cli) -> Result<(), String> {
    let settings = cli.settings;
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => serve(Inklink::open(settings).await.map_err(text)?).await,
        Command::Migrate { action } => {
            let db = context::connect(&settings).await.map_err(text)?;
            migrate(&db, action.unwrap_or(MigrateAction::Up)).await
        }
        Command::User { action } => {
            user(&Inklink::open(settings).await.map_err(text)?, action).await
        }
        Command::Link { action } => {
            link(&Inklink::open(settings).await.map_err(text)?, action).await
        }
        Command::Domain { action } => {
            domain(&Inklink::open(settings).await.map_err(text)?, action).await
        }
        Command::Apikey { action } => {
            apikey(&Inklink::open(settings).await.map_err(text)?, action).await
        }
        Command::Stats { action } => {
            stats(&Inklink::open(settings).await.map_err(text)?, action).await
        }
    }
}

fn text(err: impl std::fmt::Display) -> String {
    err.to_string()
}

async fn serve(core: Inklink) -> Result<(), String> {
    let generated = users::ensure_admin(&core.db, core.settings.admin_password.as_deref())
        .await
        .map_err(|err| format!("cannot create the first admin user: {err}"))?;
    if let Some(password) = generated {
        tracing::warn!(
            "created the admin user '{}' with the password {password} — it is shown only now; \
             change it with `inklink user passwd {}`",
            users::FIRST_ADMIN,
            users::FIRST_ADMIN
        );
    }
    if core.settings.admin_hosts.is_restricted() {
        tracing::info!(
            hosts = %core.settings.admin_hosts,
            "the admin UI and the API answer only on these hosts"
        );
    }
    let app = Application::build(core)
        .await
        .map_err(|err: StartupError| err.to_string())?;
    tracing::info!(port = app.port(), "inklink is serving");
    app.run_until_stopped().await.map_err(text)
}

async fn migrate(db: &sea_orm::DatabaseConnection, action: MigrateAction) -> Result<(), String> {
    match action {
        MigrateAction::Up => Migrator::up(db, None).await.map_err(text)?,
        MigrateAction::Down => Migrator::down(db, Some(1)).await.map_err(text)?,
        MigrateAction::Status => {}
    }
    let migrations = Migrator::get_migration_with_status(db)
        .await
        .map_err(text)?;
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

async fn user(core: &Inklink, action: UserAction) -> Result<(), String> {
    match action {
        UserAction::Add { name, role } => {
            let name = Username::parse(&name).map_err(text)?;
            let password = read_password()?;
            users::add(&core.db, &name, &password, role, &Actor::Cli)
                .await
                .map_err(text)?;
            println!("added {} user {name}", role.as_str());
        }
        UserAction::Passwd { name } => {
            let name = Username::parse(&name).map_err(text)?;
            let password = read_password()?;
            users::set_password(&core.db, &name, &password, &Actor::Cli)
                .await
                .map_err(text)?;
            println!("changed the password of {name}");
        }
    }
    Ok(())
}

/// One line from standard input; a prompt only when a person is typing.
fn read_password() -> Result<Password, String> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        eprint!("Password (shown as you type; or pipe it in): ");
    }
    let mut line = String::new();
    stdin
        .lock()
        .read_line(&mut line)
        .map_err(|err| format!("cannot read the password from standard input: {err}"))?;
    let password = line.strip_suffix('\n').unwrap_or(&line);
    let password = password.strip_suffix('\r').unwrap_or(password);
    Password::parse(password).map_err(text)
}

async fn link(core: &Inklink, action: LinkAction) -> Result<(), String> {
    match action {
        LinkAction::Add {
            url,
            code,
            domain,
            expires,
            description,
            strategy,
            redirect_status,
            reuse,
        } => {
            let target = core.parse_target(&url).await.map_err(text)?.map_err(text)?;
            let expires_at = expires
                .map(|value| {
                    chrono::DateTime::parse_from_rfc3339(&value)
                        .map(|at| at.to_utc())
                        .map_err(|_| {
                            format!(
                                "--expires '{value}' is not an RFC 3339 date-time such as 2026-12-31T23:59:59+08:00"
                            )
                        })
                })
                .transpose()?;
            let new = NewLink {
                custom_code: code
                    .as_deref()
                    .map(ShortCode::parse)
                    .transpose()
                    .map_err(text)?,
                domain: domain
                    .as_deref()
                    .map(DomainHost::parse)
                    .transpose()
                    .map_err(text)?,
                description,
                expires_at,
                redirect_status,
                strategy,
                reuse,
                ..NewLink::to(target)
            };
            let saved = links::create(core, new, &Actor::Cli).await.map_err(text)?;
            if saved.outcome == Outcome::Reused {
                eprintln!("reusing the existing link {}", saved.link.compression_code);
            }
            println!("{}", saved.short_url());
        }
        LinkAction::Import { file, results } => {
            let bytes = std::fs::read(&file)
                .map_err(|err| format!("cannot read {}: {err}", file.display()))?;
            let outcomes = bulk::import(core, &bytes, &Actor::Cli)
                .await
                .map_err(text)?
                .map_err(text)?;
            let csv = bulk::results_csv(&outcomes);
            match results {
                Some(path) => std::fs::write(&path, csv)
                    .map_err(|err| format!("cannot write {}: {err}", path.display()))?,
                None => print!("{csv}"),
            }
            let failed = outcomes.iter().filter(|row| row.result.is_err()).count();
            eprintln!(
                "created {} links; {failed} rows failed",
                outcomes.len() - failed
            );
            if failed > 0 {
                return Err(format!(
                    "{failed} of {} rows failed; their errors are in the results",
                    outcomes.len()
                ));
            }
        }
        LinkAction::Disable { code } => {
            let code = ShortCode::parse(&code).map_err(text)?;
            links::set_status(&core.db, &code, LinkStatus::Disabled, &Actor::Cli)
                .await
                .map_err(text)?;
            println!(
                "disabled {code} (other running instances notice within INKLINK_CACHE_TTL seconds)"
            );
        }
        LinkAction::Enable { code } => {
            let code = ShortCode::parse(&code).map_err(text)?;
            links::set_status(&core.db, &code, LinkStatus::Active, &Actor::Cli)
                .await
                .map_err(text)?;
            println!("enabled {code}");
        }
    }
    Ok(())
}

async fn domain(core: &Inklink, action: DomainAction) -> Result<(), String> {
    match action {
        DomainAction::Add {
            host,
            http,
            default,
        } => {
            let host = DomainHost::parse(&host).map_err(text)?;
            let protocol = if http {
                Protocol::Http
            } else {
                Protocol::Https
            };
            let added = domains::add(&core.db, &host, protocol, default, &Actor::Cli)
                .await
                .map_err(text)?;
            let note = if added.is_default { " (default)" } else { "" };
            println!("added {}://{}{note}", added.protocol, added.host);
        }
    }
    Ok(())
}

async fn stats(core: &Inklink, action: StatsAction) -> Result<(), String> {
    use crate::analytics::aggregate;
    let StatsAction::Rebuild { from, to } = action;
    let tz = core.settings.timezone;
    let to = to.unwrap_or_else(|| aggregate::today(tz));
    let from = match from {
        Some(from) => from,
        None => match aggregate::event_span(&core.db, tz).await.map_err(text)? {
            Some((first, _)) => first,
            None => {
                println!("no click events stored: nothing to recompute");
                return Ok(());
            }
        },
    };
    if from > to {
        return Err(format!("--from {from} is after --to {to}"));
    }
    let days = aggregate::rebuild(&core.db, tz, from, to)
        .await
        .map_err(text)?;
    println!("recomputed {days} days of statistics, {from} to {to} ({tz})");
    Ok(())
}

async fn apikey(core: &Inklink, action: ApikeyAction) -> Result<(), String> {
    let ApikeyAction::Add {
        name,
        role,
        expires,
    } = action;
    let name = crate::rules::KeyName::parse(&name).map_err(text)?;
    let expires = expires
        .map(|text| {
            chrono::DateTime::parse_from_rfc3339(text.trim())
                .map(|at| at.with_timezone(&chrono::Utc))
                .map_err(|_| {
                    format!("--expires '{text}' is not an RFC 3339 date-time such as 2027-06-30T00:00:00Z")
                })
        })
        .transpose()?;
    let issued = crate::services::api_keys::create(&core.db, &name, role, expires, &Actor::Cli)
        .await
        .map_err(text)?;
    println!("{}", issued.token.as_str());
    Ok(())
}
