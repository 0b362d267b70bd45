//! Command line, environment (`INKLINK_*`) and the optional `inklink.toml`, resolved in that
//! order of precedence: a flag beats a variable, a variable beats the file, the file beats the
//! built-in default.

use crate::db::entities::url_map::Strategy;
use crate::rules::{RedirectStatus, Role};
use clap::builder::BoolishValueParser;
use clap::{ArgAction, Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;

const AFTER_HELP: &str = "\
Every option can also be set in the environment (INKLINK_DATABASE_URL, INKLINK_LISTEN, ...) or in
inklink.toml (database_url = \"...\", listen = \"...\"), looked for in the working directory or at
INKLINK_CONFIG. A flag beats a variable, a variable beats the file.

Run without a command to serve. On first start inklink migrates the database, stores a generated
secret in it (unless INKLINK_SECRET is set), adds the domain localhost:<port> (http) when there
is none, and creates the admin user 'admin' when there is no user.";

#[derive(Parser, Debug)]
#[command(name = "inklink", version, about = "Self-hosted short links: fast redirects, analytics, admin UI and REST API", after_help = AFTER_HELP)]
pub struct Cli {
    #[command(flatten)]
    pub settings: Settings,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Args, Debug, Clone)]
pub struct Settings {
    /// Database: sqlite://FILE?mode=rwc, postgres://USER@HOST/DB or mysql://USER@HOST/DB
    #[arg(
        long,
        env = "INKLINK_DATABASE_URL",
        default_value = "sqlite://inklink.db?mode=rwc",
        global = true
    )]
    pub database_url: String,

    /// Address and port the server listens on
    #[arg(
        long,
        env = "INKLINK_LISTEN",
        default_value = "127.0.0.1:8080",
        global = true
    )]
    pub listen: SocketAddr,

    /// Key for codes and sessions; when unset, one is generated once and kept in the database
    #[arg(long, env = "INKLINK_SECRET", hide_env_values = true, global = true)]
    pub secret: Option<String>,

    /// Password for the first admin user 'admin'; when unset, a random one is printed once
    #[arg(
        long,
        env = "INKLINK_ADMIN_PASSWORD",
        hide_env_values = true,
        global = true
    )]
    pub admin_password: Option<String>,

    /// Length of generated codes (4-12); 62^length codes exist
    #[arg(long, env = "INKLINK_CODE_LENGTH", default_value_t = 6, value_parser = clap::value_parser!(u8).range(4..=12), global = true)]
    pub code_length: u8,

    /// Append a check character to generated codes, so that mistyped codes are refused without
    /// a database lookup
    #[arg(long, env = "INKLINK_CODE_CHECK_CHAR", default_value_t = false, action = ArgAction::Set, value_parser = BoolishValueParser::new(), global = true)]
    pub code_check_char: bool,

    /// Status of redirects for links that do not set their own: 301, 302, 307 or 308
    #[arg(
        long,
        env = "INKLINK_REDIRECT_STATUS",
        default_value = "302",
        global = true
    )]
    pub redirect_status: RedirectStatus,

    /// Add the short URL's query parameters to the target (parameters the target already has
    /// keep the target's value)
    #[arg(long, env = "INKLINK_QUERY_MERGE", default_value_t = true, action = ArgAction::Set, value_parser = BoolishValueParser::new(), global = true)]
    pub query_merge: bool,

    /// Longest target URL accepted, in bytes
    #[arg(long, env = "INKLINK_MAX_URL_LENGTH", default_value_t = 4096, value_parser = clap::value_parser!(u32).range(64..=65536), global = true)]
    pub max_url_length: u32,

    /// Seconds between looks for links changed elsewhere: a change made on another instance
    /// shows here after at most this long (at once on the instance that made it); unchanged
    /// links stay cached
    #[arg(long, env = "INKLINK_CACHE_TTL", default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=3600), global = true)]
    pub cache_ttl: u64,

    /// Most links (and unknown codes) kept in the redirect cache
    #[arg(long, env = "INKLINK_CACHE_CAPACITY", default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(16..), global = true)]
    pub cache_capacity: u64,

    /// Database connections per process
    #[arg(long, env = "INKLINK_DB_MAX_CONNECTIONS", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=1000), global = true)]
    pub db_max_connections: u32,

    /// Time zone for dates shown in the admin UI and for expiries typed without an offset
    /// (IANA name such as Asia/Shanghai)
    #[arg(long, env = "INKLINK_TIMEZONE", default_value = "UTC", global = true)]
    pub timezone: chrono_tz::Tz,

    /// Reverse proxies (comma-separated IPs or CIDRs) whose X-Forwarded-For, X-Real-IP and
    /// X-Forwarded-Proto headers are believed; nobody else's are
    #[arg(
        long,
        env = "INKLINK_TRUSTED_PROXIES",
        default_value = "",
        global = true
    )]
    pub trusted_proxies: crate::web::client::TrustedProxies,

    /// Hosts (comma-separated, such as admin.example.com) on which the admin UI and the API
    /// answer; on every other host their paths are unknown short codes. A host without a port
    /// matches on any port. Unset: every host
    #[arg(long, env = "INKLINK_ADMIN_HOSTS", default_value = "", global = true)]
    pub admin_hosts: crate::web::hosts::AdminHosts,

    /// Always mark the admin session cookie Secure (it is marked anyway when a trusted proxy
    /// says the request came over https) (set this when the admin UI is served over https)
    #[arg(long, env = "INKLINK_SECURE_COOKIE", default_value_t = false, action = ArgAction::Set, value_parser = BoolishValueParser::new(), global = true)]
    pub secure_cookie: bool,

    /// MaxMind-format city database (.mmdb: GeoLite2-City, DB-IP City Lite) for the country,
    /// province and city of clicks; re-read when the file changes. Unset: geo fields stay empty
    #[arg(long, env = "INKLINK_GEOIP_DB", global = true)]
    pub geoip_db: Option<PathBuf>,

    /// Language of GeoIP place names (en, zh-CN, de, es, fr, ja, pt-BR, ru), falling back to
    /// English where the database has no name in it
    #[arg(long, env = "INKLINK_GEOIP_LANG", default_value = "en", global = true)]
    pub geoip_lang: String,

    /// Clicks waiting for the background writer before new ones are dropped (and counted)
    #[arg(long, env = "INKLINK_CLICK_QUEUE", default_value_t = 65_536, value_parser = clap::value_parser!(u32).range(16..), global = true)]
    pub click_queue: u32,

    /// Clicks kept in memory while the database is unavailable or behind; beyond this they go
    /// to the spool file
    #[arg(long, env = "INKLINK_CLICK_BUFFER", default_value_t = 100_000, value_parser = clap::value_parser!(u32).range(0..), global = true)]
    pub click_buffer: u32,

    /// Directory of the spool file (inklink-spool-<port>.jsonl) that holds clicks while the
    /// database is unavailable; they are written when it returns, also after a restart
    #[arg(long, env = "INKLINK_SPOOL_DIR", default_value = ".", global = true)]
    pub spool_dir: PathBuf,

    /// Seconds between refreshes of today's statistics (while more than 1,000 clicks a second
    /// arrive, a refresh waits, up to ten intervals)
    #[arg(long, env = "INKLINK_STATS_INTERVAL", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600), global = true)]
    pub stats_interval: u64,

    /// REST API requests per minute per API key (bursts up to the same number); more get 429
    #[arg(long, env = "INKLINK_API_RATE_LIMIT", default_value_t = 600, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub api_rate_limit: u32,

    /// HTTP worker threads (default: one per CPU core)
    #[arg(long, env = "INKLINK_WORKERS", value_parser = clap::value_parser!(u32).range(1..=256), global = true)]
    pub workers: Option<u32>,

    /// Log filter, e.g. info, or inklink=debug,warn (default: info when serving, warn otherwise)
    #[arg(long, env = "INKLINK_LOG", global = true)]
    pub log: Option<String>,

    /// Configuration file (TOML with the options above as keys)
    #[arg(
        long,
        env = "INKLINK_CONFIG",
        default_value = "inklink.toml",
        global = true
    )]
    pub config: PathBuf,
}

