//! The arguments MONITOR and SLOWLOG must not show: passwords and user rules, replaced by
//! `(redacted)` where Redis 7.0 calls `redactClientCommandArgument` (AUTH, HELLO ... AUTH,
//! MIGRATE ... AUTH/AUTH2, ACL SETUSER, CONFIG SET of a sensitive parameter).

use bytes::Bytes;

use crate::spec::CommandSpec;
use crate::util::eq_ignore_case;

/// The parameters Redis flags SENSITIVE_CONFIG.
const SENSITIVE: &[&str] = &["masteruser", "masterauth", "requirepass"];

/// `args` with the sensitive ones redacted, or None when nothing is (no copy then).
pub fn redacted(cmd: &CommandSpec, args: &[Bytes]) -> Option<Vec<Bytes>> {
    let hidden: Vec<usize> = match cmd.name {
        "auth" => (1..args.len()).collect(),
        "acl|setuser" => (2..args.len()).collect(),
        "hello" => match (2..args.len()).find(|&j| eq_ignore_case(&args[j], "auth") && j + 2 < args.len()) {
            Some(j) => vec![j + 1, j + 2],
            None => Vec::new(),
        },
        "migrate" => {
            let mut v = Vec::new();
            let mut j = 6;
            while j < args.len() {
                if eq_ignore_case(&args[j], "auth") && j + 1 < args.len() {
                    v.push(j + 1);
                    j += 1;
                } else if eq_ignore_case(&args[j], "auth2") && j + 2 < args.len() {
                    v.extend([j + 1, j + 2]);
                    j += 2;
                } else if eq_ignore_case(&args[j], "keys") {
                    break;
                }
                j += 1;
            }
            v
        }
        "config|set" => (2..args.len())
            .step_by(2)
            .filter(|&j| j + 1 < args.len() && SENSITIVE.iter().any(|p| eq_ignore_case(&args[j], p)))
            .map(|j| j + 1)
            .collect(),
        _ => return None,
    };
    if hidden.is_empty() {
        return None;
    }
    let mut out = args.to_vec();
    for j in hidden {
        out[j] = Bytes::from_static(b"(redacted)");
    }
    Some(out)
}
