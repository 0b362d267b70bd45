//! Code → link, through an in-process cache.
//!
//! A hit costs no database query and no lock shared by all workers (the cache is sharded). A
//! miss joins a queue of lookups; one task drains the queue into `IN (...)` queries, so a flood
//! of unknown codes costs one query per batch, not one per request. Unknown codes are cached
//! too. Every `watch_every` a watcher asks the database which links changed (any instance's edits,
//! creations, disables) and drops exactly those entries, so a change shows everywhere within
//! `watch_every` while unchanged hot links stay cached (entries are refreshed after `MAX_AGE` at the
//! latest, in case a change was missed). While the database is unreachable, expired entries
//! keep answering.

use crate::db::entities::domain_conf;
use crate::db::entities::url_map::{self, LinkState, LinkStatus};
use crate::metrics::Counter;
use crate::rules::{AltTargets, InAppApps, RedirectStatus, ShortCode, TargetRule};
use actix_web::http::header::HeaderValue;
use chrono::NaiveDateTime;
use quick_cache::sync::Cache;
use sea_orm::{
    ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect,
};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::{Semaphore, mpsc, oneshot};

const MAX_BATCH: usize = 256;
const CONCURRENT_BATCHES: usize = 4;
const QUEUE_CAPACITY: usize = 8192;
/// After a failed lookup, serve stale entries without asking the database for this long.
const OUTAGE_BACKOFF: Duration = Duration::from_secs(2);
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(3);
/// The longest an entry is trusted without being looked up again.
const MAX_AGE: Duration = Duration::from_secs(600);
/// Changes are read again for at least this long after they were first seen: an edit whose
/// transaction committed late, an instance whose clock is a little behind, or a lookup that
/// raced the change and cached the old answer, is not missed.
const OVERLAP: Duration = Duration::from_secs(10);
/// More changes than this at once (a bulk import): start the cache afresh.
const MAX_CHANGES: u64 = 10_000;

#[derive(Debug)]
pub struct ResolvedLink {
    pub id: i64,
    pub status: LinkStatus,
    pub expires_at: Option<NaiveDateTime>,
    pub redirect: RedirectStatus,
    /// The target URL as the `Location` header sends it, built once per link, not once per
    /// click; [`ResolvedLink::target`] reads it back (a second copy of every cached link's
    /// URL cost 8 MB over 100,000 links).
    pub location: HeaderValue,
    /// A campaign link's settings; `None` for a plain link, which the redirect path then
    /// answers without looking further.
    pub campaign: Option<Box<CampaignRules>>,
    /// Set once the link was found used up: later visits are turned away without asking the
    /// database. (An edit of the limit drops the cached link, and with it this flag.)
    pub used_up: AtomicBool,
}

/// What a campaign link asks of each visit, with its domain's defaults filled in.
#[derive(Debug, Default)]
pub struct CampaignRules {
    pub password_hash: Option<Box<str>>,
    pub limited: bool,
    pub valid_from: Option<NaiveDateTime>,
    pub fallback: Option<HeaderValue>,
    pub in_app: InAppApps,
    pub targets: Vec<(TargetRule, HeaderValue)>,
}

impl ResolvedLink {
    /// The target URL.
    pub fn target(&self) -> &str {
        // `location` was made from a `&str`, so its bytes are UTF-8.
        std::str::from_utf8(self.location.as_bytes()).unwrap_or_default()
    }

    pub fn state(&self) -> LinkState {
        LinkState::of(self.status, self.expires_at, crate::db::now())
    }
}

/// The part of a domain's settings its links inherit.
#[derive(Clone, Debug, Default)]
struct DomainDefaults {
    in_app: Option<String>,
    fallback: Option<String>,
}

type Found = Option<Arc<ResolvedLink>>;

/// What a code stands for.
#[derive(Clone)]
enum Answer {
    /// A link (or no link).
    Link(Found),
    /// A campaign recipient's own code: it redirects as the batch's link, whose code this is.
    /// The link is looked up (and cached, and dropped when it changes) under its own code, so
    /// that a change of the link reaches every recipient's code at once.
    Alias(Box<str>),
}

#[derive(Clone)]
struct Entry {
    answer: Answer,
    fetched: Instant,
}

