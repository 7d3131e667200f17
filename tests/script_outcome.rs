//! What a script hands the executor when it ends (`ScriptOutcome`): whether it wrote, whether
//! it is random-dirty, and its write effects in order with their database and `set_repl`
//! target. The AOF builds on exactly this, so it is checked here through the library, with
//! the executor driven directly (no sockets).

use bytes::Bytes;
use vermilion::config::Config;
use vermilion::executor::{Executor, Request};
use vermilion::scripting::{Effect, ScriptOutcome};

fn args(parts: &[&str]) -> Vec<Bytes> {
    parts.iter().map(|p| Bytes::copy_from_slice(p.as_bytes())).collect()
}

struct Harness {
    exec: Executor,
    rx: tokio::sync::mpsc::UnboundedReceiver<vermilion::state::ClientOutput>,
}

impl Harness {
    fn new() -> Harness {
        let mut exec = Executor::new(Config::new());
        exec.keep_script_effects = true;
        let rx = exec.connect_detached(1);
        Harness { exec, rx }
    }

    /// Runs one command; returns the raw reply bytes.
    fn run(&mut self, parts: &[&str]) -> Vec<u8> {
        self.exec.handle(Request::Commands { id: 1, cmds: vec![args(parts)], protocol_error: None });
        self.exec.release_replies();
        let mut out = Vec::new();
        while let Ok(vermilion::state::ClientOutput::Replies(b)) = self.rx.try_recv() {
            out.extend(b);
        }
        out
    }

    fn eval(&mut self, body: &str) -> (Vec<u8>, ScriptOutcome) {
        self.exec.last_script_outcome = None;
        let reply = self.run(&["EVAL", body, "0"]);
        let outcome = self.exec.last_script_outcome.take().expect("the script ran");
        (reply, outcome)
    }
}

fn effect(db: usize, parts: &[&str], repl: u8) -> Effect {
    Effect { db, argv: args(parts), repl }
}

#[test]
fn a_read_only_script_wrote_nothing() {
    let mut h = Harness::new();
    let before = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let (reply, outcome) = h.eval("return redis.call('get', 'a')");
    assert_eq!(reply, b"$-1\r\n");
    assert!(outcome.time_ms >= before && outcome.time_ms < before + 5000, "the frozen time travels with the outcome");
    assert_eq!(outcome, ScriptOutcome { time_ms: outcome.time_ms, ..ScriptOutcome::default() });
    // A write command that changes nothing is no effect either.
    let (_, outcome) = h.eval("return redis.call('del', 'missing')");
    assert!(!outcome.wrote && outcome.effects.is_empty());
}

/// redis.call reuses the name of the previous command when the script spells it the same
/// way (a static or shared argv[0]): every spelling still reaches the effects as written.
#[test]
fn command_names_keep_the_scripts_spelling() {
    let mut h = Harness::new();
    let body = "for i = 1, 2 do redis.call('incr', 'a') redis.call('INCR', 'a') redis.call('Incr', 'a') redis.call('incr', 'a') end \
                redis.call('SET', 'b', 'x') redis.call('SET', 'b', 'y') return redis.call('get', 'a')";
    let (reply, outcome) = h.eval(body);
    assert_eq!(reply, b"$1\r\n8\r\n");
    let names: Vec<&[u8]> = outcome.effects.iter().map(|e| &e.argv[0][..]).collect();
    let spelled: [&[u8]; 4] = [b"incr", b"INCR", b"Incr", b"incr"];
    let mut want: Vec<&[u8]> = spelled.iter().chain(spelled.iter()).copied().collect();
    want.extend([&b"SET"[..], b"SET"]);
    assert_eq!(names, want);
    assert_eq!(outcome.effects[9].argv[2], Bytes::from_static(b"y"));
}

#[test]
fn effects_are_recorded_in_order_with_their_database() {
    let mut h = Harness::new();
    let (reply, outcome) =
        h.eval("redis.call('set', 'a', '1') redis.call('select', 2) redis.call('incr', 'c') return redis.call('get', 'a')");
    assert_eq!(reply, b"$-1\r\n", "db 2 has no 'a'");
    assert!(outcome.wrote && !outcome.random_dirty);
    assert_eq!(outcome.effects, vec![effect(0, &["set", "a", "1"], 3), effect(2, &["incr", "c"], 3)]);
    // The caller's database did not move.
    assert_eq!(h.run(&["GET", "a"]), b"$1\r\n1\r\n");
}

#[test]
fn random_commands_make_a_script_random_dirty_and_writes_stay_allowed() {
    let mut h = Harness::new();
    h.run(&["SADD", "s", "x", "y", "z"]);
    let (_, outcome) = h.eval("local m = redis.call('srandmember', 's') redis.call('set', 'picked', m) return m");
    assert!(outcome.random_dirty && outcome.wrote);
    assert_eq!(outcome.effects.len(), 1);
    let (_, outcome) = h.eval("redis.call('spop', 's') return 1");
    assert!(outcome.random_dirty && outcome.wrote);
    for body in [
        "return redis.call('time')",
        "return redis.call('randomkey')",
        "return redis.call('scan', 0)",
        "return redis.call('sscan', 's', 0)",
    ] {
        let (_, outcome) = h.eval(body);
        assert!(outcome.random_dirty && !outcome.wrote, "{body}");
    }
    // Deterministic under frozen time and sorted output: not random.
    for body in [
        "return redis.call('ttl', 's')",
        "return redis.call('smembers', 's')",
        "return redis.call('keys', '*')",
        "return redis.call('hgetall', 'h')",
    ] {
        let (_, outcome) = h.eval(body);
        assert!(!outcome.random_dirty, "{body}");
    }
}

#[test]
fn set_repl_targets_travel_with_each_effect() {
    let mut h = Harness::new();
    let (_, outcome) = h.eval(
        "redis.call('set', 'a', '1')
         redis.set_repl(redis.REPL_NONE) redis.call('set', 'b', '1')
         redis.set_repl(redis.REPL_AOF) redis.call('set', 'c', '1')
         redis.set_repl(redis.REPL_REPLICA) redis.call('set', 'd', '1')
         redis.set_repl(redis.REPL_ALL) redis.call('set', 'e', '1')",
    );
    let targets: Vec<(String, u8)> = outcome.effects.iter().map(|e| (String::from_utf8_lossy(&e.argv[1]).into_owned(), e.repl)).collect();
    let want: Vec<(String, u8)> = [("a", 3), ("b", 0), ("c", 1), ("d", 2), ("e", 3)].iter().map(|(k, r)| (k.to_string(), *r)).collect();
    assert_eq!(targets, want);
}

#[test]
fn a_failing_script_keeps_the_effects_it_made_before_the_error() {
    let mut h = Harness::new();
    h.run(&["SET", "str", "x"]);
    let (reply, outcome) = h.eval("redis.call('set', 'a', '1') redis.call('incr', 'str') redis.call('set', 'b', '1')");
    assert!(reply.starts_with(b"-ERR value is not an integer or out of range script: "), "{}", String::from_utf8_lossy(&reply));
    assert_eq!(outcome.effects, vec![effect(0, &["set", "a", "1"], 3)]);
}
