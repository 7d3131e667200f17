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