struct Lookup {
    code: Box<str>,
    reply: oneshot::Sender<Result<Answer, ()>>,
}

#[derive(Debug, thiserror::Error)]
#[error("the link store is unreachable")]
pub struct LookupFailed;

/// What this instance has cached of each code. The services that change a link drop its entry
/// here at once; the resolver's watcher drops entries changed by other instances.
#[derive(Clone)]
pub struct LinkCache(Arc<Cache<Box<str>, Entry>>);

impl LinkCache {
    pub fn new(capacity: usize) -> Self {
        Self(Arc::new(Cache::new(capacity)))
    }

    /// Drops what this instance knows of a code, after a change made here.
    pub fn forget(&self, code: &str) {
        self.0.remove(code);
    }

    fn get(&self, code: &str) -> Option<Entry> {
        self.0.get(code)
    }

    fn insert(&self, code: Box<str>, entry: Entry) {
        self.0.insert(code, entry);
    }

    fn clear(&self) {
        self.0.clear();
    }
}

pub struct LinkResolver {
    cache: LinkCache,
    lookups: mpsc::Sender<Lookup>,
    started: Instant,
    /// Milliseconds since `started` of the last failed lookup, 0 if none.
    last_failure_ms: Arc<AtomicU64>,
    queries: Arc<AtomicU64>,
    hits: Counter,
    misses: Counter,
}

impl LinkResolver {
    /// Starts the lookup task and the change watcher on the current runtime.
    pub fn start(
        db: DatabaseConnection,
        cache: LinkCache,
        watch_every: Duration,
        default_status: RedirectStatus,
    ) -> Self {
        let db_for_watch = db.clone();
        let (sender, receiver) = mpsc::channel(QUEUE_CAPACITY);
        let started = Instant::now();
        let last_failure_ms = Arc::new(AtomicU64::new(0));
        let queries = Arc::new(AtomicU64::new(0));
        let batcher = Batcher {
            db,
            cache: cache.clone(),
            default_status,
            started,
            last_failure_ms: last_failure_ms.clone(),
            queries: queries.clone(),
        };
        tokio::spawn(batcher.run(receiver));
        tokio::spawn(watch_changes(db_for_watch, cache.clone(), watch_every));
        Self {
            cache,
            lookups: sender,
            started,
            last_failure_ms,
            queries,
            hits: Counter::default(),
            misses: Counter::default(),
        }
    }

    /// Lookups answered from the cache since start.
    pub fn hits(&self) -> u64 {
        self.hits.get()
    }

    /// Lookups that had to ask the database (batched into fewer queries).
    pub fn misses(&self) -> u64 {
        self.misses.get()
    }

    /// Database queries made for lookups since start.
    pub fn queries(&self) -> u64 {
        self.queries.load(Ordering::Relaxed)
    }

    pub async fn resolve(&self, code: &ShortCode) -> Result<Found, LookupFailed> {
        match self.answer(code.as_str()).await? {
            Answer::Link(found) => Ok(found),
            Answer::Alias(link) => match self.answer(&link).await? {
                Answer::Link(found) => Ok(found),
                Answer::Alias(_) => Ok(None),
            },
        }
    }

    async fn answer(&self, code: &str) -> Result<Answer, LookupFailed> {
        let cached = self.cache.get(code);
        if let Some(entry) = &cached
            && (entry.fetched.elapsed() < MAX_AGE || self.in_outage())
        {
            self.hits.add(1);
            return Ok(entry.answer.clone());
        }
        self.misses.add(1);
        let (reply, answer) = oneshot::channel();
        let lookup = Lookup {
            code: code.into(),
            reply,
        };
        let fresh = match self.lookups.send(lookup).await {
            Ok(()) => answer.await.unwrap_or(Err(())),
            Err(_) => Err(()),
        };
        match (fresh, cached) {
            (Ok(found), _) => Ok(found),
            (Err(()), Some(stale)) => Ok(stale.answer),
            (Err(()), None) => Err(LookupFailed),
        }
    }

    fn in_outage(&self) -> bool {
        let failed = self.last_failure_ms.load(Ordering::Relaxed);
        failed != 0
            && (self.started.elapsed().as_millis() as u64).saturating_sub(failed)
                < OUTAGE_BACKOFF.as_millis() as u64
    }
}

