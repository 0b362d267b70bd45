//! Talking to a single sign-on provider (OpenID Connect): its discovery document and keys,
//! the authorization request with PKCE, state and nonce, the code exchanged for an ID token,
//! and the token verified (`rules::oidc`). What a verified person means to inklink (which
//! user, which role) is `services::sso`'s.
//!
//! The provider's endpoints and keys are read from its discovery document when first needed
//! (not at start-up, so that a provider down does not stop inklink) and kept for an hour;
//! a token signed with a key not seen yet fetches the keys again, at most once a minute.

use super::outbound::{Outbound, OutboundError};
use crate::rules::oidc::{self, Claims, Expected, Issuer, KeySet, TokenError};
use base64::Engine;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a sign-in may take at the provider (the state cookie's life).
pub const FLIGHT_SECONDS: i64 = 600;
/// Each request to the provider, at most.
const PROVIDER_TIMEOUT: Duration = Duration::from_secs(10);
/// The discovery document is read again after this long.
const DISCOVERY_FOR: Duration = Duration::from_secs(3600);
/// Keys are fetched again for an unknown key id at most this often.
const KEYS_AT_MOST_EVERY: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error, crate::i18n::Says)]
pub enum OidcError {
    #[error("the sign-in provider cannot be reached: {0}")]
    Unreachable(#[from] OutboundError),
    #[error("the sign-in provider's answer was not understood ({0})")]
    BadProvider(#[from] ProviderFault),
    #[error("the sign-in provider refused: {0}")]
    Refused(String),
    #[error(transparent)]
    Token(#[from] TokenError),
}

/// What was wrong with the provider's answer.
#[derive(Debug, thiserror::Error, crate::i18n::Says)]
pub enum ProviderFault {
    #[error("{url} answered HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("{url} did not answer JSON")]
    NotJson { url: String },
    #[error("its discovery document names the issuer {issuer}")]
    OtherIssuer { issuer: String },
    #[error("the endpoint {endpoint} is not a URL")]
    Endpoint { endpoint: String },
    #[error("the token answer has no id_token")]
    NoIdToken,
    #[error("no free user name for this person")]
    NoName,
}

/// The configured provider and what was learnt of it.
pub struct Provider {
    pub issuer: Issuer,
    /// The name on the sign-in button (data: shown as configured, in both languages).
    pub name: String,
    client_id: String,
    client_secret: Option<String>,
    public_url: Option<String>,
    learnt: Mutex<Option<Learnt>>,
}

#[derive(Clone)]
struct Learnt {
    authorization: url::Url,
    token: url::Url,
    keys_url: url::Url,
    /// The provider takes the client secret in the form only (`client_secret_post`), not in
    /// an `Authorization: Basic` header.
    secret_in_form: bool,
    keys: KeySet,
    read_at: Instant,
    keys_at: Instant,
}

#[derive(serde::Deserialize)]
struct Discovery {
    issuer: String,
    authorization_endpoint: String,
    token_endpoint: String,
    jwks_uri: String,
    #[serde(default)]
    token_endpoint_auth_methods_supported: Vec<String>,
}

/// A sign-in on its way through the provider: what its callback must match (kept in a
/// signed cookie on the browser that started it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flight {
    pub state: String,
    pub nonce: String,
    pub verifier: String,
    pub expires: i64,
    pub next: String,
}

impl Flight {
    pub fn new(next: &str) -> Self {
        Self {
            state: oidc::random_token(random_bytes()),
            nonce: oidc::random_token(random_bytes()),
            verifier: oidc::random_token(random_bytes()),
            expires: chrono::Utc::now().timestamp() + FLIGHT_SECONDS,
            next: next.to_owned(),
        }
    }

    pub fn to_cookie(&self) -> String {
        format!(
            "{}|{}|{}|{}|{}",
            self.state, self.nonce, self.verifier, self.expires, self.next
        )
    }

    /// The flight a cookie names, if it has not expired.
    pub fn from_cookie(value: &str) -> Option<Self> {
        let mut parts = value.splitn(5, '|');
        let flight = Self {
            state: parts.next()?.to_owned(),
            nonce: parts.next()?.to_owned(),
            verifier: parts.next()?.to_owned(),
            expires: parts.next()?.parse().ok()?,
            next: parts.next()?.to_owned(),
        };
        (flight.expires > chrono::Utc::now().timestamp()).then_some(flight)
    }
}

fn random_bytes() -> [u8; 32] {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the operating system's random source failed");
    bytes
}

impl Provider {
    /// A provider at `issuer`, shown as `name` (default: the issuer's host), inklink
    /// registered there as `client_id`; its redirect back goes to `public_url` when given.
    pub fn new(
        issuer: Issuer,
        name: Option<&str>,
        client_id: &str,
        client_secret: Option<&str>,
        public_url: Option<&str>,
    ) -> Self {
        let given = |text: Option<&str>| {
            text.map(str::trim)
                .filter(|text| !text.is_empty())
                .map(str::to_owned)
        };
        Self {
            name: given(name).unwrap_or_else(|| issuer.host()),
            issuer,
            client_id: client_id.trim().to_owned(),
            client_secret: given(client_secret),
            public_url: given(public_url).map(|url| url.trim_end_matches('/').to_owned()),
            learnt: Mutex::new(None),
        }
    }

    /// Where the provider sends the browser back: on the configured public address, else on
    /// the one the sign-in started on (`origin`, scheme and host).
    pub fn redirect_uri(&self, origin: &str) -> String {
        let base = self.public_url.as_deref().unwrap_or(origin);
        format!("{base}/admin/sso/callback")
    }

    fn client() -> Outbound {
        // The provider is the administrator's choice, often on the office network: unlike a
        // webhook's address, no stranger can point it elsewhere.
        Outbound::new(true, PROVIDER_TIMEOUT)
    }

    async fn fetch_json<T: serde::de::DeserializeOwned>(
        client: &Outbound,
        url: &url::Url,
    ) -> Result<T, OidcError> {
        let answer = client.get(url).await?;
        if answer.status != 200 {
            return Err(ProviderFault::Status {
                url: url.to_string(),
                status: answer.status,
            }
            .into());
        }
        serde_json::from_slice(&answer.body).map_err(|_| {
            ProviderFault::NotJson {
                url: url.to_string(),
            }
            .into()
        })
    }

    /// The provider's endpoints and keys, read now if not yet (or long ago).
    async fn learnt(&self, client: &Outbound) -> Result<Learnt, OidcError> {
        if let Some(learnt) = self.learnt.lock().expect("not poisoned").clone()
            && learnt.read_at.elapsed() < DISCOVERY_FOR
        {
            return Ok(learnt);
        }
        let url =
            url::Url::parse(&self.issuer.discovery_url()).map_err(|_| ProviderFault::Endpoint {
                endpoint: self.issuer.discovery_url(),
            })?;
        let found: Discovery = Self::fetch_json(client, &url).await?;
        // Discovery 1.0 §4.3: the document must name the very issuer it was fetched for.
        if found.issuer.trim_end_matches('/') != self.issuer.as_str() {
            return Err(ProviderFault::OtherIssuer {
                issuer: found.issuer,
            }
            .into());
        }
        let endpoint = |text: &str| {
            url::Url::parse(text)
                .ok()
                .filter(|url| matches!(url.scheme(), "https" | "http"))
                .ok_or_else(|| ProviderFault::Endpoint {
                    endpoint: text.to_owned(),
                })
        };
        let keys_url = endpoint(&found.jwks_uri)?;
        let keys: KeySet = Self::fetch_json(client, &keys_url).await?;
        let methods = &found.token_endpoint_auth_methods_supported;
        let learnt = Learnt {
            authorization: endpoint(&found.authorization_endpoint)?,
            token: endpoint(&found.token_endpoint)?,
            keys_url,
            secret_in_form: !methods.is_empty()
                && !methods.iter().any(|m| m == "client_secret_basic")
                && methods.iter().any(|m| m == "client_secret_post"),
            keys,
            read_at: Instant::now(),
            keys_at: Instant::now(),
        };
        *self.learnt.lock().expect("not poisoned") = Some(learnt.clone());
        Ok(learnt)
    }

    /// Starts a sign-in: the provider's authorization URL to send the browser to, and the
    /// flight its callback must match.
    pub async fn begin(&self, origin: &str, next: &str) -> Result<(String, Flight), OidcError> {
        let learnt = self.learnt(&Self::client()).await?;
        let flight = Flight::new(next);
        let mut url = learnt.authorization.clone();
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", &self.client_id)
            .append_pair("redirect_uri", &self.redirect_uri(origin))
            .append_pair("scope", "openid profile email")
            .append_pair("state", &flight.state)
            .append_pair("nonce", &flight.nonce)
            .append_pair("code_challenge", &oidc::pkce_challenge(&flight.verifier))
            .append_pair("code_challenge_method", "S256");
        Ok((url.into(), flight))
    }

    /// Finishes the sign-in `flight` with the provider's `code`: the person the provider's
    /// verified ID token names.
    pub async fn finish(
        &self,
        flight: &Flight,
        code: &str,
        origin: &str,
    ) -> Result<Claims, OidcError> {
        let client = Self::client();
        let learnt = self.learnt(&client).await?;
        let token = self
            .exchange(&client, &learnt, code, &flight.verifier, origin)
            .await?;
        self.verify(&client, learnt, &token, &flight.nonce).await
    }

    async fn exchange(
        &self,
        client: &Outbound,
        learnt: &Learnt,
        code: &str,
        verifier: &str,
        origin: &str,
    ) -> Result<String, OidcError> {
        let mut form = url::form_urlencoded::Serializer::new(String::new());
        form.append_pair("grant_type", "authorization_code")
            .append_pair("code", code)
            .append_pair("redirect_uri", &self.redirect_uri(origin))
            .append_pair("code_verifier", verifier)
            .append_pair("client_id", &self.client_id);
        let mut headers = vec![("accept", "application/json".to_owned())];
        match (&self.client_secret, learnt.secret_in_form) {
            (Some(secret), true) => {
                form.append_pair("client_secret", secret);
            }
            (Some(secret), false) => {
                // RFC 6749 §2.3.1: each part form-encoded before the Basic encoding.
                let encode = |s: &str| {
                    url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>()
                };
                let pair = format!("{}:{}", encode(&self.client_id), encode(secret));
                headers.push((
                    "authorization",
                    format!(
                        "Basic {}",
                        base64::engine::general_purpose::STANDARD.encode(pair)
                    ),
                ));
            }
            (None, _) => {}
        }
        let answer = client
            .post(
                &learnt.token,
                "application/x-www-form-urlencoded",
                &headers,
                form.finish().into_bytes(),
            )
            .await?;
        let body: serde_json::Value = serde_json::from_slice(&answer.body).unwrap_or_default();
        if answer.status != 200 {
            let reason = body
                .get("error_description")
                .or_else(|| body.get("error"))
                .and_then(|v| v.as_str())
                .map(|s| s.chars().take(200).collect())
                .unwrap_or_else(|| answer.status.to_string());
            return Err(OidcError::Refused(reason));
        }
        body.get("id_token")
            .and_then(|v| v.as_str())
            .map(str::to_owned)
            .ok_or_else(|| ProviderFault::NoIdToken.into())
    }

    async fn verify(
        &self,
        client: &Outbound,
        mut learnt: Learnt,
        token: &str,
        nonce: &str,
    ) -> Result<Claims, OidcError> {
        // A key id not seen yet: the provider may have rotated its keys since they were read.
        if let Some(kid) = oidc::key_id(token)
            && !learnt.keys.has(&kid)
            && learnt.keys_at.elapsed() >= KEYS_AT_MOST_EVERY
        {
            learnt.keys = Self::fetch_json(client, &learnt.keys_url).await?;
            learnt.keys_at = Instant::now();
            *self.learnt.lock().expect("not poisoned") = Some(learnt.clone());
        }
        let expected = Expected {
            issuer: &self.issuer,
            client_id: &self.client_id,
            nonce,
            now: chrono::Utc::now().timestamp(),
        };
        Ok(oidc::verify(token, &learnt.keys, &expected)?)
    }
}
