//! Settings: every parameter as data (name, aliases, kind, default, mutability), parsed from a
//! redis.conf-style file and `--name value` arguments, and read or changed by CONFIG GET/SET.
//!
//! Values are kept in their canonical text form (what CONFIG GET prints); typed getters parse
//! them. Parameters Redis knows but Vermilion does not act on are accepted and reported, so any
//! redis.conf loads.

mod params;
pub use params::P;
pub mod rewrite;

use std::path::{Path, PathBuf};

use crate::glob::glob_match;
use crate::protocol::split_args;

/// How a parameter's value is validated and normalized.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    Bool,
    Int(i64, i64),
    /// Bytes, written with optional units (`1kb`, `2gb`...), printed as a plain integer;
    /// with Redis's bounds.
    Memory(u64, u64),
    Enum(&'static [&'static str]),
    Str,
}

/// Parameters CONFIG SET refuses unless `enable-protected-configs` allows it (Redis 7.0's
/// PROTECTED_CONFIG).
pub const PROTECTED: &[&str] = &["dir", "dbfilename"];

/// Redis's HIDDEN_CONFIG test knobs: settable and readable by name, never listed by a
/// pattern (CONFIG GET *) nor written by CONFIG REWRITE unless the file has them.
pub const HIDDEN: &[&str] = &["key-load-delay", "loading-process-events-interval-bytes", "rdb-key-save-delay"];

/// One parameter's definition.
#[derive(Debug)]
pub struct Param {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub kind: Kind,
    pub default: &'static str,
    pub mutable: bool,
}

/// The current settings.
#[derive(Debug, Clone)]
pub struct Config {
    values: Vec<String>,
    /// Each value read as an integer (0 when it is not one), kept with `values`: handlers
    /// read limits such as `hash-max-listpack-entries` on every command.
    ints: Vec<i64>,
    /// `notify-keyspace-events` as flags, kept apart: its printed form drops `n` next to `A`
    /// (as Redis prints it), so the text cannot be parsed back.
    pub notify_flags: u32,
    /// The config file given on the command line, if any (absolute).
    pub config_file: Option<PathBuf>,
    /// `user` directives (name and rules), turned into ACL users at startup.
    pub users: Vec<String>,
}

/// Why a value was refused: Redis's reason text (after "argument ...").
pub type Reason = String;

impl Default for Config {
    fn default() -> Self {
        Self::new()
    }
}

impl Config {
    pub fn new() -> Self {
        let mut values: Vec<String> = params::PARAMS.iter().map(|p| p.default.to_string()).collect();
        if let Some(i) = Self::index("dir") {
            values[i] = std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_else(|_| ".".into());
        }
        let ints = values.iter().map(|v| v.parse().unwrap_or(0)).collect();
        Config { values, ints, config_file: None, notify_flags: 0, users: Vec::new() }
    }

    fn index(name: &str) -> Option<usize> {
        type Index = std::collections::HashMap<&'static str, usize, crate::util::FixedTableHasher>;
        static INDEX: std::sync::OnceLock<Index> = std::sync::OnceLock::new();
        let index = INDEX.get_or_init(|| {
            let mut m = Index::default();
            for (i, p) in params::PARAMS.iter().enumerate() {
                m.insert(p.name, i);
                for a in p.aliases {
                    m.insert(*a, i);
                }
            }
            m
        });
        // Parameter names are lowercase; most lookups come from code and need no copy.
        if name.bytes().any(|b| b.is_ascii_uppercase()) {
            index.get(name.to_ascii_lowercase().as_str()).copied()
        } else {
            index.get(name).copied()
        }
    }

