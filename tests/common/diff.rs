//! Differential harness: the real `redis-server` 7.0 and `vermilion-server` side by side.
//!
//! [`DiffPair::start`] launches both servers (fresh temp dirs, free loopback ports). Every
//! command goes to both over connections the pair keeps open — connection `0` exists from
//! the start, more are opened on demand, and connection `i` on one side always mirrors
//! connection `i` on the other (same database selected, same RESP version, same name) —
//! and the RAW REPLY BYTES are compared.
//!
//! # How later issues should use it
//!
//! ```ignore
//! mod common;
//! use common::diff::{Cmp, DiffPair};
//!
//! let mut d = DiffPair::start();
//! d.check(&[b"SET", b"k", b"v"]).unwrap();              // exact bytes, Err(Diff) otherwise
//! d.check_unordered(&[b"KEYS", b"*"]).unwrap();         // array order unspecified
//! d.check_near(&[b"TTL", b"k"], 1).unwrap();            // integers within +-1
//! d.on(1).hello(3).unwrap();                            // connection 1 (opened now) speaks RESP3
//! d.check_with(&[b"CLIENT", b"ID"], Cmp::IgnoreInts).unwrap(); // shapes only
//! d.on(0);                                              // back to connection 0 (still RESP2)
//! // Scripts: one command per line in redis-cli syntax, all differences collected.
//! d.assert_script("lists", &[
//!     "RPUSH l a b c",
//!     "~SMEMBERS s",          // `~`  unordered (sorted elements)
//!     "~~CONFIG GET max*",    // `~~` unordered pairs (flat RESP2 maps)
//!     "%1 TTL k",             // `%N` integers within N (time-dependent replies)
//!     "?CLIENT ID",           // `?`  integers ignored (ids, timestamps): only the shape counts
//!     "1> GET k",             // `N>` run on connection N (opened if needed)
//! ]);
//! ```
//!
//! A [`Diff`] prints the command, the comparison mode and both replies escaped (`\r\n`,
//! `\xHH`), so a failing assertion is self-explanatory. If a side closes the connection or
//! times out, the reply reads `<connection closed>` / `<timeout>`; both sides of that
//! connection index are then reopened so later commands stay comparable (state such as
//! SELECT/HELLO is lost on both sides alike). Protocol-level tests use [`DiffPair::check_raw`]
//! to send arbitrary bytes and compare the next N replies (a close counts as a reply).
//! [`DiffPair::redis_call`] / [`DiffPair::ours_call`] talk to one side only (e.g. to size
//! an expensive command before sending it to both). [`Conn`] is also usable on its own: a
//! buffered raw connection whose reads never panic.
#![allow(dead_code)]

use std::fmt;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::Server;

/// One parsed RESP2/RESP3 value. Maps (`%`) and attributes (`|`) keep their 2n children flat.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Resp {
    /// Single-line types: `+ - : , _ # (` with the text after the type byte.
    Line(u8, Vec<u8>),
    /// Length-prefixed types: `$ = !` with their payload.
    Blob(u8, Vec<u8>),
    /// A negative length (`$-1`, `*-1`): the type byte.
    Null(u8),
    /// Aggregates: `* ~ > % |`.
    Agg(u8, Vec<Resp>),
}

impl Resp {
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Resp::Line(t, body) => {
                out.push(*t);
                out.extend_from_slice(body);
                out.extend_from_slice(b"\r\n");
            }
            Resp::Blob(t, body) => {
                out.push(*t);
                out.extend_from_slice(format!("{}\r\n", body.len()).as_bytes());
                out.extend_from_slice(body);
                out.extend_from_slice(b"\r\n");
            }
            Resp::Null(t) => {
                out.push(*t);
                out.extend_from_slice(b"-1\r\n");
            }
            Resp::Agg(t, items) => {
                let n = if matches!(t, b'%' | b'|') { items.len() / 2 } else { items.len() };
                out.push(*t);
                out.extend_from_slice(format!("{n}\r\n").as_bytes());
                for i in items {
                    i.encode(out);
                }
            }
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode(&mut out);
        out
    }

    /// The integer of a `:` reply.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Resp::Line(b':', body) => std::str::from_utf8(body).ok()?.parse().ok(),
            _ => None,
        }
    }

    /// The payload of a bulk/verbatim string or the text of a simple string.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Resp::Blob(_, b) | Resp::Line(b'+', b) => Some(b),
            _ => None,
        }
    }

    pub fn is_error(&self) -> bool {
        matches!(self, Resp::Line(b'-', _) | Resp::Blob(b'!', _))
    }
}

