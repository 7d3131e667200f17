//! Which arguments of a command are keys, and what the command does to each: read from the
//! table's key specifications (Redis 7's `begin_search`/`find_keys`), as Redis's
//! `getKeysUsingKeySpecs` does. ACL key permissions are checked against this.

use bytes::Bytes;

use super::{CommandSpec, Doc};
use crate::util::eq_ignore_case;

/// The command reads the key's value (`access` flag).
pub const KEY_READ: u8 = 1;
/// The command inserts, updates or deletes (`insert`, `update`, `delete` flags).
pub const KEY_WRITE: u8 = 2;

fn field<'a>(map: &'a Doc, name: &str) -> Option<&'a Doc> {
    match map {
        Doc::Map(entries) => entries.iter().find(|(k, _)| *k == name).map(|(_, v)| v),
        _ => None,
    }
}

fn str_field(map: &Doc, name: &str) -> Option<&'static str> {
    match field(map, name)? {
        Doc::Str(s) => Some(s),
        _ => None,
    }
}

fn int_field(map: &Doc, name: &str) -> Option<i64> {
    match field(map, name)? {
        Doc::Int(n) => Some(*n),
        _ => None,
    }
}

/// The access a key spec's flags give (`KEY_READ` | `KEY_WRITE`).
fn access(spec: &Doc) -> u8 {
    let mut out = 0;
    if let Some(Doc::Arr(flags)) = field(spec, "flags") {
        for f in flags.iter() {
            match f {
                Doc::Str("access") => out |= KEY_READ,
                Doc::Str("insert") | Doc::Str("update") | Doc::Str("delete") => out |= KEY_WRITE,
                _ => {}
            }
        }
    }
    out
}

/// Every key argument of `args` (the whole argv, name included) with its access flags.
pub fn command_keys(cmd: &CommandSpec, args: &[Bytes]) -> Vec<(usize, u8)> {
    let argc = args.len() as i64;
    let mut out = Vec::new();
    for spec in cmd.key_specs {
        let flags = access(spec);
        let (Some(begin), Some(find)) = (field(spec, "begin_search"), field(spec, "find_keys")) else { continue };
        let (Some(bspec), Some(fspec)) = (field(begin, "spec"), field(find, "spec")) else { continue };
        let first = match str_field(begin, "type") {
            Some("index") => int_field(bspec, "index").unwrap_or(0),
            Some("keyword") => {
                let (Some(keyword), Some(from)) = (str_field(bspec, "keyword"), int_field(bspec, "startfrom")) else { continue };
                let (start, end) = if from > 0 { (from, argc - 1) } else { (argc + from, 1) };
                let mut found = None;
                let mut i = start;
                while i >= 1 && i < argc {
                    if eq_ignore_case(&args[i as usize], keyword) {
                        found = Some(i + 1);
                        break;
                    }
                    if i == end {
                        break;
                    }
                    i += if start <= end { 1 } else { -1 };
                }
                match found {
                    Some(f) => f,
                    None => continue,
                }
            }
            // SORT's STORE and BY/GET: found by the command's own parser below.
            _ => continue,
        };
        let (last, step) = match str_field(find, "type") {
            Some("range") => {
                let lastkey = int_field(fspec, "lastkey").unwrap_or(0);
                let step = int_field(fspec, "keystep").unwrap_or(1).max(1);
                let limit = int_field(fspec, "limit").unwrap_or(0);
                let last = if lastkey >= 0 {
                    first + lastkey
                } else if limit == 0 {
                    argc + lastkey
                } else {
                    first + ((argc - first) / limit + lastkey)
                };
                (last, step)
            }
            Some("keynum") => {
                let idx = first + int_field(fspec, "keynumidx").unwrap_or(0);
                if idx < 1 || idx >= argc {
                    continue;
                }
                let Some(numkeys) = crate::util::parse_i64(&args[idx as usize]).filter(|n| *n >= 0) else { continue };
                let step = int_field(fspec, "keystep").unwrap_or(1).max(1);
                let begin = first + int_field(fspec, "firstkey").unwrap_or(0);
                let last = begin + (numkeys - 1) * step;
                if numkeys > 0 && last >= argc {
                    // Redis reports such a command as having no valid keys; it fails later.
                    continue;
                }
                out.extend((0..numkeys).map(|n| ((begin + n * step) as usize, flags)));
                continue;
            }
            _ => continue,
        };
        let mut i = first;
        while i <= last && i >= 1 && i < argc {
            out.push((i as usize, flags));
            i += step;
        }
    }
    match cmd.name {
        "sort" | "sort_ro" => sort_store_key(args, &mut out),
        // `variable_flags`: what the key undergoes depends on the arguments.
        "set" => {
            let get = args.iter().skip(3).any(|a| eq_ignore_case(a, "get"));
            out = vec![(1, if get { KEY_READ | KEY_WRITE } else { KEY_WRITE })];
        }
        "bitfield" if bitfield_read_only(args) => out = vec![(1, KEY_READ)],
        _ => {}
    }
    out
}

