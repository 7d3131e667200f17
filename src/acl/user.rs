//! One ACL user: flags, password hashes and selectors (command, key and channel permissions),
//! the rule language that changes them (`ACL SETUSER`'s modifiers) and its description back
//! into rules (`ACL LIST`), as Redis 7.0 has them.

use std::collections::HashMap;

use sha2::{Digest, Sha256};

use crate::glob::glob_match;
use crate::spec::keyspec::{KEY_READ, KEY_WRITE};
use crate::spec::{all_commands, lookup, COMMANDS, COMMAND_IDS};
use crate::spec::{CommandSpec, Flag};
use crate::util::hex;

/// Redis's command categories, in the order `ACL CAT` lists them (and `ACL LIST` tries them).
pub const CATEGORIES: &[&str] = &[
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

/// Why a modifier was refused (`ERR Error in ACL SETUSER modifier '<op>': <text>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleError {
    Unknown,
    Syntax,
    KeyAfterAll,
    ChannelAfterAll,
    NoSuchPassword,
    BadHash,
    SubcommandFirstArg,
}

impl RuleError {
    pub fn text(self) -> &'static str {
        match self {
            RuleError::Unknown => "Unknown command or category name in ACL",
            RuleError::Syntax => "Syntax error",
            RuleError::KeyAfterAll => "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns",
            RuleError::ChannelAfterAll => "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels",
            RuleError::NoSuchPassword => "The password you are trying to remove from the user does not exist",
            RuleError::BadHash => "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters",
            RuleError::SubcommandFirstArg => "Allowing first-arg of a subcommand is not supported",
        }
    }
}

/// What a permission check refused, with the argument at fault (for ACL LOG and DRYRUN).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Denied {
    Command,
    Key(usize),
    Channel(usize),
}

