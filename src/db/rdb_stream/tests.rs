//! The payloads in `testdata/` are DUMP replies of redis-server 7.0.15 (how each stream was
//! built is in the test that reads it), and `legacy_v5.dump`, a type-15 payload of Redis 5
//! from Redis's own tests (tests/unit/type/stream-cgroups.tcl, "Loading from legacy").

use super::*;
use crate::db::rdb::{decode, verify, Decoded};

macro_rules! data {
    ($name:literal) => {
        &include_bytes!(concat!("testdata/", $name, ".dump"))[..]
    };
}

fn stream(payload: &[u8]) -> Result<RdbStream, RdbError> {
    match decode(payload)? {
        Decoded::Stream(s) => Ok(*s),
        other => panic!("not a stream: {other:?}"),
    }
}

fn pairs(kv: &[(&str, &str)]) -> Vec<(Bytes, Bytes)> {
    kv.iter().map(|(k, v)| (Bytes::copy_from_slice(k.as_bytes()), Bytes::copy_from_slice(v.as_bytes()))).collect()
}

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// The same payload with every node listpack written uncompressed (as `encode_stream` does).
fn uncompressed(payload: &[u8]) -> Vec<u8> {
    let body = verify(payload).unwrap();
    let mut r = Reader { data: body, pos: 1 };
    let mut out = vec![body[0]];
    let n = r.count().unwrap();
    put_len(&mut out, n as u64);
    for _ in 0..n {
        put_string(&mut out, &r.string().unwrap());
        put_string(&mut out, &r.string().unwrap());
    }
    out.extend_from_slice(&body[r.pos..]);
    seal(out)
}

/// A type-19 payload rewritten as type 15: without first_id, max_deleted_id, entries_added
/// and the groups' entries_read.
fn to_type_15(payload: &[u8]) -> Vec<u8> {
    let body = verify(payload).unwrap();
    let mut r = Reader { data: body, pos: 1 };
    for _ in 0..r.count().unwrap() {
        r.string().unwrap();
        r.string().unwrap();
    }
    len(&mut r).unwrap();
    read_id(&mut r).unwrap();
    let mut out = vec![15];
    out.extend_from_slice(&body[1..r.pos]);
    read_id(&mut r).unwrap();
    read_id(&mut r).unwrap();
    len(&mut r).unwrap();
    let groups = r.count().unwrap();
    put_len(&mut out, groups as u64);
    for _ in 0..groups {
        let start = r.pos;
        r.string().unwrap();
        read_id(&mut r).unwrap();
        out.extend_from_slice(&body[start..r.pos]);
        len(&mut r).unwrap();
        let start = r.pos;
        for _ in 0..r.count().unwrap() {
            r.take(24).unwrap();
            len(&mut r).unwrap();
        }
        for _ in 0..r.count().unwrap() {
            r.string().unwrap();
            r.take(8).unwrap();
            for _ in 0..r.count().unwrap() {
                r.take(16).unwrap();
            }
        }
        out.extend_from_slice(&body[start..r.pos]);
    }
    assert_eq!(r.pos, body.len());
    seal(out)
}

/// The pseudo-random bytes of the "bigrand" stream (the generator of the capture script).
fn rnd(seed: &mut u32, n: usize) -> Vec<u8> {
    (0..n)
        .map(|_| {
            *seed = (seed.wrapping_mul(1103515245).wrapping_add(12345)) & 0x7fff_ffff;
            (*seed >> 16) as u8
        })
        .collect()
}

const T: i64 = 1795886053671; // the clock of the capture (delivery and seen times)

fn group(name: &str, last_id: StreamId, entries_read: i64, pel: &[(StreamId, i64, u64)], consumers: &[(&str, &[StreamId])]) -> RdbGroup {
    RdbGroup {
        name: b(name),
        last_id,
        entries_read,
        pel: pel.to_vec(),
        consumers: consumers.iter().map(|(n, p)| RdbConsumer { name: b(n), seen_time: T, pending: p.to_vec() }).collect(),
    }
}

