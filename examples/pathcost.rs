//! Runs one request shape through the executor without sockets, N times: a steady workload
//! for `valgrind --tool=callgrind` (instruction counts do not depend on this VM's noise,
//! which moves criterion's timings by 20-30% from one run to the next).
//!
//! `cargo build --release --example pathcost`, then
//! `valgrind --tool=callgrind target/release/examples/pathcost evalsha 20000`
//! and divide the instruction total by N (see docs/BENCHMARKS.md). Shapes: `evalsha` (a
//! script doing one INCR), `calls100` (one doing 100), `set`, `incr`, `multi` (MULTI, 5 INCR,
//! EXEC in one batch, as examples/txbench sends it), `xadd` (XADD of 3 fields with `*`),
//! `xrange10` (XRANGE - + COUNT 10 on a stream of 1,000 entries).

use bytes::Bytes;
use vermilion::config::Config;
use vermilion::executor::{Executor, Request};

// The server's allocator: malloc's share of the count is the server's then.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn args(parts: &[&str]) -> Vec<Bytes> {
    parts.iter().map(|p| Bytes::copy_from_slice(p.as_bytes())).collect()
}

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let shape = argv.get(1).map(String::as_str).unwrap_or("evalsha");
    let n: usize = argv.get(2).and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let mut exec = Executor::new(Config::new());
    let mut rx = exec.connect_detached(1);
    let mut run_batch = |cmds: Vec<Vec<Bytes>>| {
        exec.handle(Request::Commands { id: 1, cmds, protocol_error: None });
        exec.release_replies();
        while rx.try_recv().is_ok() {}
    };
    let incr = "return redis.call('incr', KEYS[1])";
    let hundred = "for i = 1, 100 do redis.call('incr', KEYS[1]) end return 1";
    for body in [incr, hundred] {
        run_batch(vec![args(&["SCRIPT", "LOAD", body])]);
    }
    let sha = |body: &str| vermilion::scripting::sha1_hex(body.as_bytes());
    let batch = match shape {
        "calls100" => vec![args(&["EVALSHA", &sha(hundred), "1", "counter"])],
        "set" => vec![args(&["SET", "key", "value"])],
        "incr" => vec![args(&["INCR", "counter"])],
        "xadd" => vec![args(&["XADD", "xs", "*", "f1", "v1", "f2", "v2", "f3", "v3"])],
        "xrange10" => {
            for i in 1..=1000 {
                run_batch(vec![args(&["XADD", "xr", &format!("{i}-0"), "f1", "v1", "f2", "v2", "f3", "v3"])]);
            }
            vec![args(&["XRANGE", "xr", "-", "+", "COUNT", "10"])]
        }
        "multi" => {
            let mut tx = vec![args(&["MULTI"])];
            tx.extend((0..5).map(|_| args(&["INCR", "counter"])));
            tx.push(args(&["EXEC"]));
            tx
        }
        _ => vec![args(&["EVALSHA", &sha(incr), "1", "counter"])],
    };
    for _ in 0..n {
        run_batch(batch.clone());
    }
}