struct Batcher {
    db: DatabaseConnection,
    cache: LinkCache,
    default_status: RedirectStatus,
    started: Instant,
    last_failure_ms: Arc<AtomicU64>,
    queries: Arc<AtomicU64>,
}

impl Batcher {
    async fn run(self, mut receiver: mpsc::Receiver<Lookup>) {
        let this = Arc::new(self);
        let permits = Arc::new(Semaphore::new(CONCURRENT_BATCHES));
        while let Some(first) = receiver.recv().await {
            // While every permit is out, lookups pile up in the queue and the next batch
            // takes them all at once.
            let Ok(permit) = permits.clone().acquire_owned().await else {
                return;
            };
            let mut batch = vec![first];
            while batch.len() < MAX_BATCH {
                match receiver.try_recv() {
                    Ok(lookup) => batch.push(lookup),
                    Err(_) => break,
                }
            }
            let this = this.clone();
            tokio::spawn(async move {
                this.answer(batch).await;
                drop(permit);
            });
        }
    }

    async fn answer(&self, batch: Vec<Lookup>) {
        let mut waiting: HashMap<Box<str>, Vec<oneshot::Sender<Result<Answer, ()>>>> =
            HashMap::with_capacity(batch.len());
        for lookup in batch {
            waiting.entry(lookup.code).or_default().push(lookup.reply);
        }
        let codes: Vec<&str> = waiting.keys().map(AsRef::as_ref).collect();
        match self.fetch(&codes).await {
            Ok(mut found) => {
                let fetched = Instant::now();
                for (code, replies) in waiting {
                    let answer = found.remove(&*code).unwrap_or(Answer::Link(None));
                    self.cache.insert(
                        code,
                        Entry {
                            answer: answer.clone(),
                            fetched,
                        },
                    );
                    for reply in replies {
                        let _ = reply.send(Ok(answer.clone()));
                    }
                }
            }
            Err(err) => {
                tracing::warn!(error = %err, codes = codes.len(), "link lookup failed");
                let ms = (self.started.elapsed().as_millis() as u64).max(1);
                self.last_failure_ms.store(ms, Ordering::Relaxed);
                for reply in waiting.into_values().flatten() {
                    let _ = reply.send(Err(()));
                }
            }
        }
    }

    async fn fetch(&self, codes: &[&str]) -> Result<HashMap<String, Answer>, DbErr> {
        let mut found: HashMap<String, Answer> = self
            .fetch_links(codes)
            .await?
            .into_iter()
            .map(|(code, link)| (code, Answer::Link(Some(link))))
            .collect();
        let rest: Vec<&str> = codes
            .iter()
            .copied()
            .filter(|code| !found.contains_key(*code))
            .collect();
        if !rest.is_empty() {
            found.extend(self.fetch_recipients(&rest).await?);
        }
        Ok(found)
    }

    /// Codes of campaign recipients (`code` batches) among `codes`, as aliases of their
    /// batch's link.
    async fn fetch_recipients(&self, codes: &[&str]) -> Result<HashMap<String, Answer>, DbErr> {
        use sea_orm::ConnectionTrait;
        self.queries.fetch_add(1, Ordering::Relaxed);
        let backend = self.db.get_database_backend();
        let sql = format!(
            "SELECT r.token AS token, l.compression_code AS code FROM batch_recipient r \
             JOIN campaign_batch b ON b.id = r.batch_id JOIN url_map l ON l.id = b.link_id \
             WHERE r.token IN ({}) AND b.mode = 'code'",
            vec!["?"; codes.len()].join(", ")
        );
        let values = codes.iter().map(|c| sea_orm::Value::from(*c)).collect();
        let query = self
            .db
            .query_all_raw(crate::db::sql::statement(backend, &sql, values));
        let rows = tokio::time::timeout(LOOKUP_TIMEOUT, query)
            .await
            .map_err(|_| DbErr::Custom("recipient lookup timed out".into()))??;
        let mut out = HashMap::with_capacity(rows.len());
        for row in rows {
            let token: String = row.try_get("", "token")?;
            let code: String = row.try_get("", "code")?;
            out.insert(token, Answer::Alias(code.into()));
        }
        Ok(out)
    }

