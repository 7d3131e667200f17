//! Blocking stream reads, differentially against the real redis-server 7.0 (RESP2 and RESP3):
//! XREAD BLOCK and XREADGROUP BLOCK served by XADD from another client (several waiters, in
//! blocking order; `$` and explicit IDs; a group serves one consumer per entry), timeouts,
//! CLIENT UNBLOCK (TIMEOUT and ERROR), the key deleted, overwritten, renamed, flushed or
//! swapped away and the group destroyed while a client waits, BLOCK inside MULTI and from
//! scripts, and a seeded random run of stream and consumer-group commands from three clients
//! (env `DIFF_SEED` replays it, `DIFF_SECONDS` bounds it, default 6).
//!
//! Script lines follow tests/common/diff.rs (`N>` connection), with `@` comparing time fields
//! loosely as in tests/streams.rs, plus:
//! `!block N <cmd>` sends on connection N of both sides without reading (then waits 50 ms so
//! both servers park the client), `!reply N` reads and compares that connection's reply,
//! `!blocked N` checks that neither side answered on N within [`STAYS_BLOCKED`], `!id N`
//! records each side's client id of N and `!unblock N [TIMEOUT|ERROR]` sends CLIENT UNBLOCK
//! for it from connection 0 (each side with its own id).

mod common;

use std::time::{Duration, Instant};

use common::diff::{parse_script_line, show, show_cmd, Broken, Conn, DiffPair, Got};
use common::stream_loose::same_loosely;
use common::Rng;

/// How long a client that should stay blocked is given to answer anyway.
const STAYS_BLOCKED: Duration = Duration::from_millis(200);
/// Connections the scripts use (all switched to the script's protocol).
const CONNS: usize = 4;

/// One command on the current connection, compared loosely (`loose`) or exactly.
fn check(d: &mut DiffPair, args: &[Vec<u8>], loose: bool) -> Result<Got, String> {
    let (a, b) = d.exchange(args);
    let top_pel = args.first().is_some_and(|a| a.eq_ignore_ascii_case(b"XPENDING"));
    let same = if loose { same_loosely(&a, &b, top_pel) } else { a == b };
    if same {
        return Ok(a);
    }
    Err(format!("difference on connection {}\n  sent:  {}\n  redis: {}\n  ours:  {}", d.current(), show_cmd(args), show(&a), show(&b)))
}

/// Reads one reply within `wait` (`Err(Timeout)` if none came; the connection's normal
/// timeout is restored).
fn read_within(c: &mut Conn, wait: Duration) -> Got {
    c.set_timeout(wait);
    let got = c.read();
    c.set_timeout(Duration::from_secs(5));
    got
}

// ---------------------------------------------------------------------------------------
// Scripts

/// Client ids recorded by `!id N`: (redis side, our side) per connection.
type Ids = Vec<Option<(String, String)>>;

fn client_id(c: &mut Conn) -> String {
    c.call(&["CLIENT", "ID"]).expect("CLIENT ID").value.as_int().expect("an id").to_string()
}

