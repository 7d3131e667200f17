//! Which arguments of a command are keys, and what the command does to each: read from the
//! table's key specifications (Redis 7's `begin_search`/`find_keys`), as Redis's
//! `getKeysUsingKeySpecs` does. ACL key permissions are checked against this.

use bytes::Bytes;

use super::{Begin, CommandSpec, Find, KeySpec};
use crate::util::eq_ignore_case;

/// The command reads the key's value (`access` flag).
pub const KEY_READ: u8 = 1;
/// The command inserts, updates or deletes (`insert`, `update`, `delete` flags).
pub const KEY_WRITE: u8 = 2;

/// Whether one of the command's key specs names keys (Redis's `doesCommandHaveKeys`).
pub fn has_keys(cmd: &CommandSpec) -> bool {
    cmd.keys.iter().any(|spec| !spec.has_flag("not_key"))
}

/// The access a key spec's flags give (`KEY_READ` | `KEY_WRITE`).
fn access(spec: &KeySpec) -> u8 {
    let mut out = 0;
    for f in spec.flags {
        match *f {
            "access" => out |= KEY_READ,
            "insert" | "update" | "delete" => out |= KEY_WRITE,
            _ => {}
        }
    }
    out
}

/// Where a key spec's keys begin: `Some(Some(i))`, `Some(None)` when its keyword is absent
/// (no keys from it), `None` for a start of unknown kind (SORT's BY/GET).
fn spec_start(spec: &KeySpec, args: &[Bytes]) -> Option<Option<i64>> {
    let argc = args.len() as i64;
    match spec.begin {
        Begin::Index(index) => Some(Some(index)),
        Begin::Keyword { keyword, startfrom: from } => {
            // Redis's getKeysUsingKeySpecs: the end index itself is never compared (a
            // keyword in the last argument has no key after it; argv[1] is the first key).
            let (start, end) = if from > 0 { (from, argc - 1) } else { (argc + from, 1) };
            let mut i = start;
            while i != end && i >= 1 && i < argc {
                if eq_ignore_case(&args[i as usize], keyword) {
                    return Some(Some(i + 1));
                }
                i += if start <= end { 1 } else { -1 };
            }
            Some(None)
        }
        Begin::Unknown => None,
    }
}

/// A key spec's (first, last, step) positions from where its keys begin (Redis's
/// `getKeysUsingKeySpecs`); `None` for a find of unknown kind or a key count that is not a
/// number of 0 or more. `last < first` means no keys.
fn spec_bounds(spec: &KeySpec, args: &[Bytes], first: i64) -> Option<(i64, i64, i64)> {
    let argc = args.len() as i64;
    match spec.find {
        Find::Range { lastkey, keystep, limit } => {
            let last = match (lastkey >= 0, limit) {
                (true, _) => first + lastkey,
                (false, 0) => argc + lastkey,
                (false, limit) => first + ((argc - first) / limit + lastkey),
            };
            Some((first, last, keystep.max(1)))
        }
        Find::Keynum { keynumidx, firstkey, keystep } => {
            let idx = usize::try_from(first + keynumidx).ok().filter(|i| *i >= 1)?;
            let numkeys = args.get(idx).and_then(|a| crate::util::parse_i64(a)).filter(|n| *n >= 0)?;
            let begin = first + firstkey;
            Some((begin, begin + numkeys - 1, keystep.max(1)))
        }
        Find::Unknown => None,
    }
}

