//! Client-side caching against redis-server 7.0: a RESP3 client and a RESP2 client with
//! REDIRECT receive exactly the invalidations Redis sends for the same sequence (default
//! mode, BCAST with prefixes, OPTIN/OPTOUT, NOLOOP, FLUSHALL, expiry, MULTI and scripts).

mod common;

use common::diff::{same, show, Cmp, DiffPair, Got};

/// Sends `cmd` on connection `conn` and compares the next `n` frames from both servers.
fn frames(d: &mut DiffPair, conn: usize, cmd: &str, n: usize, failures: &mut Vec<String>) {
    d.on(conn);
    let bytes = format!("{cmd}\r\n");
    if let Err(e) = d.check_raw(bytes.as_bytes(), n, Cmp::Exact) {
        failures.push(format!("{conn}> {cmd}: {e}"));
    }
}

/// Reads one pending frame on connection `conn` from both servers (a message they pushed).
fn pushed(d: &mut DiffPair, conn: usize, what: &str, failures: &mut Vec<String>) {
    let (r, o) = d.conns(conn);
    let (a, b): (Got, Got) = (r.read(), o.read());
    if !same(&a, &b, Cmp::Exact) {
        failures.push(format!("{what}: redis {} / ours {}", show(&a), show(&b)));
    }
}

/// Connection `to` subscribes to `__redis__:invalidate` (on each server), and connection
/// `from` turns tracking on with REDIRECT to it; the same answer on both. The two ids.
fn redirect(d: &mut DiffPair, to: usize, from: usize, failures: &mut Vec<String>) -> (String, String) {
    let (r, o) = d.conns(to);
    let (rid, oid) = (client_id(&r.call(&["CLIENT", "ID"])), client_id(&o.call(&["CLIENT", "ID"])));
    frames(d, to, "SUBSCRIBE __redis__:invalidate", 1, failures);
    let (r, o) = d.conns(from);
    let a = r.call(&["CLIENT", "TRACKING", "on", "REDIRECT", &rid]);
    let b = o.call(&["CLIENT", "TRACKING", "on", "REDIRECT", &oid]);
    assert!(same(&a, &b, Cmp::Exact), "{} / {}", show(&a), show(&b));
    (rid, oid)
}

fn client_id(g: &Got) -> String {
    let raw = &g.as_ref().expect("CLIENT ID").raw;
    String::from_utf8_lossy(&raw[1..raw.len() - 2]).into_owned()
}

