//! Abuse of the protocol and of connections, with real sockets: each case asserts Redis's
//! error (or disconnection), that the server's RSS stays bounded (read from /proc), and that
//! a well-behaved client on the side keeps getting replies within its usual latency.
//! Protected mode too.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::Server;

fn rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()).unwrap_or(0)
}

/// A client on the side that PINGs every 5 ms while an abuse runs; returns the worst latency.
struct Neighbour {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<Result<Duration, String>>,
}

impl Neighbour {
    fn start(port: u16) -> Neighbour {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
            s.set_read_timeout(Some(Duration::from_secs(5))).map_err(|e| e.to_string())?;
            let mut worst = Duration::ZERO;
            let mut buf = [0u8; 64];
            let mut n = 0;
            while !flag.load(Ordering::Relaxed) || n < 3 {
                let t = Instant::now();
                s.write_all(b"PING\r\n").map_err(|e| e.to_string())?;
                let got = s.read(&mut buf).map_err(|e| format!("neighbour read: {e}"))?;
                if &buf[..got] != b"+PONG\r\n" {
                    return Err(format!("neighbour got {:?}", String::from_utf8_lossy(&buf[..got])));
                }
                worst = worst.max(t.elapsed());
                n += 1;
                std::thread::sleep(Duration::from_millis(5));
            }
            Ok(worst)
        });
        Neighbour { stop, handle }
    }

    /// Stops and returns the worst latency seen, failing if it exceeded `limit`.
    fn finish(self, what: &str, limit: Duration) -> Duration {
        self.stop.store(true, Ordering::Relaxed);
        let worst = self.handle.join().expect("neighbour thread").unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(worst < limit, "{what}: the neighbour waited {worst:?} for a PING (limit {limit:?})");
        worst
    }
}

fn read_some(s: &mut TcpStream, timeout: Duration) -> Vec<u8> {
    s.set_read_timeout(Some(timeout)).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(_) => break,
        }
    }
    out
}

/// Reads until the peer closes (true) or `timeout` passes (false).
fn closed_within(s: &mut TcpStream, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let mut buf = [0u8; 65536];
    while Instant::now() < deadline {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => return true,
        }
    }
    false
}

const LATENCY: Duration = Duration::from_millis(500);

#[test]
fn huge_bulk_header_is_refused_without_allocating() {
    let server = Server::start(&[]);
    let base = rss_kb(server.pid());
    let n = Neighbour::start(server.port);
    let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    s.write_all(b"*2\r\n$3\r\nSET\r\n$1000000000\r\n").unwrap();
    let got = read_some(&mut s, Duration::from_secs(2));
    assert_eq!(got, b"-ERR Protocol error: invalid bulk length\r\n");
    // Within proto-max-bulk-len: the server waits for the data but does not reserve it.
    let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    s.write_all(b"*2\r\n$3\r\nGET\r\n$500000000\r\nabc").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let grown = rss_kb(server.pid()).saturating_sub(base);
    assert!(grown < 64 * 1024, "a 500 MB bulk header made RSS grow by {grown} kB");
    n.finish("huge bulk header", LATENCY);
}

#[test]
fn unauthenticated_clients_get_small_frame_limits() {
    let server = Server::start(&["--requirepass", "pw"]);
    for (bytes, want) in [
        (&b"*20000\r\n"[..], &b"-ERR Protocol error: unauthenticated multibulk length\r\n"[..]),
        (b"*1\r\n$20000\r\n", b"-ERR Protocol error: unauthenticated bulk length\r\n"),
    ] {
        let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
        s.write_all(bytes).unwrap();
        assert_eq!(read_some(&mut s, Duration::from_secs(2)), want);
    }
}