#[derive(Subcommand, Debug, Clone)]
pub enum Command {
    /// Serve redirects (the default)
    Serve,
    /// Apply, revert or list database migrations (default: up)
    Migrate {
        #[command(subcommand)]
        action: Option<MigrateAction>,
    },
    /// Manage the people who sign in to the admin UI
    User {
        #[command(subcommand)]
        action: UserAction,
    },
    /// Create, disable and enable short links
    Link {
        #[command(subcommand)]
        action: LinkAction,
    },
    /// Manage the domains short links are served on
    Domain {
        #[command(subcommand)]
        action: DomainAction,
    },
    /// Issue API keys for the REST API
    Apikey {
        #[command(subcommand)]
        action: ApikeyAction,
    },
    /// Daily visit statistics
    Stats {
        #[command(subcommand)]
        action: StatsAction,
    },
}

#[derive(Subcommand, Debug, Clone)]
pub enum ApikeyAction {
    /// Create a key and print its secret (shown this once; only a digest is stored)
    Add {
        /// A name for the key, e.g. the system that uses it (1-64 of A-Z a-z 0-9 . _ -)
        name: String,
        #[arg(long, value_enum)]
        role: Role,
        /// Expiry as an RFC 3339 date-time, e.g. 2027-06-30T00:00:00Z (default: never)
        #[arg(long)]
        expires: Option<String>,
    },
}

