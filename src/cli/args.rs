//! The command line's words: the commands, their arguments and options as clap parses them
//! (the server's own options are `Settings`, in `config`), and the parse itself.

use super::help::subcommand_help;
use crate::config::{self, ConfigError, Settings};
use crate::db::entities::url_map::Strategy;
use crate::rules::{RedirectStatus, Role};
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::ffi::OsString;
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

// Parsed once per run: the size of a variant costs nothing.
#[allow(clippy::large_enum_variant)]
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
    /// Check that inklink can start: configuration, database (reachable, schema version),
    /// GeoIP file, spool directory, listen address. One OK or FAIL line each; exit 1 on a FAIL
    Check,
    /// Copy the database to FILE while the server runs (SQLite; for PostgreSQL and MySQL the
    /// message shows the pg_dump or mysqldump command to use)
    Backup {
        /// Where the copy goes; an existing file is not overwritten
        file: PathBuf,
    },
    /// Daily visit statistics
    Stats {
        #[command(subcommand)]
        action: StatsAction,
    },
    /// Raw click events (what the statistics are counted from)
    Events {
        #[command(subcommand)]
        action: EventsAction,
    },
    /// Webhook subscriptions (made in the admin UI or with the API): list them, and send a
    /// time range of their messages again
    Webhooks {
        #[command(subcommand)]
        action: WebhooksAction,
    },
}

#[derive(Subcommand, Debug, Clone)]
pub enum WebhooksAction {
    /// Every subscription: id, state, format, events and URL
    List,
    /// Send again every kept message made in a range (delivered, failed or dropped alike),
    /// with its original webhook-id, so that receivers can tell what they already have.
    /// Messages are kept INKLINK_WEBHOOK_KEEP_DAYS days. A running server delivers them
    Replay {
        /// Start: YYYY-MM-DD (the day's start in INKLINK_TIMEZONE) or an RFC 3339 time
        #[arg(long)]
        from: String,
        /// End (excluded): YYYY-MM-DD (the end of that day) or an RFC 3339 time; default: now
        #[arg(long)]
        to: Option<String>,
        /// Only this subscription (its id, as `webhooks list` shows it)
        #[arg(long)]
        subscription: Option<i64>,
    },
}

#[derive(Subcommand, Debug, Clone)]
pub enum EventsAction {
    /// Write every stored click of a range of days to standard output, one per line with
    /// readable fields (time, code, link id, host, address, visitor, user agent, browser, OS,
    /// device, bot, referrer, query, country, province, city, carrier, outcome, target rule,
    /// cursor), in constant memory. Resume an interrupted export with --after CURSOR
    Export {
        /// First day, YYYY-MM-DD, in INKLINK_TIMEZONE
        #[arg(long)]
        from: chrono::NaiveDate,
        /// Last day, YYYY-MM-DD (default: --from); at most 366 days
        #[arg(long)]
        to: Option<chrono::NaiveDate>,
        /// Only the clicks of this short code
        #[arg(long)]
        link: Option<String>,
        /// Only the clicks of the links with this tag
        #[arg(long)]
        tag: Option<String>,
        /// ndjson (one JSON object a line) or csv (with a header, for spreadsheets)
        #[arg(long, default_value = "ndjson")]
        format: String,
        /// Go on after this click: the cursor of the last line received
        #[arg(long)]
        after: Option<String>,
    },
    /// Delete the click events recorded before DATE (in INKLINK_TIMEZONE), in small batches.
    /// Every click still waiting is counted first; the daily statistics of those days are kept
    /// as they are, and `stats rebuild` leaves them alone from then on. See also INKLINK_EVENT_RETENTION_DAYS
    Purge {
        /// The first day whose events are kept, YYYY-MM-DD (at most today)
        #[arg(long)]
        before: chrono::NaiveDate,
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
        /// Expiry as an RFC 3339 date-time, e.g. 2027-06-30T00:00:00Z, or a date and time in
        /// INKLINK_TIMEZONE, e.g. "2027-06-30 00:00" (default: never)
        #[arg(long)]
        expires: Option<String>,
    },
    /// List the keys: name, role, prefix, expiry, last use, whether revoked
    List {
        #[arg(long)]
        json: bool,
    },
    /// Revoke a key by its name: requests with it are refused from now on
    Revoke { name: String },
}

