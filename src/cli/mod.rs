//! The command line: each subcommand parses its arguments into domain types, calls a service,
//! and prints the result. Errors come back as text for `main` to print.

use crate::config::Settings;
use crate::db::entities::url_map::LinkStatus;
use crate::rules::{DomainHost, Password, Protocol, ShortCode, Username};
use crate::services::links::bulk;
use crate::services::links::{self, Field, LinkInput, Outcome, TagInput};
use crate::services::{Actor, domains, users};
use crate::startup::{self, Application};
use crate::state::Inklink;
use anyhow::{Context, anyhow, bail};
use clap::CommandFactory;
use migration::{Migrator, MigratorTrait};
use std::ffi::OsString;
use std::io::{BufRead, IsTerminal, Write};

/// `println!` that ends the command quietly when standard output is a closed pipe
/// (`inklink check | head -1`), as Unix tools do, instead of panicking.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if let Err(err) = writeln!(std::io::stdout().lock(), $($arg)*) {
            $crate::cli::output_failed(err)
        }
    }};
}

/// Standard output could not be written. A reader that went away (a closed pipe) ends the
/// command with the status a process killed by SIGPIPE has; anything else is an error.
pub(crate) fn output_failed(err: std::io::Error) -> ! {
    if err.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(128 + 13)
    }
    eprintln!("error: cannot write to standard output: {err}");
    std::process::exit(1)
}

mod args;
mod help;
mod manage;
mod ops;

pub use args::*;

use ops::{backup, check, events, migrate, serve, stats, webhooks};

/// Runs `cli`'s command to its end on a runtime of its own (what `main` does).
///
/// Not generic and not async, so that the whole program is compiled here, once: the binary
/// awaiting [`run`] itself instantiated every future under it again (41 s of a release build).
pub fn run_blocking(cli: Cli) -> anyhow::Result<()> {
    actix_web::rt::System::new().block_on(run(cli))
}

pub async fn run(cli: Cli) -> anyhow::Result<()> {
    let settings = cli.settings;
    let command = cli.command.unwrap_or(Command::Serve);
    // Only these two make a database; the others work on one that is there, and must not
    // leave an empty inklink.db behind in whatever directory they were run from.
    if !matches!(
        command,
        Command::Serve | Command::Migrate { .. } | Command::Check
    ) {
        startup::existing_sqlite_file(&settings.database_url)?;
    }
    match command {
        Command::Serve => {
            // Before the database is opened: a taken port must not leave a new database, an
            // admin user and a printed password behind.
            let listeners = startup::Listeners::bind(&settings)?;
            serve(startup::open(settings).await?, listeners).await
        }
        Command::Migrate { action } => {
            let db = startup::connect(&settings).await?;
            migrate(&db, action.unwrap_or(MigrateAction::Up)).await
        }
        Command::User { action } => user(&startup::open(settings).await?, action).await,
        Command::Link { action } => link(&startup::open(settings).await?, action).await,
        Command::Domain { action } => domain(&startup::open(settings).await?, action).await,
        Command::Apikey { action } => apikey(&startup::open(settings).await?, action).await,
        Command::Stats { action } => stats(&startup::open(settings).await?, action).await,
        Command::Events { action } => events(&startup::open(settings).await?, action).await,
        Command::Webhooks { action } => webhooks(&startup::open(settings).await?, action).await,
        Command::Check => check(&settings).await,
        Command::Backup { file } => backup(&settings, &file).await,
    }
}

async fn user(core: &Inklink, action: UserAction) -> anyhow::Result<()> {
    match action {
        UserAction::List { .. }
        | UserAction::Disable { .. }
        | UserAction::Enable { .. }
        | UserAction::Role { .. }
        | UserAction::LinkSso { .. } => return manage::user(core, action).await,
        UserAction::Add { name, role } => {
            let name = Username::parse(&name)?;
            let password = read_password()?;
            users::add(&core.db, &name, &password, role, &Actor::Cli).await?;
            say!("added {} user {name}", role.as_str());
        }
        UserAction::Passwd { name } => {
            let name = Username::parse(&name)?;
            let password = read_password()?;
            users::set_password(&core.db, &name, &password, &Actor::Cli).await?;
            say!("changed the password of {name}");
        }
    }
    Ok(())
}

/// One line from standard input; at a terminal, a prompt and no echo.
fn read_password() -> anyhow::Result<Password> {
    Ok(Password::parse(&read_line_secret()?)?)
}

/// A secret from standard input (one line); at a terminal, a prompt and no echo.
fn read_line_secret() -> anyhow::Result<String> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        // Typed at a terminal: not echoed.
        return rpassword::prompt_password("Password: ")
            .context("cannot read the password from the terminal");
    }
    let mut line = String::new();
    stdin
        .lock()
        .read_line(&mut line)
        .context("cannot read the password from standard input")?;
    let password = line.strip_suffix('\n').unwrap_or(&line);
    Ok(password.strip_suffix('\r').unwrap_or(password).to_owned())
}

