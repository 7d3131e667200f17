//! The scripting path without sockets: EVALSHA through the executor, with one redis.call and
//! with 100, so the cost of the Lua-to-command bridge (argument conversion, the script rules,
//! the command, the reply back to Lua) shows on its own.

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
    let incr = "return redis.call('incr', KEYS[1])";
    let hundred = "for i = 1, 100 do redis.call('incr', KEYS[1]) end return 1";
    let get = "return redis.call('get', KEYS[1])";
    let mut run = |cmd: Vec<Bytes>| {
        exec.handle(Request::Commands { id: 1, cmds: vec![cmd], protocol_error: None });
        exec.release_replies();
        while rx.try_recv().is_ok() {}
    };
    for body in [incr, hundred, get] {
        run(args(&["SCRIPT", "LOAD", body]));
    }
    run(args(&["SET", "k", "value"]));
    let sha = |body: &str| vermilion::scripting::sha1_hex(body.as_bytes());
    let mut group = c.benchmark_group("scripting");
    let cases = [
        ("evalsha_incr", args(&["EVALSHA", &sha(incr), "1", "counter"]), 1),
        ("evalsha_get", args(&["EVALSHA", &sha(get), "1", "k"]), 1),
        ("eval_incr", args(&["EVAL", incr, "1", "counter"]), 1),
        ("evalsha_100_calls", args(&["EVALSHA", &sha(hundred), "1", "counter"]), 100),
    ];
    for (name, cmd, calls) in cases {
        group.throughput(Throughput::Elements(calls));
        group.bench_function(name, |b| b.iter(|| run(cmd.clone())));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