#[derive(Subcommand, Debug, Clone, Copy)]
pub enum StatsAction {
    /// Recompute the daily statistics of a range of days (in INKLINK_TIMEZONE) from the
    /// stored click events; the result is the same however often it runs
    Rebuild {
        /// First day, YYYY-MM-DD (default: the day of the oldest stored click)
        #[arg(long)]
        from: Option<chrono::NaiveDate>,
        /// Last day, YYYY-MM-DD (default: today)
        #[arg(long)]
        to: Option<chrono::NaiveDate>,
    },
}

#[derive(Subcommand, Debug, Clone, Copy)]
pub enum MigrateAction {
    /// Apply every pending migration
    Up,
    /// Revert the most recent migration
    Down,
    /// List migrations and whether each is applied
    Status,
}

#[derive(Subcommand, Debug, Clone)]
pub enum UserAction {
    /// Add a user; the password is read from standard input
    Add {
        name: String,
        #[arg(long, value_enum)]
        role: Role,
    },
    /// Set a user's password, read from standard input
    Passwd { name: String },
}

#[derive(Subcommand, Debug, Clone)]
pub enum LinkAction {
    /// Shorten URL and print the short URL
    Add {
        url: String,
        /// Custom code: 1-64 of A-Z a-z 0-9 - _
        #[arg(long)]
        code: Option<String>,
        /// Domain to serve the link on (default: the default domain)
        #[arg(long)]
        domain: Option<String>,
        /// Expiry as an RFC 3339 date-time, e.g. 2026-12-31T23:59:59+08:00
        #[arg(long)]
        expires: Option<String>,
        #[arg(long)]
        description: Option<String>,
        /// How to make the code when no --code is given
        #[arg(long, value_enum, default_value = "sequence")]
        strategy: Strategy,
        /// Redirect status for this link (default: INKLINK_REDIRECT_STATUS)
        #[arg(long)]
        redirect_status: Option<RedirectStatus>,
        /// Print the existing active link for the same URL and domain instead of a new one
        #[arg(long)]
        reuse: bool,
    },
    /// Create links from a CSV file (columns: url, and optionally code, description,
    /// expires_at, domain); writes every row's short URL or error as CSV
    Import {
        file: PathBuf,
        /// Write the results here instead of to standard output
        #[arg(long)]
        results: Option<PathBuf>,
    },
    /// Disable a link: it answers 410 Gone
    Disable { code: String },
    /// Enable a disabled link again
    Enable { code: String },
}