async fn link(core: &Inklink, action: LinkAction) -> anyhow::Result<()> {
    match action {
        LinkAction::List { .. } | LinkAction::Show { .. } | LinkAction::Delete { .. } => {
            return manage::link(core, action).await;
        }
        LinkAction::Add {
            url,
            code,
            domain,
            expires,
            description,
            strategy,
            redirect_status,
            reuse,
            length,
            password,
            max_visits,
            valid_from,
            fallback,
            in_app_page,
            targets,
            tags,
        } => {
            let password = match password.as_deref() {
                Some("-") => Some(read_line_secret()?),
                other => other.map(str::to_owned),
            };
            let input = LinkInput {
                url,
                code,
                domain,
                description,
                expires_at: expires,
                valid_from,
                redirect_status: redirect_status.map(|status| status.code().to_string()),
                length,
                strategy,
                reuse,
                password,
                max_visits,
                fallback_url: fallback,
                in_app_page,
                targets,
                tags: TagInput::Each(tags),
            };
            let new = input
                .read(core, core.settings.timezone)
                .await?
                .map_err(|errors| {
                    let lines: Vec<String> = errors
                        .iter()
                        .map(|err| format!("{}: {}", flag(err.field), err.message))
                        .collect();
                    anyhow!("{}", lines.join("\n"))
                })?;
            let saved = links::create(core, new, &Actor::Cli).await?;
            if saved.outcome == Outcome::Reused {
                eprintln!("reusing the existing link {}", saved.link.compression_code);
            }
            say!("{}", saved.short_url());
        }
        LinkAction::Import { file, results } => {
            let bytes =
                std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
            let outcomes = bulk::import(core, &bytes, &Actor::Cli, core.settings.timezone).await?;
            // The command line speaks English.
            let csv = bulk::results_csv(&outcomes, crate::i18n::Lang::En);
            match results {
                Some(path) => std::fs::write(&path, csv)
                    .with_context(|| format!("cannot write {}", path.display()))?,
                None => print!("{csv}"),
            }
            let failed = outcomes.iter().filter(|row| row.result.is_err()).count();
            eprintln!(
                "created {} links; {failed} rows failed",
                outcomes.len() - failed
            );
            if failed > 0 {
                bail!(
                    "{failed} of {} rows failed; their errors are in the results",
                    outcomes.len()
                );
            }
        }
        LinkAction::Disable { code } => {
            let code = ShortCode::parse(&code)?;
            links::set_status(core, &code, LinkStatus::Disabled, &Actor::Cli).await?;
            say!(
                "disabled {code} (other running instances notice within INKLINK_CACHE_TTL seconds)"
            );
        }
        LinkAction::Enable { code } => {
            let code = ShortCode::parse(&code)?;
            links::set_status(core, &code, LinkStatus::Active, &Actor::Cli).await?;
            say!("enabled {code}");
        }
    }
    Ok(())
}

async fn domain(core: &Inklink, action: DomainAction) -> anyhow::Result<()> {
    match action {
        DomainAction::List { .. }
        | DomainAction::Default { .. }
        | DomainAction::Disable { .. }
        | DomainAction::Enable { .. }
        | DomainAction::Set { .. }
        | DomainAction::Check { .. }
        | DomainAction::Rotate { .. } => return manage::domain(core, action).await,
        DomainAction::Add {
            host,
            http,
            default,
        } => {
            let host = DomainHost::parse(&host)?;
            let protocol = if http {
                Protocol::Http
            } else {
                Protocol::Https
            };
            let added = domains::add(&core.db, &host, protocol, default, &Actor::Cli).await?;
            let note = if added.is_default { " (default)" } else { "" };
            say!("added {}://{}{note}", added.protocol, added.host);
        }
    }
    Ok(())
}

async fn apikey(core: &Inklink, action: ApikeyAction) -> anyhow::Result<()> {
    let ApikeyAction::Add {
        name,
        role,
        expires,
    } = action
    else {
        return manage::apikey(core, action).await;
    };
    let name = crate::rules::KeyName::parse(&name)?;
    let expires = expires
        .map(|text| {
            crate::rules::time::parse(
                &text,
                core.settings.timezone,
                crate::rules::time::DateAlone::Ends,
            )
            .context("--expires")
        })
        .transpose()?;
    let issued =
        crate::services::api_keys::create(&core.db, &name, role, expires, &Actor::Cli).await?;
    say!("{}", issued.token.as_str());
    Ok(())
}

/// The `link add` flag a field is given with.
fn flag(field: Field) -> &'static str {
    match field {
        Field::Url => "URL",
        Field::Code => "--code",
        Field::Domain => "--domain",
        Field::Description => "--description",
        Field::ExpiresAt => "--expires",
        Field::ValidFrom => "--valid-from",
        Field::RedirectStatus => "--redirect-status",
        Field::Length => "--length",
        Field::Password => "--password",
        Field::MaxVisits => "--max-visits",
        Field::FallbackUrl => "--fallback",
        Field::InAppPage => "--in-app-page",
        Field::Targets => "--target",
        Field::Tags => "--tag",
    }
}
