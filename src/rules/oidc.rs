//! OpenID Connect, the parts that need no network: the issuer a configuration may name, the
//! PKCE challenge, and the verification of an ID token against the provider's keys (its
//! signature, issuer, audience, lifetime and nonce).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use serde::Deserialize;
use serde_json::Value;
use std::fmt;

/// Clocks of the provider and of this machine may disagree by this many seconds.
pub const LEEWAY_SECONDS: i64 = 60;

/// An issuer (`https://…`, no query or fragment); `http://` only on a loopback address, for
/// tests against a local provider.
#[derive(Clone, PartialEq, Eq)]
pub struct Issuer(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, crate::i18n::Says)]
pub enum IssuerError {
    #[error(
        "the OpenID issuer must be an https:// URL (http:// only on 127.0.0.1, ::1 or localhost)"
    )]
    Scheme,
    #[error("the OpenID issuer is not a URL without query or fragment")]
    NotUrl,
}

impl Issuer {
    pub fn parse(input: &str) -> Result<Self, IssuerError> {
        let trimmed = input.trim().trim_end_matches('/');
        let url = url::Url::parse(trimmed).map_err(|_| IssuerError::NotUrl)?;
        if url.query().is_some() || url.fragment().is_some() || url.host().is_none() {
            return Err(IssuerError::NotUrl);
        }
        let loopback = match url.host() {
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
            None => false,
        };
        match url.scheme() {
            "https" => {}
            "http" if loopback => {}
            _ => return Err(IssuerError::Scheme),
        }
        Ok(Self(trimmed.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Where the provider publishes its endpoints and keys (OpenID Connect Discovery 1.0).
    pub fn discovery_url(&self) -> String {
        format!("{}/.well-known/openid-configuration", self.0)
    }

    /// The host, the default name of the "Sign in with …" button.
    pub fn host(&self) -> String {
        url::Url::parse(&self.0)
            .ok()
            .and_then(|url| url.host_str().map(str::to_owned))
            .unwrap_or_default()
    }
}

impl fmt::Debug for Issuer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Issuer({})", self.0)
    }
}

impl fmt::Display for Issuer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The S256 challenge of a PKCE verifier (RFC 7636).
pub fn pkce_challenge(verifier: &str) -> String {
    use sha2::Digest;
    B64URL.encode(sha2::Sha256::digest(verifier.as_bytes()))
}

/// 32 random bytes in the URL-safe alphabet: a state, nonce or PKCE verifier.
pub fn random_token(bytes: [u8; 32]) -> String {
    B64URL.encode(bytes)
}

/// The provider's published signing keys.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct KeySet {
    #[serde(default)]
    pub keys: Vec<Jwk>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Jwk {
    pub kty: String,
    #[serde(default)]
    pub kid: Option<String>,
    #[serde(default, rename = "use")]
    pub usage: Option<String>,
    #[serde(default)]
    pub n: Option<String>,
    #[serde(default)]
    pub e: Option<String>,
    #[serde(default)]
    pub crv: Option<String>,
    #[serde(default)]
    pub x: Option<String>,
    #[serde(default)]
    pub y: Option<String>,
}

impl KeySet {
    pub fn has(&self, kid: &str) -> bool {
        self.keys.iter().any(|key| key.kid.as_deref() == Some(kid))
    }
}

/// What the ID token must say to be ours.
pub struct Expected<'a> {
    pub issuer: &'a Issuer,
    pub client_id: &'a str,
    pub nonce: &'a str,
    /// Seconds since the epoch.
    pub now: i64,
}

/// Why an ID token was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, crate::i18n::Says)]
pub enum TokenError {
    #[error("the ID token is not a signed JWT")]
    Malformed,
    #[error("the ID token is signed with {0}, which is not accepted")]
    Algorithm(String),
    #[error("the ID token is signed with a key the provider does not publish")]
    UnknownKey,
    #[error("the ID token's signature is not valid")]
    Signature,
    #[error("the ID token was issued by another provider")]
    Issuer,
    #[error("the ID token was issued to another application")]
    Audience,
    #[error("the ID token has expired")]
    Expired,
    #[error("the ID token is not valid yet")]
    NotYetValid,
    #[error("the ID token does not belong to this sign-in (nonce)")]
    Nonce,
    #[error("the ID token names no subject")]
    NoSubject,
}

/// The claims of a verified ID token.
#[derive(Debug, Clone)]
pub struct Claims {
    /// The provider's stable identifier of the person (at most 255 ASCII characters).
    pub subject: String,
    pub all: serde_json::Map<String, Value>,
}

