//! Creating a batch: its link, then its recipients a chunk at a time (a file of a million rows
//! is never held whole), each valid row with a token of its own, each bad row reported.

use super::{
    BatchError, FileError, MAX_LISTED_REJECTIONS, MAX_NAME_CHARS, MAX_RECIPIENTS,
    MAX_VARIABLE_BYTES, Mode, RowError, Template,
};
use crate::db;
use crate::db::entities::{campaign_batch, domain_conf, url_map};
use crate::db::sql::statement;
use crate::rules::codes::permutation::Permutation;
use crate::rules::codes::{CodeFormat, ShortCode};
use crate::rules::sms::{self, CountRule};
use crate::rules::{CodeLength, Phone};
use crate::services::audit::{self, Actor, Entry};
use crate::services::domains;
use crate::services::links::{self, NewLink};
use crate::state::Inklink;
use sea_orm::sea_query::Value;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, QueryFilter,
    QuerySelect, Set,
};
use serde_json::json;
use std::collections::{HashMap, HashSet};

/// Recipients written per transaction.
const CHUNK: usize = 5_000;

/// The link a batch's recipients are sent to.
#[derive(Clone, Debug)]
pub enum LinkChoice {
    New(Box<NewLink>),
    Existing(ShortCode),
}

/// A batch to create, parsed at the edge.
#[derive(Clone, Debug)]
pub struct BatchSpec {
    pub name: String,
    pub link: LinkChoice,
    pub mode: Mode,
    pub token_length: u8,
    pub template: Template,
    pub rule: CountRule,
}

impl BatchSpec {
    /// Checks what depends on nothing but the spec: the name and the token length (`None`: the
    /// mode's default).
    pub fn new(
        name: &str,
        link: LinkChoice,
        mode: Mode,
        token_length: Option<u8>,
        template: Template,
        rule: CountRule,
    ) -> Result<Self, BatchError> {
        let name = name.trim();
        if name.is_empty() {
            return Err(BatchError::NoName);
        }
        let chars = name.chars().count();
        if chars > MAX_NAME_CHARS {
            return Err(BatchError::NameTooLong(chars));
        }
        let (lengths, default) = mode.lengths();
        let token_length = token_length.unwrap_or(default);
        if !lengths.contains(&token_length) {
            return Err(BatchError::TokenLength {
                mode: mode.as_str(),
                min: *lengths.start(),
                max: *lengths.end(),
            });
        }
        Ok(Self {
            name: name.chars().filter(|c| !c.is_control()).collect(),
            link,
            mode,
            token_length,
            template,
            rule,
        })
    }
}

/// A batch's fields as a person or a program gives them (the recipients apart): every front
/// end reads them here.
#[derive(Clone, Debug, Default, serde::Deserialize)]
pub struct BatchFields {
    pub name: String,
    /// A new link's target (or `code`).
    pub url: Option<String>,
    /// An existing link's code (or `url`).
    pub code: Option<String>,
    /// `code` (default) or `param`.
    pub mode: Option<String>,
    pub length: Option<u8>,
    pub template: String,
    /// How segments are counted: `china` (default) or `standard`.
    pub rule: Option<String>,
}

impl BatchFields {
    /// A length typed into a form: empty is the mode's default.
    pub fn length_of(text: &str) -> Result<Option<u8>, BatchError> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(None);
        }
        text.parse::<u8>()
            .map(Some)
            .map_err(|_| BatchError::TokenLength {
                mode: "code",
                min: 4,
                max: 12,
            })
    }

    /// The spec these fields give, or their first mistake.
    pub async fn parse(&self, app: &Inklink) -> Result<BatchSpec, BatchError> {
        let mode = match self
            .mode
            .as_deref()
            .map(str::trim)
            .filter(|m| !m.is_empty())
        {
            None => Mode::Code,
            Some(text) => {
                Mode::parse(text).ok_or_else(|| BatchError::UnknownMode(text.to_owned()))?
            }
        };
        let given = |v: &Option<String>| {
            v.as_deref()
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        let link = match (given(&self.url), given(&self.code)) {
            (Some(url), None) => {
                let target = links::parse_target(app, &url).await?;
                LinkChoice::New(Box::new(NewLink::to(target)))
            }
            (None, Some(code)) => LinkChoice::Existing(
                ShortCode::to_find(&code).map_err(|err| BatchError::Link(err.into()))?,
            ),
            _ => return Err(BatchError::LinkChoice),
        };
        let rule = match given(&self.rule) {
            None => CountRule::China,
            Some(text) => CountRule::parse(&text).ok_or(BatchError::UnknownRule(text))?,
        };
        BatchSpec::new(
            &self.name,
            link,
            mode,
            self.length,
            Template::parse(&self.template)?,
            rule,
        )
    }
}

