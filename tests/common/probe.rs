//! What the tests read off a running server with the `redis` crate: INFO fields and the
//! dataset digest.

use redis::Connection;

pub fn info(c: &mut Connection, section: &str) -> String {
    redis::cmd("INFO").arg(section).query(c).expect("INFO")
}

pub fn field(text: &str, name: &str) -> Option<String> {
    text.lines().find_map(|l| l.strip_prefix(&format!("{name}:")).map(|v| v.trim().to_string()))
}

pub fn num(c: &mut Connection, section: &str, name: &str) -> i64 {
    field(&info(c, section), name).and_then(|v| v.parse().ok()).unwrap_or(-1)
}

pub fn digest(c: &mut Connection) -> String {
    redis::cmd("DEBUG").arg("DIGEST").query(c).expect("DEBUG DIGEST")
}

/// Waits until `cond` holds on the INFO replication text of `s`; returns that text.
pub fn wait_info(s: &super::Server, what: &str, cond: impl Fn(&str) -> bool) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let text = info(&mut s.client(), "replication");
        if cond(&text) {
            return text;
        }
        assert!(std::time::Instant::now() < deadline, "port {}: {what} never happened:\n{text}", s.port);
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Waits until `s` follows `to` with its link up.
pub fn link_up(s: &super::Server, to: &super::Server) {
    let port = to.port.to_string();
    wait_info(s, "link up", |t| {
        field(t, "master_port").as_deref() == Some(port.as_str()) && field(t, "master_link_status").as_deref() == Some("up")
    });
}