fn run(d: &mut DiffPair, lines: &[&str]) -> Vec<String> {
    let mut diffs = Vec::new();
    let mut ids: Ids = vec![None; CONNS];
    for (n, line) in lines.iter().enumerate() {
        let line = line.trim();
        let words: Vec<&str> = line.split_whitespace().collect();
        let conn = |w: Option<&&str>| -> usize {
            w.and_then(|w| w.parse().ok()).unwrap_or_else(|| panic!("script line {n}: no connection in {line:?}"))
        };
        let mut fail = |what: String| diffs.push(format!("line {n} `{line}`: {what}"));
        match words.first().copied() {
            Some("!block") => {
                let i = conn(words.get(1));
                let rest = line.splitn(3, ' ').nth(2).unwrap_or_default();
                let args = parse_script_line(rest).2.expect("a command");
                let (r, o) = d.conns(i);
                r.cmd(&args).expect("send");
                o.cmd(&args).expect("send");
                std::thread::sleep(Duration::from_millis(50));
            }
            Some("!reply") => {
                let i = conn(words.get(1));
                let (r, o) = d.conns(i);
                let (a, b) = (r.read(), o.read());
                if !same_loosely(&a, &b, false) {
                    fail(format!("the blocked client's reply differs\n  redis: {}\n  ours:  {}", show(&a), show(&b)));
                }
            }
            Some("!blocked") => {
                let i = conn(words.get(1));
                let (r, o) = d.conns(i);
                let (a, b) = (read_within(r, STAYS_BLOCKED), read_within(o, STAYS_BLOCKED));
                if a != Err(Broken::Timeout) || b != Err(Broken::Timeout) {
                    fail(format!("should still be blocked\n  redis: {}\n  ours:  {}", show(&a), show(&b)));
                }
            }
            Some("!id") => {
                let i = conn(words.get(1));
                let (r, o) = d.conns(i);
                ids[i] = Some((client_id(r), client_id(o)));
            }
            Some("!unblock") => {
                let i = conn(words.get(1));
                let (rid, oid) = ids[i].clone().unwrap_or_else(|| panic!("line {n}: no `!id {i}` before"));
                let mode: Vec<&str> = words.get(2).into_iter().copied().collect();
                let (r, o) = d.conns(0);
                let mut ra = vec!["CLIENT", "UNBLOCK", rid.as_str()];
                ra.extend(&mode);
                let mut oa = vec!["CLIENT", "UNBLOCK", oid.as_str()];
                oa.extend(&mode);
                let (a, b) = (r.call(&ra), o.call(&oa));
                if a != b {
                    fail(format!("CLIENT UNBLOCK answered differently\n  redis: {}\n  ours:  {}", show(&a), show(&b)));
                }
            }
            Some(w) if w.starts_with('!') => panic!("unknown script directive {line:?}"),
            _ => {
                let (loose, rest) = match line.strip_prefix('@') {
                    Some(rest) => (true, rest),
                    None => (false, line),
                };
                let (conn, _, args) = parse_script_line(rest);
                let Some(args) = args else { continue };
                d.on(conn.unwrap_or(0));
                if let Err(e) = check(d, &args, loose) {
                    fail(e);
                }
            }
        }
    }
    d.on(0);
    diffs
}

/// Runs `script` under RESP2 then RESP3, each from an empty keyspace on fresh connections.
fn both_protocols(d: &mut DiffPair, name: &str, script: &[&str]) {
    for proto in [2u8, 3] {
        d.reset_conns();
        for c in 0..CONNS {
            d.on(c);
            assert!(d.hello(proto).expect("HELLO").is_ok());
        }
        d.on(0);
        let mut lines = vec!["FLUSHALL"];
        lines.extend_from_slice(script);
        let diffs = run(d, &lines);
        assert!(diffs.is_empty(), "script '{name}' (RESP{proto}): {} differences from redis-server:\n{}", diffs.len(), diffs.join("\n"));
    }
    d.reset_conns();
}

fn start() -> DiffPair {
    DiffPair::start_with(&["--enable-debug-command", "yes"], &[])
}

