//! TLS on `tls-port` with certificates generated at test time (rcgen): redis-cli `--tls`, the
//! `redis` crate with rustls, client-certificate policies, and replication over TLS.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{free_port, Server};
use rcgen::{BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, KeyPair};

/// Certificate parameters with their own common name (OpenSSL takes a certificate whose
/// subject equals its issuer's for self-signed).
fn params(cn: &str, sans: &[&str]) -> CertificateParams {
    let mut p = CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    p.distinguished_name = dn;
    p
}

struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    /// A CA, a server certificate for 127.0.0.1/localhost and a client certificate, signed by
    /// it; plus a second CA's client certificate that must be refused.
    fn new() -> Pki {
        let dir = tempfile::tempdir().unwrap();
        let mut ca_params = params("Vermilion test CA", &[]);
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_key = KeyPair::generate().unwrap();
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let write = |name: &str, text: String| std::fs::write(dir.path().join(name), text).unwrap();
        write("ca.crt", ca.pem());
        let server_key = KeyPair::generate().unwrap();
        let server = params("localhost", &["localhost", "127.0.0.1"]).signed_by(&server_key, &ca, &ca_key).unwrap();
        write("server.crt", server.pem());
        write("server.key", server_key.serialize_pem());
        let client_key = KeyPair::generate().unwrap();
        let client = params("client", &["client"]).signed_by(&client_key, &ca, &ca_key).unwrap();
        write("client.crt", client.pem());
        write("client.key", client_key.serialize_pem());
        let mut other_params = params("Another CA", &[]);
        other_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let other_key = KeyPair::generate().unwrap();
        let other_ca = other_params.self_signed(&other_key).unwrap();
        let rogue_key = KeyPair::generate().unwrap();
        let rogue = params("rogue", &["rogue"]).signed_by(&rogue_key, &other_ca, &other_key).unwrap();
        write("rogue.crt", rogue.pem());
        write("rogue.key", rogue_key.serialize_pem());
        Pki { dir }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).to_str().unwrap().to_string()
    }

    /// Server arguments for TLS on `tls_port` (plus `extra`).
    fn server_args(&self, tls_port: u16, auth_clients: &str) -> Vec<String> {
        vec![
            "--tls-port".into(),
            tls_port.to_string(),
            "--tls-cert-file".into(),
            self.path("server.crt"),
            "--tls-key-file".into(),
            self.path("server.key"),
            "--tls-ca-cert-file".into(),
            self.path("ca.crt"),
            "--tls-auth-clients".into(),
            auth_clients.into(),
        ]
    }

    fn read(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.dir.path().join(name)).unwrap()
    }
}

fn start(pki: &Pki, auth_clients: &str, extra: &[&str]) -> (Server, u16) {
    let tls_port = free_port();
    let mut args = pki.server_args(tls_port, auth_clients);
    args.extend(extra.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = Server::start(&refs);
    (server, tls_port)
}

/// redis-cli over TLS; `cert`: the client certificate pair to present, if any.
fn cli(pki: &Pki, port: u16, cert: Option<(&str, &str)>, args: &[&str]) -> (bool, String) {
    let mut cmd = Command::new("redis-cli");
    cmd.args(["--tls", "--cacert", &pki.path("ca.crt"), "-h", "127.0.0.1", "-p", &port.to_string()]);
    if let Some((c, k)) = cert {
        cmd.args(["--cert", &pki.path(c), "--key", &pki.path(k)]);
    }
    let out = cmd.args(args).output().expect("redis-cli");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success() && !text.contains("Could not connect") && !text.contains("SSL"), text.trim().to_string())
}

#[test]
fn redis_cli_over_tls_with_client_certificates() {
    let pki = Pki::new();
    let (server, tls_port) = start(&pki, "yes", &[]);
    let (ok, out) = cli(&pki, tls_port, Some(("client.crt", "client.key")), &["SET", "k", "secret"]);
    assert!(ok && out == "OK", "{out}");
    let (ok, out) = cli(&pki, tls_port, Some(("client.crt", "client.key")), &["GET", "k"]);
    assert!(ok && out == "secret", "{out}");
    // The plain port serves the same data.
    assert_eq!(server.raw().call(&[b"GET", b"k"]), b"$6\r\nsecret\r\n");
    // tls-auth-clients yes: no certificate, or one from another CA, is refused.
    let (ok, out) = cli(&pki, tls_port, None, &["PING"]);
    assert!(!ok || out != "PONG", "a client without a certificate got in: {out}");
    let (ok, out) = cli(&pki, tls_port, Some(("rogue.crt", "rogue.key")), &["PING"]);
    assert!(!ok || out != "PONG", "a client with a foreign certificate got in: {out}");
    // A plain-text client on the TLS port gets nothing it can use.
    let mut raw = std::net::TcpStream::connect(("127.0.0.1", tls_port)).unwrap();
    use std::io::{Read, Write};
    raw.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let _ = raw.write_all(b"PING\r\n");
    let mut buf = [0u8; 64];
    let n = raw.read(&mut buf).unwrap_or(0);
    assert!(!buf[..n].starts_with(b"+PONG"), "plain text answered on the TLS port");
    // The server is unharmed by the refused handshakes.
    let (ok, out) = cli(&pki, tls_port, Some(("client.crt", "client.key")), &["PING"]);
    assert!(ok && out == "PONG", "{out}");
}

