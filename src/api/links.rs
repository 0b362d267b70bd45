//! `/api/v1/links`: shorten (one or a batch), restore, list, edit, revoke, and daily stats.

use super::auth::ApiCaller;
use super::body::{parse_json, read_body};
use super::error::{ApiError, ErrorBody, ErrorCode};
use super::link_input::{alt_targets, fallback, in_app, new_link, password, tag_list};
use super::model::{
    AltTarget, BatchRequest, BatchResponse, BatchResult, BulkRequest, BulkResult, CreateLink, Link,
    LinkPage, LinkState, ListQuery, PatchLink, SetState, StatusFilter,
};
use crate::db::entities::domain_conf;
use crate::db::entities::url_map::{self, LinkStatus};
use crate::rules::{AltTargets, DomainHost, InAppApps, OwnHost, ShortCode, Tag};
use crate::services::domains;
use crate::services::links::listing::{self, LinkFilter, Order, Paging};
use crate::services::links::{self, CampaignEdit, LinkChanges, LinkEdit, NewLink, Outcome};
use crate::state::AppState;
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError, web};
use chrono::{DateTime, TimeZone, Utc};
use std::collections::HashMap;

/// One link's JSON is small; a batch of 1,000 with long URLs is not.
const BODY_LIMIT: usize = 256 * 1024;
const BATCH_BODY_LIMIT: usize = 16 * 1024 * 1024;
pub const MAX_BATCH: usize = 1000;
const MAX_PAGE: u64 = 10_000_000;

type Domains = HashMap<i64, domain_conf::Model>;
/// The tags of the links shown, by link id.
pub type Tags = HashMap<i64, Vec<String>>;

/// The tags of `ids`, for [`view`].
pub async fn tags_for(state: &AppState, ids: &[i64]) -> Result<Tags, ApiError> {
    Ok(crate::services::tags::tags_of(&state.core.db, ids).await?)
}

async fn all_domains(state: &AppState) -> Result<Domains, ApiError> {
    Ok(domains::by_id(&state.core.db).await?)
}

/// Every domain by id, for [`view`].
pub async fn all_domains_of(state: &AppState) -> Result<Domains, ApiError> {
    all_domains(state).await
}

fn utc(at: chrono::NaiveDateTime) -> DateTime<Utc> {
    Utc.from_utc_datetime(&at)
}

pub fn view(link: &url_map::Model, domains: &Domains, tags: &Tags, state: &AppState) -> Link {
    let made_for = domains.get(&link.domain_id);
    let shown_on = domains::effective(domains, link.domain_id);
    let status = match link.state(crate::db::now()) {
        url_map::LinkState::Live => LinkState::Active,
        url_map::LinkState::Disabled => LinkState::Disabled,
        url_map::LinkState::Expired => LinkState::Expired,
    };
    Link {
        code: link.compression_code.to_string(),
        short_url: shown_on
            .map(|d| domains::short_url(d, &link.compression_code))
            .unwrap_or_default(),
        url: link.long_url.clone(),
        domain: made_for.map(|d| d.host.clone()).unwrap_or_default(),
        status,
        redirect_status: link
            .redirect()
            .unwrap_or(state.core.settings.redirect_status)
            .code(),
        description: link.description.clone(),
        created_at: utc(link.created_at),
        expires_at: link.expires_at.map(utc),
        version: link.version,
        tags: tags.get(&link.id).cloned().unwrap_or_default(),
        password_protected: link.password_hash.is_some(),
        max_visits: link.max_visits,
        visits: link.visit_count,
        valid_from: link.valid_from.map(utc),
        fallback_url: link.fallback_url.clone(),
        in_app_page: link.in_app_page.as_deref().map(|text| {
            InAppApps::stored(text)
                .apps()
                .map(|app| app.key().to_owned())
                .collect()
        }),
        targets: link
            .alt_targets
            .as_deref()
            .map(AltTargets::stored)
            .unwrap_or_default()
            .iter()
            .map(|(rule, url)| AltTarget {
                rule: rule.as_str().to_owned(),
                url: url.to_string(),
            })
            .collect(),
    }
}

async fn target(state: &AppState, url: &str) -> Result<crate::rules::TargetUrl, ApiError> {
    Ok(links::parse_target(&state.core, url).await?)
}

