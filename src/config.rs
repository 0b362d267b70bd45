//! Command line, environment (`INKLINK_*`) and the optional `inklink.toml`, resolved in that
//! order of precedence: a flag beats a variable, a variable beats the file, the file beats the
//! built-in default.

use crate::rules::RedirectStatus;
use clap::builder::BoolishValueParser;
use clap::{ArgAction, Args};
use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Args, Debug, Clone)]
pub struct Settings {
    /// Database: sqlite://FILE?mode=rwc, postgres://USER@HOST/DB or mysql://USER@HOST/DB
    #[arg(
        long,
        env = "INKLINK_DATABASE_URL",
        default_value = "sqlite://inklink.db?mode=rwc",
        value_parser = database_url,
        global = true
    )]
    pub database_url: String,

    /// Address and port the server listens on
    #[arg(
        long,
        env = "INKLINK_LISTEN",
        default_value = "127.0.0.1:8080",
        value_parser = listen_address,
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

    /// Database connections per process [default: 16; 8 on SQLite]
    #[arg(long, env = "INKLINK_DB_MAX_CONNECTIONS", value_parser = clap::value_parser!(u32).range(1..=1000), global = true)]
    pub db_max_connections: Option<u32>,

    /// Time zone for dates shown in the admin UI and for expiries typed without an offset
    /// (IANA name such as Asia/Shanghai)
    #[arg(long, env = "INKLINK_TIMEZONE", default_value = "UTC", value_parser = time_zone, global = true)]
    pub timezone: chrono_tz::Tz,

    /// Reverse proxies (comma-separated IPs or CIDRs) whose X-Forwarded-For, X-Real-IP and
    /// X-Forwarded-Proto headers are believed; nobody else's are
    #[arg(
        long,
        env = "INKLINK_TRUSTED_PROXIES",
        default_value = "",
        global = true
    )]
    pub trusted_proxies: crate::net::client::TrustedProxies,

    /// Hosts (comma-separated, such as admin.example.com) on which the admin UI and the API
    /// answer; on every other host their paths are unknown short codes. A host without a port
    /// matches on any port. Unset: every host
    #[arg(long, env = "INKLINK_ADMIN_HOSTS", default_value = "", global = true)]
    pub admin_hosts: crate::net::hosts::AdminHosts,

    /// Serve the Prometheus metrics (/metrics) on this extra address only, such as
    /// 127.0.0.1:9100, for a scraper that reaches it directly. Unset: /metrics answers on the
    /// admin hosts (INKLINK_ADMIN_HOSTS), like the admin UI; elsewhere it is an unknown code
    #[arg(long, env = "INKLINK_METRICS_LISTEN", value_parser = listen_address, global = true)]
    pub metrics_listen: Option<SocketAddr>,

    /// Always mark the admin session cookie Secure (it is marked anyway when a trusted proxy
    /// says the request came over https) (set this when the admin UI is served over https)
    #[arg(long, env = "INKLINK_SECURE_COOKIE", default_value_t = false, action = ArgAction::Set, value_parser = BoolishValueParser::new(), global = true)]
    pub secure_cookie: bool,
    /// Two-factor sign-in for everyone: a user without an authenticator app enrols one at
    /// their next sign-in (API keys are not affected)
    #[arg(long = "require-2fa", env = "INKLINK_REQUIRE_2FA", default_value_t = false, action = ArgAction::Set, value_parser = BoolishValueParser::new(), global = true)]
    pub require_2fa: bool,

    /// Single sign-on: the OpenID Connect provider's issuer URL (Keycloak, Authing, Azure AD,
    /// Google Workspace, Feishu/Lark…), such as https://id.example.com/realms/acme. The sign-in
    /// page then offers "Sign in with …". http:// is accepted only on a loopback address
    #[arg(long, env = "INKLINK_OIDC_ISSUER", value_parser = oidc_issuer, global = true)]
    pub oidc_issuer: Option<crate::rules::oidc::Issuer>,

    /// Single sign-on: the client id inklink is registered under at the provider (its
    /// redirect URI is https://ADMIN-HOST/admin/sso/callback)
    #[arg(long, env = "INKLINK_OIDC_CLIENT_ID", global = true)]
    pub oidc_client_id: Option<String>,

    /// Single sign-on: the client secret the provider gave inklink
    #[arg(
        long,
        env = "INKLINK_OIDC_CLIENT_SECRET",
        hide_env_values = true,
        global = true
    )]
    pub oidc_client_secret: Option<String>,

    /// Single sign-on: the name on the sign-in button (default: the issuer's host)
    #[arg(long, env = "INKLINK_OIDC_NAME", global = true)]
    pub oidc_name: Option<String>,

    /// Single sign-on: a person's first sign-in through the provider creates their user (an
    /// operator unless INKLINK_OIDC_ADMIN_VALUES says admin). Off: only users an admin linked
    /// (`inklink user link-sso`) may sign in through the provider
    #[arg(long, env = "INKLINK_OIDC_CREATE_USERS", default_value_t = false, action = ArgAction::Set, value_parser = BoolishValueParser::new(), global = true)]
    pub oidc_create_users: bool,

    /// Single sign-on: the ID token claim that carries a person's groups or roles
    #[arg(
        long,
        env = "INKLINK_OIDC_ROLE_CLAIM",
        default_value = "groups",
        global = true
    )]
    pub oidc_role_claim: String,

    /// Single sign-on: values of the role claim (comma-separated) that make a person an admin;
    /// everyone else is an operator. Applied at every sign-in through the provider. Unset:
    /// roles are managed in inklink only
    #[arg(
        long,
        env = "INKLINK_OIDC_ADMIN_VALUES",
        default_value = "",
        global = true
    )]
    pub oidc_admin_values: String,

    /// The admin UI's public address for the provider's redirect, such as
    /// https://admin.example.com (default: the scheme and host the sign-in was started on)
    #[arg(long, env = "INKLINK_PUBLIC_URL", global = true)]
    pub public_url: Option<String>,

    /// Sign-in with a password. Off (with single sign-on set up): only the break-glass users
    /// (INKLINK_BREAK_GLASS_USERS) may sign in with a password; everyone else uses the provider
    #[arg(long, env = "INKLINK_PASSWORD_SIGNIN", default_value_t = true, action = ArgAction::Set, value_parser = BoolishValueParser::new(), global = true)]
    pub password_signin: bool,

    /// Users (comma-separated) who may still sign in with a password when
    /// INKLINK_PASSWORD_SIGNIN is off, for when the provider is down
    #[arg(
        long,
        env = "INKLINK_BREAK_GLASS_USERS",
        default_value = "admin",
        global = true
    )]
    pub break_glass_users: String,

    /// MaxMind-format city database (.mmdb: GeoLite2-City, DB-IP City Lite) for the country,
    /// province and city of clicks; re-read when the file changes. Unset: geo fields stay empty
    #[arg(long, env = "INKLINK_GEOIP_DB", global = true)]
    pub geoip_db: Option<PathBuf>,

    /// ASN database (.mmdb: GeoLite2-ASN, DB-IP ASN Lite) for the carrier of clicks (中国移动,
    /// 中国联通, 中国电信, 中国广电 or other), a statistics dimension and a breakdown of
    /// campaign funnels; re-read when the file changes. Unset: the carrier stays empty
    #[arg(long, env = "INKLINK_CARRIER_DB", global = true)]
    pub carrier_db: Option<PathBuf>,

    /// What is kept of a visitor's address: the whole address, or only its network (the /24 of
    /// an IPv4 address, the /48 of an IPv6 one). With `network`, UV counts distinct networks and
    /// user agents, and IP counts networks; GeoIP still reads the whole address, in memory
    #[arg(
        long,
        env = "INKLINK_KEEP_ADDRESSES",
        value_enum,
        default_value = "full",
        global = true
    )]
    pub keep_addresses: KeepAddresses,

    /// Language of GeoIP place names (en, zh-CN, de, es, fr, ja, pt-BR, ru), falling back to
    /// English where the database has no name in it
    #[arg(long, env = "INKLINK_GEOIP_LANG", default_value = "en", global = true)]
    pub geoip_lang: String,

    /// Clicks waiting for the background writer before new ones are dropped (and counted)
    #[arg(long, env = "INKLINK_CLICK_QUEUE", default_value_t = 65_536, value_parser = clap::value_parser!(u32).range(16..), global = true)]
    pub click_queue: u32,

    /// Clicks kept in memory while the database is unavailable or behind (about 350 bytes
    /// each); beyond this they go to the spool file
    #[arg(long, env = "INKLINK_CLICK_BUFFER", default_value_t = 20_000, value_parser = clap::value_parser!(u32).range(0..), global = true)]
    pub click_buffer: u32,

    /// Directory of the spool file (inklink-spool-<port>.jsonl) that holds clicks while the
    /// database is unavailable, and of the click journal (inklink-journal-<port>-*.journal)
    /// that keeps answered clicks through a crash; both are written at the next start. Events
    /// the database refuses for their values go to inklink-rejected-<port>.jsonl there
    #[arg(long, env = "INKLINK_SPOOL_DIR", default_value = ".", global = true)]
    pub spool_dir: PathBuf,

    /// Seconds between counts of newly stored clicks into the daily statistics (each count
    /// costs in proportion to the new clicks; none waiting costs one indexed look). During a
    /// burst it counts on at once, in turns of up to 50,000 clicks, on a thread of lower CPU
    /// priority than the redirects
    #[arg(long, env = "INKLINK_STATS_INTERVAL", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=3600), global = true)]
    pub stats_interval: u64,

    /// Days of raw click events to keep, today included (default: all). Older events are
    /// deleted hourly, in small batches; daily statistics are kept for ever and stay as they
    /// were
    #[arg(long, env = "INKLINK_EVENT_RETENTION_DAYS", value_parser = clap::value_parser!(u32).range(1..=36500), global = true)]
    pub event_retention_days: Option<u32>,

    /// Days a campaign batch keeps its recipients' phone numbers and variables, counted from
    /// the batch's creation. After that the numbers are deleted (hourly) and the batch keeps
    /// its funnel figures
    #[arg(long, env = "INKLINK_RECIPIENT_RETENTION_DAYS", default_value_t = 90, value_parser = clap::value_parser!(u32).range(1..=36500), global = true)]
    pub recipient_retention_days: u32,

    /// Seconds between health checks of every active domain (reachability, and the external
    /// checker when one is set); one instance checks at a time
    #[arg(long, env = "INKLINK_DOMAIN_CHECK_INTERVAL", default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=86400), global = true)]
    pub domain_check_interval: u64,

    /// Check that each domain answers inklink's /healthz (DNS, TCP, TLS and the answer); a
    /// domain that does not fails its check
    #[arg(long, env = "INKLINK_DOMAIN_CHECK_REACHABILITY", default_value_t = true, action = ArgAction::Set, value_parser = BoolishValueParser::new(), global = true)]
    pub domain_check_reachability: bool,

    /// An external checking service asked about each domain, as a URL template with {url}
    /// (the domain's address, percent-encoded) or {host}: https://checker.example/api?url={url}.
    /// How WeChat's and QQ's blocks are found today
    #[arg(long, env = "INKLINK_DOMAIN_CHECKER_URL", value_parser = crate::rules::health::checker_template, global = true)]
    pub domain_checker_url: Option<String>,

    /// The JSON pointer of the checker's answer that says blocked (true: blocked)
    #[arg(
        long,
        env = "INKLINK_DOMAIN_CHECKER_BLOCKED",
        default_value = "/blocked",
        global = true
    )]
    pub domain_checker_blocked: String,

    /// Seconds the checker (and the reachability and certificate checks) may take to answer;
    /// later is "unknown"
    #[arg(long, env = "INKLINK_DOMAIN_CHECKER_TIMEOUT", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=120), global = true)]
    pub domain_checker_timeout: u64,

    /// Failed checks among the last INKLINK_DOMAIN_CHECK_WINDOW that make a domain blocked
    /// (and passed checks in a row that make it healthy again)
    #[arg(long, env = "INKLINK_DOMAIN_BLOCKED_AFTER", default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=20), global = true)]
    pub domain_blocked_after: u64,

    /// How many of the latest checks the hysteresis looks at
    #[arg(long, env = "INKLINK_DOMAIN_CHECK_WINDOW", default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=20), global = true)]
    pub domain_check_window: u64,

    /// Seconds of the traffic probe's window: a domain whose WeChat and QQ visitors vanish for
    /// this long (it had some in the window before) while another domain still gets them, or
    /// all stop at the "open in browser" page, becomes suspect. 0 turns the probe off
    #[arg(long, env = "INKLINK_DOMAIN_TRAFFIC_WINDOW", default_value_t = 1800, value_parser = clap::value_parser!(u64).range(0..=86400), global = true)]
    pub domain_traffic_window: u64,

    /// Seconds after a fail-over during which no other automatic rotation happens
    #[arg(long, env = "INKLINK_DOMAIN_FAILOVER_QUIET", default_value_t = 3600, value_parser = clap::value_parser!(u64).range(0..=604800), global = true)]
    pub domain_failover_quiet: u64,

    /// Let webhooks reach private, loopback and link-local addresses (a receiver on this
    /// machine or the office network). Off by default, so that nobody can use inklink to probe
    /// the internal network
    #[arg(long, env = "INKLINK_WEBHOOK_ALLOW_PRIVATE", default_value_t = false, action = ArgAction::Set, value_parser = BoolishValueParser::new(), global = true)]
    pub webhook_allow_private: bool,

    /// Undelivered batches of clicks a webhook subscription may have waiting; beyond it the
    /// oldest are dropped (and counted in /metrics). Link, batch and domain events are never
    /// dropped
    #[arg(long, env = "INKLINK_WEBHOOK_OUTBOX_LIMIT", default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..=10_000_000), global = true)]
    pub webhook_outbox_limit: u32,

    /// Seconds before a failed webhook message is first retried; each further retry waits
    /// twice as long as the one before, at most an hour, until the message is a day old (then
    /// it is marked failed and can be re-sent from the admin UI)
    #[arg(long, env = "INKLINK_WEBHOOK_RETRY_SECONDS", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=3600), global = true)]
    pub webhook_retry_seconds: u32,

    /// Days delivered and failed webhook messages are kept (for the list of recent deliveries
    /// and for `inklink webhooks replay`)
    #[arg(long, env = "INKLINK_WEBHOOK_KEEP_DAYS", default_value_t = 7, value_parser = clap::value_parser!(u32).range(1..=3650), global = true)]
    pub webhook_keep_days: u32,

    /// Country calling code of recipients' phone numbers written without one (`138…` is read
    /// as +86 138…)
    #[arg(long, env = "INKLINK_PHONE_COUNTRY", default_value_t = 86, value_parser = clap::value_parser!(u16).range(1..=999), global = true)]
    pub phone_country: u16,

    /// Visits to codes that match no link stored per day and instance (without referer and
    /// query, the user agent cut to 256 bytes); more are only counted in /metrics, so that
    /// strangers probing codes cannot fill the database
    #[arg(
        long,
        env = "INKLINK_UNKNOWN_VISITS_PER_DAY",
        default_value_t = 100_000,
        global = true
    )]
    pub unknown_visits_per_day: u32,

    /// REST API requests per minute per API key (bursts up to the same number); more get 429
    #[arg(long, env = "INKLINK_API_RATE_LIMIT", default_value_t = 600, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub api_rate_limit: u32,

    /// HTTP worker threads (default: one per CPU core)
    #[arg(long, env = "INKLINK_WORKERS", value_parser = clap::value_parser!(u32).range(1..=256), global = true)]
    pub workers: Option<u32>,

    /// Log filter, e.g. info, or inklink=debug,warn (default: info when serving, warn otherwise)
    #[arg(long, env = "INKLINK_LOG", global = true)]
    pub log: Option<String>,

    /// Log lines as text (coloured only on a terminal, and never with NO_COLOR set) or as
    /// JSON, one object per line, for a log collector
    #[arg(
        long,
        env = "INKLINK_LOG_FORMAT",
        value_enum,
        default_value = "text",
        global = true
    )]
    pub log_format: LogFormat,

    /// Configuration file (TOML with the options above as keys)
    #[arg(
        long,
        env = "INKLINK_CONFIG",
        default_value = "inklink.toml",
        global = true
    )]
    pub config: PathBuf,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum KeepAddresses {
    Full,
    Network,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
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
    /// A value from the environment or the file that the option refuses; named by where it
    /// came from, not by a flag the user never typed.
    /// Help asked for, already rendered: printed to standard output, exit 0.
    #[error("{0}")]
    Help(String),
    #[error("{origin} is '{value}', which is not allowed: {reason}{allowed}")]
    Setting {
        origin: String,
        value: String,
        reason: String,
        allowed: String,
    },
}

