//! The probes a domain is checked with, each behind [`Probe`]: reachability (the domain
//! answers inklink's `/healthz`), its certificate's expiry (https domains), its in-app traffic
//! (WeChat and QQ visitors vanishing), and an external checking service (what says a domain is
//! blocked in WeChat or QQ). A probe that cannot tell says so: that is never "blocked".

use crate::clickstore::traffic::{HostTraffic, in_app_by_host};
use crate::config::Settings;
use crate::db::entities::domain_conf;
use crate::i18n::{Message, Says};
use crate::net::outbound::{Outbound, OutboundError};
use crate::rules::health::Outcome;
use std::time::Duration;

/// What one probe found about one domain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub probe: &'static str,
    pub outcome: Outcome,
    /// Why, as a person reads it (hosts and URLs in it are data); none when there is nothing
    /// to say.
    pub reason: Option<Message>,
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
        let failed = |reason: Message| Finding {
            probe: "reachability",
            outcome: Outcome::Failed,
            reason: Some(reason),
        };
        let Ok(url) = url::Url::parse(&format!("{}healthz", address(domain))) else {
            return failed(Message::new(t!("{} is not a valid address")).data("", &domain.host));
        };
        match self.client.get(&url).await {
            Err(err) => failed(err.says()),
            Ok(answer) if answer.status != 200 => failed(
                Message::new(t!("{} answered {} instead of inklink's health check"))
                    .data("", &domain.host)
                    .data("", answer.status),
            ),
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
                        reason: None,
                    },
                    _ => failed(
                        Message::new(t!("{} is not answered by inklink")).data("", &domain.host),
                    ),
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
        let unknown = |reason: Message| Finding {
            probe: "checker",
            outcome: Outcome::Unknown,
            reason: Some(reason),
        };
        let encoded: String =
            url::form_urlencoded::byte_serialize(address(domain).as_bytes()).collect();
        let host: String = url::form_urlencoded::byte_serialize(domain.host.as_bytes()).collect();
        let asked = self
            .template
            .replace("{url}", &encoded)
            .replace("{host}", &host);
        let Ok(url) = url::Url::parse(&asked) else {
            return unknown(Message::new(t!("the checker URL is not valid")));
        };
        let answer = match self.client.get(&url).await {
            Ok(answer) => answer,
            Err(OutboundError::Timeout(secs)) => {
                return unknown(
                    Message::new(t!("the checker gave no answer within {secs} s"))
                        .data("secs", secs),
                );
            }
            Err(err) => {
                return unknown(
                    Message::new(t!("the checker cannot be asked: {err}"))
                        .message("err", err.says()),
                );
            }
        };
        if !(200..300).contains(&answer.status) {
            return unknown(Message::new(t!("the checker answered {}")).data("", answer.status));
        }
        let json: Option<serde_json::Value> = serde_json::from_slice(&answer.body).ok();
        match json.as_ref().and_then(|j| j.pointer(&self.pointer)) {
            Some(serde_json::Value::Bool(true)) => Finding {
                probe: "checker",
                outcome: Outcome::Failed,
                reason: Some(
                    Message::new(t!("the checker says {} is blocked")).data("", &domain.host),
                ),
            },
            Some(serde_json::Value::Bool(false)) => Finding {
                probe: "checker",
                outcome: Outcome::Passed,
                reason: None,
            },
            _ => unknown(
                Message::new(t!("the checker's answer has no true or false at {}"))
                    .data("", &self.pointer),
            ),
        }
    }
}

/// A certificate expiring within this many days is a warning.
pub const CERTIFICATE_WARNING_DAYS: i64 = 14;

/// The certificate an https domain presents: expired fails, expiring within
/// [`CERTIFICATE_WARNING_DAYS`] passes with a warning as its reason.
pub struct Certificate {
    timeout: Duration,
}

