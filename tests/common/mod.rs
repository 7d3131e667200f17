//! Shared test support: start the real `vermilion-server` binary (or the real `redis-server`)
//! on an ephemeral loopback port in its own temporary directory, and talk to it with the
//! `redis` crate or raw bytes. Servers are killed when dropped.
#![allow(dead_code)]

pub mod cluster;
pub mod diff;
pub mod probe;
pub mod stream_loose;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running server process.
pub struct Server {
    child: Child,
    pub port: u16,
    pub dir: tempfile::TempDir,
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("no free port")
}

pub fn vermilion_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_vermilion-server"))
}

impl Server {
    /// Starts vermilion-server with `--port <free> --dir <tmp>` plus `extra` arguments.
    pub fn start(extra: &[&str]) -> Server {
        Self::start_binary(&vermilion_bin(), extra)
    }

    /// Starts the real redis-server 7.0 the same way (no persistence).
    pub fn start_redis(extra: &[&str]) -> Server {
        let mut args = vec!["--save", "", "--appendonly", "no"];
        args.extend_from_slice(extra);
        Self::start_binary(Path::new("redis-server"), &args)
    }

    pub fn start_binary(bin: &Path, extra: &[&str]) -> Server {
        Self::start_binary_in(bin, tempfile::tempdir().expect("tempdir"), extra)
    }

    /// Starts vermilion-server in an existing directory (a restart over the same files).
    pub fn start_in(dir: tempfile::TempDir, extra: &[&str]) -> Server {
        Self::start_binary_in(&vermilion_bin(), dir, extra)
    }

    /// Stops the process (kill -9 if it still runs) and starts it again over the same
    /// directory with `extra` arguments, on a fresh port.
    pub fn restart(&mut self, extra: &[&str]) {
        self.kill9();
        let dir = self.take_dir();
        *self = Self::start_in(dir, extra);
    }

