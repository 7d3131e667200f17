//! Settings: every parameter as data (name, aliases, kind, default, mutability), parsed from a
//! redis.conf-style file and `--name value` arguments, and read or changed by CONFIG GET/SET.
//!
//! Values are kept in their canonical text form (what CONFIG GET prints); typed getters parse
//! them. Parameters Redis knows but Vermilion does not act on are accepted and reported, so any
//! redis.conf loads.

mod params;
pub mod rewrite;

use std::path::{Path, PathBuf};

use crate::glob::glob_match;
use crate::protocol::split_args;

/// How a parameter's value is validated and normalized.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    Bool,
    Int(i64, i64),
    /// Bytes, written with optional units (`1kb`, `2gb`...), printed as a plain integer.
    Memory,
    Enum(&'static [&'static str]),
    Str,
}

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

    /// The canonical text of a parameter (empty for unknown names).
    pub fn get(&self, name: &str) -> &str {
        Self::index(name).map_or("", |i| &self.values[i])
    }

    pub fn get_int(&self, name: &str) -> i64 {
        Self::index(name).map_or(0, |i| self.ints[i])
    }

    pub fn get_bool(&self, name: &str) -> bool {
        self.get(name) == "yes"
    }

    /// `(name, value)` for every parameter and alias matching the glob `pattern`.
    pub fn matching(&self, pattern: &[u8]) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        for (i, p) in params::PARAMS.iter().enumerate() {
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
        let canonical = normalize(p, value).map_err(SetError::Invalid)?;
        if p.name == "notify-keyspace-events" {
            self.notify_flags = crate::notify::parse(value).unwrap_or(0);
        }
        self.ints[i] = canonical.parse().unwrap_or(0);
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
                    value = format!("{} {}", self.get("save"), value);
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
            let n: i64 = value.parse().map_err(|_| "argument couldn't be parsed into an integer".to_string())?;
            if n < lo || n > hi {
                return Err(format!("argument must be between {lo} and {hi} inclusive"));
            }
            Ok(n.to_string())
        }
        Kind::Memory => parse_memory(value).map(|n| n.to_string()).ok_or_else(|| "argument must be a memory value".into()),
        Kind::Enum(choices) => {
            let lower = value.to_ascii_lowercase();
            if choices.contains(&lower.as_str()) {
                Ok(lower)
            } else {
                Err(format!("argument(s) must be one of the following: {}", choices.join(", ")))
            }
        }
        Kind::Str => {
            if p.name == "save" {
                validate_save(value)?;
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

fn validate_save(value: &str) -> Result<(), Reason> {
    let parts: Vec<&str> = value.split_whitespace().collect();
    if !parts.len().is_multiple_of(2) || parts.iter().any(|p| p.parse::<u64>().is_err()) {
        return Err("Invalid save parameters".into());
    }
    Ok(())
}

/// Redis's `memtoull`: digits with an optional unit (k, kb, m, mb, g, gb; any case).
pub fn parse_memory(s: &str) -> Option<u64> {
    let lower = s.to_ascii_lowercase();
    let split = lower.find(|c: char| !c.is_ascii_digit()).unwrap_or(lower.len());
    let (digits, unit) = lower.split_at(split);
    if digits.is_empty() {
        return None;
    }
    let mul: u64 = match unit {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    digits.parse::<u64>().ok()?.checked_mul(mul)
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
        assert_eq!(c.get("port"), "7001");
        assert_eq!(c.get("save"), "");
        assert_eq!(c.get("appendfsync"), "always");
        assert_eq!(c.get("bind"), "127.0.0.1 ::1");
        assert!(Config::from_args(&["--nosuch".to_string(), "1".to_string()]).is_err());
    }

    #[test]
    fn set_validates_like_redis() {
        let mut c = Config::new();
        assert_eq!(c.set("maxmemory", "1gb", false), Ok(()));
        assert_eq!(c.get("maxmemory"), "1073741824");
        assert_eq!(c.set("appendonly", "maybe", false), Err(SetError::Invalid("argument must be 'yes' or 'no'".into())));
        assert_eq!(c.set("databases", "3", false), Err(SetError::Invalid("can't set immutable config".into())));
        assert_eq!(c.set("nosuch", "3", false), Err(SetError::Unknown));
        assert_eq!(c.set("lua-time-limit", "100", false), Ok(()));
        assert_eq!(c.get("busy-reply-threshold"), "100");
    }
}
