//! The executor without sockets: batches of commands through the dispatcher, handlers and
//! reply encoding, as one connection's pipeline would arrive.

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use vermilion::config::Config;
use vermilion::executor::{Executor, Request};

fn args(parts: &[&str]) -> Vec<Bytes> {
    parts.iter().map(|p| Bytes::copy_from_slice(p.as_bytes())).collect()
}

fn bench(c: &mut Criterion) {
    let mut exec = Executor::new(Config::new());
    let mut rx = exec.connect_detached(1);
    let mut group = c.benchmark_group("executor");
    let cases: Vec<(&str, Vec<Vec<Bytes>>)> = vec![
        ("ping", vec![args(&["PING"])]),
        ("set", vec![args(&["SET", "key:1", "xxx"])]),
        ("get", vec![args(&["GET", "key:1"])]),
        ("incr", vec![args(&["INCR", "counter"])]),
        ("set_pipeline16", (0..16).map(|i| args(&["SET", &format!("key:{i}"), "xxx"])).collect()),
        (
            "mset10",
            vec![args(&["MSET", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5", "f", "6", "g", "7", "h", "8", "i", "9", "j", "10"])],
        ),
        // After the XADD case the stream holds its entries: XRANGE reads the first ten.
        ("xadd", vec![args(&["XADD", "xs", "*", "f1", "v1", "f2", "v2", "f3", "v3"])]),
        ("xrange10", vec![args(&["XRANGE", "xs", "-", "+", "COUNT", "10"])]),
    ];
    for (name, batch) in cases {
        group.throughput(Throughput::Elements(batch.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| {
                exec.handle(Request::Commands { id: 1, cmds: batch.clone(), protocol_error: None });
                exec.release_replies();
                while rx.try_recv().is_ok() {}
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