impl Claims {
    pub fn text(&self, name: &str) -> Option<&str> {
        self.all
            .get(name)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    }

    /// Whether the claim `name` is `value` or, as a list (groups, roles), contains it.
    pub fn has_value(&self, name: &str, value: &str) -> bool {
        match self.all.get(name) {
            Some(Value::String(s)) => s == value,
            Some(Value::Array(items)) => items.iter().any(|item| item.as_str() == Some(value)),
            _ => false,
        }
    }
}

#[derive(Deserialize)]
struct Header {
    alg: String,
    #[serde(default)]
    kid: Option<String>,
}

fn decode(part: &str) -> Result<Vec<u8>, TokenError> {
    B64URL
        .decode(part.trim_end_matches('='))
        .map_err(|_| TokenError::Malformed)
}

/// The key id a token names, if any (to fetch the keys again when it is one not seen yet).
pub fn key_id(token: &str) -> Option<String> {
    let header = token.split('.').next()?;
    serde_json::from_slice::<Header>(&decode(header).ok()?)
        .ok()?
        .kid
}

/// Checks a signature over a message with one key: `None` when the key cannot be used.
type Check = fn(&Jwk, &[u8], &[u8]) -> Option<bool>;

/// Verifies `token` (a compact JWS) with `keys` and checks its claims against `expected`.
pub fn verify(token: &str, keys: &KeySet, expected: &Expected) -> Result<Claims, TokenError> {
    let mut parts = token.split('.');
    let (Some(header), Some(payload), Some(sig), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(TokenError::Malformed);
    };
    let head: Header =
        serde_json::from_slice(&decode(header)?).map_err(|_| TokenError::Malformed)?;
    let signature = decode(sig)?;
    let signed = &token.as_bytes()[..header.len() + 1 + payload.len()];
    // `none` and the shared-secret algorithms are refused: only the provider's private key
    // may sign.
    let (kty, check): (&str, Check) = match head.alg.as_str() {
        "RS256" => ("RSA", |k, m, s| {
            rsa(k, &signature::RSA_PKCS1_2048_8192_SHA256, m, s)
        }),
        "RS384" => ("RSA", |k, m, s| {
            rsa(k, &signature::RSA_PKCS1_2048_8192_SHA384, m, s)
        }),
        "RS512" => ("RSA", |k, m, s| {
            rsa(k, &signature::RSA_PKCS1_2048_8192_SHA512, m, s)
        }),
        "PS256" => ("RSA", |k, m, s| {
            rsa(k, &signature::RSA_PSS_2048_8192_SHA256, m, s)
        }),
        "PS384" => ("RSA", |k, m, s| {
            rsa(k, &signature::RSA_PSS_2048_8192_SHA384, m, s)
        }),
        "PS512" => ("RSA", |k, m, s| {
            rsa(k, &signature::RSA_PSS_2048_8192_SHA512, m, s)
        }),
        "ES256" => ("EC", |k, m, s| {
            ec(k, "P-256", &signature::ECDSA_P256_SHA256_FIXED, m, s)
        }),
        "ES384" => ("EC", |k, m, s| {
            ec(k, "P-384", &signature::ECDSA_P384_SHA384_FIXED, m, s)
        }),
        other => return Err(TokenError::Algorithm(other.chars().take(20).collect())),
    };
    let candidates: Vec<&Jwk> = keys
        .keys
        .iter()
        .filter(|key| key.kty == kty && key.usage.as_deref().is_none_or(|u| u == "sig"))
        .filter(|key| match (&head.kid, &key.kid) {
            (Some(wanted), Some(kid)) => wanted == kid,
            (Some(_), None) => false,
            (None, _) => true,
        })
        .collect();
    if candidates.is_empty() {
        return Err(TokenError::UnknownKey);
    }
    if !candidates
        .iter()
        .any(|key| check(key, signed, &signature) == Some(true))
    {
        return Err(TokenError::Signature);
    }
    let claims: serde_json::Map<String, Value> =
        serde_json::from_slice(&decode(payload)?).map_err(|_| TokenError::Malformed)?;
    check_claims(claims, expected)
}

fn rsa(
    key: &Jwk,
    alg: &'static signature::RsaParameters,
    message: &[u8],
    sig: &[u8],
) -> Option<bool> {
    let n = decode(key.n.as_deref()?).ok()?;
    let e = decode(key.e.as_deref()?).ok()?;
    Some(
        RsaPublicKeyComponents { n: &n, e: &e }
            .verify(alg, message, sig)
            .is_ok(),
    )
}

