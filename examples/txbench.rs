//! MULTI/EXEC throughput: N connections, each running `MULTI; INCR k x5; EXEC` transactions
//! back to back (the whole transaction in one write, as a client library pipelines it).
//! redis-benchmark cannot send a transaction, so benches/compare-pubsub.sh uses this.
//!
//! `cargo run --release --example txbench -- PORT [connections] [transactions-per-connection]`

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let port: u16 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(6379);
    let conns: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(50);
    let per_conn: usize = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(2000);
    let mut tx = b"*1\r\n$5\r\nMULTI\r\n".to_vec();
    for _ in 0..5 {
        tx.extend_from_slice(b"*2\r\n$4\r\nINCR\r\n$7\r\ncounter\r\n");
    }
    tx.extend_from_slice(b"*1\r\n$4\r\nEXEC\r\n");
    // +OK, 5 x +QUEUED, then *5 and five integers.
    let start = Instant::now();
    let handles: Vec<_> = (0..conns)
        .map(|_| {
            let tx = tx.clone();
            std::thread::spawn(move || -> std::io::Result<()> {
                let mut s = TcpStream::connect(("127.0.0.1", port))?;
                s.set_nodelay(true)?;
                let mut buf = vec![0u8; 4096];
                for _ in 0..per_conn {
                    s.write_all(&tx)?;
                    // Read until the EXEC array's fifth integer line has arrived.
                    let mut got = Vec::new();
                    loop {
                        let n = s.read(&mut buf)?;
                        if n == 0 {
                            return Err(std::io::Error::other("closed"));
                        }
                        got.extend_from_slice(&buf[..n]);
                        if got.windows(4).any(|w| w == b"*5\r\n")
                            && got.iter().filter(|&&b| b == b':').count() >= 5
                            && got.ends_with(b"\r\n")
                        {
                            break;
                        }
                    }
                }
                Ok(())
            })
        })
        .collect();
    let mut failed = 0;
    for h in handles {
        if !matches!(h.join(), Ok(Ok(()))) {
            failed += 1;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let total = (conns - failed) * per_conn;
    println!("{:.0}", total as f64 / secs);
    if failed > 0 {
        eprintln!("{failed} connections failed");
        std::process::exit(1);
    }
}
