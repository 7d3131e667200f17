//! The cluster state machine (`cluster::gossip`, `cluster::failover`) fed messages built from
//! the input: PING/PONG/MEET with gossip, FAIL, UPDATE, votes, MFSTART and PUBLISH from known
//! and unknown senders on inbound and outbound links, with crons in between. It never panics,
//! and every slot's owner is a known node whose bitmap and count agree with the slot table.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vermilion::cluster::bus::{flag, kind, Body, Gossip, Header, Message, NAME_LEN, SLOT_BYTES};
use vermilion::cluster::{Cluster, Settings};

fn name(i: u8) -> [u8; NAME_LEN] {
    let mut n = [b'0'; NAME_LEN];
    n[0] = b'a' + i % 6;
    n
}

struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }
}

fuzz_target!(|data: &[u8]| {
    let settings = Settings { node_timeout: 1000, port: 7000, cport: 17000, require_full_coverage: true, ..Settings::default() };
    let mut c = Cluster::new(settings, 1_000_000);
    let mut input = Input(data);
    let mut now = 1_000_000i64;
    let mut links = 0u64;
    while let Some(op) = input.byte() {
        now += (op as i64 & 7) * 150;
        let a = input.byte().unwrap_or(0);
        let b = input.byte().unwrap_or(0);
        match op % 8 {
            0 => c.cron(now, (b as i64) * 100),
            1 => {
                links += 1;
                let node = (a & 1 == 0).then(|| c.nodes.keys().nth(b as usize % c.nodes.len()).copied()).flatten();
                c.link_up(links, node, node.is_none(), "127.0.0.1".into(), "127.0.0.1".into(), now);
            }
            2 => c.link_down(1 + (a as u64) % links.max(1)),
            3 => {
                let _ = c.start_handshake("127.0.0.1", 7000 + a as u16, 17000 + a as u16, now);
            }
            _ => {
                let kinds = [kind::PING, kind::PONG, kind::MEET, kind::FAIL, kind::UPDATE, kind::FAILOVER_AUTH_REQUEST, kind::FAILOVER_AUTH_ACK, kind::MFSTART, kind::PUBLISH];
                let k = kinds[a as usize % kinds.len()];
                let mut h = Header::new(k, name(b));
                h.port = 7000 + (b % 6) as u16;
                h.cport = 17000 + (b % 6) as u16;
                h.current_epoch = input.byte().unwrap_or(0) as u64;
                h.config_epoch = input.byte().unwrap_or(0) as u64;
                h.flags = if b & 8 == 0 { flag::MASTER } else { flag::SLAVE };
                if b & 8 != 0 {
                    h.slaveof = name(b >> 4);
                }
                let pattern = input.byte().unwrap_or(0);
                let mut slots = Box::new([0u8; SLOT_BYTES]);
                for (i, s) in slots.iter_mut().enumerate() {
                    if (i as u8).wrapping_mul(pattern) < 64 {
                        *s = pattern;
                    }
                }
                h.myslots = slots.clone();
                h.mflags[0] = pattern & 7;
                let body = match k {
                    kind::FAIL => Body::Fail { about: name(pattern) },
                    kind::UPDATE => Body::Update { config_epoch: pattern as u64, nodename: name(pattern >> 3), slots },
                    kind::PUBLISH => Body::Publish { channel: vec![pattern], message: vec![b] },
                    kind::PING | kind::PONG | kind::MEET => {
                        let n = input.byte().unwrap_or(0) % 4;
                        let gossip = (0..n)
                            .map(|i| Gossip {
                                nodename: name(pattern.wrapping_add(i)),
                                ping_sent: 0,
                                pong_received: now as u32,
                                ip: vermilion::cluster::bus::text_field("127.0.0.1"),
                                port: 7000 + i as u16,
                                cport: 17000 + i as u16,
                                flags: [0, flag::PFAIL, flag::FAIL, flag::NOADDR][(pattern as usize + i as usize) % 4] | flag::MASTER,
                                pport: 0,
                            })
                            .collect();
                        Body::Ping { gossip, extensions: Vec::new() }
                    }
                    _ => Body::Other(Vec::new()),
                };
                let link = 1 + (op as u64 >> 3) % links.max(1);
                c.receive(link, Message { header: h, body }, now);
            }
        }
        c.out.clear();
        let mut counted = std::collections::HashMap::new();
        for (slot, owner) in c.slots.iter().enumerate() {
            if let Some(o) = owner {
                let node = c.nodes.get(o).expect("a slot's owner is a known node");
                assert!(node.owns(slot as u16));
                *counted.entry(*o).or_insert(0usize) += 1;
            }
        }
        for n in c.nodes.values() {
            assert_eq!(n.numslots, counted.get(&n.name).copied().unwrap_or(0), "numslots agrees");
        }
        assert!(c.nodes.contains_key(&c.myself));
    }
});