#[test]
fn millions_of_tiny_arguments_cost_bounded_memory() {
    let server = Server::start(&[]);
    let n = Neighbour::start(server.port);
    // Over the multibulk limit: refused at the header.
    let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    s.write_all(b"*2147483648\r\n").unwrap();
    assert_eq!(read_some(&mut s, Duration::from_secs(2)), b"-ERR Protocol error: invalid multibulk length\r\n");
    // At the limit: one command of 1M one-byte arguments (an unknown command, so nothing runs).
    let base = rss_kb(server.pid());
    let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    let mut frame = b"*1048576\r\n$7\r\nNOSUCH1\r\n".to_vec();
    for _ in 1..1_048_576 {
        frame.extend_from_slice(b"$1\r\na\r\n");
    }
    s.write_all(&frame).unwrap();
    let got = read_some(&mut s, Duration::from_secs(1));
    assert!(got.starts_with(b"-ERR unknown command 'NOSUCH1'"), "{:?}", String::from_utf8_lossy(&got[..got.len().min(100)]));
    let grown = rss_kb(server.pid()).saturating_sub(base);
    assert!(grown < 512 * 1024, "1M arguments made RSS grow by {grown} kB");
    n.finish("1M arguments", Duration::from_secs(2));
}

#[test]
fn endless_inline_line_is_cut_at_64k() {
    let server = Server::start(&[]);
    let n = Neighbour::start(server.port);
    let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    let chunk = vec![b'a'; 16 * 1024];
    let mut refused = false;
    for _ in 0..64 {
        if s.write_all(&chunk).is_err() {
            refused = true;
            break;
        }
    }
    let got = read_some(&mut s, Duration::from_secs(2));
    assert!(refused || got == b"-ERR Protocol error: too big inline request\r\n", "{:?}", String::from_utf8_lossy(&got));
    n.finish("endless inline line", LATENCY);
}

#[test]
fn query_buffer_limit_closes_the_client() {
    let server = Server::start(&["--client-query-buffer-limit", "1mb"]);
    let n = Neighbour::start(server.port);
    let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    let _ = s.write_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4000000\r\n");
    let chunk = vec![b'x'; 64 * 1024];
    for _ in 0..40 {
        if s.write_all(&chunk).is_err() {
            break;
        }
    }
    assert!(closed_within(&mut s, Duration::from_secs(3)), "a client over client-query-buffer-limit is disconnected");
    n.finish("query buffer limit", LATENCY);
}

#[test]
fn thousands_of_connections_hit_maxclients() {
    let server = Server::start(&["--maxclients", "500"]);
    let base = rss_kb(server.pid());
    let n = Neighbour::start(server.port);
    let mut conns = Vec::new();
    let mut refused = 0;
    for _ in 0..1500 {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", server.port)) else { continue };
        s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
        let _ = s.write_all(b"PING\r\n");
        let mut buf = [0u8; 64];
        match s.read(&mut buf) {
            Ok(k) if &buf[..k] == b"-ERR max number of clients reached\r\n" => refused += 1,
            Ok(k) if &buf[..k] == b"+PONG\r\n" => conns.push(s),
            other => panic!("connection {}: {other:?}", conns.len()),
        }
    }
    // 500 in all, the neighbour and the harness's readiness probe included.
    assert!(conns.len() >= 495 && conns.len() <= 500, "{} connections accepted", conns.len());
    assert_eq!(refused + conns.len(), 1500);
    let grown = rss_kb(server.pid()).saturating_sub(base);
    assert!(grown < 256 * 1024, "1500 connections made RSS grow by {grown} kB");
    n.finish("1500 connections", LATENCY);
    drop(conns);
    let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    s.write_all(b"PING\r\n").unwrap();
    assert_eq!(read_some(&mut s, Duration::from_millis(300)), b"+PONG\r\n", "slots are freed when clients leave");
}

