//! Access control: the users (`user.rs`), the log of refusals (`ACL LOG`) and the ACL file.
//!
//! The executor owns one `Acl`; every command a client runs (and every command a script
//! runs for it) is checked against the client's user before it runs. Clients hold their
//! user's name; a deleted user's clients are disconnected, so the name always resolves.

mod redis_only;
pub mod user;

use std::collections::{BTreeMap, VecDeque};

pub use user::{category_commands, password_hash, Denied, RuleError, User, CATEGORIES};

/// Refusals of the same kind within this many ms are counted in one ACL LOG entry.
const LOG_GROUPING_MS: i64 = 60_000;

/// One ACL LOG entry.
#[derive(Debug, Clone)]
pub struct LogEntry {
    pub count: u64,
    pub reason: &'static str,
    pub context: &'static str,
    pub object: String,
    pub username: String,
    pub ctime_ms: i64,
    pub client_info: String,
}

pub struct Acl {
    pub users: BTreeMap<String, User>,
    /// Newest first.
    pub log: VecDeque<LogEntry>,
    /// Every user may run everything: the per-command check is skipped.
    pub all_unrestricted: bool,
}

impl Default for Acl {
    fn default() -> Self {
        let mut users = BTreeMap::new();
        users.insert("default".to_string(), User::default_user());
        Acl { users, log: VecDeque::new(), all_unrestricted: true }
    }
}

/// A user name Redis accepts: no spaces, no NUL.
/// Redis's `ACLStringHasSpaces`: no `isspace` character (space, \t, \n, \v, \f, \r) and no
/// zero byte, so a name can never break an ACL file line, ACL LIST or CLIENT LIST.
pub fn valid_username(name: &[u8]) -> bool {
    !name.iter().any(|c| matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | 0))
}

impl Acl {
    /// Whether a new connection starts authenticated (the default user is on and needs no
    /// password).
    pub fn default_needs_no_auth(&self) -> bool {
        self.users.get("default").is_some_and(|u| u.enabled && u.nopass)
    }

    /// Checks credentials: the user exists, is on, and the password is one of its own.
    pub fn authenticate(&self, name: &[u8], pass: &[u8]) -> bool {
        let Ok(name) = std::str::from_utf8(name) else { return false };
        self.users.get(name).is_some_and(|u| u.enabled && u.password_ok(pass))
    }

    /// `requirepass`: the default user's passwords become this one (or nopass when empty).
    pub fn set_requirepass(&mut self, pass: &str) {
        if let Some(u) = self.users.get_mut("default") {
            let _ = u.apply(b"resetpass", false);
            if pass.is_empty() {
                let _ = u.apply(b"nopass", false);
            } else {
                let _ = u.apply(format!(">{pass}").as_bytes(), false);
            }
        }
    }

    /// Records a refusal, merged with a recent identical one as Redis does.
    pub fn log_denial(&mut self, mut entry: LogEntry, max_len: usize) {
        let found = self.log.iter().position(|e| {
            e.reason == entry.reason
                && e.context == entry.context
                && e.object == entry.object
                && e.username == entry.username
                && entry.ctime_ms - e.ctime_ms < LOG_GROUPING_MS
        });
        if let Some(i) = found {
            if let Some(mut e) = self.log.remove(i) {
                e.count += 1;
                e.ctime_ms = entry.ctime_ms;
                e.client_info = std::mem::take(&mut entry.client_info);
                self.log.push_front(e);
            }
            return;
        }
        self.log.push_front(entry);
        self.log.truncate(max_len);
    }

    /// Replaces every user with the ones an ACL file describes (all or nothing).
    pub fn load_file_text(&mut self, path: &str, text: &str, all_channels: bool) -> Result<(), String> {
        let mut users: BTreeMap<String, User> = BTreeMap::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fail = |msg: &str| format!("{path}:{}: {msg}. ", n + 1);
            let parts: Vec<&str> = line.split_whitespace().collect();
            if parts[0] != "user" || parts.len() < 2 {
                return Err(format!("{path}:{} should start with user keyword followed by the username. ", n + 1));
            }
            let name = parts[1];
            if users.contains_key(name) {
                return Err(format!("WARNING: Duplicate user '{name}' found on line {}. ", n + 1));
            }
            let mut user = User::new(name, all_channels);
            for rule in merge_selectors(&parts[2..].iter().map(|p| p.as_bytes().to_vec()).collect::<Vec<_>>()).map_err(|e| fail(&e))? {
                user.apply(&rule, all_channels)
                    .map_err(|e| fail(&format!("Error in applying operation '{}': {}", String::from_utf8_lossy(&rule), e.text())))?;
            }
            users.insert(name.to_string(), user);
        }
        // A file without the default user gets a fresh one, as in Redis.
        users.entry("default".into()).or_insert_with(User::default_user);
        self.users = users;
        Ok(())
    }

    /// The ACL file's text: one `user` line per user, sorted by name.
    pub fn file_text(&self) -> String {
        self.users.values().map(|u| format!("user {} {}\n", u.name, u.describe())).collect()
    }
}

/// Joins `ACL SETUSER` arguments that form one `( ... )` selector.
pub fn merge_selectors(args: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, String> {
    let mut out = Vec::new();
    let mut open: Option<Vec<u8>> = None;
    for arg in args {
        match open.as_mut() {
            Some(acc) => {
                acc.push(b' ');
                acc.extend_from_slice(arg);
                if arg.ends_with(b")") {
                    out.extend(open.take());
                }
            }
            None if arg.first() == Some(&b'(') && !arg.ends_with(b")") => open = Some(arg.clone()),
            None => out.push(arg.clone()),
        }
    }
    if let Some(acc) = open {
        let first = acc.split(|c| *c == b' ').next().unwrap_or_default();
        return Err(format!("Unmatched parenthesis in acl selector starting at '{}'.", String::from_utf8_lossy(first)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_merges_recent_identical_denials() {
        let mut acl = Acl::default();
        let e = |obj: &str, t| LogEntry {
            count: 1,
            reason: "command",
            context: "toplevel",
            object: obj.into(),
            username: "u".into(),
            ctime_ms: t,
            client_info: String::new(),
        };
        acl.log_denial(e("get", 0), 128);
        acl.log_denial(e("set", 10), 128);
        acl.log_denial(e("get", 20), 128);
        assert_eq!(acl.log.len(), 2);
        assert_eq!((acl.log[0].object.as_str(), acl.log[0].count), ("get", 2));
        acl.log_denial(e("get", 100_000), 1);
        assert_eq!(acl.log.len(), 1);
    }

    #[test]
    fn file_round_trip_and_errors() {
        let mut acl = Acl::default();
        acl.load_file_text("f", "user alice on >pw ~a* +get\nuser default on nopass ~* &* +@all\n", false).unwrap();
        assert!(acl.authenticate(b"alice", b"pw"));
        let text = acl.file_text();
        let mut again = Acl::default();
        again.load_file_text("f", &text, false).unwrap();
        assert_eq!(again.file_text(), text);
        let err = acl.load_file_text("f", "user bob on +nosuch\n", false).unwrap_err();
        assert_eq!(err, "f:1: Error in applying operation '+nosuch': Unknown command or category name in ACL. ");
        assert!(acl.users.contains_key("alice"), "a failed load changes nothing");
    }
}