impl Probe for Certificate {
    async fn check(&self, domain: &domain_conf::Model) -> Finding {
        let finding = |outcome, reason| Finding {
            probe: "certificate",
            outcome,
            reason,
        };
        let (host, port) = match domain.host.rsplit_once(':') {
            Some((host, port)) => match port.parse::<u16>() {
                Ok(port) => (host.to_owned(), port),
                Err(_) => (domain.host.clone(), 443),
            },
            None => (domain.host.clone(), 443),
        };
        let timeout = self.timeout;
        let read = tokio::task::spawn_blocking(move || {
            crate::net::certificate::presented(&host, port, timeout)
        });
        // The look-up of the name, the connection and the handshake: each within the timeout
        // (the look-up can only be given up on, not stopped: it ends on its own, off the
        // workers).
        let der = match tokio::time::timeout(timeout * 3, read).await {
            Ok(Ok(Ok(der))) => der,
            Ok(Ok(Err(err))) => {
                return finding(
                    Outcome::Unknown,
                    Some(
                        Message::new(t!("cannot read the certificate: {err}"))
                            .message("err", err.says()),
                    ),
                );
            }
            Ok(Err(_)) | Err(_) => {
                return finding(
                    Outcome::Unknown,
                    Some(Message::new(t!("cannot read the certificate"))),
                );
            }
        };
        let Some(not_after) = crate::rules::x509::not_after(&der) else {
            return finding(
                Outcome::Unknown,
                Some(Message::new(t!("the certificate's expiry cannot be read"))),
            );
        };
        let date = chrono::DateTime::from_timestamp(not_after, 0)
            .map(|at| at.format("%Y-%m-%d").to_string())
            .unwrap_or_default();
        let left = not_after - chrono::Utc::now().timestamp();
        // Whole days left, rounded up: a certificate made today for 5 days expires "in 5 days".
        let days = (left + 86_399).div_euclid(86_400);
        if left < 0 {
            finding(
                Outcome::Failed,
                Some(
                    Message::new(t!("the certificate of {host} expired on {date}"))
                        .data("host", &domain.host)
                        .data("date", &date),
                ),
            )
        } else if days <= CERTIFICATE_WARNING_DAYS {
            finding(
                Outcome::Passed,
                Some(
                    Message::new(t!(
                        "the certificate of {host} expires in {days} days ({date}): renew it"
                    ))
                    .data("host", &domain.host)
                    .data("days", days)
                    .data("date", &date),
                ),
            )
        } else {
            finding(Outcome::Passed, None)
        }
    }
}

/// In-app visits a domain must have had in the window before (or now, for the "open in
/// browser" sign) for a change to mean anything: fewer, and the end of a small campaign
/// would look like a block.
pub const TRAFFIC_BASELINE: i64 = 20;
/// The newest clicks the traffic probe reads, at most.
const TRAFFIC_SAMPLE: u64 = 200_000;

/// The traffic probe: a domain whose WeChat and QQ visitors vanish for the window while
/// another domain still gets them, or all stop at the "open in browser" page when they used
/// to go through, is suspicious (suspect at most: a sign, not a proof).
pub struct Traffic {
    db: sea_orm::DatabaseConnection,
    window: Duration,
    /// One read serves every domain of a round.
    read: tokio::sync::Mutex<Option<(std::time::Instant, Vec<HostTraffic>)>>,
}

impl Traffic {
    async fn traffic(&self) -> Result<Vec<HostTraffic>, sea_orm::DbErr> {
        let mut read = self.read.lock().await;
        if let Some((at, traffic)) = read.as_ref()
            && at.elapsed() < Duration::from_secs(5)
        {
            return Ok(traffic.clone());
        }
        let now = chrono::Utc::now().timestamp_micros();
        let window = self.window.as_micros() as i64;
        let traffic =
            in_app_by_host(&self.db, now - 2 * window, now - window, TRAFFIC_SAMPLE).await?;
        *read = Some((std::time::Instant::now(), traffic.clone()));
        Ok(traffic)
    }
}