#[test]
fn client_certificate_policies() {
    let pki = Pki::new();
    let (_server, port) = start(&pki, "no", &[]);
    let (ok, out) = cli(&pki, port, None, &["PING"]);
    assert!(ok && out == "PONG", "tls-auth-clients no: {out}");
    let (_server2, port2) = start(&pki, "optional", &[]);
    let (ok, out) = cli(&pki, port2, None, &["PING"]);
    assert!(ok && out == "PONG", "tls-auth-clients optional, no certificate: {out}");
    let (ok, out) = cli(&pki, port2, Some(("client.crt", "client.key")), &["PING"]);
    assert!(ok && out == "PONG", "tls-auth-clients optional, a good certificate: {out}");
    let (ok, out) = cli(&pki, port2, Some(("rogue.crt", "rogue.key")), &["PING"]);
    assert!(!ok || out != "PONG", "tls-auth-clients optional, a foreign certificate got in: {out}");
}

#[test]
fn redis_crate_over_tls_with_a_pipeline_and_a_large_value() {
    let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
    let pki = Pki::new();
    let (_server, tls_port) = start(&pki, "yes", &["--requirepass", "pw"]);
    let certs = redis::TlsCertificates {
        client_tls: Some(redis::ClientTlsConfig { client_cert: pki.read("client.crt"), client_key: pki.read("client.key") }),
        root_cert: Some(pki.read("ca.crt")),
    };
    let client = redis::Client::build_with_tls(format!("rediss://:pw@127.0.0.1:{tls_port}/"), certs).unwrap();
    let mut c = client.get_connection().unwrap();
    let big: Vec<u8> = (0..2 * 1024 * 1024).map(|i| (i % 251) as u8).collect();
    redis::cmd("SET").arg("big").arg(&big).exec(&mut c).unwrap();
    let got: Vec<u8> = redis::cmd("GET").arg("big").query(&mut c).unwrap();
    assert!(got == big, "2 MB value over TLS differs");
    let mut pipe = redis::pipe();
    for i in 0..1000 {
        pipe.cmd("INCR").arg("n").ignore();
        if i == 999 {
            pipe.cmd("GET").arg("n");
        }
    }
    let (n,): (i64,) = pipe.query(&mut c).unwrap();
    assert_eq!(n, 1000);
    let who: String = redis::cmd("ACL").arg("WHOAMI").query(&mut c).unwrap();
    assert_eq!(who, "default");
}

fn wait_for(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

#[test]
fn replication_over_tls() {
    let pki = Pki::new();
    let (primary, primary_tls) = start(&pki, "yes", &[]);
    let mut p = primary.raw();
    assert_eq!(p.call(&[b"SET", b"before", b"1"]), b"+OK\r\n");
    let (replica, _) = start(&pki, "yes", &["--tls-replication", "yes"]);
    let mut r = replica.raw();
    let port = primary_tls.to_string();
    assert_eq!(r.call(&[b"REPLICAOF", b"127.0.0.1", port.as_bytes()]), b"+OK\r\n");
    assert!(wait_for(Duration::from_secs(20), || r.call(&[b"GET", b"before"]) == b"$1\r\n1\r\n"), "full sync over TLS");
    assert_eq!(p.call(&[b"EVAL", b"return redis.call('set', KEYS[1], ARGV[1])", b"1", b"after", b"2"]), b"+OK\r\n");
    assert!(wait_for(Duration::from_secs(10), || r.call(&[b"GET", b"after"]) == b"$1\r\n2\r\n"), "the stream over TLS");
    assert_eq!(p.call(&[b"WAIT", b"1", b"5000"]), b":1\r\n");
    let info = String::from_utf8(p.call(&[b"INFO", b"replication"])).unwrap();
    assert!(info.contains("connected_slaves:1"), "{info}");
    // A replica whose primary certificate cannot be verified does not sync.
    let other = tempfile::tempdir().unwrap();
    let rogue_ca: PathBuf = other.path().join("ca.crt");
    std::fs::copy(Path::new(&pki.path("rogue.crt")), &rogue_ca).unwrap();
    let (bad, _) = start(&pki, "yes", &["--tls-replication", "yes", "--tls-ca-cert-file", rogue_ca.to_str().unwrap()]);
    let mut b = bad.raw();
    assert_eq!(b.call(&[b"REPLICAOF", b"127.0.0.1", port.as_bytes()]), b"+OK\r\n");
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(b.call(&[b"GET", b"before"]), b"$-1\r\n", "a replica synced from an unverified primary");
    let info = String::from_utf8(b.call(&[b"INFO", b"replication"])).unwrap();
    assert!(info.contains("master_link_status:down"), "{info}");
}

#[test]
fn a_bad_certificate_stops_the_server_at_startup() {
    let pki = Pki::new();
    let port = free_port().to_string();
    for (cert, key) in [("nosuch.crt", "server.key"), ("server.crt", "nosuch.key"), ("server.key", "server.key"), ("server.crt", "ca.crt")]
    {
        let status = Server::exit_status_at_startup(&[
            "--tls-port",
            &port,
            "--tls-cert-file",
            &pki.path(cert),
            "--tls-key-file",
            &pki.path(key),
            "--tls-ca-cert-file",
            &pki.path("ca.crt"),
        ]);
        assert!(status.is_some_and(|s| !s.success()), "cert {cert}, key {key}: {status:?}");
    }
}
