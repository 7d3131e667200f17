//! The pieces of cluster mode (src/cluster/) against a real redis-server 7.0 in cluster mode:
//! the bus's message format (our MEET is accepted, the node shows our ports, and its PONG
//! decodes to what CLUSTER MYID, CLUSTER ADDSLOTS and its settings say; decoded and encoded
//! again it is the same bytes), hash slots (CLUSTER KEYSLOT's for random keys), and the
//! `nodes.conf` / CLUSTER NODES format (read and written back as the node wrote them).

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{free_port, Server};
use vermilion::cluster::bus::{self, flag, kind, Body, Header, Message};
use vermilion::cluster::nodes_conf;
use vermilion::cluster::slot::key_slot;

fn read_message(stream: &mut TcpStream) -> Vec<u8> {
    let mut head = [0u8; 8];
    stream.read_exact(&mut head).expect("a bus message");
    let total = bus::declared_len(&head).expect("length") as usize;
    assert!((bus::HEADER_LEN..1 << 20).contains(&total), "length {total}");
    let mut msg = head.to_vec();
    msg.resize(total, 0);
    stream.read_exact(&mut msg[8..]).expect("the rest of the message");
    msg
}

fn start_cluster_node(cport: u16) -> Server {
    Server::start_redis(&[
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        "nodes.conf",
        "--cluster-port",
        &cport.to_string(),
        "--cluster-announce-hostname",
        "node-a.example",
    ])
}

/// CLUSTER KEYSLOT of a real node for random keys, with and without hash tags.
#[test]
fn key_slots_match_redis() {
    let redis = start_cluster_node(free_port());
    let mut c = redis.client();
    let mut rng = common::Rng(0x51075);
    let pieces: [&[u8]; 8] = [b"{", b"}", b"user", b"1000", b"", b"\xff", b"{}", b"a"];
    for _ in 0..500 {
        let key: Vec<u8> = (0..rng.below(6)).flat_map(|_| pieces[rng.below(pieces.len() as u64) as usize].to_vec()).collect();
        let theirs: i64 = redis::cmd("CLUSTER").arg("KEYSLOT").arg(&key).query(&mut c).unwrap();
        assert_eq!(i64::from(key_slot(&key)), theirs, "key {:?}", String::from_utf8_lossy(&key));
    }
}

#[test]
fn a_redis_node_accepts_our_meet_and_its_pong_decodes() {
    let cport = free_port();
    let redis = start_cluster_node(cport);
    let mut c = redis.client();
    let id: String = redis::cmd("CLUSTER").arg("MYID").query(&mut c).unwrap();
    let _: () = redis::cmd("CLUSTER").arg("ADDSLOTS").arg(0).arg(1).arg(2).arg(16383).query(&mut c).unwrap();

    let ours = *b"0123456789abcdef0123456789abcdef01234567";
    let mut header = Header::new(kind::MEET, ours);
    header.port = 30001;
    header.cport = 40001;
    header.flags = flag::MASTER;
    header.myip = bus::text_field("127.0.0.1");
    let meet = bus::encode(&Message { header, body: Body::Ping { gossip: Vec::new(), extensions: Vec::new() } });
    let mut stream = TcpStream::connect(("127.0.0.1", cport)).expect("the bus port");
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    stream.write_all(&meet).unwrap();

    let bytes = read_message(&mut stream);
    let pong = bus::decode(&bytes).expect("Redis's PONG decodes");
    assert_eq!(bus::encode(&pong), bytes, "encoded again, the same bytes");
    let h = &pong.header;
    assert_eq!(h.kind, kind::PONG);
    assert_eq!(std::str::from_utf8(&h.sender).unwrap(), id);
    assert_eq!(h.port, redis.port);
    assert_eq!(h.cport, cport);
    assert_eq!(h.flags & (flag::MASTER | flag::MYSELF), flag::MASTER | flag::MYSELF);
    assert_eq!(h.slaveof, [0; bus::NAME_LEN], "a primary");
    // Redis's bitmap: slot n is bit n % 8 (low bit first) of byte n / 8.
    assert_eq!(h.myslots[0], 0b0000_0111, "slots 0, 1 and 2");
    assert_eq!(h.myslots[bus::SLOT_BYTES - 1], 0x80, "slot 16383");
    assert_eq!(h.myslots.iter().map(|b| b.count_ones()).sum::<u32>(), 4);
    let Body::Ping { extensions, .. } = &pong.body else { panic!("a PONG body: {:?}", pong.body) };
    let hostname = extensions.iter().find(|e| e.kind == 0).expect("the hostname extension");
    assert_eq!(bus::field_text(&hostname.data), "node-a.example");

    // Our MEET gave it a node in handshake at the ports we announced.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let nodes: String = redis::cmd("CLUSTER").arg("NODES").query(&mut c).unwrap();
        if nodes.lines().any(|l| l.contains(":30001@40001") && l.contains("handshake")) {
            break;
        }
        assert!(Instant::now() < deadline, "no handshake node for our MEET: {nodes}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A real node's `nodes.conf` and CLUSTER NODES reply (slots, a hostname, a node in
/// handshake after our MEET) parse and render back to the same text.
#[test]
fn nodes_conf_reads_and_writes_like_redis() {
    let cport = free_port();
    let redis = start_cluster_node(cport);
    let mut c = redis.client();
    let _: () = redis::cmd("CLUSTER").arg("ADDSLOTSRANGE").arg(0).arg(5460).arg(6000).arg(6000).query(&mut c).unwrap();
    let meet = Message {
        header: Header::new(kind::MEET, *b"89abcdef0123456789abcdef0123456789abcdef"),
        body: Body::Ping { gossip: Vec::new(), extensions: Vec::new() },
    };
    let mut stream = TcpStream::connect(("127.0.0.1", cport)).expect("the bus port");
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    stream.write_all(&bus::encode(&meet)).unwrap();
    read_message(&mut stream);
    let _: () = redis::cmd("CLUSTER").arg("SAVECONFIG").query(&mut c).unwrap();
    let file = std::fs::read_to_string(redis.dir.path().join("nodes.conf")).expect("nodes.conf");
    let conf = nodes_conf::parse(&file).unwrap_or_else(|e| panic!("{e}: {file}"));
    assert_eq!(nodes_conf::render(&conf), file);
    // Nodes in handshake are not saved (CLUSTER NODES shows them, below).
    assert_eq!(conf.nodes.len(), 1, "{file}");
    let me = conf.nodes.iter().find(|n| n.flags & flag::MYSELF != 0).expect("myself");
    assert_eq!(me.slots, vec![(0, 5460), (6000, 6000)]);
    assert_eq!(me.hostname.as_deref(), Some("node-a.example"));
    assert_eq!((me.port, me.cport), (redis.port, cport));
    let nodes: String = redis::cmd("CLUSTER").arg("NODES").query(&mut c).unwrap();
    for line in nodes.lines() {
        assert_eq!(nodes_conf::render_line(&nodes_conf::parse_line(line).unwrap()), line);
    }
    assert!(nodes.lines().count() == 2 && nodes.contains("handshake"), "{nodes}");
}