#[test]
fn invalidations_match_redis() {
    let mut d = DiffPair::start();
    let mut f = Vec::new();
    // Connection 0: RESP3, default mode. Connection 1 writes.
    let _ = d.on(0).hello(3).unwrap_or_else(|e| panic!("{e}"));
    d.assert_script(
        "errors and info",
        &[
            "CLIENT TRACKINGINFO",
            "CLIENT GETREDIR",
            "CLIENT CACHING yes",
            "CLIENT TRACKING maybe",
            "CLIENT TRACKING on bogus",
            "CLIENT TRACKING on prefix a",
            "CLIENT TRACKING on optin optout",
            "CLIENT TRACKING on optin bcast",
            "CLIENT TRACKING on bcast prefix a prefix ab",
            "CLIENT TRACKING on redirect 999999",
            "CLIENT TRACKING on",
            "CLIENT TRACKINGINFO",
            "CLIENT GETREDIR",
            "CLIENT TRACKING on bcast",
            "CLIENT CACHING yes",
        ],
    );
    frames(&mut d, 0, "GET k", 1, &mut f);
    frames(&mut d, 1, "SET k v", 1, &mut f);
    frames(&mut d, 0, "PING", 2, &mut f); // the invalidation, then PONG
    frames(&mut d, 1, "SET k v2", 1, &mut f);
    frames(&mut d, 0, "PING", 1, &mut f); // told once: nothing more
    frames(&mut d, 0, "MGET a b k", 1, &mut f);
    frames(&mut d, 1, "MSET a 1 b 2", 1, &mut f);
    frames(&mut d, 0, "PING", 3, &mut f);
    // Its own write: the invalidation follows the reply.
    frames(&mut d, 0, "GET k", 1, &mut f);
    frames(&mut d, 0, "SET k mine", 2, &mut f);
    // MULTI and a script read and write for their caller.
    frames(&mut d, 0, "MULTI", 1, &mut f);
    frames(&mut d, 0, "GET m1", 1, &mut f);
    frames(&mut d, 0, "EXEC", 1, &mut f);
    frames(&mut d, 0, "EVAL \"return redis.call('get', KEYS[1])\" 1 s1", 1, &mut f);
    frames(&mut d, 1, "SET m1 x", 1, &mut f);
    frames(&mut d, 1, "SET s1 x", 1, &mut f);
    frames(&mut d, 0, "PING", 3, &mut f);
    // NOLOOP: its own writes are not reported.
    frames(&mut d, 0, "CLIENT TRACKING on noloop", 1, &mut f);
    frames(&mut d, 0, "CLIENT TRACKINGINFO", 1, &mut f);
    frames(&mut d, 0, "GET k", 1, &mut f);
    frames(&mut d, 0, "SET k again", 1, &mut f);
    frames(&mut d, 0, "PING", 1, &mut f);
    // Expiry: a key that expires while tracked.
    frames(&mut d, 1, "SET e v PX 30", 1, &mut f);
    frames(&mut d, 0, "GET e", 1, &mut f);
    std::thread::sleep(std::time::Duration::from_millis(100));
    frames(&mut d, 1, "GET e", 1, &mut f);
    frames(&mut d, 0, "PING", 2, &mut f);
    // Streams: reads remember the key, XADD/XDEL/XTRIM invalidate it, XACK (no
    // signalModifiedKey in Redis) does not.
    frames(&mut d, 1, "XADD st 1-1 f v", 1, &mut f);
    frames(&mut d, 0, "XRANGE st - +", 1, &mut f);
    frames(&mut d, 1, "XADD st 2-1 f v", 1, &mut f);
    frames(&mut d, 0, "PING", 2, &mut f);
    frames(&mut d, 0, "XREAD STREAMS st 0", 1, &mut f);
    frames(&mut d, 1, "XGROUP CREATE st g 0", 1, &mut f);
    frames(&mut d, 1, "XREADGROUP GROUP g c STREAMS st >", 1, &mut f);
    frames(&mut d, 1, "XACK st g 1-1", 1, &mut f);
    frames(&mut d, 0, "PING", 1, &mut f);
    frames(&mut d, 1, "XDEL st 1-1", 1, &mut f);
    frames(&mut d, 0, "PING", 2, &mut f);
    // FLUSHALL: everything goes (a null key list).
    frames(&mut d, 0, "GET k", 1, &mut f);
    frames(&mut d, 1, "FLUSHALL", 1, &mut f);
    frames(&mut d, 0, "PING", 2, &mut f);
    frames(&mut d, 0, "CLIENT TRACKING off", 1, &mut f);
    frames(&mut d, 0, "GET k", 1, &mut f);
    frames(&mut d, 1, "SET k off", 1, &mut f);
    frames(&mut d, 0, "PING", 1, &mut f);

    // Connection 4: BCAST with prefixes.
    let _ = d.on(4).hello(3).unwrap_or_else(|e| panic!("{e}"));
    frames(&mut d, 4, "CLIENT TRACKING on bcast prefix user: prefix order:", 1, &mut f);
    frames(&mut d, 4, "CLIENT TRACKINGINFO", 1, &mut f);
    frames(&mut d, 1, "SET user:1 a", 1, &mut f);
    frames(&mut d, 1, "SET other 1", 1, &mut f);
    frames(&mut d, 1, "MSET user:2 x order:3 y other z", 1, &mut f);
    frames(&mut d, 4, "PING", 3, &mut f);
    frames(&mut d, 4, "CLIENT TRACKING off", 1, &mut f);

    // Connection 5: OPTIN and OPTOUT.
    let _ = d.on(5).hello(3).unwrap_or_else(|e| panic!("{e}"));
    frames(&mut d, 5, "CLIENT TRACKING on optin", 1, &mut f);
    frames(&mut d, 5, "GET o1", 1, &mut f);
    frames(&mut d, 5, "CLIENT CACHING yes", 1, &mut f);
    frames(&mut d, 5, "CLIENT TRACKINGINFO", 1, &mut f);
    frames(&mut d, 5, "GET o2", 1, &mut f);
    frames(&mut d, 5, "CLIENT TRACKINGINFO", 1, &mut f);
    frames(&mut d, 1, "MSET o1 1 o2 2", 1, &mut f);
    frames(&mut d, 5, "PING", 2, &mut f);
    frames(&mut d, 5, "CLIENT TRACKING off", 1, &mut f);
    frames(&mut d, 5, "CLIENT TRACKING on optout", 1, &mut f);
    frames(&mut d, 5, "CLIENT CACHING no", 1, &mut f);
    frames(&mut d, 5, "GET p1", 1, &mut f);
    frames(&mut d, 5, "GET p2", 1, &mut f);
    frames(&mut d, 1, "MSET p1 1 p2 2", 1, &mut f);
    frames(&mut d, 5, "PING", 2, &mut f);

    // RESP2 with REDIRECT: connection 2 listens on __redis__:invalidate for connection 3.
    let (rid, oid) = redirect(&mut d, 2, 3, &mut f);
    let (r, o) = d.conns(3);
    let a = r.call(&["CLIENT", "GETREDIR"]);
    let b = o.call(&["CLIENT", "GETREDIR"]);
    assert_eq!((client_id(&a), client_id(&b)), (rid.clone(), oid.clone()));
    frames(&mut d, 3, "GET r1", 1, &mut f);
    frames(&mut d, 3, "GET r2", 1, &mut f);
    frames(&mut d, 1, "SET r1 x", 1, &mut f);
    pushed(&mut d, 2, "the redirected invalidation of r1", &mut f);
    frames(&mut d, 1, "FLUSHDB", 1, &mut f);
    pushed(&mut d, 2, "the redirected FLUSHDB invalidation", &mut f);
    // The redirect target goes away: the RESP2 tracker hears nothing, TRACKINGINFO says so.
    d.reconnect(2);
    frames(&mut d, 3, "GET r3", 1, &mut f);
    frames(&mut d, 1, "SET r3 x", 1, &mut f);
    // (The redirect's id differs between the servers.)
    if let Err(e) = d.on(3).check_with(&["CLIENT", "TRACKINGINFO"], Cmp::IgnoreInts) {
        f.push(e.to_string());
    }
    assert!(f.is_empty(), "{} differences:\n{}", f.len(), f.join("\n"));
}

