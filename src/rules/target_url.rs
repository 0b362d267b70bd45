//! The URLs a short link may point at.

use std::fmt;
use url::Url;

pub const DEFAULT_MAX_URL_LENGTH: usize = 4096;

/// One of this service's own hosts; a target there would loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnHost {
    pub host: String,
    /// `None`: every port of the host is ours.
    pub port: Option<u16>,
}

#[derive(Clone, Debug)]
pub struct UrlRules<'a> {
    pub max_length: usize,
    pub own_hosts: &'a [OwnHost],
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, crate::i18n::Says)]
pub enum TargetUrlError {
    #[error("the URL is empty")]
    Empty,
    #[error("the URL is {length} bytes long; the limit is {max} bytes")]
    TooLong { length: usize, max: usize },
    #[error(
        "the URL contains a control character (a line break, tab or similar) at character {position}; remove it"
    )]
    ControlCharacter { position: usize },
    #[error(
        "'{0}' is not an absolute URL; it must start with http:// or https:// (for example https://{0})"
    )]
    Relative(String),
    #[error("the scheme '{0}:' is not allowed; only http and https URLs can be shortened")]
    Scheme(String),
    #[error("the URL has no host name")]
    NoHost,
    #[error("the URL's host is not valid: {0}")]
    InvalidHost(HostFault),
    #[error("the URL's port is not a number from 1 to 65535")]
    InvalidPort,
    #[error("the URL contains a user name or password; remove the credentials before the '@'")]
    Credentials,
    #[error(
        "the URL points at {0}, one of this service's own domains; a short link there would redirect in a loop"
    )]
    OwnDomain(String),
    /// What the URL parser refused for no reason above (a URL of gigabytes).
    #[error("the URL could not be read")]
    Malformed,
}

/// What is wrong with a URL's host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error, crate::i18n::Says)]
pub enum HostFault {
    #[error("it has an empty label (two dots in a row); DNS names have none")]
    EmptyLabel,
    #[error("the international domain name is not valid")]
    Idna,
    #[error("it contains a character not allowed in a domain name")]
    Character,
    #[error("the IPv4 address is not valid")]
    Ipv4,
    #[error("the IPv6 address is not valid")]
    Ipv6,
}

/// An absolute http(s) URL that passed every rule; IDN hosts are in punycode.
#[derive(Clone, PartialEq, Eq)]
pub struct TargetUrl(Url);

impl TargetUrl {
    pub fn parse(input: &str, rules: &UrlRules<'_>) -> Result<Self, TargetUrlError> {
        if let Some(position) = input.chars().position(char::is_control) {
            return Err(TargetUrlError::ControlCharacter {
                position: position + 1,
            });
        }
        let input = input.trim_matches(' ');
        if input.is_empty() {
            return Err(TargetUrlError::Empty);
        }
        if input.len() > rules.max_length {
            return Err(TargetUrlError::TooLong {
                length: input.len(),
                max: rules.max_length,
            });
        }
        let url = Url::parse(input).map_err(|err| map_parse_error(err, input))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(TargetUrlError::Scheme(url.scheme().to_owned()));
        }
        let host = url
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or(TargetUrlError::NoHost)?;
        if !url.username().is_empty() || url.password().is_some() {
            return Err(TargetUrlError::Credentials);
        }
        if url.port() == Some(0) {
            return Err(TargetUrlError::InvalidPort);
        }
        let port = url.port_or_known_default();
        // Compared as resolvers compare names: another spelling of one of our hosts is that
        // host. Trailing dots are all dropped (`localhost..` reaches localhost in browsers and
        // curl). An address is another host, even one that reaches this machine.
        let loose = host.trim_end_matches('.');
        let host = crate::rules::host::canonical(loose).unwrap_or_else(|_| loose.to_owned());
        if let Some(own) = rules
            .own_hosts
            .iter()
            .find(|own| own.host == host && own.port.is_none_or(|p| Some(p) == port))
        {
            let shown = match own.port {
                Some(p) => format!("{}:{p}", own.host),
                None => own.host.clone(),
            };
            return Err(TargetUrlError::OwnDomain(shown));
        }
        if matches!(url.host(), Some(url::Host::Domain(_)))
            && (host.starts_with('.')
                || host.contains("..")
                || loose.len() + 1 < url.host_str().map_or(0, str::len))
        {
            return Err(TargetUrlError::InvalidHost(HostFault::EmptyLabel));
        }
        // Percent-encoding and punycode can lengthen the URL; the limit is on what we store.
        let length = url.as_str().len();
        if length > rules.max_length {
            return Err(TargetUrlError::TooLong {
                length,
                max: rules.max_length,
            });
        }
        Ok(Self(url))
    }

    /// What a person typing into a form means by `example.com/x`: a host without a scheme
    /// gets `https://`. Anything else is left as typed (and judged by [`TargetUrl::parse`]).
    pub fn with_default_scheme(input: &str) -> std::borrow::Cow<'_, str> {
        let trimmed = input.trim();
        let host = trimmed.split(['/', '?', '#']).next().unwrap_or("");
        let looks_like_host = !trimmed.contains("://")
            && host.contains('.')
            && !host.starts_with('.')
            && host
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'));
        match looks_like_host {
            true => std::borrow::Cow::Owned(format!("https://{trimmed}")),
            false => std::borrow::Cow::Borrowed(input),
        }
    }

    /// The URL as people read it: percent-encoded UTF-8 shown as the characters it encodes
    /// (for display only; links keep the encoded form).
    pub fn readable(url: &str) -> String {
        let bytes = url.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            let hex = |b: u8| (b as char).to_digit(16);
            if bytes[i] == b'%'
                && let (Some(hi), Some(lo)) = (
                    bytes.get(i + 1).and_then(|b| hex(*b)),
                    bytes.get(i + 2).and_then(|b| hex(*b)),
                )
            {
                let byte = (hi * 16 + lo) as u8;
                // Only text that is not structure: an encoded `/`, `?`, `&`, `=`, `#`, `%` or
                // a control character stays encoded, or the shown URL would mean another.
                if byte >= 0x80 || (byte.is_ascii_graphic() && !b"/?&=#%+".contains(&byte)) {
                    out.push(byte);
                    i += 3;
                    continue;
                }
            }
            out.push(bytes[i]);
            i += 1;
        }
        String::from_utf8(out).unwrap_or_else(|_| url.to_owned())
    }

    /// A URL read back from the database: it passed the rules when it was stored.
    pub fn stored(text: &str) -> Option<Self> {
        Url::parse(text).ok().map(Self)
    }

    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl fmt::Display for TargetUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for TargetUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TargetUrl({})", self.as_str())
    }
}

fn map_parse_error(err: url::ParseError, input: &str) -> TargetUrlError {
    use url::ParseError as P;
    match err {
        P::RelativeUrlWithoutBase | P::RelativeUrlWithCannotBeABaseBase => {
            TargetUrlError::Relative(input.trim_start_matches('/').chars().take(80).collect())
        }
        P::EmptyHost => TargetUrlError::NoHost,
        P::InvalidPort => TargetUrlError::InvalidPort,
        P::IdnaError => TargetUrlError::InvalidHost(HostFault::Idna),
        P::InvalidDomainCharacter => TargetUrlError::InvalidHost(HostFault::Character),
        P::InvalidIpv4Address => TargetUrlError::InvalidHost(HostFault::Ipv4),
        P::InvalidIpv6Address => TargetUrlError::InvalidHost(HostFault::Ipv6),
        other => {
            tracing::debug!(error = %other, "a target URL could not be parsed");
            TargetUrlError::Malformed
        }
    }
}