    pub fn param(name: &str) -> Option<&'static Param> {
        Self::index(name).map(|i| &params::PARAMS[i])
    }

    /// The canonical text of a parameter.
    pub fn get(&self, p: P) -> &str {
        &self.values[p as usize]
    }

    /// A numeric parameter's value (0 for one that is not a number).
    pub fn get_int(&self, p: P) -> i64 {
        self.ints[p as usize]
    }

    pub fn get_bool(&self, p: P) -> bool {
        self.get(p) == "yes"
    }

    /// The canonical text of a parameter named at run time (CONFIG GET, a config file's
    /// directive), or of an alias; empty for unknown names.
    pub fn get_named(&self, name: &str) -> &str {
        Self::index(name).map_or("", |i| &self.values[i])
    }

    /// `(name, value)` for every parameter and alias matching the glob `pattern`.
    pub fn matching(&self, pattern: &[u8]) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        for (i, p) in params::PARAMS.iter().enumerate().filter(|(_, p)| !HIDDEN.contains(&p.name)) {
            for name in std::iter::once(&p.name).chain(p.aliases.iter()) {
                if glob_match(pattern, name.as_bytes(), true) {
                    out.push((*name, self.values[i].clone()));
                }
            }
        }
        out
    }

    /// Validates and stores a value. `startup` allows immutable parameters.
    pub fn set(&mut self, name: &str, value: &str, startup: bool) -> Result<(), SetError> {
        let i = Self::index(name).ok_or(SetError::Unknown)?;
        let p = &params::PARAMS[i];
        if !p.mutable && !startup {
            return Err(SetError::Invalid("can't set immutable config".into()));
        }
        let canonical = match p.name {
            // Each class given replaces that class only.
            "client-output-buffer-limit" => output_buffer_limits(self.get_named(p.name), value),
            _ => normalize(p, value),
        }
        .map_err(SetError::Invalid)?;
        // CONFIG SET resizes the backlog, which Redis keeps at 16 KB or more.
        let canonical = match canonical.parse::<u64>() {
            Ok(n) if p.name == "repl-backlog-size" && !startup && n < 16384 => "16384".to_string(),
            _ => canonical,
        };
        if p.name == "notify-keyspace-events" {
            self.notify_flags = crate::notify::parse(value).unwrap_or(0);
        }
        // Past i64 (maxmemory 18446744073709551615): as good as unlimited.
        self.ints[i] = canonical.parse().unwrap_or_else(|_| if canonical.parse::<u64>().is_ok() { i64::MAX } else { 0 });
        self.values[i] = canonical;
        Ok(())
    }

    /// Reads a redis.conf-style file, then applies `--name value` arguments on top of it.
    pub fn from_args(args: &[String]) -> Result<Config, String> {
        let mut config = Config::new();
        let mut text = String::new();
        let mut rest = args;
        if let Some(first) = args.first() {
            if !first.starts_with("--") {
                let path = Path::new(first);
                let content = std::fs::read_to_string(path).map_err(|e| format!("Fatal error, can't open config file '{}': {e}", first))?;
                text.push_str(&content);
                text.push('\n');
                config.config_file = Some(std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()));
                rest = &args[1..];
            }
        }
        // `--name a b --other c` becomes the lines "name a b" and "other c", like Redis.
        let mut options = String::new();
        for arg in rest {
            if let Some(name) = arg.strip_prefix("--") {
                if !options.is_empty() {
                    options.push('\n');
                }
                options.push_str(name);
            } else {
                options.push(' ');
                options.push_str(&quote(arg));
            }
        }
        text.push_str(&options);
        config.load_text(&text)?;
        Ok(config)
    }

    /// Applies the directives of a config text; errors carry Redis's fatal message.
    pub fn load_text(&mut self, text: &str) -> Result<(), String> {
        let mut save_seen = false;
        for (lineno, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fail = |msg: &str| {
                format!(
                    "\n*** FATAL CONFIG FILE ERROR (Vermilion {}) ***\nReading the configuration file, at line {}\n>>> '{}'\n{}",
                    crate::VERSION,
                    lineno + 1,
                    line,
                    msg
                )
            };
            let Some(parts) = split_args(line.as_bytes()) else {
                return Err(fail("Unbalanced quotes in configuration line"));
            };
            let parts: Vec<String> = parts.into_iter().map(|p| String::from_utf8_lossy(&p).into_owned()).collect();
            let Some((name, values)) = parts.split_first() else { continue };
            let name = name.to_ascii_lowercase();
            match name.as_str() {
                "include" => {
                    let path = values.first().ok_or_else(|| fail("Bad directive or wrong number of arguments"))?;
                    let content = std::fs::read_to_string(path).map_err(|e| fail(&format!("Can't open included file: {e}")))?;
                    self.load_text(&content)?;
                    continue;
                }
                "user" => {
                    self.users.push(values.join(" "));
                    continue;
                }
                // Accepted for compatibility; these have no effect here yet.
                "rename-command" | "loadmodule" | "sentinel" => continue,
                _ => {}
            }
            let mut value = values.join(" ");
            if name == "save" {
                // Several `save` lines accumulate, as in Redis.
                if save_seen && !value.is_empty() {
                    value = format!("{} {}", self.get(P::Save), value);
                }
                save_seen = true;
            }
            if Self::index(&name).is_none() || (values.is_empty() && name != "save") {
                return Err(fail("Bad directive or wrong number of arguments"));
            }
            self.set(&name, &value, true).map_err(|e| fail(&e.reason()))?;
        }
        Ok(())
    }
}