impl Denied {
    fn rank(self) -> (u8, usize) {
        match self {
            Denied::Command => (1, 0),
            Denied::Key(i) => (2, i),
            Denied::Channel(i) => (4, i),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct KeyPattern {
    flags: u8,
    pattern: Vec<u8>,
}

/// One set of permissions: a command is allowed when one selector allows the command, all
/// its keys and all its channels.
#[derive(Debug, Clone)]
pub struct Selector {
    allowed: Vec<bool>,
    /// Set by `+@all`, cleared by `-@all`: commands added later would be allowed (ACL LIST
    /// starts from `+@all` then).
    future: bool,
    /// Allowed first arguments of commands whose bit is off (`+select|0`), lowercase.
    first_args: HashMap<usize, Vec<Vec<u8>>>,
    all_keys: bool,
    keys: Vec<KeyPattern>,
    all_channels: bool,
    channels: Vec<Vec<u8>>,
}

impl Selector {
    fn new(all_channels: bool) -> Self {
        Selector {
            allowed: vec![false; COMMAND_IDS],
            future: false,
            first_args: HashMap::new(),
            all_keys: false,
            keys: Vec::new(),
            all_channels,
            channels: Vec::new(),
        }
    }

    fn set_command(&mut self, cmd: &CommandSpec, allow: bool) {
        self.allowed[cmd.id] = allow;
        self.first_args.remove(&cmd.id);
        for sub in cmd.subcommands {
            self.allowed[sub.id] = allow;
        }
    }

    fn set_category(&mut self, cat: &str, allow: bool) {
        let tag = format!("@{cat}");
        for cmd in COMMANDS {
            if cmd.acl.contains(&tag.as_str()) {
                self.set_command(cmd, allow);
            }
            for sub in cmd.subcommands {
                if sub.acl.contains(&tag.as_str()) {
                    self.set_command(sub, allow);
                }
            }
        }
    }

    /// Applies one selector modifier.
    pub fn apply(&mut self, op: &[u8]) -> Result<(), RuleError> {
        let lower = op.to_ascii_lowercase();
        match lower.as_slice() {
            b"allkeys" | b"~*" => {
                self.all_keys = true;
                self.keys.clear();
            }
            b"resetkeys" => {
                self.all_keys = false;
                self.keys.clear();
            }
            b"allchannels" | b"&*" => {
                self.all_channels = true;
                self.channels.clear();
            }
            b"resetchannels" => {
                self.all_channels = false;
                self.channels.clear();
            }
            b"allcommands" | b"+@all" => {
                self.allowed.iter_mut().for_each(|b| *b = true);
                self.future = true;
                self.first_args.clear();
            }
            b"nocommands" | b"-@all" => {
                self.allowed.iter_mut().for_each(|b| *b = false);
                self.future = false;
                self.first_args.clear();
            }
            _ => match op.first() {
                // Patterns may not hold whitespace (Redis's ACLStringHasSpaces).
                Some(b'~' | b'%' | b'&') if op.iter().any(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')) => {
                    return Err(RuleError::Syntax)
                }
                Some(b'~') | Some(b'%') => self.add_key_pattern(op)?,
                Some(b'&') => {
                    if self.all_channels {
                        return Err(RuleError::ChannelAfterAll);
                    }
                    let pattern = op[1..].to_vec();
                    if !self.channels.contains(&pattern) {
                        self.channels.push(pattern);
                    }
                }
                Some(&sign @ (b'+' | b'-')) => self.command_rule(&lower[1..], sign == b'+')?,
                _ => return Err(RuleError::Syntax),
            },
        }
        Ok(())
    }

    fn add_key_pattern(&mut self, op: &[u8]) -> Result<(), RuleError> {
        let (flags, pattern) = if op[0] == b'%' {
            // Redis's loop: R and W once each, up to a `~` (or the end: `%R` is the empty
            // pattern, as in Redis).
            let (mut flags, mut at) = (0, 1);
            while at < op.len() {
                let c = op[at];
                at += 1;
                match c.to_ascii_uppercase() {
                    b'R' if flags & KEY_READ == 0 => flags |= KEY_READ,
                    b'W' if flags & KEY_WRITE == 0 => flags |= KEY_WRITE,
                    b'~' => break,
                    _ => return Err(RuleError::Syntax),
                }
            }
            if flags == 0 {
                return Err(RuleError::Syntax);
            }
            (flags, &op[at..])
        } else {
            (KEY_READ | KEY_WRITE, &op[1..])
        };
        if self.all_keys {
            return Err(RuleError::KeyAfterAll);
        }
        if pattern == b"*" && flags == KEY_READ | KEY_WRITE {
            self.all_keys = true;
            self.keys.clear();
            return Ok(());
        }
        match self.keys.iter_mut().find(|k| k.pattern == pattern) {
            Some(k) => k.flags |= flags,
            None => self.keys.push(KeyPattern { flags, pattern: pattern.to_vec() }),
        }
        Ok(())
    }

    fn command_rule(&mut self, name: &[u8], allow: bool) -> Result<(), RuleError> {
        if let Some(cat) = name.strip_prefix(b"@") {
            let cat = std::str::from_utf8(cat).map_err(|_| RuleError::Unknown)?;
            if !CATEGORIES.contains(&cat) {
                return Err(RuleError::Unknown);
            }
            self.set_category(cat, allow);
            return Ok(());
        }
        // Redis's ACLSetSelector: a `+` rule's name is split at its last `|`; a `-` rule's
        // is looked up whole (so `-select|0` names no command).
        let Some(bar) = name.iter().rposition(|&c| c == b'|').filter(|_| allow) else {
            return match lookup_path(name) {
                Some(Named::Ours(cmd)) => {
                    self.set_command(cmd, allow);
                    Ok(())
                }
                Some(Named::RedisOnly { .. }) => Ok(()),
                None => Err(RuleError::Unknown),
            };
        };
        let (head, rest) = (&name[..bar], &name[bar + 1..]);
        let (is_sub, has_subs) = match lookup_path(head).ok_or(RuleError::Unknown)? {
            Named::Ours(cmd) => (head.contains(&b'|'), !cmd.subcommands.is_empty()),
            Named::RedisOnly { sub, container } => (sub, container),
        };
        if is_sub {
            return Err(RuleError::SubcommandFirstArg);
        }
        if rest.is_empty() {
            return Err(RuleError::Syntax);
        }
        if has_subs {
            return match lookup_path(name).ok_or(RuleError::Unknown)? {
                Named::Ours(sub) => {
                    self.set_command(sub, allow);
                    Ok(())
                }
                Named::RedisOnly { .. } => Ok(()),
            };
        }
        // A first argument of a command without subcommands (`+select|0`).
        let Some(Named::Ours(cmd)) = lookup_path(head) else { return Ok(()) };
        if !self.allowed[cmd.id] {
            let list = self.first_args.entry(cmd.id).or_default();
            if !list.iter().any(|a| a == rest) {
                list.push(rest.to_vec());
            }
        }
        Ok(())
    }

    fn command_allowed(&self, cmd: &CommandSpec, args: &[bytes::Bytes]) -> bool {
        if self.allowed[cmd.id] || cmd.has(Flag::NoAuth) {
            return true;
        }
        let Some(firsts) = self.first_args.get(&cmd.id) else { return false };
        args.get(1).is_some_and(|a| firsts.iter().any(|f| f.eq_ignore_ascii_case(a)))
    }

    pub fn key_allowed(&self, key: &[u8], flags: u8) -> bool {
        self.all_keys || self.keys.iter().any(|p| p.flags & flags == flags && glob_match(&p.pattern, key, false))
    }

    pub fn channel_allowed(&self, channel: &[u8], is_pattern: bool) -> bool {
        self.all_channels || self.channels.iter().any(|p| if is_pattern { p == channel } else { glob_match(p, channel, false) })
    }

    /// Checks one command against this selector.
    fn check(&self, cmd: &CommandSpec, args: &[bytes::Bytes]) -> Result<(), Denied> {
        if !self.command_allowed(cmd, args) {
            return Err(Denied::Command);
        }
        if !self.all_keys {
            for (pos, flags) in crate::spec::keyspec::command_keys(cmd, args) {
                if !self.key_allowed(&args[pos], flags) {
                    return Err(Denied::Key(pos));
                }
            }
        }
        if !self.all_channels {
            let (from, is_pattern) = match cmd.name {
                "publish" | "spublish" => (1..2.min(args.len()), false),
                "subscribe" | "ssubscribe" => (1..args.len(), false),
                "psubscribe" => (1..args.len(), true),
                _ => (0..0, false),
            };
            for pos in from {
                if !self.channel_allowed(&args[pos], is_pattern) {
                    return Err(Denied::Channel(pos));
                }
            }
        }
        Ok(())
    }

    fn count_category(&self, cat: &str) -> (usize, usize) {
        let tag = format!("@{cat}");
        let (mut on, mut off) = (0, 0);
        for cmd in COMMANDS.iter().filter(|c| c.acl.contains(&tag.as_str())) {
            if self.allowed[cmd.id] {
                on += 1;
            } else {
                off += 1;
            }
        }
        (on, off)
    }

    /// The command rules that rebuild this selector's bitmap: Redis 7.0's approximation
    /// (start from +@all or -@all, apply the categories most of whose commands differ, then
    /// single commands), commands in table order (Redis's is its hash table's order).
    fn describe_commands(&self) -> String {
        let mut rules = String::new();
        let mut fake = Selector::new(false);
        let additive = !self.future;
        let _ = fake.apply(if additive { b"-@all" } else { b"+@all" });
        rules.push_str(if additive { "-@all " } else { "+@all " });
        // Best fit first: the category with the fewest commands that differ from the user's
        // (then the most in common), while it has more in common than different. What a
        // chosen category accounts for is taken out of the count (Redis's temp selector).
        let mut temp = self.clone();
        loop {
            let mut best: Option<(&str, usize, usize)> = None;
            for cat in CATEGORIES {
                let (on, off) = temp.count_category(cat);
                let (diff, same) = if additive { (off, on) } else { (on, off) };
                if same > diff && best.is_none_or(|(_, d, s)| diff < d || (diff == d && same > s)) {
                    best = Some((cat, diff, same));
                }
            }
            let Some((cat, _, _)) = best else { break };
            fake.set_category(cat, additive);
            temp.set_category(cat, !additive);
            rules.push_str(&format!("{}@{cat} ", if additive { '+' } else { '-' }));
        }
        for cmd in COMMANDS {
            let (user, faked) = (self.allowed[cmd.id], fake.allowed[cmd.id]);
            if user != faked {
                rules.push_str(&format!("{}{} ", if user { '+' } else { '-' }, cmd.name));
                fake.set_command(cmd, user);
            }
            for sub in cmd.subcommands {
                let (user, faked) = (self.allowed[sub.id], fake.allowed[sub.id]);
                if user != faked {
                    rules.push_str(&format!("{}{} ", if user { '+' } else { '-' }, sub.name));
                    fake.set_command(sub, user);
                }
            }
            if !self.allowed[cmd.id] {
                for arg in self.first_args.get(&cmd.id).into_iter().flatten() {
                    rules.push_str(&format!("+{}|{} ", cmd.name, String::from_utf8_lossy(arg)));
                }
            }
        }
        rules.pop();
        rules
    }

    pub fn describe_keys(&self) -> String {
        if self.all_keys {
            return "~*".into();
        }
        let parts: Vec<String> = self
            .keys
            .iter()
            .map(|k| {
                let pat = String::from_utf8_lossy(&k.pattern);
                match k.flags {
                    f if f == KEY_READ | KEY_WRITE => format!("~{pat}"),
                    KEY_READ => format!("%R~{pat}"),
                    _ => format!("%W~{pat}"),
                }
            })
            .collect();
        parts.join(" ")
    }

    pub fn describe_channels(&self) -> String {
        if self.all_channels {
            return "&*".into();
        }
        let parts: Vec<String> = self.channels.iter().map(|c| format!("&{}", String::from_utf8_lossy(c))).collect();
        parts.join(" ")
    }

    /// The selector as rules: keys, channels, commands (`ACLDescribeSelector`).
    pub fn describe(&self) -> String {
        let mut out = String::new();
        let keys = self.describe_keys();
        if !keys.is_empty() {
            out.push_str(&keys);
            out.push(' ');
        }
        if self.all_channels {
            out.push_str("&* ");
        } else {
            out.push_str("resetchannels ");
            let chans = self.describe_channels();
            if !chans.is_empty() {
                out.push_str(&chans);
                out.push(' ');
            }
        }
        out.push_str(&self.describe_commands());
        out
    }

    pub fn commands_text(&self) -> String {
        self.describe_commands()
    }

    /// Whether this selector allows everything (the fast path of the permission check).
    fn unrestricted(&self) -> bool {
        self.all_keys && self.all_channels && self.allowed.iter().all(|b| *b)
    }
}

/// An ACL user.
#[derive(Debug, Clone)]
pub struct User {
    pub name: String,
    pub enabled: bool,
    pub nopass: bool,
    /// `sanitize-payload` / `skip-sanitize-payload` (None: neither was given).
    pub sanitize: Option<bool>,
    /// SHA-256 hex digests, in the order they were added.
    pub passwords: Vec<String>,
    /// The root selector first, then the `(...)` ones.
    pub selectors: Vec<Selector>,
    /// Cached: the root selector allows every command, key and channel.
    pub unrestricted: bool,
}

pub fn password_hash(pass: &[u8]) -> String {
    hex(&Sha256::digest(pass))
}

fn valid_hash(h: &[u8]) -> bool {
    h.len() == 64 && h.iter().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
}

impl User {
    /// A new user as `ACL SETUSER name` creates it: off, no password, no permissions.
    pub fn new(name: &str, all_channels: bool) -> Self {
        User {
            name: name.to_string(),
            enabled: false,
            nopass: false,
            sanitize: None,
            passwords: Vec::new(),
            selectors: vec![Selector::new(all_channels)],
            unrestricted: false,
        }
    }

    /// The default user as a server without ACL configuration has it.
    pub fn default_user() -> Self {
        let mut u = User::new("default", true);
        u.enabled = true;
        u.nopass = true;
        let _ = u.apply(b"~*", true);
        let _ = u.apply(b"+@all", true);
        u
    }

    /// Applies one `ACL SETUSER` modifier. `all_channels`: `acl-pubsub-default allchannels`.
    pub fn apply(&mut self, op: &[u8], all_channels: bool) -> Result<(), RuleError> {
        let r = self.apply_inner(op, all_channels);
        self.unrestricted = self.selectors[0].unrestricted();
        r
    }

    fn apply_inner(&mut self, op: &[u8], all_channels: bool) -> Result<(), RuleError> {
        let lower = op.to_ascii_lowercase();
        match lower.as_slice() {
            b"on" => self.enabled = true,
            b"off" => self.enabled = false,
            b"skip-sanitize-payload" => self.sanitize = Some(false),
            b"sanitize-payload" => self.sanitize = Some(true),
            b"nopass" => {
                self.nopass = true;
                self.passwords.clear();
            }
            b"resetpass" => {
                self.nopass = false;
                self.passwords.clear();
            }
            b"clearselectors" => self.selectors.truncate(1),
            b"reset" => {
                for step in ["resetpass", "resetkeys", "resetchannels"] {
                    self.apply_inner(step.as_bytes(), all_channels)?;
                }
                if all_channels {
                    self.apply_inner(b"allchannels", all_channels)?;
                }
                for step in ["off", "sanitize-payload", "clearselectors", "-@all"] {
                    self.apply_inner(step.as_bytes(), all_channels)?;
                }
            }
            _ => match op.first() {
                Some(b'>') => {
                    let h = password_hash(&op[1..]);
                    if !self.passwords.contains(&h) {
                        self.passwords.push(h);
                    }
                    self.nopass = false;
                }
                Some(b'#') => {
                    if !valid_hash(&op[1..]) {
                        return Err(RuleError::BadHash);
                    }
                    let h = String::from_utf8_lossy(&op[1..]).into_owned();
                    if !self.passwords.contains(&h) {
                        self.passwords.push(h);
                    }
                    self.nopass = false;
                }
                Some(c @ (b'<' | b'!')) => {
                    let h = if *c == b'<' {
                        password_hash(&op[1..])
                    } else {
                        if !valid_hash(&op[1..]) {
                            return Err(RuleError::BadHash);
                        }
                        String::from_utf8_lossy(&op[1..]).into_owned()
                    };
                    let before = self.passwords.len();
                    self.passwords.retain(|p| *p != h);
                    if self.passwords.len() == before {
                        return Err(RuleError::NoSuchPassword);
                    }
                }
                Some(b'(') if op.ends_with(b")") && op.len() >= 2 => {
                    let mut sel = Selector::new(all_channels);
                    let inner = &op[1..op.len() - 1];
                    for part in inner.split(|c| c.is_ascii_whitespace()).filter(|p| !p.is_empty()) {
                        sel.apply(part)?;
                    }
                    self.selectors.push(sel);
                }
                _ => self.selectors[0].apply(op)?,
            },
        }
        Ok(())
    }

    /// Whether `pass` is one of the user's passwords (or the user has none to give).
    pub fn password_ok(&self, pass: &[u8]) -> bool {
        self.nopass || self.passwords.contains(&password_hash(pass))
    }

    /// Checks a command: allowed when one selector allows it whole; otherwise the most
    /// relevant refusal (Redis's order: channel, key, command; the later argument).
    pub fn check(&self, cmd: &CommandSpec, args: &[bytes::Bytes]) -> Result<(), Denied> {
        if self.unrestricted {
            return Ok(());
        }
        let mut worst = Denied::Command;
        for sel in &self.selectors {
            match sel.check(cmd, args) {
                Ok(()) => return Ok(()),
                Err(d) if d.rank() > worst.rank() => worst = d,
                Err(_) => {}
            }
        }
        Err(worst)
    }

    /// The flags `ACL GETUSER` lists.
    pub fn flags(&self) -> Vec<&'static str> {
        let mut out = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            out.push("nopass");
        }
        match self.sanitize {
            Some(false) => out.push("skip-sanitize-payload"),
            Some(true) => out.push("sanitize-payload"),
            None => {}
        }
        out
    }

    /// The user as one line of rules (`ACL LIST`, the ACL file).
    pub fn describe(&self) -> String {
        let mut out = String::new();
        for f in self.flags() {
            out.push_str(f);
            out.push(' ');
        }
        for p in &self.passwords {
            out.push('#');
            out.push_str(p);
            out.push(' ');
        }
        out.push_str(&self.selectors[0].describe());
        for sel in &self.selectors[1..] {
            out.push_str(&format!(" ({})", sel.describe()));
        }
        out
    }

    /// Whether this user may still use every channel `client` is subscribed to.
    pub fn channels_allowed(&self, channels: &[bytes::Bytes], patterns: &[bytes::Bytes]) -> bool {
        let sel_ok = |sel: &Selector| {
            channels.iter().all(|c| sel.channel_allowed(c, false)) && patterns.iter().all(|p| sel.channel_allowed(p, true))
        };
        self.selectors.iter().any(sel_ok)
    }
}

/// Commands in a category, as `ACL CAT category` lists them (subcommands as `cmd|sub`).
pub fn category_commands(cat: &str) -> Vec<&'static str> {
    let tag = format!("@{cat}");
    all_commands().filter(|c| c.acl.contains(&tag.as_str())).map(|c| c.name).collect()
}

