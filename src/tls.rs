//! TLS configuration from Redis's `tls-*` parameters, with rustls: the acceptor for client
//! connections on `tls-port`, and the connector a replica uses when `tls-replication yes`.
//! Files are read here (PEM); handshakes happen in the connection tasks.

use std::sync::Arc;

use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{ClientConfig, RootCertStore, ServerConfig};
use tokio_rustls::{TlsAcceptor, TlsConnector};

use crate::config::Config;
use crate::config::P;

fn provider() -> Arc<tokio_rustls::rustls::crypto::CryptoProvider> {
    Arc::new(tokio_rustls::rustls::crypto::ring::default_provider())
}

fn certs(path: &str, what: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    if path.is_empty() {
        return Err(format!("No {what} configured"));
    }
    let certs: Result<Vec<_>, _> = CertificateDer::pem_file_iter(path).map_err(|e| format!("Failed to load {what} {path}: {e}"))?.collect();
    let certs = certs.map_err(|e| format!("Failed to load {what} {path}: {e}"))?;
    if certs.is_empty() {
        return Err(format!("Failed to load {what} {path}: no certificate found"));
    }
    Ok(certs)
}

fn key(path: &str) -> Result<PrivateKeyDer<'static>, String> {
    if path.is_empty() {
        return Err("No tls-key-file configured".into());
    }
    PrivateKeyDer::from_pem_file(path).map_err(|e| format!("Failed to load private key {path}: {e}"))
}

fn roots(path: &str) -> Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    for cert in certs(path, "CA certificate(s) file")? {
        store.add(cert).map_err(|e| format!("Invalid CA certificate in {path}: {e}"))?;
    }
    Ok(store)
}

/// The acceptor for `tls-port`: `tls-cert-file`/`tls-key-file`, and client certificates
/// checked against `tls-ca-cert-file` per `tls-auth-clients` (yes: required; optional:
/// checked when given; no: not asked for).
pub fn acceptor(config: &Config) -> Result<TlsAcceptor, String> {
    let chain = certs(config.get(P::TlsCertFile), "certificate")?;
    let key = key(config.get(P::TlsKeyFile))?;
    let builder = ServerConfig::builder_with_provider(provider()).with_safe_default_protocol_versions().map_err(|e| e.to_string())?;
    let builder = match config.get(P::TlsAuthClients) {
        "no" => builder.with_no_client_auth(),
        mode => {
            let roots = Arc::new(roots(config.get(P::TlsCaCertFile))?);
            let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider());
            let verifier = if mode == "optional" { verifier.allow_unauthenticated() } else { verifier };
            builder.with_client_cert_verifier(verifier.build().map_err(|e| e.to_string())?)
        }
    };
    let server = builder.with_single_cert(chain, key).map_err(|e| format!("Invalid certificate or key: {e}"))?;
    Ok(TlsAcceptor::from(Arc::new(server)))
}

/// The connector a replica uses towards its primary: the primary's certificate is checked
/// against `tls-ca-cert-file` (and its name against the host it was given); the replica
/// presents `tls-client-cert-file`/`tls-client-key-file`, or else its own server pair.
pub fn connector(config: &Config) -> Result<TlsConnector, String> {
    let roots = roots(config.get(P::TlsCaCertFile))?;
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots);
    let (cert, key_file) = match config.get(P::TlsClientCertFile) {
        "" => (config.get(P::TlsCertFile), config.get(P::TlsKeyFile)),
        c => (c, config.get(P::TlsClientKeyFile)),
    };
    let client = if cert.is_empty() {
        builder.with_no_client_auth()
    } else {
        builder
            .with_client_auth_cert(certs(cert, "certificate")?, key(key_file)?)
            .map_err(|e| format!("Invalid client certificate: {e}"))?
    };
    Ok(TlsConnector::from(Arc::new(client)))
}

/// The name to check a primary's certificate against: its IP address, or its host name.
pub fn server_name(host: &str) -> Result<ServerName<'static>, String> {
    ServerName::try_from(host.to_string()).map_err(|e| format!("Invalid TLS server name '{host}': {e}"))
}