async fn url_rules_hosts(state: &AppState) -> Result<Vec<OwnHost>, ApiError> {
    Ok(domains::own_hosts(&state.core.db).await?)
}

fn created_status(saved: &links::SavedLink) -> StatusCode {
    match saved.outcome {
        Outcome::Created => StatusCode::CREATED,
        Outcome::Reused => StatusCode::OK,
    }
}

/// Shorten a URL.
#[utoipa::path(
    post,
    path = "/api/v1/links",
    tag = "links",
    request_body = CreateLink,
    responses(
        (status = 201, description = "Created", body = Link),
        (status = 200, description = "`reuse` found an existing active link for this URL and domain", body = Link),
        (status = 400, description = "Malformed JSON or a malformed value", body = ErrorBody),
        (status = 401, description = "Missing, unknown, expired or revoked key", body = ErrorBody),
        (status = 409, description = "The custom code is taken", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 422, description = "A value breaks a rule (URL, code, domain, expiry)", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn create(
    caller: ApiCaller,
    state: web::Data<AppState>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let input: CreateLink = parse_json(&read_body(payload, BODY_LIMIT).await?)?;
    let own_hosts = url_rules_hosts(&state).await?;
    let new = new_link(input, &links::url_rules(&state.core, &own_hosts))?;
    let saved = links::create(&state.core, new, &caller.actor()).await?;
    let domains = all_domains(&state).await?;
    let tags = tags_for(&state, &[saved.link.id]).await?;
    Ok(
        HttpResponse::build(created_status(&saved)).json(view(
            &saved.link,
            &domains,
            &tags,
            &state,
        )),
    )
}

/// Shorten up to 1,000 URLs; each item succeeds or fails on its own.
#[utoipa::path(
    post,
    path = "/api/v1/links/batch",
    tag = "links",
    request_body = BatchRequest,
    responses(
        (status = 200, description = "One result per item, in input order", body = BatchResponse),
        (status = 400, description = "Malformed JSON, or not 1 to 1,000 items", body = ErrorBody),
        (status = 401, description = "Missing, unknown, expired or revoked key", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn batch(
    caller: ApiCaller,
    state: web::Data<AppState>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let request: BatchRequest = parse_json(&read_body(payload, BATCH_BODY_LIMIT).await?)?;
    if request.items.is_empty() || request.items.len() > MAX_BATCH {
        return Err(ApiError::bad(
            format!(
                "a batch has 1 to {MAX_BATCH} items; this one has {}",
                request.items.len()
            ),
            Some("items"),
        ));
    }
    // An item that is not even shaped like a link is a malformed request; items that are
    // well-formed but break a rule (a bad URL, a taken code) fail alone.
    let inputs = request
        .items
        .into_iter()
        .enumerate()
        .map(|(index, item)| {
            super::body::from_value::<CreateLink>(item, &format!("items[{index}]"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let own_hosts = url_rules_hosts(&state).await?;
    let rules = links::url_rules(&state.core, &own_hosts);
    let checked: Vec<Result<NewLink, ApiError>> = inputs
        .into_iter()
        .map(|input| new_link(input, &rules))
        .collect();
    let valid: Vec<NewLink> = checked
        .iter()
        .filter_map(|c| c.as_ref().ok().cloned())
        .collect();
    let created = links::create_many(&state.core, valid, &caller.actor()).await;
    let ids: Vec<i64> = created
        .iter()
        .filter_map(|saved| saved.as_ref().ok().map(|saved| saved.link.id))
        .collect();
    let tags = tags_for(&state, &ids).await?;
    let mut created = created.into_iter();
    let domains = all_domains(&state).await?;
    let mut results = Vec::with_capacity(checked.len());
    for (index, checked) in checked.into_iter().enumerate() {
        let outcome = checked.and_then(|_| {
            created
                .next()
                .expect("a result per valid item")
                .map_err(ApiError::from)
        });
        results.push(match outcome {
            Ok(saved) => BatchResult {
                index,
                status: created_status(&saved).as_u16(),
                link: Some(view(&saved.link, &domains, &tags, &state)),
                error: None,
            },
            Err(err) => {
                if let ApiError::Unavailable(db) = &err {
                    tracing::error!(error = %db, "batch item failed on the database");
                }
                BatchResult {
                    index,
                    status: err.status_code().as_u16(),
                    link: None,
                    error: Some(err.detail()),
                }
            }
        });
    }
    Ok(HttpResponse::Ok().json(BatchResponse { results }))
}

pub async fn find(state: &AppState, code: &str) -> Result<url_map::Model, ApiError> {
    let not_found = || ApiError::NotFound(format!("there is no link with the code '{code}'"));
    let code = ShortCode::to_find(code).map_err(|_| not_found())?;
    links::find_by_code(&state.core.db, &code)
        .await?
        .ok_or_else(not_found)
}

/// Restore a short code: the link behind it.
#[utoipa::path(
    get,
    path = "/api/v1/links/{code}",
    tag = "links",
    params(("code" = String, Path, description = "The short code")),
    responses(
        (status = 200, description = "The link", body = Link),
        (status = 401, description = "Missing, unknown, expired or revoked key", body = ErrorBody),
        (status = 404, description = "No such code", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn get(
    _caller: ApiCaller,
    state: web::Data<AppState>,
    code: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let link = find(&state, &code).await?;
    let domains = all_domains(&state).await?;
    let tags = tags_for(&state, &[link.id]).await?;
    Ok(HttpResponse::Ok().json(view(&link, &domains, &tags, &state)))
}

/// List links, newest first, with the total count.
#[utoipa::path(
    get,
    path = "/api/v1/links",
    tag = "links",
    params(ListQuery),
    responses(
        (status = 200, description = "A page of links", body = LinkPage),
        (status = 400, description = "A malformed parameter", body = ErrorBody),
        (status = 401, description = "Missing, unknown, expired or revoked key", body = ErrorBody),
        (status = 422, description = "Unknown domain, or a page size out of range", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn list(
    _caller: ApiCaller,
    state: web::Data<AppState>,
    query: web::Query<ListQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = query.page.unwrap_or(1);
    let per_page = query.per_page.unwrap_or(20);
    if !(1..=MAX_PAGE).contains(&page) {
        return Err(ApiError::bad(
            format!("page is 1 to {MAX_PAGE}"),
            Some("page"),
        ));
    }
    if !(1..=100).contains(&per_page) {
        return Err(ApiError::bad("per_page is 1 to 100", Some("per_page")));
    }
    let domains = all_domains(&state).await?;
    let filter = link_filter(
        &domains,
        query.q.as_deref(),
        query.status,
        query.domain.as_deref(),
        query.tag.as_deref(),
        None,
    )?;
    let total = listing::count(&state.core.db, &filter).await?;
    let offset = (page - 1).saturating_mul(per_page);
    let rows = listing::list(
        &state.core.db,
        &filter,
        Order::Newest,
        Paging::Offset(offset),
        per_page,
    )
    .await?;
    let ids: Vec<i64> = rows.iter().map(|link| link.id).collect();
    let tags = tags_for(&state, &ids).await?;
    Ok(HttpResponse::Ok().json(LinkPage {
        items: rows
            .iter()
            .map(|l| view(l, &domains, &tags, &state))
            .collect(),
        total,
        page,
        per_page,
    }))
}

/// Change a link; send the `version` you read (409 when it changed meanwhile).
#[utoipa::path(
    patch,
    path = "/api/v1/links/{code}",
    tag = "links",
    params(("code" = String, Path, description = "The short code")),
    request_body = PatchLink,
    responses(
        (status = 200, description = "The changed link", body = Link),
        (status = 400, description = "Malformed JSON or a malformed value", body = ErrorBody),
        (status = 401, description = "Missing, unknown, expired or revoked key", body = ErrorBody),
        (status = 403, description = "An operator key changing a link another key or person created", body = ErrorBody),
        (status = 404, description = "No such code", body = ErrorBody),
        (status = 409, description = "The link changed since `version`", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 422, description = "A value breaks a rule", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn update(
    caller: ApiCaller,
    state: web::Data<AppState>,
    code: web::Path<String>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let patch: PatchLink = parse_json(&read_body(payload, BODY_LIMIT).await?)?;
    let link = find(&state, &code).await?;
    links::may_change(&caller.actor(), &link)?;
    if patch.version != link.version {
        return Err(ApiError::Conflict {
            code: ErrorCode::StaleVersion,
            message: format!(
                "the link is at version {}, not {}; read it again and make your change on that",
                link.version, patch.version
            ),
        });
    }
    let short = link.compression_code.clone();
    let content_changes = patch.url.is_some()
        || patch.description.is_some()
        || patch.expires_at.is_some()
        || patch.redirect_status.is_some();
    let changes = match content_changes {
        false => None,
        true => Some(LinkChanges {
            target: match &patch.url {
                Some(url) => target(&state, url).await?,
                None => target(&state, &link.long_url).await?,
            },
            description: match patch.description {
                Some(value) => value,
                None => link.description.clone(),
            },
            expires_at: match &patch.expires_at {
                Some(Some(at)) => Some(at.0),
                Some(None) => None,
                None => link.expires_at.map(utc),
            },
            redirect_status: match patch.redirect_status {
                Some(Some(code)) => Some(code.0),
                Some(None) => None,
                None => link.redirect(),
            },
        }),
    };
    let status = patch.status.map(|status| match status {
        SetState::Active => LinkStatus::Active,
        SetState::Disabled => LinkStatus::Disabled,
    });
    let own_hosts = url_rules_hosts(&state).await?;
    let rules = links::url_rules(&state.core, &own_hosts);
    let campaign = CampaignEdit {
        password: patch
            .password
            .as_ref()
            .map(|value| value.as_deref().map(password).transpose())
            .transpose()?,
        max_visits: patch.max_visits.map(|value| value.map(|count| count.0)),
        valid_from: patch.valid_from.map(|value| value.map(|at| at.0)),
        fallback: patch
            .fallback_url
            .as_ref()
            .map(|value| {
                value
                    .as_deref()
                    .map(|url| fallback(url, &rules))
                    .transpose()
            })
            .transpose()?,
        in_app: patch
            .in_app_page
            .as_ref()
            .map(|value| value.as_deref().map(in_app).transpose())
            .transpose()?,
        targets: patch
            .targets
            .as_deref()
            .map(|targets| alt_targets(targets, &rules))
            .transpose()?,
    };
    let edit = LinkEdit {
        changes,
        status,
        campaign,
        tags: patch.tags.as_deref().map(tag_list).transpose()?,
    };
    let current = links::edit(
        &state.core,
        &short,
        Some(link.version),
        edit,
        &caller.actor(),
    )
    .await?;
    let domains = all_domains(&state).await?;
    let tags = tags_for(&state, &[current.id]).await?;
    Ok(HttpResponse::Ok().json(view(&current, &domains, &tags, &state)))
}

/// Revoke a link: it is disabled at once and answers 410 from then on.
#[utoipa::path(
    delete,
    path = "/api/v1/links/{code}",
    tag = "links",
    params(("code" = String, Path, description = "The short code")),
    responses(
        (status = 200, description = "The revoked (disabled) link", body = Link),
        (status = 401, description = "Missing, unknown, expired or revoked key", body = ErrorBody),
        (status = 403, description = "An operator key revoking a link another key or person created", body = ErrorBody),
        (status = 404, description = "No such code", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn revoke(
    caller: ApiCaller,
    state: web::Data<AppState>,
    code: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let link = find(&state, &code).await?;
    links::may_change(&caller.actor(), &link)?;
    let short = link.compression_code.clone();
    let link = match link.url_status {
        LinkStatus::Disabled => link,
        LinkStatus::Active => {
            links::set_status(&state.core, &short, LinkStatus::Disabled, &caller.actor()).await?
        }
    };
    let domains = all_domains(&state).await?;
    let tags = tags_for(&state, &[link.id]).await?;
    Ok(HttpResponse::Ok().json(view(&link, &domains, &tags, &state)))
}

/// The list filter of `GET /links` and of a bulk action's `filter` (whose mistakes are
/// reported on `field`, else on the parameter itself).
fn link_filter(
    domains: &Domains,
    q: Option<&str>,
    status: Option<StatusFilter>,
    domain: Option<&str>,
    tag: Option<&str>,
    field: Option<&str>,
) -> Result<LinkFilter, ApiError> {
    fn given(value: Option<&str>) -> Option<&str> {
        value.map(str::trim).filter(|v| !v.is_empty())
    }
    let domain_id = match given(domain) {
        None => None,
        Some(host) => {
            let host = DomainHost::parse(host).map_err(|err| {
                ApiError::invalid(
                    ErrorCode::UnknownDomain,
                    err.to_string(),
                    field.unwrap_or("domain"),
                )
            })?;
            Some(
                domains
                    .values()
                    .find(|d| d.host == host.to_string())
                    .map(|d| d.id)
                    .ok_or_else(|| {
                        ApiError::invalid(
                            ErrorCode::UnknownDomain,
                            format!("there is no domain '{host}'"),
                            field.unwrap_or("domain"),
                        )
                    })?,
            )
        }
    };
    let tag = match given(tag) {
        None => None,
        Some(tag) => Some(Tag::parse(tag).map_err(|err| {
            ApiError::invalid(
                ErrorCode::InvalidValue,
                err.to_string(),
                field.unwrap_or("tag"),
            )
        })?),
    };
    Ok(LinkFilter {
        text: q.and_then(listing::text),
        status,
        domain_id,
        tag,
        ..LinkFilter::default()
    })
}

/// Disable, enable, tag, untag or delete many links: by code, or every link a filter matches.
#[utoipa::path(
    post,
    path = "/api/v1/links/bulk",
    tag = "links",
    request_body = BulkRequest,
    responses(
        (status = 200, description = "What was changed", body = BulkResult),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Missing, unknown, expired or revoked key", body = ErrorBody),
        (status = 422, description = "Neither or both of codes and filter, a bad code or tag, no tags for tag/untag, or more than 10,000 links", body = ErrorBody),
        (status = 429, description = "Over the key's rate limit", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn bulk(
    caller: ApiCaller,
    state: web::Data<AppState>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    use super::model::BulkActionName;
    use crate::services::links::many::{self, BulkAction, BulkError, Selection};
    let request: BulkRequest = parse_json(&read_body(payload, BATCH_BODY_LIMIT).await?)?;
    let tags = tag_list(request.tags.as_deref().unwrap_or_default())?;
    let needs_tags = matches!(request.action, BulkActionName::Tag | BulkActionName::Untag);
    if needs_tags && tags.is_empty() {
        return Err(ApiError::invalid(
            ErrorCode::InvalidValue,
            "tag and untag need the tags to add or remove",
            "tags",
        ));
    }
    let action = match request.action {
        BulkActionName::Disable => BulkAction::Disable,
        BulkActionName::Enable => BulkAction::Enable,
        BulkActionName::Tag => BulkAction::Tag(tags),
        BulkActionName::Untag => BulkAction::Untag(tags),
        BulkActionName::Delete => BulkAction::Delete,
    };
    let selection = match (request.codes, request.filter) {
        (Some(codes), None) => Selection::Codes(
            codes
                .iter()
                .map(|code| {
                    ShortCode::parse(code).map_err(|err| {
                        ApiError::invalid(ErrorCode::InvalidCode, err.to_string(), "codes")
                    })
                })
                .collect::<Result<_, _>>()?,
        ),
        (None, Some(filter)) => Selection::Filter(link_filter(
            &all_domains(&state).await?,
            filter.q.as_deref(),
            filter.status,
            filter.domain.as_deref(),
            filter.tag.as_deref(),
            Some("filter"),
        )?),
        _ => {
            return Err(ApiError::invalid(
                ErrorCode::InvalidValue,
                "give either codes or a filter (not both)",
                "codes",
            ));
        }
    };
    let outcome = many::apply(&state.core, &selection, &action, &caller.actor())
        .await
        .map_err(|err| match err {
            BulkError::Db(err) => ApiError::Unavailable(err),
            err @ BulkError::TooMany(_) => {
                ApiError::invalid(ErrorCode::InvalidValue, err.to_string(), "codes")
            }
        })?;
    Ok(HttpResponse::Ok().json(BulkResult {
        matched: outcome.matched,
        changed: outcome.changed,
        refused: outcome.refused,
        missing: outcome.missing,
    }))
}