#[test]
fn xread_block_is_served_by_xadd() {
    let mut d = start();
    both_protocols(
        &mut d,
        "xread block",
        &[
            "XADD s 1-1 f v1",
            "!block 1 XREAD BLOCK 0 STREAMS s $",
            "!block 2 XREAD BLOCK 0 COUNT 1 STREAMS other s $ $",
            "!block 3 XREAD BLOCK 0 STREAMS s 0",
            "!reply 3",
            "!blocked 1",
            "!blocked 2",
            "XADD s 2-1 f v2",
            "!reply 1",
            "!reply 2",
            // Another key: only it in the reply.
            "!block 1 XREAD BLOCK 0 STREAMS s other $ $",
            "!block 2 XREAD BLOCK 0 STREAMS other $",
            "XADD other 1-1 g w",
            "!reply 1",
            "!reply 2",
            // A transaction's several entries arrive together (COUNT still applies).
            "!block 1 XREAD BLOCK 0 STREAMS s $",
            "!block 2 XREAD BLOCK 0 COUNT 2 STREAMS s $",
            "MULTI",
            "XADD s 3-1 a 1",
            "XADD s 4-1 a 2",
            "XADD s 5-1 a 3",
            "EXEC",
            "!reply 1",
            "!reply 2",
            // What adds nothing serves nobody.
            "!block 1 XREAD BLOCK 0 STREAMS s $",
            "XADD s 1-1 f v",
            "XDEL s 5-1",
            "XTRIM s MAXLEN 0",
            "XSETID s 10-0",
            "XADD s NOMKSTREAM 0-1 f v",
            "!blocked 1",
            "XADD s 10-1 f v",
            "!reply 1",
            // An explicit ID ahead of the stream: only entries after it serve.
            "!block 1 XREAD BLOCK 0 STREAMS s 20-0",
            "XADD s 15-0 f v",
            "!blocked 1",
            "XADD s 21-0 f v",
            "!reply 1",
            // A bare ms is <ms>-0.
            "!block 1 XREAD BLOCK 0 STREAMS s 21",
            "XADD s 21-5 f v",
            "!reply 1",
            // A key that does not exist yet; `$` there means 0-0.
            "!block 1 XREAD BLOCK 0 STREAMS fresh $",
            "!block 2 XREAD BLOCK 0 STREAMS fresh 5-0",
            "XADD fresh 3-0 f v",
            "!reply 1",
            "!blocked 2",
            "XADD fresh 6-0 f v",
            "!reply 2",
            // Deleted or turned into a string, the key leaves XREAD waiters blocked, and `$`
            // keeps the ID it had when the client blocked.
            "!block 1 XREAD BLOCK 0 STREAMS s $",
            "DEL s",
            "!blocked 1",
            "SET s string",
            "!blocked 1",
            "DEL s",
            "XADD s 1-1 new stream",
            "!blocked 1",
            "XADD s 30-0 newer entry",
            "!reply 1",
            "XREAD BLOCK 0 STREAMS s 0",
            "XREAD BLOCK 50 STREAMS s $",
            "XREAD BLOCK 50 STREAMS nokey $",
            "XREAD BLOCK 50 COUNT 5 STREAMS nokey s 0 $",
        ],
    );
}

#[test]
fn xreadgroup_block_serves_one_consumer_per_entry() {
    let mut d = start();
    both_protocols(
        &mut d,
        "xreadgroup block",
        &[
            "XGROUP CREATE s g $ MKSTREAM",
            "!block 1 XREADGROUP GROUP g alice BLOCK 0 STREAMS s >",
            "!block 2 XREADGROUP GROUP g bob BLOCK 0 COUNT 5 STREAMS s >",
            // Not created until served.
            "@XINFO CONSUMERS s g",
            "XADD s 1-1 f v1",
            "!reply 1",
            "!blocked 2",
            "XADD s 2-1 f v2",
            "!reply 2",
            "@XPENDING s g - + 10",
            "XINFO GROUPS s",
            "@XINFO CONSUMERS s g",
            // NOACK
            "!block 1 XREADGROUP GROUP g carol NOACK BLOCK 0 STREAMS s >",
            "XADD s 3-1 f v3",
            "!reply 1",
            "XPENDING s g",
            // History IDs never block.
            "XREADGROUP GROUP g alice BLOCK 0 STREAMS s 0",
            "XREADGROUP GROUP g nobody BLOCK 0 STREAMS s 0",
            "XREADGROUP GROUP g alice BLOCK 50 STREAMS s >",
            // Two streams; a group behind the stream serves at once.
            "XGROUP CREATE t g $ MKSTREAM",
            "!block 1 XREADGROUP GROUP g dave BLOCK 0 STREAMS s t > >",
            "XADD t 1-1 x y",
            "!reply 1",
            "XGROUP SETID s g 1-1",
            "XREADGROUP GROUP g dave BLOCK 0 COUNT 1 STREAMS t s > >",
            // SETID backwards while a consumer waits: the next XADD serves from the group's ID.
            "!block 1 XREADGROUP GROUP g erin BLOCK 0 STREAMS t >",
            "XGROUP SETID t g 0",
            "!blocked 1",
            "XADD t 2-1 x z",
            "!reply 1",
            "@XPENDING t g - + 10",
            // XREAD waiters on the same stream all get the entry; the group waiters one each.
            "XGROUP SETID s g $",
            "!block 1 XREAD BLOCK 0 STREAMS s $",
            "!block 2 XREADGROUP GROUP g frank BLOCK 0 STREAMS s >",
            "!block 3 XREADGROUP GROUP g gina BLOCK 0 STREAMS s >",
            "XADD s 9-1 f v9",
            "!reply 1",
            "!reply 2",
            "!blocked 3",
            "XADD s 10-1 f v10",
            "!reply 3",
            "@XINFO STREAM s FULL",
        ],
    );
}