/// Every key argument of `args` (the whole argv, name included) with its access flags.
pub fn command_keys(cmd: &CommandSpec, args: &[Bytes]) -> Vec<(usize, u8)> {
    let argc = args.len() as i64;
    let mut out = Vec::new();
    for spec in cmd.keys {
        // A shard channel (SPUBLISH, SSUBSCRIBE...) is checked as a channel, not a key.
        if spec.has_flag("not_key") {
            continue;
        }
        let flags = access(spec);
        // SORT's STORE and BY/GET: found by the command's own parser below.
        let Some(Some(first)) = spec_start(spec, args) else { continue };
        let Some((first, last, step)) = spec_bounds(spec, args, first) else { continue };
        // A key count past the arguments: Redis reports no valid keys (the command fails later).
        if last >= argc && matches!(spec.find, Find::Keynum { .. }) {
            continue;
        }
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

/// The positions of the keys `args` may change (insert, update or delete), from the key
/// specs; `None` when they cannot be known before the command runs (no key specs, or one
/// marked incomplete).
pub fn written_keys(cmd: &CommandSpec, args: &[Bytes]) -> Option<Vec<usize>> {
    if cmd.keys.is_empty() || cmd.keys.iter().any(|s| s.has_flag("incomplete")) {
        return None;
    }
    let mut written: Vec<usize> = command_keys(cmd, args).into_iter().filter(|(_, f)| f & KEY_WRITE != 0).map(|(p, _)| p).collect();
    // A keyword spec finds its first keyword; a command that takes the option again writes
    // the key after the last one (GEORADIUS ... STORE a STORE b writes b): every key after
    // the keyword counts (capturing one too many is harmless).
    for spec in cmd.keys.iter().filter(|s| access(s) & KEY_WRITE != 0) {
        if let Begin::Keyword { keyword, .. } = spec.begin {
            let after = (1..args.len().saturating_sub(1)).filter(|&i| eq_ignore_case(&args[i], keyword)).map(|i| i + 1);
            written.extend(after);
        }
    }
    written.sort_unstable();
    written.dedup();
    Some(written)
}

/// COMMAND GETKEYS's key positions, as Redis 7.0's `getKeysFromCommandWithSpecs` finds
/// them: from the key specs, all or nothing; where one cannot be followed (a bad or
/// too-large key count, a spec marked incomplete or of unknown start) the command's own key
/// finder (Redis's `*GetKeys` procedures) decides, and finds nothing for a bad key count.
pub fn getkeys(cmd: &CommandSpec, args: &[Bytes]) -> Vec<usize> {
    match strict_spec_keys(cmd, args) {
        Some(keys) => keys.into_iter().map(|(i, _)| i).collect(),
        None => finder_keys(cmd.name, args),
    }
}

/// The key positions the specs give, each with the spec that gave it; `None` when a spec
/// cannot be followed.
fn strict_spec_keys(cmd: &CommandSpec, args: &[Bytes]) -> Option<Vec<(usize, &'static KeySpec)>> {
    let argc = args.len() as i64;
    let mut out = Vec::new();
    for spec in cmd.keys {
        if spec.has_flag("not_key") {
            continue;
        }
        if spec.has_flag("incomplete") {
            return None;
        }
        let Some(first) = spec_start(spec, args)? else { continue };
        let (first, last, step) = spec_bounds(spec, args, first)?;
        if last >= argc || last < first || first >= argc {
            return None;
        }
        out.extend((first..=last).step_by(step as usize).map(|i| (i as usize, spec)));
    }
    Some(out)
}

/// COMMAND GETKEYSANDFLAGS: each key position with the flags Redis 7.0 prints for it. Where
/// the specs give the key, the spec's flags; where Redis's own key finder does (SET and
/// BITFIELD, whose flags vary, and specs that cannot be followed), the flags that finder sets:
/// SORT's and MIGRATE's, and none from the generic key-count finder.
pub fn getkeys_and_flags(cmd: &CommandSpec, args: &[Bytes]) -> Vec<(usize, Vec<&'static str>)> {
    const RO_ACCESS: &[&str] = &["RO", "access"];
    const RW_ACCESS_UPDATE: &[&str] = &["RW", "access", "update"];
    const OW_UPDATE: &[&str] = &["OW", "update"];
    let fixed = |i: usize, flags: &[&'static str]| vec![(i, flags.to_vec())];
    match cmd.name {
        "set" if args.iter().skip(3).any(|a| eq_ignore_case(a, "get")) => return fixed(1, RW_ACCESS_UPDATE),
        "set" => return fixed(1, OW_UPDATE),
        "bitfield" if bitfield_read_only(args) => return fixed(1, RO_ACCESS),
        "bitfield" => return fixed(1, RW_ACCESS_UPDATE),
        _ => {}
    }
    if let Some(keys) = strict_spec_keys(cmd, args) {
        return keys.into_iter().map(|(i, spec)| (i, spec.flags.to_vec())).collect();
    }
    finder_keys(cmd.name, args)
        .into_iter()
        .map(|i| {
            let flags: &[&str] = match cmd.name {
                "sort" | "sort_ro" if i == 1 => RO_ACCESS,
                "sort" | "sort_ro" => OW_UPDATE,
                "migrate" => &["RW", "access", "delete"],
                _ => &[],
            };
            (i, flags.to_vec())
        })
        .collect()
}

/// Redis's `genericGetKeys`: `atoi` of the key count, no keys when it is out of range.
fn counted_keys(args: &[Bytes], store: Option<usize>, count_at: usize, first: usize) -> Vec<usize> {
    let digits = |a: &Bytes| {
        let s = String::from_utf8_lossy(a);
        let t = s.trim_start();
        let end =
            t.char_indices().find(|(i, c)| !(c.is_ascii_digit() || (*i == 0 && (*c == '-' || *c == '+')))).map_or(t.len(), |(i, _)| i);
        t[..end].parse::<i64>().unwrap_or(0)
    };
    let num = args.get(count_at).map_or(0, digits);
    if num < 1 || num > args.len().saturating_sub(first) as i64 {
        return Vec::new();
    }
    // The store key comes last, as `genericGetKeys` lists it.
    (first..first + num as usize).chain(store).collect()
}

/// The key finders of the commands whose specs can fail (Redis's `*GetKeys`).
fn finder_keys(name: &str, args: &[Bytes]) -> Vec<usize> {
    match name {
        "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro" | "blmpop" | "bzmpop" => counted_keys(args, None, 2, 3),
        "zunion" | "zinter" | "zdiff" | "zintercard" | "sintercard" | "lmpop" | "zmpop" => counted_keys(args, None, 1, 2),
        "zunionstore" | "zinterstore" | "zdiffstore" => counted_keys(args, Some(1), 2, 3),
        "sort" | "sort_ro" => {
            // The last STORE counts, as when SORT runs.
            let mut store = None;
            let mut i = 2;
            while i < args.len() {
                if eq_ignore_case(&args[i], "limit") {
                    i += 2;
                } else if eq_ignore_case(&args[i], "get") || eq_ignore_case(&args[i], "by") {
                    i += 1;
                } else if eq_ignore_case(&args[i], "store") && i + 1 < args.len() {
                    store = Some(i + 1);
                }
                i += 1;
            }
            std::iter::once(1).chain(store).collect()
        }
        "migrate" => {
            // MIGRATE host port key|"" db timeout [COPY] [REPLACE] [AUTH pw | AUTH2 user pw] [KEYS k...]
            let mut i = 6;
            while i < args.len() {
                if eq_ignore_case(&args[i], "auth") {
                    i += 1;
                } else if eq_ignore_case(&args[i], "auth2") {
                    i += 2;
                } else if eq_ignore_case(&args[i], "keys") {
                    return if args[3].is_empty() { (i + 1..args.len()).collect() } else { Vec::new() };
                }
                i += 1;
            }
            vec![3]
        }
        _ => Vec::new(),
    }
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
    use crate::spec::{resolve, Resolved};

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

    fn written(argv: &[&str]) -> Option<Vec<usize>> {
        let args: Vec<Bytes> = argv.iter().map(|a| Bytes::copy_from_slice(a.as_bytes())).collect();
        let Resolved::Found(cmd) = resolve(&args) else { panic!("{argv:?} does not resolve") };
        written_keys(cmd, &args)
    }

    #[test]
    fn written_keys_cover_every_store_option() {
        assert_eq!(written(&["set", "k", "v"]), Some(vec![1]));
        assert_eq!(written(&["get", "k"]), Some(vec![]));
        assert_eq!(written(&["lmpop", "2", "a", "b", "left"]), Some(vec![2, 3]));
        // The handler writes the last STORE's key; every one is captured.
        assert_eq!(written(&["georadius", "g", "0", "0", "1", "km", "store", "a", "store", "g"]), Some(vec![7, 9]));
        assert_eq!(written(&["georadius", "g", "0", "0", "1", "km", "storedist", "d"]), Some(vec![7]));
        // MIGRATE's key spec is incomplete: unknown before it runs.
        assert_eq!(written(&["migrate", "h", "1", "", "0", "5", "keys", "a"]), None);
    }

    #[test]
    fn keyword_search_stops_before_its_end_as_redis_does() {
        let getkeys_of = |argv: &[&str]| {
            let args: Vec<Bytes> = argv.iter().map(|a| Bytes::copy_from_slice(a.as_bytes())).collect();
            let Resolved::Found(cmd) = resolve(&args) else { panic!("{argv:?} does not resolve") };
            getkeys(cmd, &args)
        };
        // A STORE in the last argument names no key (Redis's loop never compares it).
        assert_eq!(getkeys_of(&["georadius", "k", "0", "0", "1", "km", "store"]), vec![1]);
    }
}