    async fn fetch_links(
        &self,
        codes: &[&str],
    ) -> Result<HashMap<String, Arc<ResolvedLink>>, DbErr> {
        self.queries.fetch_add(1, Ordering::Relaxed);
        let query = url_map::Entity::find()
            .filter(url_map::Column::CompressionCode.is_in(codes.iter().copied()))
            .filter(url_map::Column::Deleted.eq(false))
            .all(&self.db);
        // A stalled connection must not hold redirects: past this, cached entries answer.
        let rows = tokio::time::timeout(LOOKUP_TIMEOUT, query)
            .await
            .map_err(|_| DbErr::Custom("link lookup timed out".into()))??;
        let defaults = self.domain_defaults(&rows).await?;
        Ok(rows
            .into_iter()
            .filter_map(|row| {
                let link = self.resolved(&row, defaults.get(&row.domain_id))?;
                Some((row.compression_code.to_string(), Arc::new(link)))
            })
            .collect())
    }

    /// The in-app page and fallback of the domains of `rows` that set either.
    async fn domain_defaults(
        &self,
        rows: &[url_map::Model],
    ) -> Result<HashMap<i64, DomainDefaults>, DbErr> {
        let mut ids: Vec<i64> = rows.iter().map(|row| row.domain_id).collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        let query = domain_conf::Entity::find()
            .select_only()
            .column(domain_conf::Column::Id)
            .column(domain_conf::Column::InAppPage)
            .column(domain_conf::Column::FallbackUrl)
            .filter(domain_conf::Column::Id.is_in(ids))
            .into_tuple::<(i64, Option<String>, Option<String>)>()
            .all(&self.db);
        let found = tokio::time::timeout(LOOKUP_TIMEOUT, query)
            .await
            .map_err(|_| DbErr::Custom("domain lookup timed out".into()))??;
        Ok(found
            .into_iter()
            .filter(|(_, in_app, fallback)| in_app.is_some() || fallback.is_some())
            .map(|(id, in_app, fallback)| (id, DomainDefaults { in_app, fallback }))
            .collect())
    }

    fn resolved(
        &self,
        row: &url_map::Model,
        domain: Option<&DomainDefaults>,
    ) -> Option<ResolvedLink> {
        let location = match HeaderValue::try_from(row.long_url.as_str()) {
            Ok(value) => value,
            Err(_) => {
                tracing::error!(code = %row.compression_code, "stored target is not a valid header value");
                return None;
            }
        };
        let redirect = row.redirect().unwrap_or(self.default_status);
        Some(ResolvedLink {
            id: row.id,
            status: row.url_status,
            expires_at: row.expires_at,
            redirect,
            location,
            campaign: campaign_rules(row, domain).map(Box::new),
            used_up: AtomicBool::new(false),
        })
    }
}

/// A link's campaign settings over its domain's; `None` when the link is a plain one.
fn campaign_rules(row: &url_map::Model, domain: Option<&DomainDefaults>) -> Option<CampaignRules> {
    let header = |url: &str| HeaderValue::try_from(url).ok();
    let in_app = row
        .in_app_page
        .as_deref()
        .or(domain.and_then(|d| d.in_app.as_deref()))
        .map(InAppApps::stored)
        .unwrap_or_default();
    let fallback = row
        .fallback_url
        .as_deref()
        .or(domain.and_then(|d| d.fallback.as_deref()))
        .and_then(header);
    let targets: Vec<(TargetRule, HeaderValue)> = row
        .alt_targets
        .as_deref()
        .map(AltTargets::stored)
        .unwrap_or_default()
        .iter()
        .filter_map(|(rule, url)| Some((*rule, header(url.as_str())?)))
        .collect();
    let rules = CampaignRules {
        password_hash: row.password_hash.as_deref().map(Into::into),
        limited: row.max_visits.is_some(),
        valid_from: row.valid_from,
        fallback,
        in_app,
        targets,
    };
    let plain = rules.password_hash.is_none()
        && !rules.limited
        && rules.valid_from.is_none()
        && rules.fallback.is_none()
        && rules.in_app.is_empty()
        && rules.targets.is_empty();
    (!plain).then_some(rules)
}

