//! Making new links: one at a time, or many in chunks.

use super::*;

pub async fn create(app: &Inklink, new: NewLink, actor: &Actor) -> Result<SavedLink, LinkError> {
    let db = &app.db;
    let domain = resolve_domain(db, new.domain.as_ref()).await?;
    check_new(&new)?;
    let digest = url_digest(new.target.as_str());
    if new.reuse
        && let Some(link) = find_reusable(db, &new.target, &digest, domain.id).await?
    {
        return Ok(SavedLink {
            link,
            domain,
            outcome: Outcome::Reused,
        });
    }
    let password_hash = match &new.campaign.password {
        Some(password) => Some(crate::services::users::hash_secret_async(password.expose()).await),
        None => None,
    };
    let draft = Draft {
        new: &new,
        digest: &digest,
        domain_id: domain.id,
        actor,
        password_hash,
    };

    let saved = if let Some(code) = &new.custom_code {
        app.codes.format().check_custom(code)?;
        match draft.insert(db, code, Strategy::Custom).await {
            Err(err) if is_unique_violation(&err) => Err(LinkError::CodeTaken(code.to_string())),
            other => Ok(other?),
        }?
    } else if new.strategy == Strategy::Hash {
        match create_hashed(app, &draft).await? {
            Hashed::New(link) => link,
            Hashed::Existing(link) => {
                return Ok(SavedLink {
                    link,
                    domain,
                    outcome: Outcome::Reused,
                });
            }
        }
    } else {
        create_sequenced(app, &draft).await?
    };
    // An unknown-code answer for this code may be cached from before it existed.
    app.link_cache.forget(&saved.compression_code);
    Ok(SavedLink {
        link: saved,
        domain,
        outcome: Outcome::Created,
    })
}

/// Links per transaction in [`create_many`]: 500 rows of url_map stay under every backend's
/// parameter limit.
const BULK_CHUNK: usize = 500;

/// Creates many links, results in input order. Plain ones (a generated sequence code, no
/// reuse) go in chunks: one transaction and three statements per chunk instead of two
/// statements and a commit per link. The rest, and any chunk the database refuses as a whole
/// (a custom code that happens to equal a generated one), go one by one through [`create`].
pub async fn create_many(
    app: &Inklink,
    items: Vec<NewLink>,
    actor: &Actor,
) -> Vec<Result<SavedLink, LinkError>> {
    let mut results: Vec<Option<Result<SavedLink, LinkError>>> =
        std::iter::repeat_with(|| None).take(items.len()).collect();
    let mut domains: HashMap<Option<String>, domain_conf::Model> = HashMap::new();
    let mut plain = Vec::new();
    for (index, new) in items.into_iter().enumerate() {
        if new.custom_code.is_some()
            || new.reuse
            || new.strategy != Strategy::Sequence
            || new.length.is_some()
            || !new.campaign.is_plain()
            || !new.tags.is_empty()
        {
            results[index] = Some(create(app, new, actor).await);
            continue;
        }
        let key = new.domain.as_ref().map(ToString::to_string);
        let domain = match domains.get(&key) {
            Some(domain) => domain.clone(),
            None => match resolve_domain(&app.db, new.domain.as_ref()).await {
                Ok(domain) => {
                    domains.insert(key, domain.clone());
                    domain
                }
                Err(err) => {
                    results[index] = Some(Err(err));
                    continue;
                }
            },
        };
        if let Err(err) = check_new(&new) {
            results[index] = Some(Err(err));
            continue;
        }
        plain.push((index, new, domain));
    }
    for chunk in plain.chunks(BULK_CHUNK) {
        match insert_chunk(app, chunk, actor).await {
            Ok(saved) => {
                for ((index, _, _), link) in chunk.iter().zip(saved) {
                    app.link_cache.forget(&link.link.compression_code);
                    results[*index] = Some(Ok(link));
                }
            }
            Err(err) => {
                tracing::debug!(error = %err, "bulk insert refused; creating this chunk one by one");
                for (index, new, _) in chunk {
                    results[*index] = Some(create(app, new.clone(), actor).await);
                }
            }
        }
    }
    results
        .into_iter()
        .map(|result| result.expect("every item has a result"))
        .collect()
}

async fn insert_chunk(
    app: &Inklink,
    chunk: &[(usize, NewLink, domain_conf::Model)],
    actor: &Actor,
) -> Result<Vec<SavedLink>, LinkError> {
    let mut codes = Vec::with_capacity(chunk.len());
    while codes.len() < chunk.len() {
        let id = app.allocator.next_id(&app.db).await?;
        if let Some(code) = app.codes.code_for_id(id)? {
            codes.push(code);
        }
    }
    let now = db::now();
    let models = chunk
        .iter()
        .zip(&codes)
        .map(|((_, new, domain), code)| url_map::ActiveModel {
            compression_code: Set(code.clone()),
            long_url: Set(new.target.to_string()),
            long_url_digest: Set(url_digest(new.target.as_str())),
            domain_id: Set(domain.id),
            description: Set(new.description.clone().filter(|d| !d.is_empty())),
            url_status: Set(LinkStatus::Active),
            redirect_status: Set(new.redirect_status.map(|s| s.code() as i16)),
            expires_at: Set(new.expires_at.map(db::to_stored)),
            strategy: Set(Strategy::Sequence),
            creator: Set(Some(actor.name().to_owned())),
            creator_kind: Set(Some(actor.kind().to_owned())),
            creator_id: Set(actor.id()),
            editor: Set(Some(actor.name().to_owned())),
            created_at: Set(now),
            edited_at: Set(now),
            deleted: Set(false),
            version: Set(1),
            ..Default::default()
        });
    let txn = db::begin_write(&app.db).await?;
    let inserted = async {
        url_map::Entity::insert_many(models).exec(&txn).await?;
        let mut stored: HashMap<String, url_map::Model> = url_map::Entity::find()
            .filter(url_map::Column::CompressionCode.is_in(codes.iter().map(ShortCode::as_str)))
            .all(&txn)
            .await?
            .into_iter()
            .map(|link| (link.compression_code.to_string(), link))
            .collect();
        let links: Vec<url_map::Model> = codes
            .iter()
            .map(|code| {
                stored
                    .remove(code.as_str())
                    .ok_or_else(|| DbErr::RecordNotFound(code.to_string()))
            })
            .collect::<Result<_, _>>()?;
        let entries = links
            .iter()
            .map(|link| Entry {
                action: "link.create",
                target_kind: "link",
                target_id: &link.compression_code,
                before: None,
                after: Some(snapshot(link)),
            })
            .collect();
        audit::record_many(&txn, actor, entries).await?;
        Ok::<_, DbErr>(links)
    }
    .await;
    let links = db::finish(txn, inserted).await?;
    Ok(chunk
        .iter()
        .zip(links)
        .map(|((_, _, domain), link)| SavedLink {
            link,
            domain: domain.clone(),
            outcome: Outcome::Created,
        })
        .collect())
}