/// The streams of testdata/ as XINFO STREAM FULL showed them on the server they came from.
fn expected() -> Vec<(&'static str, &'static [u8], RdbStream)> {
    let meta = |entries: Vec<(StreamId, Vec<(Bytes, Bytes)>)>, last_id, first_id, max_deleted_id, entries_added| RdbStream {
        length: entries.len() as u64,
        entries,
        last_id,
        first_id,
        max_deleted_id,
        entries_added,
        groups: vec![],
    };
    let mut seed = 12345;
    let mut bigrand: Vec<_> = (1..=6).map(|i| ((i, 0), vec![(b("v"), Bytes::from(rnd(&mut seed, 1000)))])).collect();
    bigrand.push(((7, 0), vec![(b("v"), Bytes::from(rnd(&mut seed, 5000)))]));
    bigrand.push(((8, 0), pairs(&[("v", "tail")])));
    let many = (1..=250u64)
        .map(|i| {
            let n = i.to_string();
            ((i, i), if i == 120 { pairs(&[("n", &n), ("odd", "yes")]) } else { pairs(&[("n", &n)]) })
        })
        .collect();
    let mut grp = meta(
        vec![
            ((1, 0), pairs(&[("k", "v1")])),
            ((3, 0), pairs(&[("k", "v3")])),
            ((4, 0), pairs(&[("k", "v4")])),
            ((5, 0), pairs(&[("k", "v5")])),
        ],
        (5, 0),
        (1, 0),
        (2, 0),
        5,
    );
    grp.groups = vec![
        group("10", (1, 0), 1, &[((1, 0), T, 1)], &[("x", &[(1, 0)])]),
        group(
            "g1",
            (4, 0),
            4,
            &[((1, 0), T, 1), ((2, 0), T, 1), ((4, 0), 1700000000000, 7)],
            &[("alice", &[(1, 0), (2, 0), (4, 0)]), ("bob", &[]), ("carol", &[])],
        ),
        group("g2", (5, 0), -1, &[], &[]),
    ];
    let mut empty = meta(vec![], (0, 0), (0, 0), (0, 0), 0);
    empty.groups = vec![group("g", (0, 0), -1, &[], &[])];
    let mut emptied = meta(vec![], (2, 0), (0, 0), (2, 0), 2);
    emptied.groups = vec![group("g", (2, 0), 2, &[((1, 0), T, 1), ((2, 0), T, 1)], &[("c", &[(1, 0), (2, 0)])])];
    vec![
        // XADD same 1-1 a 1 b 2; 1-2 a 3 b 4; 2-0 a x b y
        (
            "same",
            data!("same"),
            meta(
                vec![
                    ((1, 1), pairs(&[("a", "1"), ("b", "2")])),
                    ((1, 2), pairs(&[("a", "3"), ("b", "4")])),
                    ((2, 0), pairs(&[("a", "x"), ("b", "y")])),
                ],
                (2, 0),
                (1, 1),
                (0, 0),
                3,
            ),
        ),
        // XADD diff 1-1 f v; 1-2 g w h z; 5-0 f v2; 5-1 f v3 g w
        (
            "diff",
            data!("diff"),
            meta(
                vec![
                    ((1, 1), pairs(&[("f", "v")])),
                    ((1, 2), pairs(&[("g", "w"), ("h", "z")])),
                    ((5, 0), pairs(&[("f", "v2")])),
                    ((5, 1), pairs(&[("f", "v3"), ("g", "w")])),
                ],
                (5, 1),
                (1, 1),
                (0, 0),
                4,
            ),
        ),
        // XADD del 1-0..6-0 data a..f; XDEL del 3-0 1-0
        (
            "del",
            data!("del"),
            meta(
                vec![
                    ((2, 0), pairs(&[("data", "b")])),
                    ((4, 0), pairs(&[("data", "d")])),
                    ((5, 0), pairs(&[("data", "e")])),
                    ((6, 0), pairs(&[("data", "f")])),
                ],
                (6, 0),
                (2, 0),
                (3, 0),
                6,
            ),
        ),
        // XADD trim i-0 n i (i = 1..10); XTRIM trim MAXLEN 4
        ("trim", data!("trim"), meta((7..=10).map(|i| ((i, 0), pairs(&[("n", &i.to_string())]))).collect(), (10, 0), (7, 0), (0, 0), 10)),
        // XADD grp i-0 k vi (i = 1..5); XGROUP CREATE grp g1 0, g2 $, 10 0; XREADGROUP g1 alice
        // COUNT 2, g1 bob COUNT 2; XACK g1 3-0; XGROUP CREATECONSUMER g1 carol; XCLAIM g1 alice
        // 0 4-0 TIME 1700000000000 RETRYCOUNT 7 FORCE JUSTID; XREADGROUP 10 x COUNT 1; XDEL 2-0
        ("grp", data!("grp"), grp),
        // XGROUP CREATE empty g $ MKSTREAM
        ("empty", data!("empty"), empty),
        // XADD emptied 1-0 a 1; 2-0 b 2; XGROUP CREATE emptied g 0; XREADGROUP g c; XDEL 1-0 2-0
        ("emptied", data!("emptied"), emptied),
        // XADD many i-i n i (i = 1..250; 120 also has odd yes)
        ("many", data!("many"), meta(many, (250, 250), (1, 1), (0, 0), 250)),
        // values of 100 and 5000 bytes (LZF-compressed by Redis), a 300-byte field
        (
            "big",
            data!("big"),
            meta(
                vec![
                    ((1, 0), pairs(&[("small", "x")])),
                    ((2, 0), pairs(&[("v", &"b".repeat(100))])),
                    ((3, 0), pairs(&[("v", &"c".repeat(5000))])),
                    ((4, 0), pairs(&[("v", &"d".repeat(70))])),
                    ((4, 1), pairs(&[(&"f".repeat(300), "small")])),
                ],
                (4, 1),
                (1, 0),
                (0, 0),
                5,
            ),
        ),
        // values of 1000 and 5000 random bytes (nodes cut by size)
        ("bigrand", data!("bigrand"), meta(bigrand, (8, 0), (1, 0), (0, 0), 8)),
        // integer-looking fields and values
        (
            "ints",
            data!("ints"),
            meta(
                vec![
                    ((1, 0), pairs(&[("0", "-1"), ("127", "128"), ("4096", "2147483648"), ("-9223372036854775808", "007"), ("1.5", "x")])),
                    (
                        (2, 0),
                        pairs(&[
                            ("-4096", "4095"),
                            ("-4097", "8388607"),
                            ("-8388608", "9223372036854775807"),
                            ("32767", "-32768"),
                            ("-0", ""),
                            ("12345678901234567890", "4294967296"),
                        ]),
                    ),
                ],
                (2, 0),
                (1, 0),
                (0, 0),
                2,
            ),
        ),
    ]
}