/// BCAST without PREFIX tracks the empty prefix; new prefixes are checked against the
/// client's existing ones and against each other, with Redis's two error texts.
#[test]
fn bcast_prefixes_overlap_as_in_redis() {
    let mut d = DiffPair::start();
    let cases: &[&[&str]] = &[
        &["CLIENT TRACKING on BCAST", "CLIENT TRACKINGINFO", "CLIENT TRACKING on BCAST PREFIX a"],
        &["CLIENT TRACKING on BCAST PREFIX a", "CLIENT TRACKING on BCAST", "CLIENT TRACKINGINFO"],
        &["CLIENT TRACKING on BCAST PREFIX b", "CLIENT TRACKING on BCAST PREFIX bc", "CLIENT TRACKING on BCAST PREFIX b"],
        &["CLIENT TRACKING on BCAST PREFIX bc", "CLIENT TRACKING on BCAST PREFIX b"],
        &["CLIENT TRACKING on BCAST PREFIX x PREFIX x", "CLIENT TRACKING on BCAST PREFIX x PREFIX y PREFIX xy"],
        &["CLIENT TRACKING on BCAST PREFIX c PREFIX a PREFIX b", "CLIENT TRACKING on BCAST PREFIX d PREFIX bb", "CLIENT TRACKINGINFO"],
    ];
    for case in cases {
        d.assert_script("bcast prefixes", case);
        d.reset_conns();
    }
}