/// Rewrites clap's error about an invalid option value when the value came from an
/// `INKLINK_*` variable or the config file: clap names the flag (`--code-length`) and exits 2,
/// as for a mistyped command line; the user set neither.
pub fn explain(err: clap::Error, command: &clap::Command, args: &[OsString]) -> ConfigError {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if !matches!(
        err.kind(),
        ErrorKind::InvalidValue | ErrorKind::ValueValidation
    ) {
        return err.into();
    }
    let (Some(ContextValue::String(arg)), Some(ContextValue::String(value))) = (
        err.get(ContextKind::InvalidArg),
        err.get(ContextKind::InvalidValue),
    ) else {
        return err.into();
    };
    let long = arg.split_whitespace().next().unwrap_or_default();
    let Some(option) = command.get_arguments().find(|option| {
        option
            .get_long()
            .is_some_and(|name| format!("--{name}") == long)
    }) else {
        return err.into();
    };
    let typed = args.iter().skip(1).any(|given| {
        let given = given.to_string_lossy();
        given == long || given.starts_with(&format!("{long}="))
    });
    if typed {
        return err.into();
    }
    let origin = match option.get_env() {
        Some(name) if std::env::var_os(name).is_some() => name.to_string_lossy().into_owned(),
        _ => format!(
            "the setting '{}' in {}",
            option.get_id(),
            config_path(args).0.display()
        ),
    };
    let reason = std::error::Error::source(&err)
        .map(ToString::to_string)
        .unwrap_or_else(|| "not one of the allowed values".to_owned());
    let possible: Vec<String> = option
        .get_possible_values()
        .iter()
        .map(|v| v.get_name().to_owned())
        .collect();
    // The reason says what is expected when there is no list to choose from.
    let allowed = match possible.is_empty() {
        false => format!(". Allowed: {}", possible.join(", ")),
        true => String::new(),
    };
    ConfigError::Setting {
        origin,
        value: value.clone(),
        reason,
        allowed,
    }
}

