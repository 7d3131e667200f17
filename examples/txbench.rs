//! MULTI/EXEC throughput: N connections, each running `MULTI; INCR k x5; EXEC` transactions
//! back to back (the whole transaction in one write, as a client library pipelines it).
//! redis-benchmark cannot send a transaction, so the comparison scripts use this. Like
//! redis-benchmark, one thread drives every connection through one event loop (a thread
//! per connection spent the client's core on context switches and left both servers
//! waiting on it).
//!
//! `cargo run --release --example txbench -- PORT [connections] [transactions-per-connection]`

use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

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
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_io().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("runtime: {e}");
            std::process::exit(1);
        }
    };
    let (total, failed, secs) = runtime.block_on(async move {
        let start = Instant::now();
        let tasks: Vec<_> = (0..conns).map(|_| tokio::spawn(run(port, tx.clone(), per_conn))).collect();
        let mut failed = 0;
        for t in tasks {
            if !matches!(t.await, Ok(Ok(()))) {
                failed += 1;
            }
        }
        ((conns - failed) * per_conn, failed, start.elapsed().as_secs_f64())
    });
    println!("{:.0}", total as f64 / secs);
    if failed > 0 {
        eprintln!("{failed} connections failed");
        std::process::exit(1);
    }
}

/// One connection's transactions: the reply is complete once EXEC's array (`*5`) and its
/// five integers have arrived.
async fn run(port: u16, tx: Vec<u8>, count: usize) -> std::io::Result<()> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await?;
    s.set_nodelay(true)?;
    let mut buf = vec![0u8; 4096];
    let mut got = Vec::new();
    for _ in 0..count {
        s.write_all(&tx).await?;
        got.clear();
        loop {
            let n = s.read(&mut buf).await?;
            if n == 0 {
                return Err(std::io::Error::other("closed"));
            }
            got.extend_from_slice(&buf[..n]);
            if got.windows(4).any(|w| w == b"*5\r\n") && got.iter().filter(|&&b| b == b':').count() >= 5 && got.ends_with(b"\r\n") {
                break;
            }
        }
    }
    Ok(())
}