/// What an ACL rule's command name (`get`, `config|get`) names.
enum Named {
    Ours(&'static CommandSpec),
    /// A Redis 7.0 command or subcommand that is not implemented here: a rule may name it
    /// (ACL files written for Redis do) and it allows or denies nothing.
    RedisOnly {
        sub: bool,
        container: bool,
    },
}

/// Redis's `ACLLookupCommand`: a command, or `container|subcommand`.
fn lookup_path(name: &[u8]) -> Option<Named> {
    let text = std::str::from_utf8(name).ok()?.to_ascii_lowercase();
    if let Some(&known) = super::redis_only::REDIS_ONLY.iter().find(|n| **n == text) {
        let prefix = format!("{known}|");
        let container = super::redis_only::REDIS_ONLY.iter().any(|n| n.starts_with(&prefix));
        return Some(Named::RedisOnly { sub: known.contains('|'), container });
    }
    let (top, sub) = match name.iter().position(|&c| c == b'|') {
        Some(i) => (&name[..i], Some(&name[i + 1..])),
        None => (name, None),
    };
    let cmd = lookup(top)?;
    match sub {
        None => Some(Named::Ours(cmd)),
        Some(sub) => cmd.subcommands.iter().find(|s| s.sub_name().as_bytes().eq_ignore_ascii_case(sub)).map(Named::Ours),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(rules: &[&str]) -> User {
        let mut u = User::new("u", false);
        for r in rules {
            u.apply(r.as_bytes(), false).unwrap();
        }
        u
    }

    #[test]
    fn describes_like_redis() {
        assert_eq!(User::new("x", false).describe(), "off resetchannels -@all");
        assert_eq!(User::default_user().describe(), "on nopass ~* &* +@all");
        let u = user(&["on", ">pw", "~foo*", "%R~r*", "&chan*", "+@read", "+set", "-get", "+config|get"]);
        assert_eq!(
            u.describe(),
            "on #30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4 ~foo* %R~r* resetchannels &chan* -@all +@read -get +set +config|get"
        );
        assert_eq!(user(&["+select|0", "+select|1", "+select"]).describe(), "off resetchannels -@all +select");
        assert_eq!(user(&["reset"]).describe(), "off sanitize-payload resetchannels -@all");
        assert_eq!(user(&["%RW~*"]).describe(), "off ~* resetchannels -@all");
    }

    #[test]
    fn rule_errors() {
        let mut u = user(&["~*"]);
        assert_eq!(u.apply(b"~foo", false), Err(RuleError::KeyAfterAll));
        assert_eq!(u.apply(b"+nosuch", false), Err(RuleError::Unknown));
        assert_eq!(u.apply(b"-select|0", false), Err(RuleError::Unknown));
        assert_eq!(u.apply(b"+select|", false), Err(RuleError::Syntax));
        assert_eq!(u.apply(b"+config|get|x", false), Err(RuleError::SubcommandFirstArg));
        assert_eq!(u.apply(b"%X~a", false), Err(RuleError::Syntax));
        assert_eq!(u.apply(b"<nope", false), Err(RuleError::NoSuchPassword));
        assert_eq!(u.apply(b"#abc", false), Err(RuleError::BadHash));
        assert_eq!(u.apply(b"bogus", false), Err(RuleError::Syntax));
    }
}
