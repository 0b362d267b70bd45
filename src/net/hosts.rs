//! Which hosts the admin UI and the API answer on (INKLINK_ADMIN_HOSTS). Public short-link
//! hosts end up in SMS messages and chat groups; with this set, nobody probing them finds a
//! login page or an API, only redirects.

use crate::rules::host::DomainHost;
use actix_web::guard::{self, Guard, GuardContext};
use actix_web::http::header;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// The admin hosts; empty: every host. A host given without a port matches on any port.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AdminHosts(Arc<[DomainHost]>);

impl FromStr for AdminHosts {
    type Err = String;

    /// Comma-separated hosts: `admin.example.com, localhost:8080`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        super::comma_separated(text, |part| {
            DomainHost::parse(part).map_err(|err| format!("'{part}': {err}"))
        })
        .map(|hosts| Self(hosts.into()))
    }
}

impl fmt::Display for AdminHosts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, host) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{host}")?;
        }
        Ok(())
    }
}

impl AdminHosts {
    pub fn is_restricted(&self) -> bool {
        !self.0.is_empty()
    }

    /// Whether a request to `authority` (a `Host` header: host with an optional port) may
    /// reach the admin UI and the API.
    pub fn admit(&self, authority: Option<&str>) -> bool {
        if !self.is_restricted() {
            return true;
        }
        let Some(asked) = authority.and_then(|text| DomainHost::parse(text).ok()) else {
            return false;
        };
        self.0.iter().any(|admin| {
            admin.host() == asked.host()
                && admin.port().is_none_or(|port| asked.port() == Some(port))
        })
    }

    /// Whether `req` came for an admin host (by its `Host`, never a forwarded-host header).
    pub fn admit_request(&self, req: &actix_web::HttpRequest) -> bool {
        let head = req.head();
        let authority = head
            .headers()
            .get(header::HOST)
            .and_then(|value| value.to_str().ok())
            .or_else(|| head.uri.authority().map(|authority| authority.as_str()));
        self.admit(authority)
    }

    /// A guard for the admin and API scopes: on any other host their paths fall through to
    /// the redirect, which answers them as unknown codes.
    pub fn guard(&self) -> impl Guard + 'static {
        let hosts = self.clone();
        guard::fn_guard(move |ctx: &GuardContext<'_>| hosts.admit(authority(ctx)))
    }
}

/// The `Host` header, or the URI's authority (HTTP/2 sends `:authority` instead).
fn authority<'a>(ctx: &'a GuardContext<'_>) -> Option<&'a str> {
    let head = ctx.head();
    head.headers()
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .or_else(|| head.uri.authority().map(|authority| authority.as_str()))
}