#[test]
fn a_pipelining_client_that_never_reads_costs_bounded_memory() {
    let server = Server::start(&[]);
    let mut setup = server.raw();
    let big = vec![b'v'; 1024 * 1024];
    assert_eq!(setup.call(&[b"SET", b"big", &big]), b"+OK\r\n");
    let base = rss_kb(server.pid());
    let n = Neighbour::start(server.port);
    // 1024 GETs of 1 MB (1 GB of replies) in one write, from a client that reads nothing.
    let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(3))).unwrap();
    let one = b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n";
    let batch: Vec<u8> = one.iter().copied().cycle().take(one.len() * 1024).collect();
    s.write_all(&batch).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let grown = rss_kb(server.pid()).saturating_sub(base);
    assert!(grown < 256 * 1024, "a never-reading pipeliner made RSS grow by {grown} kB");
    n.finish("never-reading pipeliner", LATENCY);
    assert_eq!(setup.call(&[b"PING"]), b"+PONG\r\n");
    // Once it reads, it gets every reply.
    let per_reply = (b"$1048576\r\n".len() + 1024 * 1024 + 2) as u64;
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut total = 0u64;
    let mut buf = vec![0u8; 1 << 20];
    while total < per_reply * 1024 {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(k) => total += k as u64,
        }
    }
    assert_eq!(total, per_reply * 1024, "every reply arrives once the client reads");
}

#[test]
fn slowloris_half_frames_time_out() {
    let server = Server::start(&["--timeout", "1"]);
    let n = Neighbour::start(server.port);
    let mut half = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    half.write_all(b"*2\r\n$3\r\nGET\r\n$1").unwrap();
    // A trickler: one byte a second, never a whole command.
    let mut trickle = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    let start = Instant::now();
    let mut trickle_closed = false;
    for b in b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n".iter().take(4) {
        if trickle.write_all(&[*b]).is_err() {
            trickle_closed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(700));
    }
    assert!(closed_within(&mut half, Duration::from_secs(4)), "a half frame outlived timeout 1");
    assert!(trickle_closed || closed_within(&mut trickle, Duration::from_secs(4)), "a trickling client outlived timeout 1");
    assert!(start.elapsed() < Duration::from_secs(8));
    n.finish("slowloris", LATENCY);
}