/// A complete reply: the exact bytes received and their parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    pub raw: Vec<u8>,
    pub value: Resp,
}

/// Why no reply could be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Broken {
    Closed,
    Timeout,
    Io(String),
    Malformed(String),
}

impl fmt::Display for Broken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Broken::Closed => write!(f, "<connection closed>"),
            Broken::Timeout => write!(f, "<timeout>"),
            Broken::Io(e) => write!(f, "<io error: {e}>"),
            Broken::Malformed(e) => write!(f, "<malformed reply: {e}>"),
        }
    }
}

pub type Got = Result<Reply, Broken>;

/// Prints a reply (or its absence) escaped.
pub fn show(got: &Got) -> String {
    match got {
        Ok(r) => format!("\"{}\"", escape(&r.raw)),
        Err(b) => b.to_string(),
    }
}

/// Escapes bytes for printing: printable ASCII as is, `\r \n \t \0 \\ \"`, else `\xHH`;
/// long inputs are cut in the middle.
pub fn escape(bytes: &[u8]) -> String {
    const MAX: usize = 400;
    let (head, tail) = if bytes.len() > MAX { (&bytes[..MAX - 100], Some(&bytes[bytes.len() - 100..])) } else { (bytes, None) };
    let mut s = String::new();
    let esc = |s: &mut String, part: &[u8]| {
        for &b in part {
            match b {
                b'\r' => s.push_str("\\r"),
                b'\n' => s.push_str("\\n"),
                b'\t' => s.push_str("\\t"),
                0 => s.push_str("\\0"),
                b'\\' => s.push_str("\\\\"),
                b'"' => s.push_str("\\\""),
                0x20..=0x7e => s.push(b as char),
                _ => s.push_str(&format!("\\x{b:02x}")),
            }
        }
    };
    esc(&mut s, head);
    if let Some(tail) = tail {
        s.push_str(&format!("...<{} bytes omitted>...", bytes.len() - head.len() - tail.len()));
        esc(&mut s, tail);
    }
    s
}

/// A command as redis-cli would show it: each argument quoted and escaped.
pub fn show_cmd(args: &[Vec<u8>]) -> String {
    args.iter().map(|a| format!("\"{}\"", escape(a))).collect::<Vec<_>>().join(" ")
}

