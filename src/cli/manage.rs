//! The CLI's management commands: list and show as tables (or `--json`), and the changes the
//! admin UI makes, through the same services.

use super::{ApikeyAction, DomainAction, LinkAction, UserAction};
use crate::db::entities::domain_conf::{self, DomainStatus};
use crate::db::entities::url_map::{self, LinkState};
use crate::rules::filing::{IcpFiling, SmsTemplates};
use crate::rules::{DomainHost, KeyName, ShortCode, Username};
use crate::services::links::listing::{self, LinkFilter, Order, Paging};
use crate::services::users::UserChange;
use crate::services::{Actor, api_keys, domains, links, users};
use crate::state::Inklink;
use anyhow::{Context, anyhow, bail};
use chrono::NaiveDateTime;
use serde_json::{Value, json};

/// Rows as an aligned table under `header`, or the JSON values, one array.
fn print(json_output: bool, header: &[&str], rows: Vec<Vec<String>>, values: Vec<Value>) {
    if json_output {
        say!("{}", Value::Array(values));
        return;
    }
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        say!("{}", padded.join("  ").trim_end());
    };
    line(header.iter().map(|h| h.to_string()).collect());
    for row in rows {
        line(row);
    }
}

fn time(at: Option<NaiveDateTime>) -> String {
    at.map(|at| at.and_utc().to_rfc3339()).unwrap_or_default()
}

fn state(link: &url_map::Model) -> &'static str {
    match link.state(crate::db::now()) {
        LinkState::Live => "active",
        LinkState::Disabled => "disabled",
        LinkState::Expired => "expired",
    }
}

async fn find_domain(core: &Inklink, host: &str) -> anyhow::Result<domain_conf::Model> {
    let host = DomainHost::parse(host)?;
    domains::find_by_host(&core.db, &host)
        .await?
        .ok_or_else(|| anyhow!("there is no domain '{host}' (see inklink domain list)"))
}

pub async fn link(core: &Inklink, action: LinkAction) -> anyhow::Result<()> {
    let all = domains::by_id(&core.db).await?;
    let short_url = |link: &url_map::Model| {
        domains::effective(&all, link.domain_id)
            .map(|domain| domains::short_url(domain, &link.compression_code))
            .unwrap_or_default()
    };
    let as_json = |link: &url_map::Model| {
        json!({
            "code": link.compression_code,
            "short_url": short_url(link),
            "url": link.long_url,
            "status": state(link),
            "description": link.description,
            "redirect_status": link.redirect_status,
            "expires_at": link.expires_at.map(|at| at.and_utc().to_rfc3339()),
            "created_at": link.created_at.and_utc().to_rfc3339(),
            "creator": link.creator,
            "version": link.version,
            "password_protected": link.password_hash.is_some(),
            "max_visits": link.max_visits,
            "visits": link.visit_count,
            "valid_from": link.valid_from.map(|at| at.and_utc().to_rfc3339()),
            "fallback_url": link.fallback_url,
            "in_app_page": link.in_app_page,
            "targets": link.alt_targets.as_deref().map(|t| t.lines().collect::<Vec<_>>()),
        })
    };
    match action {
        LinkAction::List {
            search,
            status,
            tag,
            limit,
            json,
        } => {
            let filter = LinkFilter {
                text: search.as_deref().and_then(listing::text),
                status,
                tag: tag
                    .as_deref()
                    .map(crate::rules::Tag::parse)
                    .transpose()
                    .context("--tag")?,
                ..LinkFilter::default()
            };
            let found = listing::list(
                &core.db,
                &filter,
                Order::Newest,
                Paging::Before(None),
                limit,
            )
            .await?;
            let rows = found
                .iter()
                .map(|link| {
                    vec![
                        link.compression_code.to_string(),
                        short_url(link),
                        state(link).to_owned(),
                        time(Some(link.created_at)),
                        link.long_url.clone(),
                    ]
                })
                .collect();
            let values = found.iter().map(as_json).collect();
            print(
                json,
                &["CODE", "SHORT URL", "STATUS", "CREATED", "TARGET"],
                rows,
                values,
            );
        }
        LinkAction::Show { code, json } => {
            let code = ShortCode::parse(&code)?;
            let link = links::find_by_code(&core.db, &code)
                .await?
                .ok_or_else(|| anyhow!("there is no link with the code '{code}'"))?;
            if json {
                say!("{}", as_json(&link));
            } else {
                for (name, value) in [
                    ("code", link.compression_code.to_string()),
                    ("short url", short_url(&link)),
                    ("target", link.long_url.clone()),
                    ("status", state(&link).to_owned()),
                    ("description", link.description.clone().unwrap_or_default()),
                    (
                        "redirect status",
                        link.redirect()
                            .map_or_else(|| "server default".to_owned(), |s| s.to_string()),
                    ),
                    ("expires", time(link.expires_at)),
                    ("created", time(Some(link.created_at))),
                    ("creator", link.creator.clone().unwrap_or_default()),
                    ("version", link.version.to_string()),
                    (
                        "password",
                        if link.password_hash.is_some() {
                            "yes"
                        } else {
                            "no"
                        }
                        .to_owned(),
                    ),
                    (
                        "visits",
                        match link.max_visits {
                            Some(max) => format!("{} of {max}", link.visit_count),
                            None => "unlimited".to_owned(),
                        },
                    ),
                    ("valid from", time(link.valid_from)),
                    ("fallback", link.fallback_url.clone().unwrap_or_default()),
                    (
                        "in-app page",
                        link.in_app_page
                            .clone()
                            .unwrap_or_else(|| "the domain's".to_owned()),
                    ),
                    (
                        "targets",
                        link.alt_targets
                            .clone()
                            .unwrap_or_default()
                            .replace('\n', ", "),
                    ),
                ] {
                    say!("{name:<16} {value}");
                }
            }
        }
        LinkAction::Delete { code } => {
            let code = ShortCode::parse(&code)?;
            links::delete(core, &code, &Actor::Cli).await?;
            say!(
                "deleted {code} (other running instances notice within INKLINK_CACHE_TTL seconds)"
            );
        }
        _ => unreachable!("handled by the caller"),
    }
    Ok(())
}

