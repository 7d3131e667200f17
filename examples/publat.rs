//! Pub/Sub delivery latency: one connection PUBLISHes a timestamp on a channel of its own
//! every `interval` microseconds, another, subscribed to it, reads each message and takes the
//! time from publish to arrival. Run beside a PUBLISH load (benches/compare-pubsub.sh does),
//! it shows what a subscriber waits for its messages while the server is busy.
//!
//! `cargo run --release --example publat -- PORT [seconds] [interval-us]`
//! prints `count p50 p99 p999 max` in microseconds.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CHANNEL: &str = "latency-probe";

/// Reads the subscriber's stream and returns the latency of each message, in microseconds.
fn subscriber(mut s: TcpStream, base: Instant, stop: Arc<AtomicBool>) -> std::io::Result<Vec<u64>> {
    let mut lat = Vec::new();
    let mut pending: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 65536];
    s.set_read_timeout(Some(Duration::from_millis(200)))?;
    while !stop.load(Ordering::Acquire) {
        let n = match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => continue,
            Err(e) => return Err(e),
        };
        let now = base.elapsed().as_micros() as u64;
        pending.extend_from_slice(&buf[..n]);
        // Every complete message is `*3 $7 message $N channel $M <micros>`: the payload is
        // the last line of each complete frame, found as the line after a `$` line that
        // follows the channel's name.
        let text = String::from_utf8_lossy(&pending).into_owned();
        let mut consumed = 0;
        let mut lines = Vec::new();
        let mut at = 0;
        while let Some(end) = text[at..].find("\r\n") {
            lines.push((&text[at..at + end], at + end + 2));
            at += end + 2;
        }
        let mut i = 0;
        while i + 7 <= lines.len() && lines[i].0.starts_with('*') {
            if lines[i + 2].0 == "message" {
                if let Ok(sent) = lines[i + 6].0.parse::<u64>() {
                    lat.push(now.saturating_sub(sent));
                }
            }
            consumed = lines[i + 6].1;
            i += 7;
        }
        pending.drain(..consumed);
    }
    Ok(lat)
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let port: u16 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(6379);
    let seconds: f64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(3.0);
    let interval: u64 = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let base = Instant::now();
    let mut sub = TcpStream::connect(("127.0.0.1", port))?;
    sub.set_nodelay(true)?;
    sub.write_all(format!("*2\r\n$9\r\nSUBSCRIBE\r\n${}\r\n{}\r\n", CHANNEL.len(), CHANNEL).as_bytes())?;
    // The subscription's confirmation: `*3 $9 subscribe $N channel :1`.
    let mut confirm = Vec::new();
    let mut buf = [0u8; 256];
    while !confirm.ends_with(b":1\r\n") {
        let n = sub.read(&mut buf)?;
        if n == 0 {
            return Err(std::io::Error::other("closed before subscribing"));
        }
        confirm.extend_from_slice(&buf[..n]);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let stop = stop.clone();
        std::thread::spawn(move || subscriber(sub, base, stop))
    };
    let mut publisher = TcpStream::connect(("127.0.0.1", port))?;
    publisher.set_nodelay(true)?;
    let end = Instant::now() + Duration::from_secs_f64(seconds);
    let mut sent = 0u64;
    while Instant::now() < end {
        let stamp = base.elapsed().as_micros().to_string();
        let cmd = format!("*3\r\n$7\r\nPUBLISH\r\n${}\r\n{}\r\n${}\r\n{}\r\n", CHANNEL.len(), CHANNEL, stamp.len(), stamp);
        publisher.write_all(cmd.as_bytes())?;
        // The integer reply.
        let mut got = Vec::new();
        while !got.ends_with(b"\r\n") {
            let n = publisher.read(&mut buf)?;
            if n == 0 {
                return Err(std::io::Error::other("publisher closed"));
            }
            got.extend_from_slice(&buf[..n]);
        }
        sent += 1;
        std::thread::sleep(Duration::from_micros(interval));
    }
    // Let the last messages arrive.
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Release);
    let mut lat = reader.join().map_err(|_| std::io::Error::other("reader panicked"))??;
    if lat.is_empty() {
        return Err(std::io::Error::other(format!("no message arrived of {sent}")));
    }
    lat.sort_unstable();
    let at = |q: f64| lat[((lat.len() - 1) as f64 * q) as usize];
    println!("{} {} {} {} {}", lat.len(), at(0.5), at(0.99), at(0.999), lat[lat.len() - 1]);
    Ok(())
}
