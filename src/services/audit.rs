//! Who did what to which link, domain, user or key.

use crate::db::{self, entities::audit_log};
use crate::i18n::{Message, Text};
use crate::rules::Role;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait,
    QueryFilter, QueryOrder, QuerySelect, Set,
};

/// A person or an API key acting, by id: names can repeat across the two (a key may be named
/// like a user, or `cli`), ids cannot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal {
    pub id: i64,
    pub name: String,
    pub role: Role,
}

/// Who does something: the command line and the server itself act as admins.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Actor {
    Cli,
    System,
    User(Principal),
    ApiKey(Principal),
}

impl Actor {
    pub fn name(&self) -> &str {
        match self {
            Self::Cli => "cli",
            Self::System => "system",
            Self::User(who) | Self::ApiKey(who) => &who.name,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Self::Cli => "cli",
            Self::System => "system",
            Self::User(_) => "user",
            Self::ApiKey(_) => "api_key",
        }
    }

    /// The id of the user or key acting; `None` for the CLI and the server itself.
    pub fn id(&self) -> Option<i64> {
        match self {
            Self::Cli | Self::System => None,
            Self::User(who) | Self::ApiKey(who) => Some(who.id),
        }
    }

    pub fn is_admin(&self) -> bool {
        match self {
            Self::Cli | Self::System => true,
            Self::User(who) | Self::ApiKey(who) => who.role == Role::Admin,
        }
    }

    /// Whether this actor made something recorded as made by `kind` and `id`.
    pub fn is(&self, kind: Option<&str>, id: Option<i64>) -> bool {
        kind == Some(self.kind()) && id == self.id()
    }
}

/// Every action the log records, with what it means to a person (the admin UI shows the
/// words, translated; filters and the API keep the identifiers).
pub const ACTIONS: [(&str, Text); 37] = [
    ("link.create", t!("Link created")),
    ("link.edit", t!("Link edited")),
    ("link.tags", t!("Link's tags changed")),
    ("link.disable", t!("Link disabled")),
    ("link.enable", t!("Link enabled")),
    ("link.delete", t!("Link deleted")),
    ("tag.preset", t!("Tag's UTM preset set")),
    ("domain.add", t!("Domain added")),
    ("domain.default", t!("Default domain changed")),
    ("domain.disable", t!("Domain disabled")),
    ("domain.enable", t!("Domain enabled")),
    ("domain.rotate", t!("Domain rotated")),
    ("domain.settings", t!("Domain's link defaults changed")),
    (
        "domain.failover",
        t!("Domain's standby and fail-over changed"),
    ),
    ("domain.suspect", t!("Domain suspected blocked")),
    ("domain.blocked", t!("Domain blocked")),
    ("domain.recovered", t!("Domain recovered")),
    ("user.add", t!("User added")),
    ("user.disable", t!("User disabled")),
    ("user.enable", t!("User enabled")),
    ("user.role", t!("User's role changed")),
    ("user.password", t!("User's password changed")),
    ("user.sign_in", t!("Signed in")),
    ("user.time_zone", t!("Time zone setting changed")),
    ("user.language", t!("Language setting changed")),
    ("user.display_name", t!("Display name changed")),
    ("user.two_factor", t!("Two-factor sign-in turned on or off")),
    (
        "user.two_factor_reset",
        t!("Two-factor sign-in reset by an admin"),
    ),
    ("user.link_sso", t!("Single sign-on account linked")),
    ("api_key.create", t!("API key created")),
    ("api_key.revoke", t!("API key revoked")),
    ("batch.create", t!("Batch created")),
    ("batch.export", t!("Batch's recipients exported")),
    ("batch.purge", t!("Batch's phone numbers deleted")),
    ("webhook.create", t!("Webhook created")),
    ("webhook.update", t!("Webhook changed")),
    ("webhook.delete", t!("Webhook deleted")),
];

/// What the things acted on are, as people call them.
pub const TARGET_KINDS: [(&str, Text); 7] = [
    ("link", t!("Link")),
    ("tag", t!("Tag")),
    ("domain", t!("Domain")),
    ("user", t!("User")),
    ("api_key", t!("API key")),
    ("batch", t!("Batch")),
    ("webhook", t!("Webhook")),
];

/// Who acts, by kind.
pub const ACTOR_KINDS: [(&str, Text); 4] = [
    ("user", t!("user")),
    ("api_key", t!("API key")),
    ("cli", t!("command line")),
    ("system", t!("inklink itself")),
];