/// Why CONFIG SET refused a parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetError {
    Unknown,
    Invalid(Reason),
}

impl SetError {
    pub fn reason(&self) -> String {
        match self {
            SetError::Unknown => "Bad directive or wrong number of arguments".into(),
            SetError::Invalid(r) => r.clone(),
        }
    }
}

fn normalize(p: &Param, value: &str) -> Result<String, Reason> {
    match p.kind {
        Kind::Bool => match value.to_ascii_lowercase().as_str() {
            v @ ("yes" | "no") => Ok(v.to_string()),
            _ => Err("argument must be 'yes' or 'no'".into()),
        },
        Kind::Int(lo, hi) => {
            // Redis's string2ll: no sign but '-', no leading zero, no space.
            let n = crate::util::parse_i64(value.as_bytes()).ok_or_else(|| "argument couldn't be parsed into an integer".to_string())?;
            if n < lo || n > hi {
                return Err(format!("argument must be between {lo} and {hi} inclusive"));
            }
            // Redis keeps hz within 1..=500 and shows the clamped value.
            let n = if p.name == "hz" { n.clamp(1, 500) } else { n };
            Ok(n.to_string())
        }
        Kind::Memory(lo, hi) => {
            if p.name == "maxmemory-clients" {
                // A percentage is tried after a memory value, as string2ll of what precedes '%'.
                let pct = value.strip_suffix('%').filter(|p| !p.is_empty() && parse_memory(value).is_none());
                if let Some(n) = pct.and_then(|p| crate::util::parse_i64(p.as_bytes())).filter(|n| *n >= 0) {
                    if n > 100 {
                        return Err("percentage argument must be less or equal to 100".into());
                    }
                    // Stored as a negative number: 0% reads back as the memory value 0.
                    return Ok(if n == 0 { "0".into() } else { format!("{n}%") });
                }
            }
            let Some(n) = parse_memory(value) else {
                let what = if p.name == "maxmemory-clients" { "memory or percent" } else { "memory" };
                return Err(format!("argument must be a {what} value"));
            };
            if n < lo || n > hi {
                return Err(format!("argument must be between {lo} and {hi} inclusive"));
            }
            Ok(n.to_string())
        }
        Kind::Enum(choices) if p.name.starts_with("shutdown-on-sig") => shutdown_flags(choices, value),
        Kind::Enum(choices) => {
            let lower = value.to_ascii_lowercase();
            if !choices.contains(&lower.as_str()) {
                return Err(format!("argument(s) must be one of the following: {}", choices.join(", ")));
            }
            // Redis prints an enum by the first name of its value: `relative` is `yes`.
            Ok(if p.name == "oom-score-adj" && lower == "relative" { "yes".into() } else { lower })
        }
        Kind::Str => {
            match p.name {
                "save" => return save_params(value),
                "dbfilename" if !is_base_name(value) => return Err("dbfilename can't be a path, just a filename".into()),
                "appendfilename" if value.is_empty() => return Err("appendfilename can't be empty".into()),
                "appendfilename" if !is_base_name(value) => return Err("appendfilename can't be a path, just a filename".into()),
                "appenddirname" if value.is_empty() => return Err("appenddirname can't be empty".into()),
                "appenddirname" if !is_base_name(value) => return Err("appenddirname can't be a path, just a dirname".into()),
                "proc-title-template" if !valid_proc_title(value) => {
                    return Err("template format is invalid or contains unknown variables".into())
                }
                "cluster-announce-hostname" => valid_hostname(value)?,
                _ => {}
            }
            if p.name == "oom-score-adj-values" {
                return oom_score_adj_values(value);
            }
            if p.name == "latency-tracking-info-percentiles" {
                return percentiles(value);
            }
            if p.name == "notify-keyspace-events" {
                let flags =
                    crate::notify::parse(value).ok_or_else(|| "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".to_string())?;
                return Ok(crate::notify::to_string(flags));
            }
            Ok(value.to_string())
        }
    }
}