/// Encodes `args` as a RESP multibulk request.
pub fn encode_cmd<A: AsRef<[u8]>>(args: &[A]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        let a = a.as_ref();
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// A buffered raw connection. Reads return `Err(Broken)` instead of panicking.
pub struct Conn {
    pub stream: TcpStream,
    buf: Vec<u8>,
    pos: usize,
    timeout: Duration,
}

impl Conn {
    pub fn connect(port: u16, timeout: Duration) -> Conn {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream.set_read_timeout(Some(timeout)).expect("timeout");
        stream.set_write_timeout(Some(Duration::from_secs(30))).expect("timeout");
        stream.set_nodelay(true).expect("nodelay");
        Conn { stream, buf: Vec::new(), pos: 0, timeout }
    }

    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
        self.stream.set_read_timeout(Some(timeout)).expect("timeout");
    }

    pub fn send(&mut self, bytes: &[u8]) -> Result<(), Broken> {
        self.stream.write_all(bytes).map_err(|e| match e.kind() {
            ErrorKind::BrokenPipe | ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted => Broken::Closed,
            _ => Broken::Io(e.to_string()),
        })
    }

    pub fn cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Result<(), Broken> {
        self.send(&encode_cmd(args))
    }

    pub fn call<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Got {
        self.cmd(args)?;
        self.read()
    }

    /// Reads exactly one complete reply.
    pub fn read(&mut self) -> Got {
        let start = self.pos;
        let value = self.parse()?;
        let raw = self.buf[start..self.pos].to_vec();
        if self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        } else if self.pos > 1 << 16 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        Ok(Reply { raw, value })
    }

    /// True if the peer closes the connection within `within` (data still pending counts
    /// as not closed).
    /// Reads replies until one containing `sentinel` (excluded) or a failure (included):
    /// the pushes a subscriber received before a marker message.
    pub fn read_until(&mut self, sentinel: &str) -> Vec<Got> {
        let mut out = Vec::new();
        loop {
            let got = self.read();
            match &got {
                Ok(r) if r.raw.windows(sentinel.len()).any(|w| w == sentinel.as_bytes()) => return out,
                Ok(_) => out.push(got),
                Err(_) => {
                    out.push(got);
                    return out;
                }
            }
        }
    }

    pub fn closed_within(&mut self, within: Duration) -> bool {
        if self.pos < self.buf.len() {
            return false;
        }
        let _ = self.stream.set_read_timeout(Some(within));
        let mut b = [0u8; 1];
        let closed = match self.stream.read(&mut b) {
            Ok(0) => true,
            Ok(_) => {
                self.buf.push(b[0]);
                false
            }
            Err(e) => matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted | ErrorKind::BrokenPipe),
        };
        let _ = self.stream.set_read_timeout(Some(self.timeout));
        closed
    }

    fn fill(&mut self) -> Result<(), Broken> {
        let mut tmp = [0u8; 65536];
        match self.stream.read(&mut tmp) {
            Ok(0) => Err(Broken::Closed),
            Ok(n) => {
                self.buf.extend_from_slice(&tmp[..n]);
                Ok(())
            }
            Err(e) => match e.kind() {
                ErrorKind::WouldBlock | ErrorKind::TimedOut => Err(Broken::Timeout),
                ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted | ErrorKind::BrokenPipe => Err(Broken::Closed),
                _ => Err(Broken::Io(e.to_string())),
            },
        }
    }

    fn line(&mut self) -> Result<Vec<u8>, Broken> {
        let mut from = self.pos;
        loop {
            if let Some(i) = self.buf[from..].windows(2).position(|w| w == b"\r\n") {
                let line = self.buf[self.pos..from + i].to_vec();
                self.pos = from + i + 2;
                return Ok(line);
            }
            from = self.buf.len().saturating_sub(1).max(self.pos);
            self.fill()?;
        }
    }

    fn take(&mut self, n: usize) -> Result<Vec<u8>, Broken> {
        while self.buf.len() - self.pos < n {
            self.fill()?;
        }
        let out = self.buf[self.pos..self.pos + n].to_vec();
        self.pos += n;
        Ok(out)
    }

    fn parse(&mut self) -> Result<Resp, Broken> {
        let line = self.line()?;
        let Some((&t, body)) = line.split_first() else {
            return Err(Broken::Malformed("empty line".into()));
        };
        let len = || -> Result<i64, Broken> {
            std::str::from_utf8(body)
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| Broken::Malformed(format!("bad length line \"{}\"", escape(&line))))
        };
        match t {
            b'+' | b'-' | b':' | b',' | b'_' | b'#' | b'(' => Ok(Resp::Line(t, body.to_vec())),
            b'$' | b'=' | b'!' => {
                let n = len()?;
                if n < 0 {
                    return Ok(Resp::Null(t));
                }
                let mut data = self.take(n as usize + 2)?;
                if !data.ends_with(b"\r\n") {
                    return Err(Broken::Malformed("bulk payload not followed by CRLF".into()));
                }
                data.truncate(n as usize);
                Ok(Resp::Blob(t, data))
            }
            b'*' | b'~' | b'>' | b'%' | b'|' => {
                let n = len()?;
                if n < 0 {
                    return Ok(Resp::Null(t));
                }
                let count = if matches!(t, b'%' | b'|') { 2 * n } else { n };
                let mut items = Vec::with_capacity(count.min(4096) as usize);
                for _ in 0..count {
                    items.push(self.parse()?);
                }
                Ok(Resp::Agg(t, items))
            }
            _ => Err(Broken::Malformed(format!("unknown type byte in \"{}\"", escape(&line)))),
        }
    }
}