pub async fn domain(core: &Inklink, action: DomainAction) -> anyhow::Result<()> {
    match action {
        DomainAction::List { json } => {
            let all = domains::list(&core.db).await?;
            let health = crate::services::health::all(&core.db).await?;
            let state_of = |id: i64| {
                health
                    .get(&id)
                    .map_or("unknown", |h| h.state.as_str())
                    .to_owned()
            };
            let counts = domains::link_counts(&core.db).await?;
            let host_of = |id: Option<i64>| {
                id.and_then(|id| all.iter().find(|d| d.id == id))
                    .map(|d| d.host.clone())
            };
            let rows = all
                .iter()
                .map(|d| {
                    vec![
                        d.host.clone(),
                        d.protocol.clone(),
                        match d.status {
                            DomainStatus::Active => "active".to_owned(),
                            DomainStatus::Disabled => "disabled".to_owned(),
                        },
                        if d.is_default { "yes" } else { "" }.to_owned(),
                        host_of(d.replaced_by_id).unwrap_or_default(),
                        counts.get(&d.id).copied().unwrap_or(0).to_string(),
                        state_of(d.id),
                        if d.standby { "yes" } else { "" }.to_owned(),
                        d.failover.clone(),
                    ]
                })
                .collect();
            let values = all
                .iter()
                .map(|d| {
                    json!({
                        "host": d.host,
                        "protocol": d.protocol,
                        "status": match d.status {
                            DomainStatus::Active => "active",
                            DomainStatus::Disabled => "disabled",
                        },
                        "default": d.is_default,
                        "replaced_by": host_of(d.replaced_by_id),
                        "links": counts.get(&d.id).copied().unwrap_or(0),
                        "health": health.get(&d.id).map_or_else(
                            || json!({"state": "unknown", "checked_at": null, "reason": null}),
                            |h| json!({
                                "state": h.state.as_str(),
                                "checked_at": chrono::DateTime::from_timestamp_millis(h.checked_at).map(|t| t.to_rfc3339()),
                                "reason": Some(&h.reason).filter(|r| !r.is_empty()),
                            }),
                        ),
                        "standby": d.standby,
                        "failover": d.failover,
                        "icp_filing": d.icp_filing,
                        "sms_templates": domains::templates_to_resubmit(d),
                    })
                })
                .collect();
            print(
                json,
                &[
                    "HOST",
                    "PROTOCOL",
                    "STATUS",
                    "DEFAULT",
                    "REPLACED BY",
                    "LINKS",
                    "HEALTH",
                    "STANDBY",
                    "FAILOVER",
                ],
                rows,
                values,
            );
        }
        DomainAction::Default { host } => {
            let domain = find_domain(core, &host).await?;
            domains::set_default(&core.db, domain.id, &Actor::Cli).await?;
            say!("{} is the default domain now", domain.host);
        }
        DomainAction::Disable { host } => {
            let domain = find_domain(core, &host).await?;
            domains::set_status(&core.db, domain.id, DomainStatus::Disabled, &Actor::Cli).await?;
            say!("disabled {} (its links keep redirecting)", domain.host);
        }
        DomainAction::Enable { host } => {
            let domain = find_domain(core, &host).await?;
            domains::set_status(&core.db, domain.id, DomainStatus::Active, &Actor::Cli).await?;
            say!("enabled {}", domain.host);
        }
        DomainAction::Rotate { host, to } => {
            let blocked = find_domain(core, &host).await?;
            let replacement = find_domain(core, &to).await?;
            let moved = domains::link_counts(&core.db)
                .await?
                .get(&blocked.id)
                .copied()
                .unwrap_or(0);
            domains::rotate(&core.db, blocked.id, replacement.id, &Actor::Cli).await?;
            say!(
                "{} replaces {}: {moved} links are shown with it, and {} is the default; {} keeps redirecting",
                replacement.host,
                blocked.host,
                replacement.host,
                blocked.host
            );
            let templates = domains::templates_to_resubmit(&blocked);
            if !templates.is_empty() {
                say!(
                    "submit these approved SMS templates again with {} (they contain {}):",
                    replacement.host,
                    blocked.host
                );
                for template in templates {
                    say!("  {template}");
                }
            }
        }
        DomainAction::Check { host } => {
            let domain = find_domain(core, &host).await?;
            let findings = crate::services::health::check_now(core, &domain).await;
            for finding in &findings {
                say!(
                    "{}: {}{}",
                    finding.probe,
                    match finding.outcome {
                        crate::rules::health::Outcome::Passed => "passed",
                        crate::rules::health::Outcome::Failed => "FAILED",
                        crate::rules::health::Outcome::Suspicious => "SUSPICIOUS",
                        crate::rules::health::Outcome::Unknown => "unknown",
                    },
                    match &finding.reason {
                        Some(reason) => format!(" ({reason})"),
                        None => String::new(),
                    }
                );
            }
            let (outcome, _) = crate::services::health::probe::combine(&findings);
            say!(
                "{}: {}",
                domain.host,
                match outcome {
                    crate::rules::health::Outcome::Passed => "passed",
                    crate::rules::health::Outcome::Failed => "failed",
                    crate::rules::health::Outcome::Suspicious => "suspicious",
                    crate::rules::health::Outcome::Unknown => "unknown (no probe could tell)",
                }
            );
        }
        DomainAction::Set {
            host,
            in_app_page,
            fallback,
            standby,
            failover,
            icp_filing,
            sms_templates,
        } => {
            let domain = find_domain(core, &host).await?;
            if icp_filing.is_some() || sms_templates.is_some() {
                let filing = icp_filing
                    .as_deref()
                    .map(IcpFiling::parse)
                    .transpose()
                    .context("--icp-filing")?;
                let templates = sms_templates
                    .as_deref()
                    .map(SmsTemplates::parse)
                    .transpose()
                    .context("--sms-templates")?;
                let after =
                    domains::set_filing(&core.db, domain.id, filing, templates, &Actor::Cli)
                        .await?;
                say!(
                    "{}: ICP filing {}; {} SMS templates to submit again when it is rotated away",
                    after.host,
                    after.icp_filing.as_deref().unwrap_or("none"),
                    domains::templates_to_resubmit(&after).len()
                );
                if in_app_page.is_none()
                    && fallback.is_none()
                    && standby.is_none()
                    && failover.is_none()
                {
                    return Ok(());
                }
            }
            let failover = failover
                .as_deref()
                .map(crate::rules::health::Failover::parse)
                .transpose()
                .map_err(anyhow::Error::msg)
                .context("--failover")?;
            if standby.is_some() || failover.is_some() {
                let after =
                    domains::set_failover(&core.db, domain.id, standby, failover, &Actor::Cli)
                        .await?;
                say!(
                    "{}: standby {}, fail-over {}",
                    after.host,
                    if after.standby { "yes" } else { "no" },
                    after.failover
                );
                if in_app_page.is_none() && fallback.is_none() {
                    return Ok(());
                }
            }
            let in_app = in_app_page
                .as_deref()
                .map(crate::rules::InAppApps::parse)
                .transpose()
                .context("--in-app-page")?;
            let fallback = match fallback.as_deref() {
                None => None,
                Some("none") | Some("") => Some(None),
                Some(url) => Some(Some(
                    crate::services::links::parse_target(core, url)
                        .await
                        .context("--fallback")?,
                )),
            };
            if in_app.is_none() && fallback.is_none() {
                bail!("nothing to set: give --in-app-page, --fallback, --standby or --failover");
            }
            let after =
                domains::set_link_defaults(&core.db, domain.id, in_app, fallback, &Actor::Cli)
                    .await?;
            say!(
                "{}: in-app page for {}; fallback {}",
                after.host,
                after.in_app_page.as_deref().unwrap_or("none"),
                after
                    .fallback_url
                    .as_deref()
                    .unwrap_or("none (the 410 page)")
            );
        }
        DomainAction::Add { .. } => unreachable!("handled by the caller"),
    }
    Ok(())
}