#[test]
fn decodes_redis_7_payloads() {
    for (name, payload, want) in expected() {
        assert_eq!(stream(payload).as_ref(), Ok(&want), "{name}");
    }
}

#[test]
fn encodes_as_redis_7_does() {
    for (name, payload, want) in expected() {
        let ours = encode_stream(&want);
        assert_eq!(stream(&ours).as_ref(), Ok(&want), "{name}");
        // Streams without tombstones are written byte for byte as Redis writes them (but
        // for LZF, which Redis uses on node listpacks when it saves space).
        if !["del", "trim", "grp"].contains(&name) {
            assert_eq!(ours, uncompressed(payload), "{name}");
        }
    }
    let node_counts: Vec<usize> = expected().iter().map(|(_, _, s)| nodes(&s.entries).len()).collect();
    // many: 100+100+50; big: cut before the 5000-byte value and after it; bigrand: 3 values
    // of 1000 bytes fill a node.
    assert_eq!(node_counts, [1, 1, 1, 1, 1, 0, 0, 3, 3, 4, 1]);
}

#[test]
fn type_15_gets_what_redis_7_derives() {
    // Redis's legacy payload: XADD x 1-0..6-0 data a..f; XDEL x 3-0; XGROUP CREATE x g1 0,
    // g2 0; XREADGROUP GROUP g1 c11 COUNT 4 STREAMS x >; XTRIM x MAXLEN = 2. Redis 7.0.15
    // shows entries-added 2, g1 entries-read 1, g2 entries-read 0 (checked by RESTORE).
    let t = 1624630359870;
    let pel = [(1, 0), (2, 0), (4, 0), (5, 0)];
    let want = RdbStream {
        entries: vec![((5, 0), pairs(&[("data", "e")])), ((6, 0), pairs(&[("data", "f")]))],
        length: 2,
        last_id: (6, 0),
        first_id: (5, 0),
        max_deleted_id: (0, 0),
        entries_added: 2,
        groups: vec![
            RdbGroup {
                name: b("g1"),
                last_id: (5, 0),
                entries_read: 1,
                pel: pel.iter().map(|id| (*id, t, 1)).collect(),
                consumers: vec![RdbConsumer { name: b("c11"), seen_time: t, pending: pel.to_vec() }],
            },
            RdbGroup { name: b("g2"), last_id: (0, 0), entries_read: 0, pel: vec![], consumers: vec![] },
        ],
    };
    assert_eq!(stream(data!("legacy_v5")), Ok(want));

    // grp as type 15: four entries ever added, the first live one 1-0.
    let s = stream(&to_type_15(data!("grp"))).unwrap();
    assert_eq!((s.entries_added, s.first_id, s.max_deleted_id), (4, (1, 0), (0, 0)));
    // "10" is at the first entry (4 - 4 + 1), g1 inside (unknown), g2 at the last.
    assert_eq!(s.groups.iter().map(|g| g.entries_read).collect::<Vec<_>>(), [1, -1, 4]);
    // An empty stream never added to: the first ID is streamGetEdgeID's "none".
    let s = stream(&to_type_15(data!("empty"))).unwrap();
    assert_eq!((s.entries_added, s.first_id, s.groups[0].entries_read), (0, (u64::MAX, u64::MAX), 0));
    let s = stream(&to_type_15(data!("emptied"))).unwrap();
    assert_eq!((s.entries_added, s.groups[0].entries_read), (0, 0));
}