/// How two replies are compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    /// Byte for byte.
    Exact,
    /// The top-level aggregate's elements are compared as a sorted multiset (KEYS, SMEMBERS).
    Unordered,
    /// The top-level aggregate is a list of pairs (flat RESP2 map or RESP3 map) whose order
    /// is unspecified (CONFIG GET pattern, HGETALL).
    UnorderedPairs,
    /// Integers that are both >= 0 may differ by at most the tolerance, anywhere in the
    /// reply (TTL, PTTL, EXPIRETIME...). Negative integers (-1, -2) must be equal.
    Near(i64),
    /// Every integer is ignored (client ids, timestamps): types, lengths and strings must match.
    IgnoreInts,
}

fn sorted_top(r: &Resp, pairs: bool) -> Resp {
    match r {
        Resp::Agg(t, items) => {
            if pairs || matches!(t, b'%' | b'|') {
                let mut chunks: Vec<Vec<Resp>> = items.chunks(2).map(|c| c.to_vec()).collect();
                chunks.sort();
                Resp::Agg(*t, chunks.concat())
            } else {
                let mut items = items.clone();
                items.sort_by_key(|i| i.to_bytes());
                Resp::Agg(*t, items)
            }
        }
        other => other.clone(),
    }
}

fn mask_ints(r: &Resp) -> Resp {
    match r {
        Resp::Line(b':', _) => Resp::Line(b':', b"<int>".to_vec()),
        Resp::Agg(t, items) => Resp::Agg(*t, items.iter().map(mask_ints).collect()),
        other => other.clone(),
    }
}

fn near(a: &Resp, b: &Resp, tol: i64) -> bool {
    match (a, b) {
        (Resp::Agg(ta, ia), Resp::Agg(tb, ib)) => ta == tb && ia.len() == ib.len() && ia.iter().zip(ib).all(|(x, y)| near(x, y, tol)),
        _ => match (a.as_int(), b.as_int()) {
            (Some(x), Some(y)) if x >= 0 && y >= 0 => (x - y).abs() <= tol,
            _ => a == b,
        },
    }
}

/// True if the two outcomes are equal under `cmp`.
pub fn same(a: &Got, b: &Got, cmp: Cmp) -> bool {
    match (a, b) {
        (Ok(a), Ok(b)) => match cmp {
            Cmp::Exact => a.raw == b.raw,
            Cmp::Unordered => sorted_top(&a.value, false) == sorted_top(&b.value, false),
            Cmp::UnorderedPairs => sorted_top(&a.value, true) == sorted_top(&b.value, true),
            Cmp::Near(tol) => near(&a.value, &b.value, tol),
            Cmp::IgnoreInts => mask_ints(&a.value) == mask_ints(&b.value),
        },
        (Err(x), Err(y)) => x == y,
        _ => false,
    }
}

/// The first difference seen: where, what was sent, and both replies.
#[derive(Clone, Debug)]
pub struct Diff {
    /// Position of the command in the script / sequence (0-based), or the pair's command count.
    pub index: usize,
    pub conn: usize,
    pub cmp: Cmp,
    /// What was sent, printable.
    pub sent: String,
    pub redis: String,
    pub ours: String,
}

impl fmt::Display for Diff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "difference at #{} on connection {} (compare {:?})", self.index, self.conn, self.cmp)?;
        writeln!(f, "  sent:  {}", self.sent)?;
        writeln!(f, "  redis: {}", self.redis)?;
        write!(f, "  ours:  {}", self.ours)
    }
}

impl std::error::Error for Diff {}

/// Both servers and mirrored connections to them.
pub struct DiffPair {
    pub redis: Server,
    pub ours: Server,
    /// `conns[i] = (redis side, our side)`.
    conns: Vec<(Conn, Conn)>,
    current: usize,
    /// Read timeout of new connections (default 5 s).
    pub timeout: Duration,
    /// Commands (or raw sends) compared so far.
    pub count: usize,
}

impl DiffPair {
    /// Starts redis-server and vermilion-server with their defaults.
    pub fn start() -> DiffPair {
        Self::start_with(&[], &[])
    }

    /// Starts both with extra command-line arguments (e.g. `["--requirepass", "pw"]`).
    pub fn start_with(redis_args: &[&str], our_args: &[&str]) -> DiffPair {
        let redis = Server::start_redis(redis_args);
        let ours = Server::start(our_args);
        let timeout = Duration::from_secs(5);
        let mut d = DiffPair { redis, ours, conns: Vec::new(), current: 0, timeout, count: 0 };
        d.open(0);
        d
    }

