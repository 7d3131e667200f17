//! Decoder and encoder throughput: the work a connection task and the executor do per
//! command besides the command itself.

use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use vermilion::protocol::{encode_reply, encode_request, DecodeLimits, ProtocolVersion, Reply, RequestDecoder};

fn pipeline(n: usize, value_len: usize) -> Vec<u8> {
    let value = vec![b'x'; value_len];
    let mut out = Vec::new();
    for i in 0..n {
        let key = format!("key:{i}");
        encode_request(&[b"SET".as_slice(), key.as_bytes(), &value], &mut out);
    }
    out
}

fn decode(c: &mut Criterion) {
    let mut group = c.benchmark_group("decode");
    for &(n, len) in &[(1usize, 3usize), (16, 3), (1000, 3), (100, 1024)] {
        let input = pipeline(n, len);
        group.throughput(Throughput::Bytes(input.len() as u64));
        group.bench_with_input(BenchmarkId::new("set_pipeline", format!("{n}x{len}B")), &input, |b, input| {
            b.iter(|| {
                let mut buf = BytesMut::from(&input[..]);
                let mut dec = RequestDecoder::new();
                let mut count = 0;
                while let Ok(Some(args)) = dec.decode(&mut buf, &DecodeLimits::default()) {
                    count += args.len();
                }
                count
            })
        });
    }
    let inline = b"PING\r\n".repeat(1000);
    group.throughput(Throughput::Bytes(inline.len() as u64));
    group.bench_function("inline_ping_x1000", |b| {
        b.iter(|| {
            let mut buf = BytesMut::from(&inline[..]);
            let mut dec = RequestDecoder::new();
            let mut count = 0;
            while let Ok(Some(_)) = dec.decode(&mut buf, &DecodeLimits::default()) {
                count += 1;
            }
            count
        })
    });
    group.finish();
}

fn encode(c: &mut Criterion) {
    let mut group = c.benchmark_group("encode");
    let bulk = Reply::Bulk(Bytes::from(vec![b'v'; 64]));
    let array = Reply::Array((0..100).map(|i| Reply::bulk_string(format!("member:{i}"))).collect());
    let map = Reply::Map((0..50).map(|i| (Reply::bulk_string(format!("f{i}")), Reply::Int(i))).collect());
    for (name, reply) in [("status", Reply::OK), ("bulk64", bulk), ("array100", array), ("map50", map)] {
        for proto in [ProtocolVersion::Resp2, ProtocolVersion::Resp3] {
            group.bench_function(format!("{name}/{proto:?}"), |b| {
                let mut out = Vec::with_capacity(4096);
                b.iter(|| {
                    out.clear();
                    encode_reply(&reply, proto, &mut out);
                    out.len()
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, decode, encode);
criterion_main!(benches);