/// BCAST as Redis sends it: the keys changed in one batch (a transaction, a script, a
/// pipeline read at once) go out as one message per prefix, after the replies; NOLOOP leaves
/// out the client's own keys; expired keys are broadcast too.
#[test]
fn bcast_sends_one_message_per_prefix_per_batch_as_redis() {
    let mut d = DiffPair::start();
    let mut f = Vec::new();
    let _ = d.on(0).hello(3).unwrap_or_else(|e| panic!("{e}"));
    frames(&mut d, 0, "CLIENT TRACKING on BCAST", 1, &mut f);
    for cmd in ["MULTI", "SET x 1", "SET y 1", "EXEC"] {
        frames(&mut d, 1, cmd, 1, &mut f);
    }
    frames(&mut d, 0, "PING", 2, &mut f);
    frames(&mut d, 1, "EVAL \"redis.call('set','s2',1) redis.call('set','s1',1)\" 0", 1, &mut f);
    frames(&mut d, 0, "PING", 2, &mut f);
    // Two commands in one write: one batch.
    d.on(1);
    if let Err(e) = d.check_raw(b"SET p 1\r\nSET q 1\r\n", 2, Cmp::Exact) {
        f.push(format!("pipeline: {e}"));
    }
    frames(&mut d, 0, "PING", 2, &mut f);
    // Its own write: the reply, then the message.
    frames(&mut d, 0, "SET own 1", 2, &mut f);
    // Lazy expiry broadcasts the key.
    frames(&mut d, 1, "SET e v PX 30", 1, &mut f);
    frames(&mut d, 0, "PING", 2, &mut f);
    std::thread::sleep(std::time::Duration::from_millis(100));
    frames(&mut d, 1, "GET e", 1, &mut f);
    frames(&mut d, 0, "PING", 2, &mut f);

    // NOLOOP: the client's own changes are left out, other clients' are not.
    let _ = d.on(2).hello(3).unwrap_or_else(|e| panic!("{e}"));
    frames(&mut d, 2, "CLIENT TRACKING on BCAST NOLOOP PREFIX n", 1, &mut f);
    frames(&mut d, 2, "MSET n1 1 n2 2 other 3", 1, &mut f);
    frames(&mut d, 2, "PING", 1, &mut f);
    frames(&mut d, 1, "MSET n1 x n3 y", 1, &mut f);
    frames(&mut d, 2, "PING", 2, &mut f);
    // Connection 0 (BCAST of everything) heard every one of them.
    frames(&mut d, 0, "PING", 3, &mut f);
    assert!(f.is_empty(), "{} differences:\n{}", f.len(), f.join("\n"));
}

/// Scripts: the keys read by the read-only commands a script calls are tracked for its
/// caller, not the keys it writes; a RESP2 client redirecting to a subscriber that then
/// switches to RESP3 keeps receiving the invalidations (as pushes now).
#[test]
fn script_reads_and_a_redirect_switching_to_resp3_as_in_redis() {
    let mut d = DiffPair::start();
    let mut f = Vec::new();
    let _ = d.on(0).hello(3).unwrap_or_else(|e| panic!("{e}"));
    frames(&mut d, 0, "CLIENT TRACKING on", 1, &mut f);
    frames(&mut d, 0, "EVAL \"redis.call('get', 'sr1') redis.call('set', 'sw1', 'x') return redis.call('exists', 'sr2')\" 0", 1, &mut f);
    frames(&mut d, 1, "MSET sw1 y sr1 y sr2 y", 1, &mut f);
    frames(&mut d, 0, "PING", 1, &mut f);
    // With declared keys: a read remembers them all; a script that only writes, none.
    frames(&mut d, 0, "EVAL \"redis.call('set', KEYS[2], 'x') return redis.call('get', 'undeclared')\" 2 dk1 dk2", 1, &mut f);
    frames(&mut d, 0, "EVAL \"return redis.call('set', KEYS[1], 'x')\" 1 wk1", 1, &mut f);
    frames(&mut d, 1, "MSET dk1 y dk2 y undeclared y wk1 y", 1, &mut f);
    frames(&mut d, 0, "PING", 3, &mut f);

    // Connection 2 subscribes in RESP2, connection 3 redirects to it, then 2 says HELLO 3.
    let _ = redirect(&mut d, 2, 3, &mut f);
    frames(&mut d, 3, "GET t1", 1, &mut f);
    frames(&mut d, 1, "SET t1 x", 1, &mut f);
    pushed(&mut d, 2, "the RESP2 redirected invalidation", &mut f);
    frames(&mut d, 2, "HELLO 3", 1, &mut f);
    frames(&mut d, 3, "GET t2", 1, &mut f);
    frames(&mut d, 1, "SET t2 x", 1, &mut f);
    pushed(&mut d, 2, "the invalidation after HELLO 3", &mut f);
    frames(&mut d, 2, "PING", 1, &mut f);
    assert!(f.is_empty(), "{} differences:\n{}", f.len(), f.join("\n"));
}