/// One recipient as given: the row it came from (a file's line, or a list's index), the phone
/// number as written, and the values of its variables.
#[derive(Clone, Debug)]
pub struct RecipientRow {
    pub row: usize,
    pub phone: String,
    pub values: HashMap<String, String>,
}

/// A recipient, or the row it should have been and why it could not be read.
pub type RowResult = Result<RecipientRow, (usize, RowError)>;

/// A row that was turned away, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    pub row: usize,
    pub error: crate::i18n::Message,
}

#[derive(Debug)]
pub struct Created {
    pub batch: campaign_batch::Model,
    /// The first [`MAX_LISTED_REJECTIONS`] rejected rows.
    pub rejected: Vec<Rejected>,
}

/// Creates a batch from `rows` (each a recipient, or a row that could not be read); `columns`
/// are the variables the recipients have. Bad rows are reported and the others added.
pub async fn create(
    app: &Inklink,
    spec: BatchSpec,
    columns: &[String],
    rows: impl Iterator<Item = RowResult>,
    actor: &Actor,
) -> Result<Created, BatchError> {
    if let Some(missing) = spec
        .template
        .variables()
        .iter()
        .find(|v| !columns.contains(v))
    {
        return Err(BatchError::MissingVariable(missing.clone()));
    }
    let link = match &spec.link {
        LinkChoice::New(new) => links::create(app, (**new).clone(), actor).await?.link,
        LinkChoice::Existing(code) => {
            let link = links::find_by_code(&app.db, code)
                .await?
                .ok_or_else(|| links::LinkError::NotFound(code.to_string()))?;
            links::may_change(actor, &link)?;
            link
        }
    };
    let domains: HashMap<i64, domain_conf::Model> = domain_conf::Entity::find()
        .all(&app.db)
        .await?
        .into_iter()
        .map(|d| (d.id, d))
        .collect();
    let domain = domains::effective(&domains, link.domain_id)
        .cloned()
        .ok_or_else(|| links::LinkError::NotFound(link.compression_code.to_string()))?;
    let batch = campaign_batch::ActiveModel {
        name: Set(spec.name.clone()),
        link_id: Set(link.id),
        mode: Set(spec.mode.as_str().to_owned()),
        token_length: Set(i16::from(spec.token_length)),
        template: Set(spec.template.as_str().to_owned()),
        variables: Set(json!(spec.template.variables()).to_string()),
        count_rule: Set(spec.rule.as_str().to_owned()),
        secret: Set(crate::services::secret::random_hex(32)),
        creator: Set(Some(actor.name().to_owned())),
        creator_kind: Set(Some(actor.kind().to_owned())),
        creator_id: Set(actor.id()),
        created_at: Set(db::now()),
        recipients: Set(0),
        rejected: Set(0),
        max_segments: Set(0),
        grown_segments: Set(0),
        ready: Set(false),
        purged_at: Set(None),
        ..Default::default()
    }
    .insert(&app.db)
    .await?;
    let mut filler = Filler {
        app,
        spec: &spec,
        batch: &batch,
        link: &link,
        domain: &domain,
        seen: HashMap::new(),
        numbered: 0,
        rejected: Vec::new(),
        rejected_count: 0,
        max_segments: 0,
        grown: 0,
        base_segments: 0,
    };
    filler.base_segments = sms::count(
        &spec.template.render(&filler.url_for("x"), &HashMap::new()),
        spec.rule,
    )
    .segments;
    match filler.fill(rows).await {
        Ok(()) => {}
        Err(err) => {
            // Nothing half-made is left behind.
            if let Err(cleanup) = delete_rows(&app.db, batch.id).await {
                tracing::warn!(error = %cleanup, batch = batch.id, "could not remove a failed batch");
            }
            return Err(err);
        }
    }
    if filler.numbered == 0 {
        delete_rows(&app.db, batch.id).await?;
        return Err(match filler.rejected.first() {
            Some(first) => FileError::NoUsableRow {
                row: first.row,
                error: first.error.clone(),
            }
            .into(),
            None => BatchError::NoRecipients,
        });
    }
    let (numbered, rejected, max_segments, grown) = (
        filler.numbered,
        filler.rejected_count,
        filler.max_segments,
        filler.grown,
    );
    let listed = std::mem::take(&mut filler.rejected);
    let txn = db::begin_write(&app.db).await?;
    let done = async {
        let mut model: campaign_batch::ActiveModel = batch.clone().into();
        model.recipients = Set(numbered as i64);
        model.rejected = Set(rejected as i64);
        model.max_segments = Set(max_segments as i32);
        model.grown_segments = Set(grown as i64);
        model.ready = Set(true);
        let batch = model.update(&txn).await?;
        audit::record(
            &txn,
            actor,
            Entry {
                action: "batch.create",
                target_kind: "batch",
                target_id: &batch.id.to_string(),
                before: None,
                after: Some(json!({
                    "name": batch.name, "link": link.compression_code.as_str(),
                    "mode": batch.mode, "recipients": numbered, "rejected": rejected,
                })),
            },
        )
        .await?;
        Ok::<_, sea_orm::DbErr>(batch)
    }
    .await;
    let batch = db::finish(txn, done).await?;
    if numbered >= FRESH_STATISTICS {
        refresh_statistics(&app.db).await;
    }
    Ok(Created {
        batch,
        rejected: listed,
    })
}