#[test]
fn timeouts_and_client_unblock() {
    let mut d = start();
    both_protocols(
        &mut d,
        "timeouts",
        &[
            "XGROUP CREATE s g $ MKSTREAM",
            "XREAD BLOCK 50 STREAMS s $",
            "XREADGROUP GROUP g alice BLOCK 50 STREAMS s >",
            "XREADGROUP GROUP g alice BLOCK 50 NOACK STREAMS s >",
            "@XINFO CONSUMERS s g",
            "!id 1",
            "!block 1 XREAD BLOCK 0 STREAMS s $",
            "!unblock 1",
            "!reply 1",
            "!block 1 XREADGROUP GROUP g alice BLOCK 0 STREAMS s >",
            "!unblock 1 ERROR",
            "!reply 1",
            "!block 1 XREADGROUP GROUP g alice BLOCK 0 STREAMS s >",
            "!unblock 1 TIMEOUT",
            "!reply 1",
            "!block 1 XREAD BLOCK 100000 STREAMS s nokey $ $",
            "!unblock 1 error",
            "!reply 1",
            "!unblock 1",
            "1> PING",
            "XADD s 1-1 f v",
            "XPENDING s g",
        ],
    );
    // The timeout itself: ours answers after the time asked, not long after.
    let server = common::Server::start(&[]);
    let mut c = server.raw();
    let cases: [(&[&[u8]], &[u8]); 3] = [
        (&[b"XREAD", b"BLOCK", b"200", b"STREAMS", b"s", b"$"], b"*-1\r\n"),
        (&[b"XGROUP", b"CREATE", b"s", b"g", b"$", b"MKSTREAM"], b"+OK\r\n"),
        (&[b"XREADGROUP", b"GROUP", b"g", b"c", b"BLOCK", b"200", b"STREAMS", b"s", b">"], b"*-1\r\n"),
    ];
    for (args, nil) in cases {
        let start = Instant::now();
        assert_eq!(c.call(args), nil, "{args:?}");
        let took = start.elapsed();
        if args[0] != &b"XGROUP"[..] {
            assert!(took >= Duration::from_millis(190) && took < Duration::from_millis(1000), "{args:?} took {took:?}");
        }
    }
}

