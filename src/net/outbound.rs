//! Requests inklink itself sends (webhooks, and later checkers): bounded in time and size,
//! never following a redirect, and never reaching a private, loopback or link-local network
//! unless allowed (SSRF). The address is checked where the connection is made, after the
//! name is resolved, so that a name resolving to an internal address (or re-resolving to one
//! after a first check) is refused as well as an address written in the URL.

use actix_tls::connect::{Resolve, Resolver};
use futures_util::future::LocalBoxFuture;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

/// The most of an answer's body read (a receiver answering more costs no more).
pub const MAX_ANSWER: usize = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, crate::i18n::Says)]
pub enum OutboundError {
    #[error("{0} is on an internal network; inklink does not send there")]
    Internal(String),
    #[error("no answer within {0} s")]
    Timeout(u64),
    #[error("the name {0} does not resolve")]
    NotResolved(String),
    #[error("cannot connect to {0}")]
    Connect(String),
    #[error("the request to {0} failed")]
    Failed(String),
}

/// Whether `ip` is on a network a stranger's URL must not reach: loopback, private (RFC 1918,
/// unique local), link-local, carrier-grade NAT, unspecified, multicast, broadcast, the
/// documentation and benchmarking ranges, or an IPv4 address wrapped in IPv6.
pub fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => internal_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return internal_v4(v4);
            }
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00 // unique local
                || (first & 0xffc0) == 0xfe80 // link-local
                || (first & 0xffc0) == 0xfec0 // site-local (deprecated)
                || first == 0x2001 && v6.segments()[1] == 0x0db8 // documentation
                || first == 0x0064 && v6.segments()[1] == 0xff9b // NAT64
                || v6.segments()[..6] == [0; 6] // IPv4-compatible
        }
    }
}

fn internal_v4(ip: Ipv4Addr) -> bool {
    let [a, b, _, _] = ip.octets();
    ip.is_private()
        || ip.is_loopback()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b)) // carrier-grade NAT
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || a >= 240
}

/// Refuses a URL whose host is an internal address written as one (names are checked when
/// resolved, see [`Outbound`]).
pub fn check_host(url: &url::Url, allow_internal: bool) -> Result<(), OutboundError> {
    let ip = match url.host() {
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip),
        _ => return Ok(()),
    };
    if !allow_internal && is_internal(ip) {
        return Err(OutboundError::Internal(ip.to_string()));
    }
    Ok(())
}

/// Resolves names with the system's resolver and keeps only the addresses allowed.
struct Guarded {
    allow_internal: bool,
}

impl Resolve for Guarded {
    fn lookup<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> LocalBoxFuture<'a, Result<Vec<SocketAddr>, Box<dyn std::error::Error>>> {
        Box::pin(async move {
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host, port)).await?.collect();
            let allowed: Vec<SocketAddr> = found
                .iter()
                .copied()
                .filter(|addr| self.allow_internal || !is_internal(addr.ip()))
                .collect();
            if allowed.is_empty() && !found.is_empty() {
                return Err(Box::new(OutboundError::Internal(host.to_owned())) as _);
            }
            Ok(allowed)
        })
    }
}

/// What a receiver answered: its status and the first [`MAX_ANSWER`] bytes of its body.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
}

/// A client for one thread (the actix client is not `Send`).
pub struct Outbound {
    client: awc::Client,
    allow_internal: bool,
    timeout: Duration,
}

impl Outbound {
    pub fn new(allow_internal: bool, timeout: Duration) -> Self {
        // The TLS library needs its cryptography chosen once per process; a second call (a
        // second server in the tests) finds it chosen.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let connector = awc::Connector::new()
            .connector(
                actix_tls::connect::Connector::new(Resolver::custom(Guarded { allow_internal }))
                    .service(),
            )
            .timeout(timeout)
            .limit(64);
        let client = awc::Client::builder()
            .connector(connector)
            .timeout(timeout)
            .disable_redirects()
            .add_default_header(("user-agent", concat!("inklink/", env!("CARGO_PKG_VERSION"))))
            .finish();
        Self {
            client,
            allow_internal,
            timeout,
        }
    }

    /// POSTs `body` as JSON with `headers`; the whole exchange, the answer's body included,
    /// within the timeout.
    pub async fn post_json(
        &self,
        url: &url::Url,
        headers: &[(&str, String)],
        body: Vec<u8>,
    ) -> Result<Answer, OutboundError> {
        self.post(url, "application/json", headers, body).await
    }

    /// POSTs `body` of `content_type` with `headers`, within the timeout.
    pub async fn post(
        &self,
        url: &url::Url,
        content_type: &str,
        headers: &[(&str, String)],
        body: Vec<u8>,
    ) -> Result<Answer, OutboundError> {
        check_host(url, self.allow_internal)?;
        let mut request = self
            .client
            .post(url.as_str())
            .insert_header(("content-type", content_type));
        for (name, value) in headers {
            request = request.insert_header((*name, value.as_str()));
        }
        self.exchange(url, request.send_body(body)).await
    }

    /// GETs `url`, within the timeout.
    pub async fn get(&self, url: &url::Url) -> Result<Answer, OutboundError> {
        check_host(url, self.allow_internal)?;
        let request = self.client.get(url.as_str());
        self.exchange(url, request.send()).await
    }

    async fn exchange<S>(
        &self,
        url: &url::Url,
        sent: impl std::future::Future<
            Output = Result<awc::ClientResponse<S>, awc::error::SendRequestError>,
        >,
    ) -> Result<Answer, OutboundError>
    where
        S: futures_util::Stream<Item = Result<actix_web::web::Bytes, awc::error::PayloadError>>
            + Unpin,
    {
        let exchange = async {
            let mut response = sent
                .await
                .map_err(|err| describe(err, url, self.timeout.as_secs()))?;
            let status = response.status().as_u16();
            // An answer longer than the limit is cut, not refused: its status decides.
            let mut bytes = Vec::new();
            use futures_util::StreamExt;
            while let Some(chunk) = response.next().await {
                let Ok(chunk) = chunk else { break };
                bytes.extend_from_slice(&chunk[..chunk.len().min(MAX_ANSWER - bytes.len())]);
                if bytes.len() >= MAX_ANSWER {
                    break;
                }
            }
            Ok(Answer {
                status,
                body: bytes,
            })
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .unwrap_or(Err(OutboundError::Timeout(self.timeout.as_secs())))
    }
}

/// What went wrong, in words that name the host (what the system said goes to the log: it
/// is in English whatever the reader's language).
fn describe(err: awc::error::SendRequestError, url: &url::Url, timeout: u64) -> OutboundError {
    use awc::error::{ConnectError, SendRequestError};
    let host = url.host_str().unwrap_or("").to_owned();
    tracing::debug!(error = %err, %host, "an outbound request failed");
    match err {
        SendRequestError::Timeout => OutboundError::Timeout(timeout),
        SendRequestError::Connect(ConnectError::Resolver(cause)) => {
            match cause.downcast_ref::<OutboundError>() {
                Some(internal) => internal.clone(),
                None => OutboundError::NotResolved(host),
            }
        }
        SendRequestError::Connect(ConnectError::NoRecords) => OutboundError::NotResolved(host),
        SendRequestError::Connect(ConnectError::Timeout) => OutboundError::Timeout(timeout),
        SendRequestError::Connect(_) => OutboundError::Connect(host),
        _ => OutboundError::Failed(host),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_networks_are_known() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
        ] {
            assert!(is_internal(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["93.184.216.34", "2606:4700::1111", "1.1.1.1"] {
            assert!(!is_internal(ip.parse().unwrap()), "{ip}");
        }
    }
}