/// Recipients from which a new batch makes the planner's statistics of the recipients' table
/// stale enough to matter.
const FRESH_STATISTICS: usize = 10_000;

/// Has PostgreSQL and MariaDB sample the recipients' table again. A table that has just grown
/// by a large batch still looks small to their planners until autovacuum or InnoDB's own
/// recount runs, minutes later, and with that estimate they read a receipt's recipient by
/// scanning the whole batch (`batch_id` alone) instead of seeking its number or phone: ten
/// thousand receipts took seconds instead of a fraction of one. SQLite's planner needs no
/// statistics for these lookups. A failure only costs speed, so it is logged, not returned.
async fn refresh_statistics(db: &sea_orm::DatabaseConnection) {
    let sql = match db.get_database_backend() {
        DbBackend::Postgres => "ANALYZE batch_recipient",
        DbBackend::MySql => "ANALYZE TABLE batch_recipient",
        _ => return,
    };
    if let Err(err) = db.execute_unprepared(sql).await {
        tracing::warn!(error = %err, "could not refresh the recipients' table statistics");
    }
}

/// Deletes a batch and everything it has.
pub(super) async fn delete_rows(
    db: &sea_orm::DatabaseConnection,
    id: i64,
) -> Result<(), sea_orm::DbErr> {
    let backend = db.get_database_backend();
    for table in ["batch_recipient", "batch_tally"] {
        let sql = format!("DELETE FROM {table} WHERE batch_id = ?");
        db.execute_raw(statement(backend, &sql, vec![id.into()]))
            .await?;
    }
    campaign_batch::Entity::delete_by_id(id).exec(db).await?;
    Ok(())
}

struct Filler<'a> {
    app: &'a Inklink,
    spec: &'a BatchSpec,
    batch: &'a campaign_batch::Model,
    link: &'a url_map::Model,
    domain: &'a domain_conf::Model,
    /// Phone (as a number) → the row it was first given in.
    seen: HashMap<u64, u32>,
    numbered: usize,
    rejected: Vec<super::Rejected>,
    rejected_count: usize,
    max_segments: usize,
    grown: usize,
    /// Segments of the message with the link and no variables.
    base_segments: usize,
}

/// A recipient ready to be written.
struct Accepted {
    phone: Phone,
    values: HashMap<String, String>,
}

