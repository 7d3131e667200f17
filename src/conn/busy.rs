//! What a connection answers by itself while a script holds the executor: Redis 7.0's
//! rules, from the command table.

use std::sync::atomic::Ordering;

use super::ConnFlags;
use crate::protocol::ProtocolVersion;
use crate::scripting::{KillOutcome, ScriptWatch};
use crate::spec::{self, Flag, Resolved};

/// The replies to a batch while a script is busy, or `None` when the executor must answer
/// it. Redis 7.0's rules, from the command table: NOAUTH first for a client that has not
/// authenticated; SCRIPT KILL and SHUTDOWN NOSAVE are served; the other `allow-busy` commands
/// (AUTH, HELLO, MULTI, WATCH...) change state the executor owns, and a refusal inside MULTI
/// dooms the transaction, so those batches go to the executor, which serves them from the
/// script's hook (`executor/busy.rs`); everything else gets BUSY.
pub fn busy_answers(watch: &ScriptWatch, cmds: &[Vec<bytes::Bytes>], flags: &ConnFlags) -> Option<Vec<u8>> {
    if flags.in_multi.load(Ordering::Acquire) {
        return None;
    }
    busy_answers_outside_multi(watch, cmds, flags)
}

/// [`busy_answers`] for a client not inside MULTI (the executor's busy path uses it for the
/// commands it does not run itself).
pub fn busy_answers_outside_multi(watch: &ScriptWatch, cmds: &[Vec<bytes::Bytes>], flags: &ConnFlags) -> Option<Vec<u8>> {
    let authenticated = flags.authenticated.load(Ordering::Relaxed);
    let proto = if flags.resp3.load(Ordering::Relaxed) { ProtocolVersion::Resp3 } else { ProtocolVersion::Resp2 };
    let mut out = Vec::new();
    let busy = if watch.is_function() { BUSY_FUNCTION } else { BUSY };
    for args in cmds {
        // Redis's order of checks: the name and arity, then authentication, then BUSY.
        let cmd = match spec::resolve(args) {
            Resolved::Found(cmd) => cmd,
            Resolved::Unknown => {
                crate::protocol::encode_reply(&spec::unknown_command_error(args), proto, &mut out);
                continue;
            }
            Resolved::UnknownSubcommand => {
                crate::protocol::encode_reply(&spec::unknown_subcommand_error(args), proto, &mut out);
                continue;
            }
            Resolved::WrongArity(cmd) => {
                crate::protocol::encode_reply(&spec::wrong_arity_error(cmd), proto, &mut out);
                continue;
            }
        };
        if !authenticated && !cmd.has(Flag::NoAuth) {
            out.extend_from_slice(b"-NOAUTH Authentication required.\r\n");
            continue;
        }
        let allowed = cmd.has(Flag::AllowBusy).then_some(cmd);
        match allowed.map(|c| c.name) {
            Some(name @ ("script|kill" | "function|kill")) => {
                let by_function = name == "function|kill";
                out.extend_from_slice(match watch.kill(by_function) {
                    KillOutcome::Killed => b"+OK\r\n".as_slice(),
                    KillOutcome::NotBusy => b"-NOTBUSY No scripts in execution right now.\r\n",
                    KillOutcome::Unkillable => UNKILLABLE,
                    KillOutcome::UnkillableMaster => UNKILLABLE_MASTER,
                    // The text names the command that would work.
                    KillOutcome::WrongKind if by_function => BUSY,
                    KillOutcome::WrongKind => BUSY_FUNCTION,
                })
            }
            Some("function|stats") => {
                if !watch.is_function() {
                    out.extend_from_slice(BUSY);
                    continue;
                }
                // The function ended meanwhile: the executor answers.
                let f = watch.running_function()?;
                let ms = f.started.elapsed().as_millis() as u64;
                let reply = crate::scripting::functions::stats_reply(Some((f.name, f.argv, ms)), f.libraries, f.functions);
                crate::protocol::encode_reply(&reply, proto, &mut out);
            }
            Some("shutdown") => {
                // SHUTDOWN parses its options first (Redis runs it during a busy script).
                let opt = |name: &str| args[1..].iter().any(|a| crate::util::opt_is(a, name));
                let known = args[1..].iter().all(|a| ["nosave", "save", "now", "force", "abort"].iter().any(|o| crate::util::opt_is(a, o)));
                if !known || (opt("abort") && args.len() > 2) || (opt("nosave") && opt("save")) {
                    out.extend_from_slice(b"-ERR syntax error\r\n");
                } else if opt("abort") {
                    out.extend_from_slice(b"-ERR No shutdown in progress.\r\n");
                } else if opt("nosave") {
                    // The hook stops the script and the executor the server; nothing of the
                    // script is kept.
                    crate::log::warning("User requested shutdown...");
                    watch.request_shutdown();
                    return Some(out);
                } else {
                    out.extend_from_slice(busy);
                }
            }
            None => out.extend_from_slice(busy),
            Some(_) => return None,
        }
    }
    Some(out)
}

