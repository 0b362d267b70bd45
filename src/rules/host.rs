//! Host names this service answers on (`domain_conf.host`).

use std::fmt;
use std::str::FromStr;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Http,
    Https,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::Https => "https",
        }
    }
}

impl FromStr for Protocol {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "http" => Ok(Self::Http),
            "https" => Ok(Self::Https),
            other => Err(format!("unknown protocol '{other}'")),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, crate::i18n::Says)]
pub enum HostError {
    #[error("the host is empty")]
    Empty,
    #[error(
        "give the host alone, such as s.example.com or s.example.com:8443, without a scheme, path or '@' ('{0}' is not allowed)"
    )]
    NotAHost(char),
    #[error("the port must be a number from 1 to 65535")]
    Port,
    #[error("'{0}' is not a valid host name")]
    Invalid(String),
}

/// `host` as DNS compares it: lower-case, international names in punycode, without the
/// trailing dot of a fully qualified name; IP addresses in their usual form. Every place that
/// stores or compares one of our hosts goes through this, so that no other spelling of a host
/// (`S.Example.COM.`, `ｓ.example.com`) passes for a different one.
pub fn canonical(host: &str) -> Result<String, HostError> {
    let invalid = || HostError::Invalid(host.to_owned());
    let parsed = url::Host::parse(host).map_err(|_| invalid())?;
    let url::Host::Domain(name) = parsed else {
        return Ok(parsed.to_string());
    };
    let name = name.strip_suffix('.').unwrap_or(&name);
    if name.is_empty() {
        return Err(HostError::Empty);
    }
    // A host name: labels of letters, digits and inner hyphens (RFC 1123), 63 at most each and
    // 253 in all. WHATWG URLs accept more (`*`, `"`, empty labels), DNS does not.
    let label_ok = |label: &str| {
        (1..=63).contains(&label.len())
            && label
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    if name.len() > 253 || !name.split('.').all(label_ok) {
        return Err(invalid());
    }
    Ok(name.to_owned())
}

/// A host with an optional port, lower-case, IDN in punycode: `s.example.com`,
/// `localhost:8080`, `[::1]:8080`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct DomainHost {
    host: String,
    port: Option<u16>,
}

impl DomainHost {
    pub fn parse(input: &str) -> Result<Self, HostError> {
        let input = input.trim();
        if input.is_empty() {
            return Err(HostError::Empty);
        }
        if let Some(bad) = input.chars().find(|c| {
            matches!(c, '/' | '\\' | '?' | '#' | '@') || c.is_whitespace() || c.is_control()
        }) {
            return Err(HostError::NotAHost(bad));
        }
        let (host_part, port_part) = if let Some(rest) = input.strip_prefix('[') {
            let (inner, after) = rest
                .split_once(']')
                .ok_or_else(|| HostError::Invalid(input.to_owned()))?;
            let port = match after {
                "" => None,
                p => Some(
                    p.strip_prefix(':')
                        .ok_or_else(|| HostError::Invalid(input.to_owned()))?,
                ),
            };
            (format!("[{inner}]"), port)
        } else {
            match input.rsplit_once(':') {
                Some((host, port)) => (host.to_owned(), Some(port)),
                None => (input.to_owned(), None),
            }
        };
        let port = match port_part {
            None => None,
            Some(p) => match p.parse::<u16>() {
                Ok(0) | Err(_) => return Err(HostError::Port),
                Ok(port) => Some(port),
            },
        };
        let host = canonical(&host_part)?;
        Ok(Self { host, port })
    }

    /// The stored form, read back from the database.
    pub fn from_stored(stored: &str) -> Self {
        Self::parse(stored).unwrap_or_else(|_| Self {
            host: stored.to_owned(),
            port: None,
        })
    }

    pub fn host(&self) -> &str {
        &self.host
    }

    pub fn port(&self) -> Option<u16> {
        self.port
    }
}

impl fmt::Display for DomainHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.port {
            Some(port) => write!(f, "{}:{port}", self.host),
            None => f.write_str(&self.host),
        }
    }
}

impl fmt::Debug for DomainHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DomainHost({self})")
    }
}