/// What the in-app traffic of `host` says, among every host's.
pub fn judge_traffic(host: &str, window: Duration, traffic: &[HostTraffic]) -> Finding {
    let finding = |outcome, reason| Finding {
        probe: "traffic",
        outcome,
        reason,
    };
    let same = |other: &str| other.trim_end_matches('.').eq_ignore_ascii_case(host);
    let of = |latest: bool| {
        traffic
            .iter()
            .filter(|t| t.latest == latest && same(&t.host))
            .fold((0, 0), |(v, s), t| (v + t.visits, s + t.stopped))
    };
    let (before, before_stopped) = of(false);
    let (latest, latest_stopped) = of(true);
    let minutes = (window.as_secs() / 60).max(1);
    let elsewhere = traffic
        .iter()
        .filter(|t| t.latest && !same(&t.host) && t.visits > t.stopped)
        .max_by_key(|t| t.visits);
    if before >= TRAFFIC_BASELINE
        && latest == 0
        && let Some(other) = elsewhere
    {
        return finding(
            Outcome::Suspicious,
            Some(
                Message::new(t!(
                    "no visits from WeChat or QQ for {minutes} min while {other} still gets them"
                ))
                .data("minutes", minutes)
                .data("other", &other.host),
            ),
        );
    }
    if latest >= TRAFFIC_BASELINE && latest_stopped == latest && before > before_stopped {
        return finding(
            Outcome::Suspicious,
            Some(
                Message::new(t!(
                    "every visitor from WeChat or QQ in the last {minutes} min stopped at the \"open in browser\" page"
                ))
                .data("minutes", minutes),
            ),
        );
    }
    match before + latest {
        0 => finding(Outcome::Unknown, None),
        _ => finding(Outcome::Passed, None),
    }
}

impl Probe for Traffic {
    async fn check(&self, domain: &domain_conf::Model) -> Finding {
        match self.traffic().await {
            Ok(traffic) => judge_traffic(&domain.host, self.window, &traffic),
            Err(err) => {
                tracing::warn!(error = %err, "cannot read in-app traffic");
                Finding {
                    probe: "traffic",
                    outcome: Outcome::Unknown,
                    reason: None,
                }
            }
        }
    }
}

/// Every probe configured.
pub struct Probes {
    reachability: Option<Reachability>,
    certificate: Option<Certificate>,
    checker: Option<Checker>,
    traffic: Option<Traffic>,
}

impl Probes {
    pub fn new(settings: &Settings, db: &sea_orm::DatabaseConnection) -> Self {
        let timeout = Duration::from_secs(settings.domain_checker_timeout);
        Self {
            traffic: (settings.domain_traffic_window > 0).then(|| Traffic {
                db: db.clone(),
                window: Duration::from_secs(settings.domain_traffic_window),
                read: Default::default(),
            }),
            reachability: settings.domain_check_reachability.then(|| Reachability {
                client: Outbound::new(true, timeout),
            }),
            certificate: settings
                .domain_check_reachability
                .then_some(Certificate { timeout }),
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
        if let Some(probe) = self
            .certificate
            .as_ref()
            .filter(|_| domain.protocol == "https")
        {
            findings.push(probe.check(domain).await);
        }
        if let Some(probe) = &self.checker {
            findings.push(probe.check(domain).await);
        }
        // No in-app traffic to judge by says nothing: it is left out.
        if let Some(probe) = &self.traffic {
            let finding = probe.check(domain).await;
            if finding.outcome != Outcome::Unknown {
                findings.push(finding);
            }
        }
        findings
    }

    pub fn any(&self) -> bool {
        self.reachability.is_some() || self.checker.is_some() || self.traffic.is_some()
    }
}

/// One check's outcome from its findings: failed when a probe failed (with its reason),
/// passed when one passed and none failed, unknown when none could tell.
pub fn combine(findings: &[Finding]) -> (Outcome, Option<Message>) {
    if let Some(failed) = findings.iter().find(|f| f.outcome == Outcome::Failed) {
        return (Outcome::Failed, failed.reason.clone());
    }
    if let Some(sign) = findings.iter().find(|f| f.outcome == Outcome::Suspicious) {
        return (Outcome::Suspicious, sign.reason.clone());
    }
    if findings.iter().any(|f| f.outcome == Outcome::Passed) {
        // A passed check keeps a reason to show: what could not be told, else a warning
        // (a certificate about to expire).
        let note = findings
            .iter()
            .find(|f| f.outcome == Outcome::Unknown)
            .or_else(|| findings.iter().find(|f| f.reason.is_some()));
        return (Outcome::Passed, note.and_then(|f| f.reason.clone()));
    }
    let reason = match findings.first() {
        Some(first) => first.reason.clone(),
        None => Some(Message::new(t!("no probe is configured"))),
    };
    (Outcome::Unknown, reason)
}