const BUSY: &[u8] = b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n";
const BUSY_FUNCTION: &[u8] = b"-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.\r\n";
const UNKILLABLE_MASTER: &[u8] =
    b"-UNKILLABLE The busy script was sent by a master instance in the context of replication and cannot be killed.\r\n";
const UNKILLABLE: &[u8] = b"-UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.\r\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_answers_follow_redis_order_of_checks() {
        let (guest, user, user3) = (ConnFlags::default(), ConnFlags::default(), ConnFlags::default());
        user.authenticated.store(true, Ordering::Relaxed);
        user3.authenticated.store(true, Ordering::Relaxed);
        user3.resp3.store(true, Ordering::Relaxed);
        let w = ScriptWatch::default();
        w.start(false, None, false);
        let cmd = |parts: &[&str]| parts.iter().map(|p| bytes::Bytes::copy_from_slice(p.as_bytes())).collect::<Vec<_>>();
        assert_eq!(busy_answers(&w, &[cmd(&["GET", "k"])], &guest).unwrap(), b"-NOAUTH Authentication required.\r\n");
        assert_eq!(busy_answers(&w, &[cmd(&["GET", "k"]), cmd(&["SHUTDOWN"])], &user).unwrap(), [BUSY, BUSY].concat());
        assert_eq!(busy_answers(&w, &[cmd(&["PING"]), cmd(&["AUTH", "pw"])], &user), None);
        assert_eq!(busy_answers(&w, &[cmd(&["script", "KILL"])], &user).unwrap(), b"+OK\r\n");
        assert!(w.must_abort());
        w.finish();
        w.start(false, None, false);
        assert_eq!(busy_answers(&w, &[cmd(&["FUNCTION", "STATS"])], &user).unwrap(), BUSY);
        assert_eq!(busy_answers(&w, &[cmd(&["FUNCTION", "KILL"])], &user).unwrap(), BUSY);
        // The name and the arity are checked before authentication and BUSY, as in Redis.
        let text = |c: &[&str], f: &ConnFlags| String::from_utf8_lossy(&busy_answers(&w, &[cmd(c)], f).unwrap()).into_owned();
        assert_eq!(text(&["GET"], &user), "-ERR wrong number of arguments for 'get' command\r\n");
        assert!(text(&["NOSUCHCMD"], &guest).starts_with("-ERR unknown command 'NOSUCHCMD'"));
        assert_eq!(text(&["SCRIPT", "bogus"], &user), "-ERR unknown subcommand 'bogus'. Try SCRIPT HELP.\r\n");
        assert_eq!(text(&["SCRIPT", "KILL", "x"], &user), "-ERR wrong number of arguments for 'script|kill' command\r\n");
        assert_eq!(text(&["SHUTDOWN", "bogus"], &user), "-ERR syntax error\r\n");
        assert_eq!(text(&["SHUTDOWN", "NOSAVE", "SAVE"], &user), "-ERR syntax error\r\n");
        assert_eq!(text(&["SHUTDOWN", "SAVE"], &user).as_bytes(), BUSY);
        w.finish();
        let f = crate::scripting::RunningFunction {
            name: "spin".into(),
            argv: vec![bytes::Bytes::from_static(b"FCALL")],
            started: std::time::Instant::now(),
            libraries: 1,
            functions: 2,
        };
        w.start(false, Some(f), false);
        assert_eq!(busy_answers(&w, &[cmd(&["GET", "k"])], &user).unwrap(), BUSY_FUNCTION);
        assert_eq!(busy_answers(&w, &[cmd(&["SCRIPT", "KILL"])], &user).unwrap(), BUSY_FUNCTION);
        let stats = busy_answers(&w, &[cmd(&["FUNCTION", "STATS"])], &user3).unwrap();
        assert!(stats.starts_with(b"%2\r\n$14\r\nrunning_script\r\n%3\r\n$4\r\nname\r\n$4\r\nspin\r\n"), "{stats:?}");
        assert_eq!(busy_answers(&w, &[cmd(&["FUNCTION", "KILL"])], &user).unwrap(), b"+OK\r\n");
    }
}