#[derive(Subcommand, Debug, Clone)]
pub enum DomainAction {
    /// Add a host (with optional port) that serves short links
    Add {
        host: String,
        /// Short URLs on this host use http:// (default https://)
        #[arg(long)]
        http: bool,
        /// Make it the default domain for new links
        #[arg(long)]
        default: bool,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(transparent)]
    Cli(#[from] clap::Error),
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not valid TOML: {message}")]
    Toml { path: String, message: String },
    #[error("{path}: unknown setting '{key}' (see inklink --help)")]
    UnknownKey { path: String, key: String },
    #[error("{path}: setting '{key}' must be a string, number or boolean")]
    BadValue { path: String, key: String },
}

impl ConfigError {
    /// Shows the error the way clap shows its own and exits (2 for usage, 1 otherwise).
    pub fn exit(self) -> ! {
        match self {
            Self::Cli(err) => err.exit(),
            other => {
                eprintln!("error: {other}");
                std::process::exit(1)
            }
        }
    }
}

/// A setting that lists values with commas (`a, b,c`): each item trimmed, empty items
/// skipped, and the first that `parse` refuses named in the error.
pub fn comma_separated<T>(
    text: &str,
    parse: impl FnMut(&str) -> Result<T, String>,
) -> Result<Vec<T>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(parse)
        .collect()
}

/// Parses `args` (program name first), reading the config file they or INKLINK_CONFIG name.
pub fn parse_from<I, T>(args: I) -> Result<Cli, ConfigError>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let (path, explicit) = config_path(&args);
    let mut command = Cli::command();
    if let Some(settings) = read_toml(&path, explicit)? {
        let shown = path.display().to_string();
        for (key, value) in settings {
            let id = key.replace('-', "_");
            let known = command.get_arguments().any(|arg| {
                arg.get_id().as_str() == id && arg.get_long().is_some() && id != "config"
            });
            if !known {
                return Err(ConfigError::UnknownKey { path: shown, key });
            }
            let text = match value {
                toml::Value::String(s) => s,
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Boolean(b) => b.to_string(),
                toml::Value::Float(f) => f.to_string(),
                _ => return Err(ConfigError::BadValue { path: shown, key }),
            };
            // clap keeps defaults as 'static strings; this runs once per setting at start-up.
            let text: &'static str = Box::leak(text.into_boxed_str());
            command = command.mut_arg(id, |arg| arg.default_value(text));
        }
    }
    let matches = command.try_get_matches_from(args)?;
    Ok(Cli::from_arg_matches(&matches)?)
}

pub fn parse() -> Result<Cli, ConfigError> {
    parse_from(std::env::args_os())
}

fn config_path(args: &[OsString]) -> (PathBuf, bool) {
    let mut iter = args.iter().skip(1);
    while let Some(arg) = iter.next() {
        let arg = arg.to_string_lossy();
        if arg == "--config" {
            if let Some(value) = iter.next() {
                return (PathBuf::from(value), true);
            }
        } else if let Some(value) = arg.strip_prefix("--config=") {
            return (PathBuf::from(value), true);
        }
    }
    match std::env::var_os("INKLINK_CONFIG") {
        Some(path) => (PathBuf::from(path), true),
        None => (PathBuf::from("inklink.toml"), false),
    }
}

fn read_toml(path: &PathBuf, explicit: bool) -> Result<Option<toml::Table>, ConfigError> {
    let shown = path.display().to_string();
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound && !explicit => return Ok(None),
        Err(source) => {
            return Err(ConfigError::Read {
                path: shown,
                source,
            });
        }
    };
    text.parse::<toml::Table>()
        .map(Some)
        .map_err(|err| ConfigError::Toml {
            path: shown,
            message: err.message().to_owned(),
        })
}