async fn create_sequenced(app: &Inklink, draft: &Draft<'_>) -> Result<url_map::Model, LinkError> {
    let (codes, allocator) = app.sequence(draft.new.length);
    for _ in 0..SEQUENCE_ATTEMPTS {
        let id = allocator.next_id(&app.db).await?;
        let Some(code) = codes.code_for_id(id)? else {
            continue;
        };
        match draft.insert(&app.db, &code, Strategy::Sequence).await {
            // A custom code already holds this one: the next id gives another.
            Err(err) if is_unique_violation(&err) => continue,
            other => return Ok(other?),
        }
    }
    Err(LinkError::NoFreeCode)
}

enum Hashed {
    New(url_map::Model),
    Existing(url_map::Model),
}

/// The same URL on the same domain yields the same code: its first free candidate, or the
/// link that candidate already is.
async fn create_hashed(app: &Inklink, draft: &Draft<'_>) -> Result<Hashed, LinkError> {
    let (codes, _) = app.sequence(draft.new.length);
    for code in codes
        .hash_candidates(draft.new.target.as_str())
        .take(HASH_CANDIDATES)
    {
        if let Some(existing) = find_by_code(&app.db, &code).await? {
            if existing.long_url == draft.new.target.as_str()
                && existing.domain_id == draft.domain_id
                && is_live(&existing)
            {
                return Ok(Hashed::Existing(existing));
            }
            continue;
        }
        match draft.insert(&app.db, &code, Strategy::Hash).await {
            Err(err) if is_unique_violation(&err) => continue,
            other => return Ok(Hashed::New(other?)),
        }
    }
    Err(LinkError::NoFreeCode)
}

struct Draft<'a> {
    new: &'a NewLink,
    digest: &'a str,
    domain_id: i64,
    actor: &'a Actor,
    password_hash: Option<String>,
}

impl Draft<'_> {
    async fn insert(
        &self,
        db: &DatabaseConnection,
        code: &ShortCode,
        strategy: Strategy,
    ) -> Result<url_map::Model, DbErr> {
        // InnoDB may pick this transaction as a deadlock victim when many inserts race on the
        // same unique indexes.
        db::retry_rolled_back(
            async || {
                let txn = db::begin_write(db).await?;
                let inserted = self.insert_in(&txn, code, strategy).await;
                db::finish(txn, inserted).await
            },
            db::is_retryable,
        )
        .await
    }

    async fn insert_in(
        &self,
        txn: &DatabaseTransaction,
        code: &ShortCode,
        strategy: Strategy,
    ) -> Result<url_map::Model, DbErr> {
        db::code_held(txn, code.as_str()).await?;
        let now = db::now();
        let link = url_map::ActiveModel {
            compression_code: Set(code.clone()),
            long_url: Set(self.new.target.to_string()),
            long_url_digest: Set(self.digest.to_owned()),
            domain_id: Set(self.domain_id),
            description: Set(self.new.description.clone().filter(|d| !d.is_empty())),
            url_status: Set(LinkStatus::Active),
            redirect_status: Set(self.new.redirect_status.map(|s| s.code() as i16)),
            expires_at: Set(self.new.expires_at.map(db::to_stored)),
            strategy: Set(strategy),
            creator: Set(Some(self.actor.name().to_owned())),
            creator_kind: Set(Some(self.actor.kind().to_owned())),
            creator_id: Set(self.actor.id()),
            editor: Set(Some(self.actor.name().to_owned())),
            created_at: Set(now),
            edited_at: Set(now),
            deleted: Set(false),
            version: Set(1),
            password_hash: Set(self.password_hash.clone()),
            max_visits: Set(self.new.campaign.max_visits.map(VisitLimit::get)),
            valid_from: Set(self.new.campaign.valid_from.map(db::to_stored)),
            fallback_url: Set(self.new.campaign.fallback.as_ref().map(ToString::to_string)),
            in_app_page: Set(self.new.campaign.in_app.map(|apps| apps.to_string())),
            alt_targets: Set(self.new.campaign.targets.to_stored()),
            ..Default::default()
        }
        .insert(txn)
        .await?;
        crate::services::tags::set_in(txn, link.id, &self.new.tags).await?;
        audit::record(
            txn,
            self.actor,
            Entry {
                action: "link.create",
                target_kind: "link",
                target_id: &link.compression_code,
                before: None,
                after: Some(with_tags(snapshot(&link), &self.new.tags)),
            },
        )
        .await?;
        Ok(link)
    }
}