/// The machine's first non-loopback IPv4 address, if it has one.
fn outside_address() -> Option<std::net::IpAddr> {
    let sock = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    sock.connect("192.0.2.1:9").ok()?;
    let ip = sock.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

const DENIED_START: &[u8] =
    b"-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user.";

#[test]
fn protected_mode_refuses_outside_clients_without_a_password() {
    let Some(ip) = outside_address() else {
        eprintln!("protected mode: this machine has no non-loopback address; only the loopback half runs");
        let server = Server::start(&["--bind", "0.0.0.0"]);
        assert_eq!(server.raw().call(&[b"PING"]), b"+PONG\r\n");
        return;
    };
    let server = Server::start(&["--bind", "0.0.0.0"]);
    let mut s = TcpStream::connect((ip, server.port)).unwrap();
    let got = read_some(&mut s, Duration::from_secs(2));
    assert!(got.starts_with(DENIED_START), "{:?}", String::from_utf8_lossy(&got));
    assert!(got.ends_with(
        b"NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n"
    ));
    // Loopback clients are served, and may lift it.
    let mut local = server.raw();
    assert_eq!(local.call(&[b"CONFIG", b"SET", b"protected-mode", b"no"]), b"+OK\r\n");
    let mut s = TcpStream::connect((ip, server.port)).unwrap();
    s.write_all(b"PING\r\n").unwrap();
    assert_eq!(read_some(&mut s, Duration::from_millis(300)), b"+PONG\r\n");
    // With a password, outside clients are let in (and must AUTH).
    assert_eq!(local.call(&[b"CONFIG", b"SET", b"protected-mode", b"yes"]), b"+OK\r\n");
    assert_eq!(local.call(&[b"CONFIG", b"SET", b"requirepass", b"pw"]), b"+OK\r\n");
    let mut s = TcpStream::connect((ip, server.port)).unwrap();
    s.write_all(b"PING\r\n").unwrap();
    assert_eq!(read_some(&mut s, Duration::from_millis(300)), b"-NOAUTH Authentication required.\r\n");
    drop(server);
    let server = Server::start(&["--bind", "0.0.0.0", "--protected-mode", "no"]);
    let mut s = TcpStream::connect((ip, server.port)).unwrap();
    s.write_all(b"PING\r\n").unwrap();
    assert_eq!(read_some(&mut s, Duration::from_millis(300)), b"+PONG\r\n");
}

/// With a negative count the reply's length is the client's number alone (draws with
/// repetition); Redis 7.0 builds it however large and is killed for memory. Here a count
/// beyond 2^24 draws is refused at once, from a client and from a script, and the largest
/// allowed one is served.
#[test]
fn huge_negative_random_counts_are_refused() {
    let server = Server::start(&[]);
    let mut c = server.client();
    let _: () = redis::pipe()
        .cmd("SADD")
        .arg("s")
        .arg("m")
        .cmd("HSET")
        .arg("h")
        .arg("f")
        .arg("v")
        .cmd("ZADD")
        .arg("z")
        .arg(1)
        .arg("m")
        .query(&mut c)
        .unwrap();
    let n = Neighbour::start(server.port);
    let started = Instant::now();
    for cmd in [
        vec!["SRANDMEMBER", "s", "-1000000000000"],
        vec!["HRANDFIELD", "h", "-1000000000000"],
        vec!["HRANDFIELD", "h", "-16777217", "WITHVALUES"],
        vec!["ZRANDMEMBER", "z", "-9223372036854775807"],
    ] {
        let err = redis::cmd(cmd[0]).arg(&cmd[1..]).query::<redis::Value>(&mut c).unwrap_err();
        assert_eq!(err.detail(), Some("value is out of range, a negative count may draw at most 16777216 elements"), "{cmd:?}");
    }
    let err = redis::cmd("EVAL")
        .arg("return redis.call('srandmember', KEYS[1], -2^40)")
        .arg(1)
        .arg("s")
        .query::<redis::Value>(&mut c)
        .unwrap_err();
    assert!(err.to_string().contains("a negative count may draw at most"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(2), "refusals took {:?}", started.elapsed());
    // Redis's own checks come first; a missing key or a count within the bound is served.
    let err = redis::cmd("HRANDFIELD").arg("h").arg("-9223372036854770000").arg("WITHVALUES").query::<redis::Value>(&mut c).unwrap_err();
    assert_eq!(err.detail(), Some("value is out of range"));
    let none: Vec<String> = redis::cmd("SRANDMEMBER").arg("nokey").arg("-1000000000000").query(&mut c).unwrap();
    assert!(none.is_empty());
    let len: i64 = redis::cmd("EVAL").arg("return #redis.call('srandmember', KEYS[1], -1000000)").arg(1).arg("s").query(&mut c).unwrap();
    assert_eq!(len, 1_000_000);
    n.finish("huge random counts", Duration::from_secs(2));
    // The largest count allowed (seconds of work in a debug build: the neighbour is done): 16,777,216 times `$1\r\nm\r\n` behind the array header.
    let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    s.write_all(b"SRANDMEMBER s -16777216\r\n").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let header = b"*16777216\r\n";
    let want = header.len() + 16_777_216 * 7;
    let (mut got, mut buf, mut head) = (0, vec![0u8; 1 << 20], Vec::new());
    while got < want {
        let k = s.read(&mut buf).expect("the largest allowed reply");
        assert!(k > 0, "closed after {got} of {want} bytes");
        if head.len() < 32 {
            head.extend_from_slice(&buf[..k.min(32)]);
        }
        got += k;
    }
    assert_eq!(got, want);
    assert!(head.starts_with(b"*16777216\r\n$1\r\nm\r\n"));
}