impl Filler<'_> {
    fn url_for(&self, token: &str) -> String {
        match self.spec.mode {
            Mode::Code => domains::short_url(self.domain, token),
            Mode::Param => format!(
                "{}?{}={token}",
                domains::short_url(self.domain, &self.link.compression_code),
                crate::stats::funnel::RECIPIENT_PARAM
            ),
        }
    }

    fn reject(&mut self, row: usize, error: crate::i18n::Message) {
        self.rejected_count += 1;
        if self.rejected.len() < MAX_LISTED_REJECTIONS {
            self.rejected.push(Rejected { row, error });
        }
    }

    async fn fill(&mut self, rows: impl Iterator<Item = RowResult>) -> Result<(), BatchError> {
        let mut chunk: Vec<Accepted> = Vec::with_capacity(CHUNK);
        for row in rows {
            match self.check(row) {
                Ok(accepted) => chunk.push(accepted),
                Err((row, err)) => self.reject(row, crate::i18n::Says::says(&err)),
            }
            if chunk.len() == CHUNK {
                self.write(std::mem::take(&mut chunk)).await?;
            }
        }
        if !chunk.is_empty() {
            self.write(chunk).await?;
        }
        Ok(())
    }

    fn check(&mut self, row: RowResult) -> Result<Accepted, (usize, RowError)> {
        let row = row?;
        let at = row.row;
        if self.seen.len() >= MAX_RECIPIENTS {
            return Err((at, RowError::BatchFull));
        }
        let phone = Phone::parse(&row.phone, self.app.settings.phone_country)
            .map_err(|err| (at, err.into()))?;
        // Only the variables the message uses are kept: nothing more of a person is stored.
        let values: HashMap<String, String> = self
            .spec
            .template
            .variables()
            .iter()
            .filter_map(|name| {
                let value = row.values.get(name)?;
                let value: String = value.chars().filter(|c| !c.is_control()).collect();
                Some((name.clone(), value.trim().to_owned()))
            })
            .collect();
        let bytes: usize = values.values().map(String::len).sum();
        if bytes > MAX_VARIABLE_BYTES {
            return Err((at, RowError::VariablesTooLong(bytes)));
        }
        let digits: u64 = phone.as_str()[1..].parse().expect("E.164 digits");
        if let Some(first) = self.seen.get(&digits) {
            return Err((at, RowError::Duplicate(phone.masked(), *first as usize)));
        }
        self.seen
            .insert(digits, u32::try_from(at).unwrap_or(u32::MAX));
        Ok(Accepted { phone, values })
    }

    async fn write(&mut self, chunk: Vec<Accepted>) -> Result<(), BatchError> {
        let tokens = self.tokens(chunk.len()).await?;
        let backend = self.app.db.get_database_backend();
        let first = self.numbered;
        for (accepted, token) in chunk.iter().zip(&tokens) {
            let text = self
                .spec
                .template
                .render(&self.url_for(token), &accepted.values);
            let segments = sms::count(&text, self.spec.rule).segments;
            self.max_segments = self.max_segments.max(segments);
            self.grown += usize::from(segments > self.base_segments);
        }
        let txn = db::begin_write(&self.app.db).await?;
        let written = async {
            for (i, rows) in chunk.chunks(500).enumerate() {
                let sql = format!(
                    "INSERT INTO batch_recipient (batch_id, number, token, phone, vars) VALUES {}",
                    vec!["(?, ?, ?, ?, ?)"; rows.len()].join(", ")
                );
                let mut values = Vec::with_capacity(rows.len() * 5);
                for (j, accepted) in rows.iter().enumerate() {
                    let n = i * 500 + j;
                    values.extend([
                        Value::from(self.batch.id),
                        Value::from((first + n + 1) as i32),
                        Value::from(tokens[n].as_str()),
                        Value::from(accepted.phone.as_str()),
                        Value::from(
                            (!accepted.values.is_empty())
                                .then(|| json!(accepted.values).to_string()),
                        ),
                    ]);
                }
                txn.execute_raw(statement(backend, &sql, values)).await?;
            }
            Ok::<_, sea_orm::DbErr>(())
        }
        .await;
        db::finish(txn, written).await?;
        self.numbered += chunk.len();
        Ok(())
    }

    /// `count` new tokens: codes no link or other recipient has (`code` mode), or parameters
    /// no other recipient of this link has (`param` mode).
    async fn tokens(&self, count: usize) -> Result<Vec<String>, BatchError> {
        let length = self.spec.token_length;
        match self.spec.mode {
            Mode::Param => {
                let format = CodeFormat::new(length, false);
                let name = format!("batch_param_{}_{length}", self.link.id);
                let range =
                    crate::db::allocator::take_range(&self.app.db, &name, count as i64).await?;
                if range.end as u128 > format.space() {
                    return Err(BatchError::TokensUsedUp(length));
                }
                let permutation = Permutation::new(format.space(), self.app.param_key);
                Ok(range
                    .map(|n| format.encode(permutation.permute(n as u128)))
                    .collect())
            }
            Mode::Code => {
                let length =
                    CodeLength::new(u64::from(length)).map_err(|_| BatchError::TokenLength {
                        mode: "code",
                        min: 4,
                        max: 12,
                    })?;
                let (codes, allocator) = self.app.sequence(Some(length));
                let mut out: Vec<String> = Vec::with_capacity(count);
                while out.len() < count {
                    let want = count - out.len();
                    let range = allocator.take_many(&self.app.db, want as i64).await?;
                    let mut fresh: Vec<String> = Vec::with_capacity(want);
                    for id in range {
                        if let Some(code) = codes.code_for_id(id as u64)? {
                            fresh.push(code.to_string());
                        }
                    }
                    // A custom (or hashed) link may hold a code of the sequence already.
                    let mut taken: HashSet<String> = HashSet::new();
                    for part in fresh.chunks(500) {
                        let found: Vec<String> = url_map::Entity::find()
                            .select_only()
                            .column(url_map::Column::CompressionCode)
                            .filter(
                                url_map::Column::CompressionCode
                                    .is_in(part.iter().map(String::as_str)),
                            )
                            .into_tuple()
                            .all(&self.app.db)
                            .await?;
                        taken.extend(found);
                    }
                    out.extend(fresh.into_iter().filter(|code| !taken.contains(code)));
                }
                Ok(out)
            }
        }
    }
}