/// A database URL of a kind inklink speaks; anything else (a bare file name, a typo in the
/// scheme) is refused here with the forms to use, not by the driver with "cannot be parsed".
fn database_url(value: &str) -> Result<String, String> {
    let scheme = value.split_once(':').map(|(scheme, _)| scheme);
    match scheme {
        Some("sqlite" | "postgres" | "postgresql" | "mysql" | "mariadb") => Ok(value.to_owned()),
        _ => Err(
            "a database URL starts with sqlite://, postgres:// or mysql://, as in \
             sqlite://inklink.db?mode=rwc, postgres://USER@HOST/DB or mysql://USER@HOST/DB"
                .to_owned(),
        ),
    }
}

fn oidc_issuer(value: &str) -> Result<crate::rules::oidc::Issuer, String> {
    crate::rules::oidc::Issuer::parse(value).map_err(|err| err.to_string())
}

fn time_zone(value: &str) -> Result<chrono_tz::Tz, String> {
    value.parse().map_err(|_| {
        "not a time zone name: give an IANA name such as Asia/Shanghai, Europe/Berlin or UTC"
            .to_owned()
    })
}

/// An address and a port (`127.0.0.1:8080`, `[::1]:8080`, `localhost:8080`).
fn listen_address(value: &str) -> Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    let expected = "give an address and a port, such as 127.0.0.1:8080 (this machine only) \
                    or 0.0.0.0:8080 (every network interface)";
    if let Ok(addr) = value.parse() {
        return Ok(addr);
    }
    if value.parse::<u16>().is_ok() || !value.contains(':') {
        return Err(expected.to_owned());
    }
    value
        .to_socket_addrs()
        .ok()
        .and_then(|mut found| found.next())
        .ok_or_else(|| expected.to_owned())
}

impl ConfigError {
    /// Shows the error the way clap shows its own and exits (2 for usage, 1 otherwise).
    pub fn exit(self) -> ! {
        match self {
            Self::Cli(err) => err.exit(),
            Self::Help(text) => {
                // A closed pipe (`inklink --help | head`) is no error.
                use std::io::Write as _;
                let _ = std::io::stdout().write_all(text.as_bytes());
                std::process::exit(0)
            }
            other => {
                eprintln!("error: {other}");
                std::process::exit(1)
            }
        }
    }
}

/// Makes every key of the config file (inklink.toml, or the file `args` or INKLINK_CONFIG
/// name) the default of its option in `command`, so that flags and variables still beat it.
pub fn with_file_defaults(
    mut command: clap::Command,
    args: &[OsString],
) -> Result<clap::Command, ConfigError> {
    let (path, explicit) = config_path(args);
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
    Ok(command)
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