/// The words for `id` in `table`; none for an identifier a newer version wrote (shown as it
/// is).
pub fn words(table: &[(&str, Text)], id: &str) -> Option<Text> {
    table
        .iter()
        .find(|(known, _)| *known == id)
        .map(|(_, words)| *words)
}

pub struct Entry<'a> {
    pub action: &'a str,
    pub target_kind: &'a str,
    pub target_id: &'a str,
    pub before: Option<serde_json::Value>,
    pub after: Option<serde_json::Value>,
}

fn row(actor: &Actor, entry: Entry<'_>) -> audit_log::ActiveModel {
    audit_log::ActiveModel {
        at: Set(db::now()),
        actor: Set(actor.name().to_owned()),
        actor_kind: Set(actor.kind().to_owned()),
        action: Set(entry.action.to_owned()),
        target_kind: Set(entry.target_kind.to_owned()),
        target_id: Set(entry.target_id.to_owned()),
        before_state: Set(entry.before.map(|v| v.to_string())),
        after_state: Set(entry.after.map(|v| v.to_string())),
        ..Default::default()
    }
}

/// Many entries by one actor in one statement (bulk creation).
pub async fn record_many<C: ConnectionTrait>(
    conn: &C,
    actor: &Actor,
    entries: Vec<Entry<'_>>,
) -> Result<(), DbErr> {
    if entries.is_empty() {
        return Ok(());
    }
    announce(conn, actor, &entries, None).await?;
    audit_log::Entity::insert_many(entries.into_iter().map(|entry| row(actor, entry)))
        .exec(conn)
        .await
        .map(drop)
}

/// Records `entry`, and puts the webhook messages it announces in the outbox (in the same
/// transaction as the change, when the caller has one).
pub async fn record<C: ConnectionTrait>(
    conn: &C,
    actor: &Actor,
    entry: Entry<'_>,
) -> Result<(), DbErr> {
    announce(conn, actor, std::slice::from_ref(&entry), None).await?;
    row(actor, entry).insert(conn).await?;
    Ok(())
}

/// [`record`] for a change with a reason a person reads (a domain found blocked): chat-group
/// robots get the reason in their subscription's language, programs the English of `after`.
pub async fn record_with_reason<C: ConnectionTrait>(
    conn: &C,
    actor: &Actor,
    entry: Entry<'_>,
    reason: &Message,
) -> Result<(), DbErr> {
    announce(conn, actor, std::slice::from_ref(&entry), Some(reason)).await?;
    row(actor, entry).insert(conn).await?;
    Ok(())
}

/// Hands the entries to the webhooks' outbox, in the caller's transaction.
async fn announce<C: ConnectionTrait>(
    conn: &C,
    actor: &Actor,
    entries: &[Entry<'_>],
    reason: Option<&Message>,
) -> Result<(), DbErr> {
    let notices: Vec<super::outbox::Notice<'_>> = entries
        .iter()
        .map(|entry| super::outbox::Notice {
            action: entry.action,
            target_kind: entry.target_kind,
            target_id: entry.target_id,
            before: entry.before.as_ref(),
            after: entry.after.as_ref(),
            reason,
        })
        .collect();
    let by = super::outbox::By {
        kind: actor.kind(),
        name: actor.name(),
    };
    super::outbox::announce(conn, by, &notices).await
}

/// Which audit entries to show; `None` means "any".
#[derive(Clone, Debug, Default)]
pub struct AuditFilter {
    /// Exactly this actor.
    pub actor: Option<String>,
    /// Actions starting with this (`link.` for every link action).
    pub action: Option<String>,
    /// Exactly this target id (a code, a host, a user or key name).
    pub target: Option<String>,
    /// Entries older than this id (the next page).
    pub before: Option<i64>,
}

/// Up to `limit` entries the filter matches, newest first.
pub async fn list(
    db: &DatabaseConnection,
    filter: &AuditFilter,
    limit: u64,
) -> Result<Vec<audit_log::Model>, DbErr> {
    let mut select = audit_log::Entity::find();
    if let Some(actor) = &filter.actor {
        select = select.filter(audit_log::Column::Actor.eq(actor.as_str()));
    }
    if let Some(action) = &filter.action {
        select = select.filter(audit_log::Column::Action.starts_with(action));
    }
    if let Some(target) = &filter.target {
        select = select.filter(audit_log::Column::TargetId.eq(target.as_str()));
    }
    if let Some(before) = filter.before {
        select = select.filter(audit_log::Column::Id.lt(before));
    }
    select
        .order_by_desc(audit_log::Column::Id)
        .limit(limit)
        .all(db)
        .await
}