#[test]
fn key_and_group_changes_while_blocked() {
    let mut d = start();
    both_protocols(
        &mut d,
        "lifecycle",
        &[
            // DEL: the group waiter gets UNBLOCKED at once, the XREAD waiter keeps waiting.
            "XGROUP CREATE s g $ MKSTREAM",
            "!block 1 XREADGROUP GROUP g alice BLOCK 0 STREAMS s >",
            "!block 2 XREAD BLOCK 0 STREAMS s $",
            "DEL s",
            "!reply 1",
            "!blocked 2",
            "XADD s 1-1 f v",
            "!reply 2",
            // XGROUP DESTROY: NOGROUP at once.
            "XGROUP CREATE s g $",
            "!block 1 XREADGROUP GROUP g alice BLOCK 0 STREAMS s >",
            "XGROUP DESTROY s g",
            "!reply 1",
            // Overwritten by SET.
            "XGROUP CREATE s g $",
            "!block 1 XREADGROUP GROUP g alice BLOCK 0 STREAMS s >",
            "!block 2 XREAD BLOCK 0 STREAMS s $",
            "SET s x",
            "!reply 1",
            "!blocked 2",
            "DEL s",
            "XADD s 5-1 a b",
            "!reply 2",
            // Expired (active expiry): the group waiter gets UNBLOCKED.
            "DEL s",
            "XGROUP CREATE s g $ MKSTREAM",
            "!block 1 XREADGROUP GROUP g alice BLOCK 0 STREAMS s >",
            "PEXPIRE s 100",
            "!reply 1",
            // Replaced inside a transaction by a stream without the group: NOGROUP.
            "XGROUP CREATE s g $",
            "!block 1 XREADGROUP GROUP g alice BLOCK 0 STREAMS s >",
            "MULTI",
            "DEL s",
            "XADD s 6-1 f v",
            "EXEC",
            "!reply 1",
            // RENAME over the key: a stream with the group serves, one without gives NOGROUP.
            "DEL s",
            "XGROUP CREATE s g $ MKSTREAM",
            "XADD s2 1-1 f v",
            "!block 1 XREADGROUP GROUP g alice BLOCK 0 STREAMS s >",
            "RENAME s2 s",
            "!reply 1",
            "XGROUP CREATE s g $",
            "XADD s3 1-1 f v",
            "XGROUP CREATE s3 g 0",
            "!block 1 XREADGROUP GROUP g bob BLOCK 0 STREAMS s >",
            "RENAME s3 s",
            "!reply 1",
            "@XPENDING s g - + 10",
            // FLUSHALL and SWAPDB take the key away.
            "FLUSHALL",
            "XGROUP CREATE s g $ MKSTREAM",
            "!block 1 XREADGROUP GROUP g alice BLOCK 0 STREAMS s >",
            "!block 2 XREAD BLOCK 0 STREAMS s $",
            "FLUSHALL",
            "!reply 1",
            "!blocked 2",
            "XADD s 1-1 f v",
            "!reply 2",
            "FLUSHALL",
            "XGROUP CREATE s g $ MKSTREAM",
            "!block 1 XREADGROUP GROUP g alice BLOCK 0 STREAMS s >",
            "SWAPDB 0 1",
            "!reply 1",
            "SWAPDB 0 1",
            "!block 1 XREADGROUP GROUP g alice BLOCK 0 STREAMS s >",
            "XADD s 1-1 f v",
            "!reply 1",
            // XDEL / XTRIM / XSETID / XGROUP SETID of the waited key serve nobody.
            "!block 1 XREADGROUP GROUP g bob BLOCK 0 STREAMS s >",
            "XDEL s 1-1",
            "XSETID s 5-0",
            "XTRIM s MAXLEN 0",
            "!blocked 1",
            "XADD s 6-1 a b",
            "!reply 1",
            "@XINFO CONSUMERS s g",
        ],
    );
}

/// BLOCK in MULTI does not block (nil, as a timeout); from a script it is an error, even when
/// there is data to serve.
#[test]
fn block_inside_multi_and_scripts() {
    let mut d = start();
    both_protocols(
        &mut d,
        "multi and scripts",
        &[
            "MULTI",
            "XREAD BLOCK 0 STREAMS s $",
            "XREADGROUP GROUP g c BLOCK 0 STREAMS s >",
            "EXEC",
            "XGROUP CREATE s g $ MKSTREAM",
            "MULTI",
            "XREAD BLOCK 0 STREAMS s $",
            "XREADGROUP GROUP g c BLOCK 0 STREAMS s >",
            "XADD s 1-1 f v",
            "XREAD BLOCK 0 STREAMS s 0",
            "XREADGROUP GROUP g c BLOCK 0 STREAMS s >",
            "EXEC",
            "EVAL \"return redis.call('XREAD','BLOCK','0','STREAMS','s','$')\" 0",
            "EVAL \"return redis.call('XREAD','BLOCK','0','STREAMS','s','0')\" 0",
            "EVAL \"return redis.pcall('XREADGROUP','GROUP','g','c','BLOCK','0','STREAMS','s','>')\" 0",
            "EVAL \"return redis.call('XREAD','COUNT','1','STREAMS','s','0')\" 0",
            "EVAL \"return redis.call('XREADGROUP','GROUP','g','c','STREAMS','s','0')\" 0",
            "EVAL \"return redis.call('XREAD','BLOCK','x','STREAMS','s','0')\" 0",
        ],
    );
}