/// BITFIELD with only GET (and OVERFLOW) operations reads its key (Redis's
/// `bitfieldGetKeys`); anything else, a syntax error included, counts as a write.
fn bitfield_read_only(args: &[Bytes]) -> bool {
    let mut i = 2;
    while i < args.len() {
        let left = args.len() - i - 1;
        if eq_ignore_case(&args[i], "get") && left >= 2 {
            i += 3;
        } else if eq_ignore_case(&args[i], "overflow") && left >= 1 {
            i += 2;
        } else {
            return false;
        }
    }
    true
}

/// SORT ... STORE dest: the destination is a written key (Redis's `sortGetKeys`).
fn sort_store_key(args: &[Bytes], out: &mut Vec<(usize, u8)>) {
    let mut i = 2;
    while i < args.len() {
        let skip = if eq_ignore_case(&args[i], "limit") {
            2
        } else if eq_ignore_case(&args[i], "get") || eq_ignore_case(&args[i], "by") {
            1
        } else if eq_ignore_case(&args[i], "store") {
            if i + 1 < args.len() {
                out.push((i + 1, KEY_WRITE));
            }
            1
        } else {
            0
        };
        i += 1 + skip;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::{resolve, Resolved};

    fn keys(argv: &[&str]) -> Vec<(usize, u8)> {
        let args: Vec<Bytes> = argv.iter().map(|a| Bytes::copy_from_slice(a.as_bytes())).collect();
        let Resolved::Found(cmd) = resolve(&args) else { panic!("{argv:?} does not resolve") };
        command_keys(cmd, &args)
    }

    #[test]
    fn key_positions_follow_the_specs() {
        assert_eq!(keys(&["get", "k"]), vec![(1, KEY_READ)]);
        assert_eq!(keys(&["set", "k", "v"]), vec![(1, KEY_WRITE)]);
        assert_eq!(keys(&["set", "k", "v", "get"]), vec![(1, KEY_READ | KEY_WRITE)]);
        assert_eq!(keys(&["bitfield", "k", "get", "u8", "0"]), vec![(1, KEY_READ)]);
        assert_eq!(keys(&["bitfield", "k", "set", "u8", "0", "1"]), vec![(1, KEY_READ | KEY_WRITE)]);
        assert_eq!(keys(&["mset", "a", "1", "b", "2"]), vec![(1, KEY_WRITE), (3, KEY_WRITE)]);
        assert_eq!(keys(&["eval", "return 1", "2", "a", "b", "c"]), vec![(3, KEY_READ | KEY_WRITE), (4, KEY_READ | KEY_WRITE)]);
        assert_eq!(keys(&["eval", "return 1", "5", "a"]), vec![]);
        assert_eq!(keys(&["zunionstore", "d", "2", "a", "b"]), vec![(1, KEY_WRITE), (3, KEY_READ), (4, KEY_READ)]);
        assert_eq!(keys(&["sort", "l", "by", "x", "store", "d"]), vec![(1, KEY_READ), (5, KEY_WRITE)]);
        assert_eq!(keys(&["lmove", "a", "b", "left", "right"]), vec![(1, KEY_READ | KEY_WRITE), (2, KEY_WRITE)]);
        assert_eq!(keys(&["blpop", "a", "b", "0"]), vec![(1, KEY_READ | KEY_WRITE), (2, KEY_READ | KEY_WRITE)]);
        assert_eq!(keys(&["ping"]), vec![]);
    }
}