/// `client-output-buffer-limit`: `<class> <hard> <soft> <soft seconds>` groups, each replacing
/// its class in `current`; printed in Redis's order (normal, slave, pubsub).
fn output_buffer_limits(current: &str, value: &str) -> Result<String, Reason> {
    let words = split_multi_arg(value);
    if !words.len().is_multiple_of(4) {
        return Err("Wrong number of arguments in buffer limit configuration.".into());
    }
    let class = |w: &str| match w.to_ascii_lowercase().as_str() {
        "normal" => Some(0),
        "slave" | "replica" => Some(1),
        "pubsub" => Some(2),
        _ => None,
    };
    let mut classes: [[String; 3]; 3] = Default::default();
    for group in current.split_whitespace().collect::<Vec<_>>().chunks(4) {
        if let (4, Some(c)) = (group.len(), class(group[0])) {
            classes[c] = [group[1].to_string(), group[2].to_string(), group[3].to_string()];
        }
    }
    let mut given = Vec::new();
    for group in words.chunks(4) {
        let c = class(group[0]).ok_or_else(|| "Invalid client class specified in buffer limit configuration.".to_string())?;
        // The sizes take units; the seconds are strtoll's, kept in a C int.
        let sizes = [parse_memory(group[1]), parse_memory(group[2])];
        let seconds = strtoll_whole(group[3]).map(|s| s as i32).filter(|s| *s >= 0);
        let (Some(hard), Some(soft), Some(seconds)) = (sizes[0], sizes[1], seconds) else {
            return Err("Error in hard, soft or soft_seconds setting in buffer limit configuration.".into());
        };
        given.push((c, [hard.to_string(), soft.to_string(), seconds.to_string()]));
    }
    for (c, limits) in given {
        classes[c] = limits;
    }
    let names = ["normal", "slave", "pubsub"];
    Ok(names.iter().zip(&classes).map(|(n, l)| format!("{n} {} {} {}", l[0], l[1], l[2])).collect::<Vec<_>>().join(" "))
}

/// `oom-score-adj-values`: three integers within -2000..=2000.
fn oom_score_adj_values(value: &str) -> Result<String, Reason> {
    let words = split_multi_arg(value);
    if words.len() != 3 {
        return Err("wrong number of arguments".into());
    }
    let values: Option<Vec<i64>> = words.iter().map(|w| strtoll_whole(w).filter(|v| (-2000..=2000).contains(v))).collect();
    let values = values.ok_or_else(|| "Invalid oom-score-adj-values, elements must be between -2000 and 2000.".to_string())?;
    Ok(values.iter().map(i64::to_string).collect::<Vec<_>>().join(" "))
}

/// `latency-tracking-info-percentiles`: numbers within 0..=100, printed as `%f` without
/// trailing zeros, as Redis prints them.
fn percentiles(value: &str) -> Result<String, Reason> {
    let mut out = Vec::new();
    for word in split_multi_arg(value) {
        let p =
            crate::util::parse_f64(word.as_bytes()).ok_or_else(|| "Invalid latency-tracking-info-percentiles parameters".to_string())?;
        if !(0.0..=100.0).contains(&p) {
            return Err("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]".into());
        }
        let text = format!("{p:.6}");
        out.push(text.trim_end_matches('0').trim_end_matches('.').to_string());
    }
    Ok(out.join(" "))
}

/// `save`: pairs of seconds (1 or more) and changes (0 or more), read as strtoll reads them
/// and printed back as numbers ("03600 +1" is "3600 1"); "" is no snapshots.
fn save_params(value: &str) -> Result<String, Reason> {
    let words = split_multi_arg(value);
    let numbers: Option<Vec<i64>> = words.iter().map(|w| strtoll_whole(w)).collect();
    let numbers = numbers.filter(|n| n.len().is_multiple_of(2)).ok_or_else(|| "Invalid save parameters".to_string())?;
    if numbers.chunks(2).any(|pair| pair[0] < 1 || pair[1] < 0) {
        return Err("Invalid save parameters".into());
    }
    // The number of changes is a C int in Redis.
    Ok(numbers.chunks(2).map(|pair| format!("{} {}", pair[0], pair[1] as i32)).collect::<Vec<_>>().join(" "))
}

/// `shutdown-on-sigint`/`-sigterm`: flags (`save now`, `nosave force`...) or `default`,
/// printed in Redis's order.
fn shutdown_flags(choices: &[&str], value: &str) -> Result<String, Reason> {
    let words = split_multi_arg(value);
    if words.is_empty() {
        return Err(format!("argument(s) must be one of the following: {}", choices.join(", ")));
    }
    let mut bits = 0u32;
    for word in words {
        let Some(i) = choices.iter().position(|c| c.eq_ignore_ascii_case(word)) else {
            return Err(format!("argument(s) must be one of the following: {}", choices.join(", ")));
        };
        // `default` is 0; the others one bit each.
        bits |= if i == 0 { 0 } else { 1 << (i - 1) };
    }
    if bits & 0b11 == 0b11 {
        return Err("shutdown options SAVE and NOSAVE can't be used simultaneously".into());
    }
    if bits == 0 {
        return Ok(choices[0].to_string());
    }
    Ok(choices[1..].iter().enumerate().filter(|(i, _)| bits & (1 << i) != 0).map(|(_, c)| *c).collect::<Vec<_>>().join(" "))
}