#[derive(Subcommand, Debug, Clone, Copy)]
pub enum StatsAction {
    /// Count the daily statistics of a range of days (in INKLINK_TIMEZONE) again from the
    /// stored click events (the server counts each click as it is stored; this is the
    /// recovery path); the result is the same however often it runs. Visitor sets left by
    /// versions before the bitmaps are turned into bitmaps first
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
    /// Revert the most recent migration (drops what it added, with its data)
    Down {
        /// Revert it: without this flag nothing is changed
        #[arg(long)]
        yes: bool,
    },
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
    /// Set a user's password, read from standard input (ends the user's sessions)
    Passwd { name: String },
    /// List the users: name, role, whether disabled, last sign-in
    List {
        #[arg(long)]
        json: bool,
    },
    /// Disable a user: their sessions end and they cannot sign in
    Disable { name: String },
    /// Enable a disabled user again
    Enable { name: String },
    /// Give a user another role
    Role {
        name: String,
        #[arg(value_enum)]
        role: Role,
    },
    /// Let a user sign in through the single sign-on provider: link them to the provider's
    /// subject for them (its stable id of the person, the ID token's `sub`; not an e-mail)
    LinkSso { name: String, subject: String },
}

// Parsed once per run: the size of a variant costs nothing.
#[allow(clippy::large_enum_variant)]
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
        /// Expiry as an RFC 3339 date-time, e.g. 2026-12-31T23:59:59+08:00, or a date and
        /// time in INKLINK_TIMEZONE, e.g. "2026-12-31 23:59" (a date alone: its end)
        #[arg(long)]
        expires: Option<String>,
        /// A note for the people who manage the link (shown in the admin UI and exports)
        #[arg(long)]
        description: Option<String>,
        /// How to make the code when no --code is given (custom needs --code)
        #[arg(long, value_enum, default_value = "sequence")]
        strategy: Strategy,
        /// Redirect status for this link (default: INKLINK_REDIRECT_STATUS)
        #[arg(long)]
        redirect_status: Option<RedirectStatus>,
        /// Print the existing active link for the same URL and domain instead of a new one
        #[arg(long)]
        reuse: bool,
        /// Length of the generated code, 4-12 (default: INKLINK_CODE_LENGTH); shorter codes
        /// only with --code
        #[arg(long)]
        length: Option<String>,
        /// Visitors must enter this password (4-128 characters) before they are sent on;
        /// give "-" to read it from standard input
        #[arg(long)]
        password: Option<String>,
        /// Send visitors on at most this many times (over all instances); then the link
        /// answers like an expired one
        #[arg(long)]
        max_visits: Option<String>,
        /// Before this time the link answers 403 "not open yet" (written as --expires is)
        #[arg(long)]
        valid_from: Option<String>,
        /// Where to send visitors once the link is disabled, expired or used up (instead of
        /// the 410 page; default: the domain's fallback)
        #[arg(long)]
        fallback: Option<String>,
        /// In-app browsers shown "open this link in your browser" instead of a redirect:
        /// comma-separated wechat, qq, weibo, douyin, toutiao, xiaohongshu, dingtalk,
        /// alipay, taobao, or none (default: the domain's choice)
        #[arg(long)]
        in_app_page: Option<String>,
        /// An alternative target by device or app, RULE=URL with RULE one of ios, android,
        /// desktop, wechat; repeat it, the first matching rule wins
        #[arg(long = "target", value_name = "RULE=URL")]
        targets: Vec<String>,
        /// A tag (campaign) for the link; repeat it for several
        #[arg(long = "tag", value_name = "TAG")]
        tags: Vec<String>,
    },
    /// Create links from a CSV file (columns: url, and optionally code, description,
    /// expires_at, domain, length); writes every row's short URL or error as CSV
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
    /// List links, newest first
    List {
        /// Only links whose code, target or description contains this
        #[arg(long)]
        search: Option<String>,
        /// Only links in this state
        #[arg(long, value_enum)]
        status: Option<crate::services::links::listing::StatusFilter>,
        /// Only links with this tag
        #[arg(long)]
        tag: Option<String>,
        /// At most this many
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=100_000))]
        limit: u64,
        #[arg(long)]
        json: bool,
    },
    /// Show one link whole
    Show {
        code: String,
        #[arg(long)]
        json: bool,
    },
    /// Delete a link: it answers 404, leaves the lists, and its code is never issued again
    Delete { code: String },
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
    /// List the domains: host, protocol, status, default, what replaced it, links made for it,
    /// health (healthy, suspect, blocked, unknown), standby and fail-over policy
    List {
        #[arg(long)]
        json: bool,
    },
    /// Make a domain the default for new links
    Default { host: String },
    /// Disable a domain: no new links on it (its links keep redirecting)
    Disable { host: String },
    /// Enable a disabled domain again
    Enable { host: String },
    /// Set what a domain's links do by default: the page for in-app browsers, and where
    /// disabled, expired and used-up links send visitors
    Set {
        host: String,
        /// In-app browsers its links show "open this link in your browser" (comma-separated
        /// wechat, qq, weibo, douyin, toutiao, xiaohongshu, dingtalk, alipay, taobao; none
        /// for none)
        #[arg(long)]
        in_app_page: Option<String>,
        /// Where its disabled, expired and used-up links send visitors; "none" for the 410 page
        #[arg(long)]
        fallback: Option<String>,
        /// A standby takes no new links; fail-over rotates a blocked default domain to the
        /// first healthy standby (true or false)
        #[arg(long, action = clap::ArgAction::Set, value_parser = clap::builder::BoolishValueParser::new())]
        standby: Option<bool>,
        /// What happens when this default domain is found blocked: off (alert only), confirm
        /// (alert, and rotate with one click on the Domains page) or auto (rotate to the first
        /// healthy standby)
        #[arg(long)]
        failover: Option<String>,
        /// Its ICP filing number, such as 京ICP备12345678号-1 ("" to clear it)
        #[arg(long)]
        icp_filing: Option<String>,
        /// The approved SMS templates that contain this domain, one per line (a file's text
        /// with "$(cat FILE)"; "" to clear them): `domain rotate` lists them to submit again
        #[arg(long)]
        sms_templates: Option<String>,
    },
    /// Run the health probes on a domain once and print what each found (nothing is recorded)
    Check { host: String },
    /// Replace a blocked domain: the replacement becomes the default, and the blocked one's
    /// links are shown with it (the blocked host keeps redirecting)
    Rotate {
        host: String,
        /// The domain that takes over
        #[arg(long)]
        to: String,
    },
}

