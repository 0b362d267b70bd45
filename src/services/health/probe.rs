//! The probes a domain is checked with, each behind [`Probe`]: reachability (the domain
//! answers inklink's `/healthz`) and an external checking service (what says a domain is
//! blocked in WeChat or QQ). A probe that cannot tell says so: that is never "blocked".

use crate::config::Settings;
use crate::db::entities::domain_conf;
use crate::net::outbound::{Outbound, OutboundError};
use crate::rules::health::Outcome;
use std::time::Duration;

/// What one probe found about one domain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub probe: &'static str,
    pub outcome: Outcome,
    /// Why (English, to be translated; hosts and URLs in it are data).
    pub reason: String,
}

/// One way of checking a domain.
#[allow(async_fn_in_trait)]
pub trait Probe {
    async fn check(&self, domain: &domain_conf::Model) -> Finding;
}

/// The domain's address: `https://host/` (or `http://`).
pub fn address(domain: &domain_conf::Model) -> String {
    format!("{}://{}/", domain.protocol, domain.host)
}

/// GET `/healthz` on the domain: a 200 with inklink's `{"status": "ok"}` passes. Our own
/// domains may be on internal addresses (a test, an intranet), so this client may reach them.
pub struct Reachability {
    client: Outbound,
}

impl Probe for Reachability {
    async fn check(&self, domain: &domain_conf::Model) -> Finding {
        let failed = |reason: String| Finding {
            probe: "reachability",
            outcome: Outcome::Failed,
            reason,
        };
        let Ok(url) = url::Url::parse(&format!("{}healthz", address(domain))) else {
            return failed(format!("{} is not a valid address", domain.host));
        };
        match self.client.get(&url).await {
            Err(err) => failed(err.to_string()),
            Ok(answer) if answer.status != 200 => failed(format!(
                "{} answered {} instead of inklink's health check",
                domain.host, answer.status
            )),
            Ok(answer) => {
                let json: Option<serde_json::Value> = serde_json::from_slice(&answer.body).ok();
                match json
                    .as_ref()
                    .and_then(|j| j.get("status"))
                    .and_then(|s| s.as_str())
                {
                    Some("ok") => Finding {
                        probe: "reachability",
                        outcome: Outcome::Passed,
                        reason: String::new(),
                    },
                    _ => failed(format!("{} is not answered by inklink", domain.host)),
                }
            }
        }
    }
}

/// The external checker: its URL template with `{url}` (the domain's address, encoded) or
/// `{host}`, and the JSON pointer of its answer that says blocked.
pub struct Checker {
    client: Outbound,
    template: String,
    pointer: String,
}

impl Probe for Checker {
    async fn check(&self, domain: &domain_conf::Model) -> Finding {
        let unknown = |reason: String| Finding {
            probe: "checker",
            outcome: Outcome::Unknown,
            reason,
        };
        let encoded: String =
            url::form_urlencoded::byte_serialize(address(domain).as_bytes()).collect();
        let host: String = url::form_urlencoded::byte_serialize(domain.host.as_bytes()).collect();
        let asked = self
            .template
            .replace("{url}", &encoded)
            .replace("{host}", &host);
        let Ok(url) = url::Url::parse(&asked) else {
            return unknown("the checker URL is not valid".into());
        };
        let answer = match self.client.get(&url).await {
            Ok(answer) => answer,
            Err(OutboundError::Timeout(secs)) => {
                return unknown(format!("the checker gave no answer within {secs} s"));
            }
            Err(err) => return unknown(format!("the checker cannot be asked: {err}")),
        };
        if !(200..300).contains(&answer.status) {
            return unknown(format!("the checker answered {}", answer.status));
        }
        let json: Option<serde_json::Value> = serde_json::from_slice(&answer.body).ok();
        match json.as_ref().and_then(|j| j.pointer(&self.pointer)) {
            Some(serde_json::Value::Bool(true)) => Finding {
                probe: "checker",
                outcome: Outcome::Failed,
                reason: format!("the checker says {} is blocked", domain.host),
            },
            Some(serde_json::Value::Bool(false)) => Finding {
                probe: "checker",
                outcome: Outcome::Passed,
                reason: String::new(),
            },
            _ => unknown(format!(
                "the checker's answer has no true or false at {}",
                self.pointer
            )),
        }
    }
}

/// Every probe configured.
pub struct Probes {
    reachability: Option<Reachability>,
    checker: Option<Checker>,
}

impl Probes {
    pub fn new(settings: &Settings) -> Self {
        let timeout = Duration::from_secs(settings.domain_checker_timeout);
        Self {
            reachability: settings.domain_check_reachability.then(|| Reachability {
                client: Outbound::new(true, timeout),
            }),
            checker: settings
                .domain_checker_url
                .as_ref()
                .map(|template| Checker {
                    client: Outbound::new(settings.webhook_allow_private, timeout),
                    template: template.clone(),
                    pointer: settings.domain_checker_blocked.clone(),
                }),
        }
    }

    /// What every probe finds about `domain`.
    pub async fn check(&self, domain: &domain_conf::Model) -> Vec<Finding> {
        let mut findings = Vec::new();
        if let Some(probe) = &self.reachability {
            findings.push(probe.check(domain).await);
        }
        if let Some(probe) = &self.checker {
            findings.push(probe.check(domain).await);
        }
        findings
    }

    pub fn any(&self) -> bool {
        self.reachability.is_some() || self.checker.is_some()
    }
}

/// One check's outcome from its findings: failed when a probe failed (with its reason),
/// passed when one passed and none failed, unknown when none could tell.
pub fn combine(findings: &[Finding]) -> (Outcome, String) {
    if let Some(failed) = findings.iter().find(|f| f.outcome == Outcome::Failed) {
        return (Outcome::Failed, failed.reason.clone());
    }
    if findings.iter().any(|f| f.outcome == Outcome::Passed) {
        let unknown = findings.iter().find(|f| f.outcome == Outcome::Unknown);
        return (
            Outcome::Passed,
            unknown.map(|f| f.reason.clone()).unwrap_or_default(),
        );
    }
    let reason = findings
        .first()
        .map_or_else(|| "no probe is configured".to_owned(), |f| f.reason.clone());
    (Outcome::Unknown, reason)
}