fn sorted(mut s: RdbStream) -> RdbStream {
    s.sort_as_redis();
    s
}

#[test]
fn odd_streams_round_trip() {
    // Deltas that wrap (a sequence below the master's, a distance of 2^64 - 1 ms), an entry
    // of 40,000 fields (a node of more than 65,535 elements: its header says "unknown"),
    // empty strings and values, groups out of order.
    let wide: Vec<(Bytes, Bytes)> = (0..40_000).map(|i| (Bytes::from(format!("f{i}")), Bytes::from(i.to_string()))).collect();
    let s = RdbStream {
        entries: vec![
            ((0, 0), pairs(&[("", "")])),
            ((0, 5), pairs(&[("a", "1")])),
            ((1, 0), pairs(&[("a", "2")])),
            ((1 << 63 | 1, 0), pairs(&[("a", "3")])),
            ((1 << 63 | 2, 3), wide),
            ((u64::MAX - 1, 0), vec![]),
            ((u64::MAX, u64::MAX), pairs(&[("a", "-9223372036854775808")])),
        ],
        length: 7,
        last_id: (u64::MAX, u64::MAX),
        first_id: (0, 0),
        max_deleted_id: (3, 3),
        entries_added: u64::MAX,
        groups: vec![
            group("z", (1, 0), i64::MAX, &[((9, 9), -5, u64::MAX), ((1, 0), i64::MIN, 0)], &[("b", &[(9, 9)]), ("a", &[(1, 0)])]),
            group("", (0, 0), -1, &[], &[("", &[])]),
        ],
    };
    let p = encode_stream(&s);
    assert_eq!(stream(&p), Ok(sorted(s.clone())));
    let nodes = nodes(&s.entries);
    assert_eq!(nodes.iter().map(|n| n.0).collect::<Vec<_>>(), [(0, 0), (1 << 63 | 2, 3), (u64::MAX - 1, 0)]);
    assert_eq!(nodes[1].1[4..6], [0xff, 0xff]);
}