/// Counts one visit of a link with a visit limit, if it has one left: one conditional
/// UPDATE, so instances and concurrent visitors together never serve more than the limit.
pub async fn take_visit(db: &DatabaseConnection, link_id: i64) -> Result<bool, DbErr> {
    use sea_orm::sea_query::{Expr, ExprTrait};
    let taken = url_map::Entity::update_many()
        .col_expr(
            url_map::Column::VisitCount,
            Expr::col(url_map::Column::VisitCount).add(1),
        )
        .filter(url_map::Column::Id.eq(link_id))
        .filter(url_map::Column::MaxVisits.is_not_null())
        .filter(Expr::col(url_map::Column::VisitCount).lt(Expr::col(url_map::Column::MaxVisits)))
        .exec(db)
        .await?;
    Ok(taken.rows_affected == 1)
}

/// Drops the cache entries of links changed since the last look, every `every`.
async fn watch_changes(db: DatabaseConnection, cache: LinkCache, every: Duration) {
    let mut ticker = tokio::time::interval(every);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let overlap = chrono::TimeDelta::from_std(OVERLAP.max(every * 2)).expect("a short duration");
    let mut seen_until: Option<NaiveDateTime> = None;
    let mut handled: HashMap<(String, NaiveDateTime), u8> = HashMap::new();
    // A bulk change (an import) clears the whole cache, twice like any change; changes up to
    // the first of those clears are then done with. Without this floor the overlap would show
    // the same import again at every look and keep the cache empty for minutes.
    let mut floor: Option<NaiveDateTime> = None;
    let mut cleared_at: Option<NaiveDateTime> = None;
    // Links inherit their domain's in-app page and fallback: a domain changed anywhere
    // (rare) starts the cache afresh.
    let mut domains_seen: Option<Option<NaiveDateTime>> = None;
    loop {
        ticker.tick().await;
        let latest_domain = domain_conf::Entity::find()
            .select_only()
            .column_as(domain_conf::Column::UpdatedAt.max(), "latest")
            .into_tuple::<Option<NaiveDateTime>>()
            .one(&db);
        if let Ok(Ok(Some(latest))) = tokio::time::timeout(LOOKUP_TIMEOUT, latest_domain).await {
            if domains_seen.is_some_and(|seen| seen != latest) {
                cache.clear();
            }
            domains_seen = Some(latest);
        }
        let looked_at = crate::db::now();
        let Some(since) = seen_until else {
            // Everything cached so far was read after this point.
            seen_until = Some(crate::db::now() - overlap);
            continue;
        };
        let changed = url_map::Entity::find()
            .select_only()
            .column(url_map::Column::CompressionCode)
            .column(url_map::Column::EditedAt)
            .filter(
                url_map::Column::EditedAt
                    .gt(floor.map_or(since - overlap, |floor| floor.max(since - overlap))),
            )
            .order_by_asc(url_map::Column::EditedAt)
            .limit(MAX_CHANGES + 1)
            .into_tuple::<(String, NaiveDateTime)>()
            .all(&db);
        let changed = match tokio::time::timeout(LOOKUP_TIMEOUT, changed).await {
            Ok(Ok(changed)) => changed,
            Ok(Err(err)) => {
                tracing::debug!(error = %err, "cannot read link changes; will ask again");
                continue;
            }
            Err(_) => continue,
        };
        if changed.len() as u64 > MAX_CHANGES {
            cache.clear();
            if let Some(first) = cleared_at.replace(looked_at) {
                floor = Some(floor.map_or(first, |floor| floor.max(first)));
            }
        } else {
            cleared_at = None;
            // Each change drops its entry twice: when first seen, and at the next look, in
            // case a lookup that started before the change cached the old answer meanwhile.
            // After that the link is cached normally again.
            for (code, at) in &changed {
                let times = handled.entry((code.clone(), *at)).or_insert(0);
                if *times < 2 {
                    cache.forget(code);
                    *times += 1;
                }
            }
        }
        let horizon = since - overlap;
        handled.retain(|(_, at), _| *at > horizon);
        if let Some((_, latest)) = changed.last() {
            seen_until = Some(since.max(*latest));
        }
    }
}