pub async fn user(core: &Inklink, action: UserAction) -> anyhow::Result<()> {
    let find = |name: String| async move {
        let name = Username::parse(&name)?;
        users::find(&core.db, &name)
            .await?
            .ok_or_else(|| anyhow!("there is no user '{name}' (see inklink user list)"))
    };
    let (user, change, done) = match action {
        UserAction::List { json } => {
            let all = users::list(&core.db).await?;
            let rows = all
                .iter()
                .map(|u| {
                    vec![
                        u.username.clone(),
                        u.role.to_string(),
                        if u.disabled { "disabled" } else { "active" }.to_owned(),
                        time(u.last_login_at),
                    ]
                })
                .collect();
            let values = all
                .iter()
                .map(|u| {
                    json!({
                        "name": u.username,
                        "role": u.role,
                        "disabled": u.disabled,
                        "last_sign_in": u.last_login_at.map(|at| at.and_utc().to_rfc3339()),
                    })
                })
                .collect();
            print(
                json,
                &["NAME", "ROLE", "STATUS", "LAST SIGN-IN"],
                rows,
                values,
            );
            return Ok(());
        }
        UserAction::LinkSso { name, subject } => {
            let name = Username::parse(&name)?;
            crate::services::sso::link(core, core.sso.as_ref(), &name, &subject, &Actor::Cli)
                .await
                .with_context(|| format!("cannot link {name}"))?;
            say!("{name} signs in through single sign-on as the subject {subject}");
            return Ok(());
        }
        UserAction::Disable { name } => (find(name).await?, UserChange::Disable, "disabled"),
        UserAction::Enable { name } => (find(name).await?, UserChange::Enable, "enabled"),
        UserAction::Role { name, role } => {
            (find(name).await?, UserChange::Role(role), "given the role")
        }
        UserAction::Add { .. } | UserAction::Passwd { .. } => unreachable!("handled by the caller"),
    };
    let changed = users::change(&core.db, user.id, change, None, &Actor::Cli)
        .await
        .with_context(|| format!("cannot change {}", user.username))?;
    match done {
        "given the role" => say!("{} is {} now", changed.username, changed.role),
        _ => say!("{done} {}", changed.username),
    }
    Ok(())
}