/// A type-19 payload of raw nodes and metadata, no groups.
fn raw(nodes: &[(&[u8], Vec<u8>)], length: u64, last: StreamId) -> Vec<u8> {
    let mut out = vec![T_STREAM_LISTPACKS_2];
    put_len(&mut out, nodes.len() as u64);
    for (key, lp) in nodes {
        put_string(&mut out, key);
        put_string(&mut out, lp);
    }
    for n in [length, last.0, last.1, 0, 0, 0, 0, length, 0] {
        put_len(&mut out, n);
    }
    seal(out)
}

enum E<'a> {
    I(i64),
    S(&'a str),
}

fn lp(items: &[E]) -> Vec<u8> {
    let mut w = LpWriter::new();
    for it in items {
        match it {
            E::I(v) => w.int(*v),
            E::S(s) => w.raw_string(s.as_bytes()),
        }
    }
    w.finish()
}

#[test]
fn bad_nodes_are_refused() {
    use E::{I, S};
    let key = id_bytes((1, 0));
    // master: count 1, deleted 0, one field "f", terminator; entry: SAMEFIELDS, 0, 0, "v", 4.
    let good = [I(1), I(0), I(1), S("f"), I(0), I(2), I(0), I(0), S("v"), I(4)];
    let ok = stream(&raw(&[(&key, lp(&good))], 1, (1, 0))).unwrap();
    assert_eq!(ok.entries, vec![((1, 0), pairs(&[("f", "v")]))]);
    // Integers written as strings are integers (lpGetIntegerIfValid).
    let as_strings = [S("1"), S("0"), S("1"), S("f"), S("0"), S("2"), S("0"), S("0"), S("v"), S("4")];
    assert_eq!(stream(&raw(&[(&key, lp(&as_strings))], 1, (1, 0))), Ok(ok));

    let bad: Vec<(&str, Vec<u8>)> = vec![
        ("empty listpack", raw(&[(&key, lp(&[]))], 0, (1, 0))),
        ("short key", raw(&[(&key[1..], lp(&good))], 1, (1, 0))),
        ("same key twice", raw(&[(&key, lp(&good)), (&key, lp(&good))], 2, (1, 0))),
        ("keys descending", raw(&[(&id_bytes((2, 0)), lp(&good)), (&key, lp(&good))], 2, (2, 0))),
        ("length", raw(&[(&key, lp(&good))], 2, (1, 0))),
        ("last id before an entry", raw(&[(&key, lp(&good))], 1, (0, 9))),
        ("no terminator", raw(&[(&key, lp(&[I(1), I(0), I(1), S("f"), I(3), I(2), I(0), I(0), S("v"), I(4)]))], 1, (1, 0))),
        ("lp-count", raw(&[(&key, lp(&[I(1), I(0), I(1), S("f"), I(0), I(2), I(0), I(0), S("v"), I(5)]))], 1, (1, 0))),
        ("flag 4", raw(&[(&key, lp(&[I(1), I(0), I(1), S("f"), I(0), I(6), I(0), I(0), S("v"), I(4)]))], 1, (1, 0))),
        ("count", raw(&[(&key, lp(&[I(2), I(0), I(1), S("f"), I(0), I(2), I(0), I(0), S("v"), I(4)]))], 1, (1, 0))),
        ("deleted count", raw(&[(&key, lp(&[I(0), I(1), I(1), S("f"), I(0), I(2), I(0), I(0), S("v"), I(4)]))], 0, (1, 0))),
        ("negative count", raw(&[(&key, lp(&[I(-1), I(0), I(1), S("f"), I(0)]))], 0, (1, 0))),
        ("before the key", raw(&[(&key, lp(&[I(1), I(0), I(1), S("f"), I(0), I(2), I(-1), I(0), S("v"), I(4)]))], 1, (1, 0))),
        ("an element left", raw(&[(&key, lp(&[I(1), I(0), I(1), S("f"), I(0), I(2), I(0), I(0), S("v"), I(4), I(0)]))], 1, (1, 0))),
        ("not an integer", raw(&[(&key, lp(&[S("1.0"), I(0), I(1), S("f"), I(0), I(2), I(0), I(0), S("v"), I(4)]))], 1, (1, 0))),
        (
            "same ID twice",
            raw(
                &[(&key, lp(&[I(2), I(0), I(1), S("f"), I(0), I(2), I(0), I(0), S("v"), I(4), I(2), I(0), I(0), S("w"), I(4)]))],
                2,
                (1, 0),
            ),
        ),
        ("fields missing", raw(&[(&key, lp(&[I(1), I(0), I(1), S("f"), I(0), I(0), I(0), I(0), I(2), S("a"), S("b"), I(8)]))], 1, (1, 0))),
    ];
    for (what, p) in bad {
        assert_eq!(stream(&p), Err(BAD), "{what}");
    }
    // Listpack damage: a back-length off by one, a header count off by one.
    let mut l = lp(&good);
    l[7] ^= 2;
    assert_eq!(stream(&raw(&[(&key, l)], 1, (1, 0))), Err(BAD));
    let mut l = lp(&good);
    l[4] += 1;
    assert_eq!(stream(&raw(&[(&key, l)], 1, (1, 0))), Err(BAD));
}