/// Parses `args` (program name first), reading the config file they or INKLINK_CONFIG name.
pub fn parse_from<I, T>(args: I) -> Result<Cli, ConfigError>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    if let Some(help) = subcommand_help(&args) {
        return Err(ConfigError::Help(help));
    }
    let command = config::with_file_defaults(Cli::command(), &args)?;
    let matches = command
        .clone()
        .try_get_matches_from(&args)
        .map_err(|err| config::explain(err, &command, &args))?;
    let mut cli = Cli::from_arg_matches(&matches)?;
    // `link add --redirect-status` shares its name with the server-wide option, whose default
    // (302, INKLINK_REDIRECT_STATUS, the file) clap hands down to the subcommand: only a flag
    // typed on the command line is the link's own status; otherwise the link follows the
    // server's, as links made through the API and the import do.
    if let Some(Command::Link {
        action: LinkAction::Add {
            redirect_status, ..
        },
    }) = &mut cli.command
    {
        let typed = matches
            .subcommand_matches("link")
            .and_then(|link| link.subcommand_matches("add"))
            .and_then(|add| add.value_source("redirect_status"));
        if typed != Some(clap::parser::ValueSource::CommandLine) {
            *redirect_status = None;
        }
    }
    Ok(cli)
}

pub fn parse() -> Result<Cli, ConfigError> {
    parse_from(std::env::args_os())
}
