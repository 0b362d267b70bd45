//! The certificate a TLS server presents, read by a handshake of our own: domain health warns
//! before a short domain's certificate expires. Whether the certificate is trusted is the
//! reachability probe's question (its HTTPS request verifies the chain); this handshake only
//! reads what the server sends, checking the handshake's signatures but not the chain.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, SignatureScheme};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, crate::i18n::Says)]
pub enum CertificateError {
    #[error("the name {0} does not resolve")]
    NotResolved(String),
    #[error("cannot connect to {0}")]
    Connect(String),
    #[error("the TLS handshake with {0} failed")]
    Handshake(String),
}

/// Accepts whatever certificate is sent (remembering nothing: the connection keeps it), but
/// checks that the server holds its key.
#[derive(Debug)]
struct ReadOnly(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for ReadOnly {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

/// The DER of the certificate `host:port` presents (for the name `host`): the connection
/// within `timeout`, and the whole handshake within `timeout` again, however slowly the
/// server sends it. Blocking: call it off the async workers, and bound the name's look-up
/// there (the system resolver has no timeout of ours).
pub fn presented(host: &str, port: u16, timeout: Duration) -> Result<Vec<u8>, CertificateError> {
    let provider = rustls::crypto::ring::default_provider();
    let algorithms = provider.signature_verification_algorithms;
    let config = ClientConfig::builder_with_provider(Arc::new(provider))
        .with_safe_default_protocol_versions()
        .map_err(|_| CertificateError::Handshake(host.to_owned()))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(ReadOnly(algorithms)))
        .with_no_client_auth();
    let name = ServerName::try_from(host.to_owned())
        .map_err(|_| CertificateError::NotResolved(host.to_owned()))?;
    let address = (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut found| found.next())
        .ok_or_else(|| CertificateError::NotResolved(host.to_owned()))?;
    let mut socket = TcpStream::connect_timeout(&address, timeout)
        .map_err(|_| CertificateError::Connect(format!("{host}:{port}")))?;
    let handshake_failed = || CertificateError::Handshake(format!("{host}:{port}"));
    let deadline = Instant::now() + timeout;
    let mut connection =
        ClientConnection::new(Arc::new(config), name).map_err(|_| handshake_failed())?;
    // One read or write at a time (rustls's `complete_io` reads on until the handshake moves
    // on): a server that sends a byte now and then would pass any per-read timeout, so each
    // gets only what is left of the handshake's time.
    while connection.is_handshaking() {
        let left = deadline
            .checked_duration_since(Instant::now())
            .filter(|left| !left.is_zero())
            .ok_or_else(handshake_failed)?;
        socket
            .set_read_timeout(Some(left))
            .and_then(|()| socket.set_write_timeout(Some(left)))
            .map_err(|_| handshake_failed())?;
        if connection.wants_write() {
            connection
                .write_tls(&mut socket)
                .map_err(|_| handshake_failed())?;
        } else if connection.wants_read() {
            match connection.read_tls(&mut socket) {
                Ok(0) | Err(_) => return Err(handshake_failed()),
                Ok(_) => {
                    connection
                        .process_new_packets()
                        .map_err(|_| handshake_failed())?;
                }
            }
        } else {
            return Err(handshake_failed());
        }
    }
    connection
        .peer_certificates()
        .and_then(|chain| chain.first())
        .map(|cert| cert.as_ref().to_vec())
        .ok_or_else(handshake_failed)
}