// ---------------------------------------------------------------------------------------
// A seeded random run: three clients, two streams, two groups, explicit IDs. Connection 2
// sometimes blocks (XREAD / XREADGROUP BLOCK 0); after each later command on its key it is
// checked for a reply on both sides, and it is released with CLIENT UNBLOCK after a while.

trait Pick {
    fn pick<'a>(&mut self, v: &[&'a str]) -> &'a str;
}

impl Pick for Rng {
    fn pick<'a>(&mut self, v: &[&'a str]) -> &'a str {
        v[self.below(v.len() as u64) as usize]
    }
}

const KEYS: &[&str] = &["s1", "s2"];
const GROUPS: &[&str] = &["g1", "g2"];
const CONSUMERS: &[&str] = &["c1", "c2", "c3"];

/// Generates commands; `next_ms[k]` is the next fresh ms for key k (IDs are explicit).
struct Gen {
    rng: Rng,
    next_ms: [u64; 2],
}

impl Gen {
    fn key(&mut self) -> (usize, &'static str) {
        let k = self.rng.below(2) as usize;
        (k, KEYS[k])
    }

    /// An ID near the key's recent ones (existing, deleted or not yet used).
    fn id(&mut self, k: usize) -> String {
        let top = self.next_ms[k].max(2);
        format!("{}-{}", self.rng.below(top + 2), self.rng.below(2))
    }

    fn ids(&mut self, k: usize) -> String {
        (0..1 + self.rng.below(3)).map(|_| self.id(k)).collect::<Vec<_>>().join(" ")
    }