    fn open(&mut self, i: usize) {
        while self.conns.len() <= i {
            let pair = (Conn::connect(self.redis.port, self.timeout), Conn::connect(self.ours.port, self.timeout));
            self.conns.push(pair);
        }
    }

    /// Number of connections opened so far.
    pub fn conn_count(&self) -> usize {
        self.conns.len()
    }

    /// Makes connection `i` current (opening it, and any below it, if needed).
    pub fn on(&mut self, i: usize) -> &mut Self {
        self.open(i);
        self.current = i;
        self
    }

    pub fn current(&self) -> usize {
        self.current
    }

    /// Replaces connection `i` on both sides with fresh connections (RESP2, db 0, no name).
    pub fn reconnect(&mut self, i: usize) {
        self.open(i);
        self.conns[i] = (Conn::connect(self.redis.port, self.timeout), Conn::connect(self.ours.port, self.timeout));
    }

    /// Closes every connection except a fresh connection 0, which becomes current.
    pub fn reset_conns(&mut self) {
        self.conns.clear();
        self.current = 0;
        self.open(0);
    }

    /// Direct access to connection `i` of each side.
    pub fn conns(&mut self, i: usize) -> (&mut Conn, &mut Conn) {
        self.open(i);
        let (r, o) = &mut self.conns[i];
        (r, o)
    }

    /// Sends bytes to both sides on the current connection, then reads `n` replies from each
    /// (a side that breaks stops there; its remaining entries repeat the failure).
    pub fn exchange_raw(&mut self, bytes: &[u8], n: usize) -> (Vec<Got>, Vec<Got>) {
        let i = self.current;
        let (r, o) = &mut self.conns[i];
        let sr = r.send(bytes);
        let so = o.send(bytes);
        let read = |c: &mut Conn, sent: Result<(), Broken>| -> Vec<Got> {
            let mut out = Vec::with_capacity(n);
            let mut failed: Option<Broken> = sent.err();
            for _ in 0..n {
                if let Some(b) = &failed {
                    out.push(Err(b.clone()));
                    continue;
                }
                let got = c.read();
                if let Err(b) = &got {
                    failed = Some(b.clone());
                }
                out.push(got);
            }
            out
        };
        let a = read(r, sr);
        let b = read(o, so);
        if a.iter().chain(b.iter()).any(|g| g.is_err()) {
            self.reconnect(i);
        }
        (a, b)
    }

    /// Sends one command to both sides on the current connection and returns both outcomes.
    pub fn exchange<A: AsRef<[u8]>>(&mut self, args: &[A]) -> (Got, Got) {
        let (mut a, mut b) = self.exchange_raw(&encode_cmd(args), 1);
        (a.pop().unwrap(), b.pop().unwrap())
    }

    /// Compares one command's replies under `cmp`; `Ok` carries redis's reply.
    pub fn check_with<A: AsRef<[u8]>>(&mut self, args: &[A], cmp: Cmp) -> Result<Got, Diff> {
        let index = self.count;
        self.count += 1;
        let (a, b) = self.exchange(args);
        if same(&a, &b, cmp) {
            Ok(a)
        } else {
            let sent: Vec<Vec<u8>> = args.iter().map(|x| x.as_ref().to_vec()).collect();
            Err(Diff { index, conn: self.current, cmp, sent: show_cmd(&sent), redis: show(&a), ours: show(&b) })
        }
    }

    /// Exact comparison.
    pub fn check<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Result<Got, Diff> {
        self.check_with(args, Cmp::Exact)
    }

    /// Sorted-elements comparison (KEYS, SMEMBERS...).
    pub fn check_unordered<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Result<Got, Diff> {
        self.check_with(args, Cmp::Unordered)
    }

    /// Integers within `tol` (TTL & co.).
    pub fn check_near<A: AsRef<[u8]>>(&mut self, args: &[A], tol: i64) -> Result<Got, Diff> {
        self.check_with(args, Cmp::Near(tol))
    }

