//! The sorted-set update path without sockets: redis-benchmark's ZADD workload (a random
//! member of 100,000 given a random integer score) on one set, timed per call.
//!
//! `cargo run --release --example zsetcost [N]` prints nanoseconds per update, best of 5.

use vermilion::db::zset::ops::zset_add;
use vermilion::db::zset::ZSetValue;
use vermilion::util::xorshift;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1_000_000);
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        rng = xorshift(rng);
        rng
    };
    let mut z = ZSetValue::new_skiplist();
    let step = |z: &mut ZSetValue, next: &mut dyn FnMut() -> u64| {
        let member = format!("element:{:012}", next() % 100_000);
        let score = (next() % 100_000) as f64;
        zset_add(z, score, member.as_bytes(), 0, (128, 64));
    };
    for _ in 0..300_000 {
        step(&mut z, &mut next);
    }
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = std::time::Instant::now();
        for _ in 0..n {
            step(&mut z, &mut next);
        }
        best = best.min(t.elapsed().as_nanos() as f64 / n as f64);
    }
    println!("members {} ns/update {:.0}", z.len(), best);
}