pub async fn apikey(core: &Inklink, action: ApikeyAction) -> anyhow::Result<()> {
    match action {
        ApikeyAction::List { json } => {
            let all = api_keys::list(&core.db).await?;
            let rows = all
                .iter()
                .map(|k| {
                    vec![
                        k.name.clone(),
                        k.role.to_string(),
                        format!("ik_{}_…", k.prefix),
                        if k.revoked { "revoked" } else { "active" }.to_owned(),
                        time(k.expires_at),
                        time(k.last_used_at),
                    ]
                })
                .collect();
            let values = all
                .iter()
                .map(|k| {
                    json!({
                        "name": k.name,
                        "role": k.role,
                        "prefix": k.prefix,
                        "revoked": k.revoked,
                        "expires_at": k.expires_at.map(|at| at.and_utc().to_rfc3339()),
                        "last_used_at": k.last_used_at.map(|at| at.and_utc().to_rfc3339()),
                    })
                })
                .collect();
            print(
                json,
                &["NAME", "ROLE", "PREFIX", "STATUS", "EXPIRES", "LAST USED"],
                rows,
                values,
            );
        }
        ApikeyAction::Revoke { name } => {
            let name = KeyName::parse(&name)?;
            let key = api_keys::list(&core.db)
                .await?
                .into_iter()
                .find(|k| k.name == name.as_str())
                .ok_or_else(|| anyhow!("there is no API key '{name}' (see inklink apikey list)"))?;
            api_keys::revoke(&core.db, key.id, &Actor::Cli).await?;
            say!("revoked {name}: requests with it are refused from now on");
        }
        ApikeyAction::Add { .. } => unreachable!("handled by the caller"),
    }
    Ok(())
}