    /// Like [`Server::restart`], on the same port (replicas that point at it reconnect).
    pub fn restart_same_port(&mut self, extra: &[&str]) {
        self.kill9();
        let dir = self.take_dir();
        let port = self.port.to_string();
        // A config file, like redis-server's, must come first.
        let (file, options) = match extra.first() {
            Some(f) if !f.starts_with("--") => (Some(*f), &extra[1..]),
            _ => (None, extra),
        };
        let mut args = vec!["--port", port.as_str()];
        args.extend_from_slice(options);
        for _ in 0..50 {
            let mut cmd = Command::new(vermilion_bin());
            cmd.args(file).arg("--dir").arg(dir.path()).args(&args).stdout(Stdio::null()).stderr(Stdio::null());
            let child = cmd.spawn().expect("spawn vermilion-server");
            let mut server = Server { child, port: self.port, dir: tempfile::tempdir().expect("tempdir") };
            if server.wait_ready(Duration::from_secs(10)) {
                server.dir = dir;
                *self = server;
                return;
            }
            server.kill9();
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("vermilion-server did not restart on port {port}");
    }

    /// Runs vermilion-server over `dir` expecting it to refuse to start; returns its exit
    /// status success flag and everything it logged.
    pub fn run_expecting_exit(dir: &Path, extra: &[&str]) -> (bool, String) {
        let port = free_port();
        let out = Command::new(vermilion_bin())
            .arg("--port")
            .arg(port.to_string())
            .arg("--dir")
            .arg(dir)
            .args(extra)
            .stdin(Stdio::null())
            .output()
            .expect("run vermilion-server");
        (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
    }

    /// Runs vermilion-server with `extra` on a free port and returns its exit status if it
    /// stops by itself within 10 s (it is killed otherwise, and `None` comes back).
    pub fn exit_status_at_startup(extra: &[&str]) -> Option<std::process::ExitStatus> {
        let mut child = Command::new(vermilion_bin())
            .args(["--port", &free_port().to_string()])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("run vermilion-server");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(status);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Starts vermilion-server with extra environment variables (test failpoints).
    pub fn start_with_env(env: &[(&str, &str)], extra: &[&str]) -> Server {
        Self::start_binary_env(&vermilion_bin(), tempfile::tempdir().expect("tempdir"), env, extra)
    }

    pub fn start_binary_in(bin: &Path, dir: tempfile::TempDir, extra: &[&str]) -> Server {
        Self::start_binary_env(bin, dir, &[], extra)
    }

    fn start_binary_env(bin: &Path, mut dir: tempfile::TempDir, env: &[(&str, &str)], extra: &[&str]) -> Server {
        for _ in 0..5 {
            let port = free_port();
            let mut cmd = Command::new(bin);
            // A config file, like redis-server's, must come first.
            let (file, options) = match extra.first() {
                Some(f) if !f.starts_with("--") => (Some(*f), &extra[1..]),
                _ => (None, extra),
            };
            cmd.args(file);
            cmd.arg("--port").arg(port.to_string()).arg("--dir").arg(dir.path());
            cmd.args(options);
            cmd.envs(env.iter().copied());
            cmd.stdout(Stdio::null()).stderr(Stdio::null());
            let child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {}: {e}", bin.display()));
            let mut server = Server { child, port, dir };
            // A server that loads a large log takes a while (LOADING is not ready).
            if server.wait_ready(Duration::from_secs(30)) {
                return server;
            }
            let _ = server.child.kill();
            let _ = server.child.wait();
            dir = server.take_dir();
        }
        panic!("server {} did not start", bin.display());
    }

    fn take_dir(&mut self) -> tempfile::TempDir {
        std::mem::replace(&mut self.dir, tempfile::tempdir().expect("tempdir"))
    }

    fn wait_ready(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            if let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) {
                match answering_pid(&mut s) {
                    // Still loading its data: not ready for the test yet.
                    Answer::Loading | Answer::Nothing => {}
                    // Another test's server took the port between free_port() and our bind:
                    // ours exits, and the caller retries on a fresh port.
                    Answer::Pid(pid) if pid != self.child.id() => return false,
                    // Ours, or a server that answers but hides INFO (requirepass).
                    Answer::Pid(_) | Answer::Other => return true,
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    pub fn client(&self) -> redis::Connection {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port)).and_then(|c| c.get_connection()).expect("connect")
    }

    pub fn raw(&self) -> RawConn {
        RawConn::connect(self.port)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits for the process to exit by itself (e.g. after SHUTDOWN); true if it did.
    pub fn wait_exit(&mut self, timeout: Duration) -> bool {
        self.wait_exit_status(timeout).is_some()
    }

    /// The process's exit status, if it exits within `timeout`.
    pub fn wait_exit_status(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A raw TCP connection: send bytes, read exact replies.
pub struct RawConn {
    pub stream: TcpStream,
}

impl RawConn {
    pub fn connect(port: u16) -> RawConn {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        stream.set_nodelay(true).expect("nodelay");
        RawConn { stream }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("write");
    }

    /// Sends one command as a multibulk.
    pub fn cmd(&mut self, args: &[&[u8]]) {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        self.send(&out);
    }

    /// Reads exactly one complete RESP reply (RESP2 or RESP3) and returns its raw bytes.
    pub fn read_reply(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        self.read_one(&mut out);
        out
    }

    /// Reads until `n` bytes arrived.
    pub fn read_exact_n(&mut self, n: usize) -> Vec<u8> {
        let mut buf = vec![0u8; n];
        self.stream.read_exact(&mut buf).expect("read");
        buf
    }

    /// Sends a command and returns its raw reply.
    pub fn call(&mut self, args: &[&[u8]]) -> Vec<u8> {
        self.cmd(args);
        self.read_reply()
    }

    /// Reads one line (without its CRLF) as text.
    pub fn read_line_text(&mut self) -> String {
        let mut out = Vec::new();
        let line = self.read_line(&mut out);
        String::from_utf8_lossy(&line[..line.len() - 2]).into_owned()
    }

    /// True if the server closed the connection (reads EOF within the timeout).
    pub fn is_closed(&mut self) -> bool {
        let mut buf = [0u8; 1];
        matches!(self.stream.read(&mut buf), Ok(0) | Err(_))
    }

    fn read_line(&mut self, out: &mut Vec<u8>) -> Vec<u8> {
        let mut line = Vec::new();
        let mut b = [0u8; 1];
        loop {
            self.stream.read_exact(&mut b).expect("read line");
            line.push(b[0]);
            if line.ends_with(b"\r\n") {
                break;
            }
        }
        out.extend_from_slice(&line);
        line
    }

    fn read_one(&mut self, out: &mut Vec<u8>) {
        let line = self.read_line(out);
        let body = &line[1..line.len() - 2];
        let n: i64 = std::str::from_utf8(body).ok().and_then(|s| s.parse().ok()).unwrap_or(0);
        match line[0] {
            b'$' | b'=' | b'!' if n >= 0 => {
                let data = self.read_exact_n(n as usize + 2);
                out.extend_from_slice(&data);
            }
            b'*' | b'~' | b'>' if n > 0 => {
                for _ in 0..n {
                    self.read_one(out);
                }
            }
            b'%' | b'|' if n > 0 => {
                for _ in 0..2 * n {
                    self.read_one(out);
                }
            }
            _ => {}
        }
    }
}

/// A small deterministic generator (xorshift64*) for seeded random test workloads.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }

    /// Uniform in 0..n (0 when n is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
}

/// What a server said to `INFO server` while a test waited for it.
enum Answer {
    Nothing,
    Loading,
    Pid(u32),
    Other,
}

/// Asks the server on `s` for its process id (INFO server's `process_id`).
fn answering_pid(s: &mut TcpStream) -> Answer {
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"INFO server\r\n").is_err() {
        return Answer::Nothing;
    }
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = match s.read(&mut buf) {
            Ok(n) if n > 0 => n,
            _ => return if got.is_empty() { Answer::Nothing } else { Answer::Other },
        };
        got.extend_from_slice(&buf[..n]);
        if got.starts_with(b"-LOADING") {
            return Answer::Loading;
        }
        if got.starts_with(b"-") {
            return Answer::Other;
        }
        let text = String::from_utf8_lossy(&got);
        if let Some(rest) = text.split("process_id:").nth(1) {
            if let Some(line) = rest.split("\r\n").next().filter(|_| rest.contains("\r\n")) {
                return line.trim().parse().map_or(Answer::Other, Answer::Pid);
            }
        }
        if got.len() > 64 * 1024 {
            return Answer::Other;
        }
    }
}

/// Another program the test started (redis-sentinel, nutcracker), killed when dropped.
pub struct Daemon(pub Child);

impl Daemon {
    /// Starts `bin args...` with its output discarded.
    pub fn spawn(bin: &str, args: &[&str]) -> Daemon {
        let child = Command::new(bin)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {bin}: {e} (install it: see .ci/run)"));
        Daemon(child)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until something listens on `port` (a daemon started by the test).
pub fn wait_listening(port: u16, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "nothing listens on port {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