#[test]
fn inconsistent_metadata_and_groups_are_refused() {
    let base = sorted(stream(data!("grp")).unwrap());
    let mut cases: Vec<(&str, RdbStream)> = Vec::new();
    let mut add = |what, f: &dyn Fn(&mut RdbStream)| {
        let mut s = base.clone();
        f(&mut s);
        cases.push((what, s));
    };
    add("length", &|s| s.length = 5);
    add("entries_added below length", &|s| s.entries_added = 3);
    add("last id before the last entry", &|s| s.last_id = (4, 0));
    add("entries out of order", &|s| s.entries.swap(1, 2));
    add("an ID twice", &|s| s.entries[1].0 = (1, 0));
    add("entries_read below -1", &|s| s.groups[0].entries_read = -2);
    add("group twice", &|s| s.groups[2].name = b("g1"));
    add("consumer twice", &|s| s.groups[1].consumers[2].name = b("bob"));
    add("pending twice in the group", &|s| s.groups[1].pel[1].0 = (1, 0));
    add("pending twice in a consumer", &|s| s.groups[1].consumers[0].pending[1] = (1, 0));
    add("pending not in the group", &|s| s.groups[1].consumers[1].pending.push((5, 0)));
    add("pending owned twice", &|s| s.groups[1].consumers[1].pending.push((4, 0)));
    add("pending owned by nobody", &|s| s.groups[0].consumers[0].pending.clear());
    for (what, s) in cases {
        assert_eq!(stream(&encode_stream(&s)), Err(BAD), "{what}");
    }
}

#[test]
fn damaged_payloads_never_panic() {
    let payloads =
        [data!("grp"), data!("same"), data!("del"), data!("ints"), data!("emptied"), data!("legacy_v5"), data!("big"), data!("many")];
    for p in payloads {
        let body = verify(p).unwrap();
        // Every cut of the body is incomplete.
        for cut in 0..body.len() {
            assert_eq!(decode(&seal(body[..cut].to_vec())), Err(BAD), "cut at {cut}");
        }
        for i in 0..body.len() {
            for x in [0x01, 0x80, 0xff] {
                let mut bad = body.to_vec();
                bad[i] ^= x;
                // Whatever still decodes is a stream that writes and reads back the same.
                if let Ok(Decoded::Stream(s)) = decode(&seal(bad)) {
                    assert_eq!(stream(&encode_stream(&s)), Ok(sorted(*s)), "byte {i} ^ {x:#x}");
                }
            }
        }
        // And 500 payloads with three bytes set at seeded random places.
        let mut seed = 7;
        for _ in 0..500 {
            let mut bad = body.to_vec();
            for r in rnd(&mut seed, 9).chunks(3) {
                let at = (r[0] as usize * 256 + r[1] as usize) % bad.len();
                bad[at] = r[2];
            }
            if let Ok(Decoded::Stream(s)) = decode(&seal(bad)) {
                assert_eq!(stream(&encode_stream(&s)), Ok(sorted(*s)));
            }
        }
    }
}