    fn command(&mut self) -> (String, bool) {
        let (k, key) = self.key();
        let g = self.rng.pick(GROUPS);
        let c = self.rng.pick(CONSUMERS);
        let count = |rng: &mut Rng| if rng.below(2) == 0 { String::new() } else { format!(" COUNT {}", 1 + rng.below(4)) };
        let cmd = match self.rng.below(22) {
            0..=4 => {
                let id = if self.rng.below(12) == 0 {
                    self.id(k)
                } else {
                    self.next_ms[k] += 1 + self.rng.below(2);
                    if self.rng.below(4) == 0 {
                        format!("{}-*", self.next_ms[k])
                    } else {
                        format!("{}-{}", self.next_ms[k], self.rng.below(3))
                    }
                };
                let trim = match self.rng.below(10) {
                    0 => format!(" MAXLEN {}", self.rng.below(8)),
                    1 => format!(" MAXLEN ~ {}", self.rng.below(8)),
                    2 => format!(" MINID {}", self.rng.below(self.next_ms[k] + 1)),
                    _ => String::new(),
                };
                format!("XADD {key}{trim} {id} f {}", self.rng.below(100))
            }
            5 => format!("XDEL {key} {}", self.ids(k)),
            6 => match self.rng.below(3) {
                0 => format!("XTRIM {key} MAXLEN {}", self.rng.below(10)),
                1 => format!("XTRIM {key} MINID {}", self.id(k)),
                _ => format!("XTRIM {key} MAXLEN ~ {} LIMIT {}", self.rng.below(5), self.rng.below(3)),
            },
            7 => format!("XGROUP CREATE {key} {g} {}{}", self.rng.pick(&["$", "0", "1-0"]), self.rng.pick(&["", " MKSTREAM"])),
            8 => format!("XGROUP SETID {key} {g} {}", if self.rng.below(2) == 0 { "$".to_string() } else { self.id(k) }),
            9 if self.rng.below(3) == 0 => format!("XGROUP DESTROY {key} {g}"),
            9 => format!("XGROUP CREATECONSUMER {key} {g} {c}"),
            10 => format!("XGROUP DELCONSUMER {key} {g} {c}"),
            11..=13 => {
                let id = if self.rng.below(3) == 0 { "0".to_string() } else { ">".to_string() };
                let noack = if self.rng.below(6) == 0 { " NOACK" } else { "" };
                format!("XREADGROUP GROUP {g} {c}{}{noack} STREAMS {key} {id}", count(&mut self.rng))
            }
            14 => format!("XACK {key} {g} {}", self.ids(k)),
            15 => {
                let opts = self.rng.pick(&["", " JUSTID", " FORCE", " RETRYCOUNT 5", " IDLE 10000", " FORCE JUSTID"]);
                format!("XCLAIM {key} {g} {c} {} {}{opts}", self.rng.pick(&["0", "3600000"]), self.ids(k))
            }
            16 => format!(
                "XAUTOCLAIM {key} {g} {c} {} {}{}{}",
                self.rng.pick(&["0", "3600000"]),
                self.id(k),
                count(&mut self.rng),
                self.rng.pick(&["", " JUSTID"])
            ),
            17 => {
                return (format!("XPENDING {key} {g} - + 10{}", if self.rng.below(2) == 0 { format!(" {c}") } else { String::new() }), true)
            }
            18 => format!("XPENDING {key} {g}"),
            19 => {
                let forms = [format!("XINFO GROUPS {key}"), format!("XINFO STREAM {key}"), format!("XINFO CONSUMERS {key} {g}")];
                return (forms[self.rng.below(3) as usize].clone(), true);
            }
            20 => format!("XRANGE {key} - +{}", count(&mut self.rng)),
            _ => format!("XREAD{} STREAMS {key} {}", count(&mut self.rng), self.id(k)),
        };
        (cmd, false)
    }

    /// A blocking read for connection 2 on `key`.
    fn blocking(&mut self, key: &str) -> String {
        let g = self.rng.pick(GROUPS);
        let c = self.rng.pick(CONSUMERS);
        if self.rng.below(2) == 0 {
            format!("XREAD BLOCK 0 STREAMS {key} $")
        } else {
            format!("XREADGROUP GROUP {g} {c} BLOCK 0 STREAMS {key} >")
        }
    }
}

fn seed_and_seconds() -> (u64, u64) {
    let seed = std::env::var("DIFF_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1) | 1
    });
    let seconds = std::env::var("DIFF_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(6);
    (seed, seconds)
}