/// A multi-word value split as Redis splits it for CONFIG SET (`sdssplitlen` on single
/// spaces: two spaces make an empty word; "" has no words).
fn split_multi_arg(value: &str) -> Vec<&str> {
    if value.is_empty() {
        return Vec::new();
    }
    value.split(' ').collect()
}

/// C's `strtoll` that must use the whole string: leading white space, a sign, digits
/// (leading zeros allowed), out-of-range values clamped; "" is 0.
fn strtoll_whole(s: &str) -> Option<i64> {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    if t.is_empty() {
        return s.is_empty().then_some(0);
    }
    let (neg, digits) = match t.as_bytes()[0] {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let magnitude = digits.bytes().fold(0i128, |v, c| (v * 10 + (c - b'0') as i128).min(i64::MAX as i128 + 1));
    let v = if neg { -magnitude } else { magnitude };
    Some(v.clamp(i64::MIN as i128, i64::MAX as i128) as i64)
}

/// Redis's `pathIsBaseName`: no directory separator.
fn is_base_name(name: &str) -> bool {
    !name.contains(['/', '\\'])
}

/// `proc-title-template`: Redis expands it (`sdstemplate`: `{name}` variables, `{{` a
/// brace) and refuses unknown variables, broken syntax, or a title that is empty once
/// trimmed (with an empty process title and no cluster or sentinel mode).
fn valid_proc_title(template: &str) -> bool {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        if after.is_empty() {
            return false;
        }
        if let Some(next) = after.strip_prefix('{') {
            out.push('{');
            rest = next;
            continue;
        }
        let Some(close) = after.find('}') else { return false };
        match &after[..close] {
            "title" | "server-mode" | "unixsocket" | "config-file" => {}
            "listen-addr" | "port" | "tls-port" => out.push('x'),
            _ => return false,
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    !out.trim_matches(' ').is_empty()
}

/// `cluster-announce-hostname`: letters, digits, hyphens and dots, under 256 bytes.
fn valid_hostname(name: &str) -> Result<(), Reason> {
    if name.len() >= 256 {
        return Err("Hostnames must be less than 256 characters".into());
    }
    if !name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'.') {
        return Err("Hostnames may only contain alphanumeric characters, hyphens or dots".into());
    }
    Ok(())
}

/// Redis 7.0's `memtoull`: digits (possibly none: "" and "kb" are 0) and an optional unit
/// (k, kb, m, mb, g, gb, b; any case). As in C, digits past 2^64 saturate (strtoull's
/// ERANGE is not checked) and the unit multiplies modulo 2^64.
pub fn parse_memory(s: &str) -> Option<u64> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    if digits.len() >= 128 {
        return None;
    }
    let mul: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    let n = if digits.is_empty() { 0 } else { digits.parse::<u64>().unwrap_or(u64::MAX) };
    Some(n.wrapping_mul(mul))
}

/// Quotes a command-line value so the config-line splitter reads it back whole.
fn quote(arg: &str) -> String {
    if !arg.is_empty() && !arg.contains([' ', '"', '\'', '\\', '\t']) {
        return arg.to_string();
    }
    let mut out = String::from("\"");
    for c in arg.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_and_file_syntax() {
        let args: Vec<String> = ["--port", "7001", "--save", "", "--appendfsync", "always", "--bind", "127.0.0.1", "::1"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let c = Config::from_args(&args).unwrap();
        assert_eq!(c.get(P::Port), "7001");
        assert_eq!(c.get(P::Save), "");
        assert_eq!(c.get(P::Appendfsync), "always");
        assert_eq!(c.get(P::Bind), "127.0.0.1 ::1");
        assert!(Config::from_args(&["--nosuch".to_string(), "1".to_string()]).is_err());
    }

    #[test]
    fn set_validates_like_redis() {
        let mut c = Config::new();
        assert_eq!(c.set("maxmemory", "1gb", false), Ok(()));
        assert_eq!(c.get(P::Maxmemory), "1073741824");
        assert_eq!(c.set("appendonly", "maybe", false), Err(SetError::Invalid("argument must be 'yes' or 'no'".into())));
        assert_eq!(c.set("databases", "3", false), Err(SetError::Invalid("can't set immutable config".into())));
        assert_eq!(c.set("nosuch", "3", false), Err(SetError::Unknown));
        assert_eq!(c.set("lua-time-limit", "100", false), Ok(()));
        assert_eq!(c.get(P::BusyReplyThreshold), "100");
    }
}