    /// Sends raw bytes (inline commands, broken frames...) and compares the next `n` replies,
    /// a closed connection or a timeout counting as a reply.
    pub fn check_raw(&mut self, bytes: &[u8], n: usize, cmp: Cmp) -> Result<(), Diff> {
        let index = self.count;
        self.count += 1;
        let conn = self.current;
        let (a, b) = self.exchange_raw(bytes, n);
        for (x, y) in a.iter().zip(&b) {
            if !same(x, y, cmp) {
                let all = |v: &[Got]| v.iter().map(show).collect::<Vec<_>>().join(" , ");
                return Err(Diff { index, conn, cmp, sent: format!("raw \"{}\"", escape(bytes)), redis: all(&a), ours: all(&b) });
            }
        }
        Ok(())
    }

    /// Switches the current connection to RESP `proto` on both sides (HELLO, ids ignored).
    pub fn hello(&mut self, proto: u8) -> Result<Got, Diff> {
        self.check_with(&[b"HELLO".to_vec(), proto.to_string().into_bytes()], Cmp::IgnoreInts)
    }

    /// One command to redis only, on the current connection.
    pub fn redis_call<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Got {
        let i = self.current;
        self.conns[i].0.call(args)
    }

    /// One command to our server only, on the current connection.
    pub fn ours_call<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Got {
        let i = self.current;
        self.conns[i].1.call(args)
    }

    /// Runs a script (one command per line, redis-cli quoting, prefixes `N>`, `~`, `~~`,
    /// `%N`, `?` as in the module docs) and returns every difference. Blank lines and lines
    /// starting with `#` are skipped.
    pub fn run(&mut self, script: &[&str]) -> Vec<Diff> {
        let mut diffs = Vec::new();
        for (index, line) in script.iter().enumerate() {
            let (conn, cmp, args) = parse_script_line(line);
            let Some(args) = args else { continue };
            if let Some(c) = conn {
                self.on(c);
            }
            if let Err(mut d) = self.check_with(&args, cmp) {
                d.index = index;
                diffs.push(d);
            }
        }
        diffs
    }

    /// Runs a script and panics listing every difference.
    pub fn assert_script(&mut self, name: &str, script: &[&str]) {
        let diffs = self.run(script);
        if !diffs.is_empty() {
            let mut msg = format!("script '{name}': {} of {} commands differ from redis-server:\n", diffs.len(), script.len());
            for d in &diffs {
                msg.push_str(&format!("{d}\n"));
            }
            panic!("{msg}");
        }
    }

    /// Waits until `f` holds on redis (used rarely: e.g. after an async operation).
    pub fn wait_redis(&mut self, timeout: Duration, mut f: impl FnMut(&mut Self) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if f(self) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }
}

/// Parses one script line into (connection, comparison, args). `args` is `None` for blank or
/// comment lines. Panics on unbalanced quotes (a bug in the script).
pub fn parse_script_line(line: &str) -> (Option<usize>, Cmp, Option<Vec<Vec<u8>>>) {
    let mut s = line.trim_start();
    if s.is_empty() || s.starts_with('#') {
        return (None, Cmp::Exact, None);
    }
    let mut conn = None;
    if let Some((n, rest)) = s.split_once('>') {
        if !n.is_empty() && n.trim().chars().all(|c| c.is_ascii_digit()) {
            conn = n.trim().parse().ok();
            s = rest.trim_start();
        }
    }
    let mut cmp = Cmp::Exact;
    if let Some(rest) = s.strip_prefix("~~") {
        cmp = Cmp::UnorderedPairs;
        s = rest;
    } else if let Some(rest) = s.strip_prefix('~') {
        cmp = Cmp::Unordered;
        s = rest;
    } else if let Some(rest) = s.strip_prefix('?') {
        cmp = Cmp::IgnoreInts;
        s = rest;
    } else if let Some(rest) = s.strip_prefix('%') {
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        cmp = Cmp::Near(digits.parse().expect("%N needs a number"));
        s = &rest[digits.len()..];
    }
    let args = vermilion::protocol::split_args(s.as_bytes()).unwrap_or_else(|| panic!("unbalanced quotes in script line {line:?}"));
    if args.is_empty() {
        return (conn, cmp, None);
    }
    (conn, cmp, Some(args))
}