#[test]
fn random_stream_commands_from_three_clients() {
    let (seed, seconds) = seed_and_seconds();
    eprintln!("random streams: DIFF_SEED={seed}");
    let mut gen = Gen { rng: Rng(seed | 1), next_ms: [0, 0] };
    let mut d = start();
    // Small nodes so that approximate trimming has whole nodes to remove.
    assert!(run(&mut d, &["CONFIG SET stream-node-max-entries 4"]).is_empty());
    let mut ids = Vec::new();
    for c in 0..3 {
        let (r, o) = d.conns(c);
        ids.push((client_id(r), client_id(o)));
    }
    let mut history: Vec<String> = Vec::new();
    fn fail(seed: u64, history: &[String], what: String) -> ! {
        let tail = history[history.len().saturating_sub(40)..].join("\n    ");
        panic!("random streams FAILED: DIFF_SEED={seed} after {} commands:\n{what}\n  last commands:\n    {tail}", history.len());
    }
    // The key connection 2 waits on, and for how many more commands.
    let mut blocked: Option<(String, u32)> = None;
    let start = Instant::now();
    while history.len() < 3000 && start.elapsed() < Duration::from_secs(seconds) {
        if blocked.is_none() && gen.rng.below(25) == 0 {
            let key = gen.rng.pick(KEYS).to_string();
            let cmd = gen.blocking(&key);
            history.push(format!("2> {cmd} (blocks)"));
            let args = parse_script_line(&cmd).2.expect("command");
            let (r, o) = d.conns(2);
            r.cmd(&args).expect("send");
            o.cmd(&args).expect("send");
            // Served at once (a group behind the stream) or parked.
            let (a, b) = (read_within(r, Duration::from_millis(100)), read_within(o, Duration::from_millis(100)));
            match (&a, &b) {
                (Err(Broken::Timeout), Err(Broken::Timeout)) => blocked = Some((key, 2 + gen.rng.below(6) as u32)),
                _ if same_loosely(&a, &b, false) => {}
                _ => fail(seed, &history, format!("blocking read\n  redis: {}\n  ours:  {}", show(&a), show(&b))),
            }
            continue;
        }
        let conn = gen.rng.below(if blocked.is_some() { 2 } else { 3 }) as usize;
        let (cmd, loose) = gen.command();
        history.push(format!("{conn}> {cmd}"));
        let args = parse_script_line(&cmd).2.expect("command");
        d.on(conn);
        if let Err(e) = check(&mut d, &args, loose) {
            fail(seed, &history, e);
        }
        if let Some((key, left)) = blocked.take() {
            let touched = cmd.split(' ').nth(1) == Some(key.as_str()) || cmd.split(' ').nth(2) == Some(key.as_str());
            let (r, o) = d.conns(2);
            let wait = if touched { Duration::from_millis(150) } else { Duration::from_millis(1) };
            let (a, b) = (read_within(r, wait), read_within(o, wait));
            match (&a, &b) {
                (Err(Broken::Timeout), Err(Broken::Timeout)) if left > 0 => blocked = Some((key, left - 1)),
                (Err(Broken::Timeout), Err(Broken::Timeout)) => {
                    // Released: each side unblocks its own client 2 (timeout reply).
                    history.push("0> CLIENT UNBLOCK <2>".into());
                    let (r0, o0) = d.conns(0);
                    let (ua, ub) = (r0.call(&["CLIENT", "UNBLOCK", &ids[2].0]), o0.call(&["CLIENT", "UNBLOCK", &ids[2].1]));
                    let (r, o) = d.conns(2);
                    let (a, b) = (r.read(), o.read());
                    if ua != ub || a != b {
                        fail(
                            seed,
                            &history,
                            format!("CLIENT UNBLOCK\n  redis: {} then {}\n  ours:  {} then {}", show(&ua), show(&a), show(&ub), show(&b)),
                        );
                    }
                }
                _ if same_loosely(&a, &b, false) => history.push(format!("2> (served: {})", show(&a))),
                _ => fail(seed, &history, format!("the blocked client 2\n  redis: {}\n  ours:  {}", show(&a), show(&b))),
            }
        }
    }
    if blocked.is_some() {
        let (r0, o0) = d.conns(0);
        let _ = (r0.call(&["CLIENT", "UNBLOCK", &ids[2].0]), o0.call(&["CLIENT", "UNBLOCK", &ids[2].1]));
        let (r, o) = d.conns(2);
        let (a, b) = (r.read(), o.read());
        if a != b {
            fail(seed, &history, format!("final unblock\n  redis: {}\n  ours:  {}", show(&a), show(&b)));
        }
    }
    // The final state, key by key.
    d.on(1);
    for key in KEYS {
        for line in [format!("XRANGE {key} - +"), format!("XINFO STREAM {key} FULL"), format!("XINFO GROUPS {key}")] {
            let args = parse_script_line(&line).2.expect("command");
            if let Err(e) = check(&mut d, &args, true) {
                fail(seed, &history, e);
            }
        }
    }
    assert!(history.len() > 100, "only {} commands ran", history.len());
}