fn ec(
    key: &Jwk,
    curve: &str,
    alg: &'static signature::EcdsaVerificationAlgorithm,
    message: &[u8],
    sig: &[u8],
) -> Option<bool> {
    if key.crv.as_deref() != Some(curve) {
        return None;
    }
    let mut point = vec![0x04];
    point.extend(decode(key.x.as_deref()?).ok()?);
    point.extend(decode(key.y.as_deref()?).ok()?);
    Some(
        UnparsedPublicKey::new(alg, point)
            .verify(message, sig)
            .is_ok(),
    )
}

fn seconds(claims: &serde_json::Map<String, Value>, name: &str) -> Option<i64> {
    claims
        .get(name)
        .and_then(|v| v.as_i64().or_else(|| v.as_f64().map(|f| f as i64)))
}

fn check_claims(
    claims: serde_json::Map<String, Value>,
    expected: &Expected,
) -> Result<Claims, TokenError> {
    let issuer = claims.get("iss").and_then(Value::as_str).unwrap_or("");
    if issuer.trim_end_matches('/') != expected.issuer.as_str() {
        return Err(TokenError::Issuer);
    }
    let audiences: Vec<&str> = match claims.get("aud") {
        Some(Value::String(one)) => vec![one.as_str()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let authorized = claims.get("azp").and_then(Value::as_str);
    if !audiences.contains(&expected.client_id)
        || authorized.is_some_and(|azp| azp != expected.client_id)
    {
        return Err(TokenError::Audience);
    }
    match seconds(&claims, "exp") {
        Some(exp) if expected.now <= exp + LEEWAY_SECONDS => {}
        _ => return Err(TokenError::Expired),
    }
    let too_early =
        |name| seconds(&claims, name).is_some_and(|t| t > expected.now + LEEWAY_SECONDS);
    if too_early("iat") || too_early("nbf") {
        return Err(TokenError::NotYetValid);
    }
    let nonce = claims.get("nonce").and_then(Value::as_str).unwrap_or("");
    if !crate::digest::constant_time_eq(nonce.as_bytes(), expected.nonce.as_bytes()) {
        return Err(TokenError::Nonce);
    }
    let subject = claims
        .get("sub")
        .and_then(Value::as_str)
        .filter(|sub| !sub.is_empty() && sub.len() <= 255)
        .ok_or(TokenError::NoSubject)?
        .to_owned();
    Ok(Claims {
        subject,
        all: claims,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_http_issuer_is_accepted_only_on_loopback() {
        assert!(Issuer::parse("https://id.example.com/realms/x/").is_ok());
        assert!(Issuer::parse("http://127.0.0.1:9400").is_ok());
        assert!(Issuer::parse("http://localhost:9400").is_ok());
        assert!(Issuer::parse("http://[::1]:9400").is_ok());
        assert_eq!(
            Issuer::parse("http://id.example.com"),
            Err(IssuerError::Scheme)
        );
        assert_eq!(Issuer::parse("http://10.0.0.1"), Err(IssuerError::Scheme));
        assert_eq!(Issuer::parse("ftp://x.example"), Err(IssuerError::Scheme));
        assert_eq!(
            Issuer::parse("https://x.example/?a=1"),
            Err(IssuerError::NotUrl)
        );
        assert_eq!(
            Issuer::parse("https://x.example/").unwrap().as_str(),
            "https://x.example"
        );
    }

    #[test]
    fn the_pkce_challenge_is_rfc_7636s_example() {
        // RFC 7636, appendix B.
        assert_eq!(
            pkce_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn unsigned_and_shared_secret_tokens_are_refused() {
        let issuer = Issuer::parse("https://id.example").unwrap();
        let expected = Expected {
            issuer: &issuer,
            client_id: "c",
            nonce: "n",
            now: 0,
        };
        let body = B64URL.encode(br#"{"iss":"https://id.example","aud":"c","sub":"s"}"#);
        for alg in ["none", "HS256"] {
            let head = B64URL.encode(format!(r#"{{"alg":"{alg}"}}"#));
            let token = format!("{head}.{body}.");
            assert_eq!(
                verify(&token, &KeySet::default(), &expected).unwrap_err(),
                TokenError::Algorithm(alg.to_owned())
            );
        }
        assert_eq!(
            verify("a.b", &KeySet::default(), &expected).unwrap_err(),
            TokenError::Malformed
        );
    }
}
