//! Pub/Sub subscribers that cost as little as possible: N connections SUBSCRIBEd to one
//! channel, each drained by a thread with 64 KB reads and no parsing, until killed.
//! benches/compare-pubsub.sh uses it so that PUBLISH's row measures the server's fan-out,
//! not 50 redis-cli processes parsing and printing every message on the same two cores.
//!
//! `cargo run --release --example subdrain -- PORT [connections] [channel]`

use std::io::{Read, Write};
use std::net::TcpStream;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let port: u16 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(6379);
    let conns: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(1);
    let channel = args.get(3).cloned().unwrap_or_else(|| "bench-channel".into());
    let cmd = format!("*2\r\n$9\r\nSUBSCRIBE\r\n${}\r\n{}\r\n", channel.len(), channel);
    let handles: Vec<_> = (0..conns)
        .map(|_| {
            let cmd = cmd.clone();
            std::thread::spawn(move || -> std::io::Result<()> {
                let mut s = TcpStream::connect(("127.0.0.1", port))?;
                s.write_all(cmd.as_bytes())?;
                let mut buf = vec![0u8; 65536];
                while s.read(&mut buf)? > 0 {}
                Ok(())
            })
        })
        .collect();
    for h in handles {
        if !matches!(h.join(), Ok(Ok(()))) {
            eprintln!("a subscriber failed");
        }
    }
}
