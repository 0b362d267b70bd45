//! Who is on the other end of a request. Behind a reverse proxy the socket peer is the proxy;
//! only a proxy listed in INKLINK_TRUSTED_PROXIES is believed about the client behind it.

use actix_web::HttpRequest;
use actix_web::http::header::HeaderName;
use ipnet::IpNet;
use std::net::IpAddr;
use std::str::FromStr;

// Named once: looking a header up by a `&str` that is not a standard header's name parses the
// name and copies it to the heap, on every redirect.
const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
const X_REAL_IP: HeaderName = HeaderName::from_static("x-real-ip");
const X_FORWARDED_PROTO: HeaderName = HeaderName::from_static("x-forwarded-proto");

/// Networks whose `X-Forwarded-For`, `X-Real-IP` and `X-Forwarded-Proto` are believed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpNet>);

impl FromStr for TrustedProxies {
    type Err = String;

    /// Comma-separated CIDRs or single addresses: `127.0.0.1, 10.0.0.0/8, ::1`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        super::comma_separated(text, |part| {
            part.parse::<IpNet>()
                .or_else(|_| part.parse::<IpAddr>().map(IpNet::from))
                .map_err(|_| format!("'{part}' is not an IP address or CIDR such as 10.0.0.0/8"))
        })
        .map(Self)
    }
}

impl TrustedProxies {
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.0.iter().any(|net| net.contains(&ip))
    }

    /// The client's address: the peer itself, unless the peer is a trusted proxy, in which
    /// case the right-most address in `X-Forwarded-For` that is not a trusted proxy (the
    /// left-most entries are whatever the client chose to send), else `X-Real-IP`.
    pub fn client_ip(
        &self,
        peer: IpAddr,
        forwarded_for: Option<&str>,
        real_ip: Option<&str>,
    ) -> IpAddr {
        let peer = canonical(peer);
        if !self.contains(peer) {
            return peer;
        }
        if let Some(chain) = forwarded_for {
            let mut last = None;
            for hop in chain.rsplit(',') {
                let Some(ip) = address_of(hop) else {
                    break;
                };
                last = Some(ip);
                if !self.contains(ip) {
                    return ip;
                }
            }
            if let Some(ip) = last {
                return ip;
            }
        }
        real_ip.and_then(address_of).unwrap_or(peer)
    }

    /// Whether the client reached us over https: only a trusted proxy can say so (inklink
    /// itself serves plain HTTP).
    pub fn forwarded_https(&self, peer: IpAddr, forwarded_proto: Option<&str>) -> bool {
        self.contains(peer)
            && forwarded_proto
                .and_then(|value| value.split(',').next())
                .is_some_and(|proto| proto.trim().eq_ignore_ascii_case("https"))
    }

    pub fn client_ip_of(&self, req: &HttpRequest) -> Option<IpAddr> {
        let peer = req.peer_addr()?.ip();
        let header = |name: HeaderName| {
            req.headers()
                .get(name)
                .and_then(|value| value.to_str().ok())
        };
        Some(self.client_ip(peer, header(X_FORWARDED_FOR), header(X_REAL_IP)))
    }

    pub fn is_https(&self, req: &HttpRequest) -> bool {
        let proto = req
            .headers()
            .get(X_FORWARDED_PROTO)
            .and_then(|v| v.to_str().ok());
        req.peer_addr()
            .is_some_and(|peer| self.forwarded_https(peer.ip(), proto))
    }
}

/// One address of `X-Forwarded-For` or `X-Real-IP` as proxies write them: `1.2.3.4`,
/// `1.2.3.4:40001` (some load balancers add the client's port), `2001:db8::1`, `[2001:db8::1]`
/// or `[2001:db8::1]:4711`, possibly quoted.
fn address_of(hop: &str) -> Option<IpAddr> {
    let hop = hop.trim().trim_matches('"');
    let ip = match hop.parse::<IpAddr>() {
        Ok(ip) => ip,
        Err(_) => match hop.parse::<std::net::SocketAddr>() {
            Ok(socket) => socket.ip(),
            Err(_) => hop.strip_prefix('[')?.strip_suffix(']')?.parse().ok()?,
        },
    };
    Some(canonical(ip))
}

/// IPv4 addresses that arrive mapped into IPv6 (`::ffff:1.2.3.4`) compare as IPv4.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}
