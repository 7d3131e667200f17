//! Redis 7.0's `nodes.conf` and CLUSTER NODES lines (`clusterGenNodeDescription`), parsed and
//! written back the same: `<id> <ip:port@cport[,hostname]> <flags> <primary|-> <ping-sent>
//! <pong-received> <config-epoch> <link-state> [slot | from-to | [slot->-id] | [slot-<-id]]...`,
//! and in the file a last `vars currentEpoch N lastVoteEpoch M` line.

use super::bus::flag;
use super::slot::SLOTS;

/// The flag names in Redis's order (`redisNodeFlagsTable`).
const FLAG_NAMES: [(u16, &str); 8] = [
    (flag::MYSELF, "myself"),
    (flag::MASTER, "master"),
    (flag::SLAVE, "slave"),
    (flag::PFAIL, "fail?"),
    (flag::FAIL, "fail"),
    (flag::HANDSHAKE, "handshake"),
    (flag::NOADDR, "noaddr"),
    (NOFAILOVER, "nofailover"),
];

/// `CLUSTER_NODE_NOFAILOVER`.
pub const NOFAILOVER: u16 = 512;

/// One node's line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeLine {
    pub id: String,
    pub ip: String,
    pub port: u16,
    pub cport: u16,
    pub hostname: Option<String>,
    pub flags: u16,
    pub primary: Option<String>,
    pub ping_sent: u64,
    pub pong_received: u64,
    pub config_epoch: u64,
    pub connected: bool,
    /// Slot ranges, inclusive, in the line's order.
    pub slots: Vec<(u16, u16)>,
    /// `[slot->-id]`: slots being migrated to node `id`.
    pub migrating: Vec<(u16, String)>,
    /// `[slot-<-id]`: slots being imported from node `id`.
    pub importing: Vec<(u16, String)>,
}

/// A whole `nodes.conf`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NodesConf {
    pub nodes: Vec<NodeLine>,
    pub current_epoch: u64,
    pub last_vote_epoch: u64,
}

fn slot(text: &str) -> Result<u16, String> {
    text.parse::<u16>().ok().filter(|&s| (s as usize) < SLOTS).ok_or_else(|| format!("bad slot '{text}'"))
}

fn number(text: &str, what: &str) -> Result<u64, String> {
    text.parse::<u64>().map_err(|_| format!("bad {what} '{text}'"))
}

/// Parses one node's line (CLUSTER NODES or `nodes.conf`).
pub fn parse_line(line: &str) -> Result<NodeLine, String> {
    let argv: Vec<&str> = line.split(' ').filter(|a| !a.is_empty()).collect();
    if argv.len() < 8 {
        return Err(format!("a node line needs 8 fields: '{line}'"));
    }
    let (address, hostname) = match argv[1].split_once(',') {
        Some((a, h)) => (a, Some(h.to_string())),
        None => (argv[1], None),
    };
    // The IP may be IPv6 (colons): the port follows the last one.
    let (ip, ports) = address.rsplit_once(':').ok_or_else(|| format!("bad address '{address}'"))?;
    let (port, cport) = match ports.split_once('@') {
        Some((p, c)) => (p, Some(c)),
        None => (ports, None),
    };
    let port = port.parse::<u16>().map_err(|_| format!("bad port in '{address}'"))?;
    // A line without `@cport` (before Redis 4) means the port plus 10000.
    let cport = match cport {
        Some(c) => c.parse::<u16>().map_err(|_| format!("bad cluster port in '{address}'"))?,
        None => port.wrapping_add(10000),
    };
    let mut flags = 0;
    for name in argv[2].split(',') {
        match FLAG_NAMES.iter().find(|(_, n)| *n == name) {
            Some((bit, _)) => flags |= bit,
            None if name == "noflags" => {}
            None => return Err(format!("unknown node flag '{name}'")),
        }
    }
    let mut node = NodeLine {
        id: argv[0].to_string(),
        ip: ip.to_string(),
        port,
        cport,
        hostname,
        flags,
        primary: (argv[3] != "-").then(|| argv[3].to_string()),
        ping_sent: number(argv[4], "ping time")?,
        pong_received: number(argv[5], "pong time")?,
        config_epoch: number(argv[6], "config epoch")?,
        connected: match argv[7] {
            "connected" => true,
            "disconnected" => false,
            other => return Err(format!("bad link state '{other}'")),
        },
        slots: Vec::new(),
        migrating: Vec::new(),
        importing: Vec::new(),
    };
    for arg in &argv[8..] {
        if let Some(inner) = arg.strip_prefix('[').and_then(|a| a.strip_suffix(']')) {
            if let Some((s, id)) = inner.split_once("->-") {
                node.migrating.push((slot(s)?, id.to_string()));
            } else if let Some((s, id)) = inner.split_once("-<-") {
                node.importing.push((slot(s)?, id.to_string()));
            } else {
                return Err(format!("bad slot state '{arg}'"));
            }
        } else if let Some((from, to)) = arg.split_once('-') {
            let (from, to) = (slot(from)?, slot(to)?);
            if from > to {
                return Err(format!("bad slot range '{arg}'"));
            }
            node.slots.push((from, to));
        } else {
            let s = slot(arg)?;
            node.slots.push((s, s));
        }
    }
    Ok(node)
}

/// One node's line as Redis writes it.
pub fn render_line(node: &NodeLine) -> String {
    let mut out = format!("{} {}:{}@{}", node.id, node.ip, node.port, node.cport);
    if let Some(h) = &node.hostname {
        out.push(',');
        out.push_str(h);
    }
    let names: Vec<&str> = FLAG_NAMES.iter().filter(|(bit, _)| node.flags & bit != 0).map(|(_, n)| *n).collect();
    out.push(' ');
    out.push_str(&if names.is_empty() { "noflags".to_string() } else { names.join(",") });
    out.push_str(&format!(
        " {} {} {} {} {}",
        node.primary.as_deref().unwrap_or("-"),
        node.ping_sent,
        node.pong_received,
        node.config_epoch,
        if node.connected { "connected" } else { "disconnected" }
    ));
    for &(from, to) in &node.slots {
        if from == to {
            out.push_str(&format!(" {from}"));
        } else {
            out.push_str(&format!(" {from}-{to}"));
        }
    }
    for (s, id) in &node.migrating {
        out.push_str(&format!(" [{s}->-{id}]"));
    }
    for (s, id) in &node.importing {
        out.push_str(&format!(" [{s}-<-{id}]"));
    }
    out
}

/// Parses a `nodes.conf` (or CLUSTER NODES' reply: then no `vars` line).
pub fn parse(text: &str) -> Result<NodesConf, String> {
    let mut conf = NodesConf::default();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let argv: Vec<&str> = line.split(' ').filter(|a| !a.is_empty()).collect();
        if argv.first() == Some(&"vars") {
            let mut pairs = argv[1..].chunks(2);
            for pair in pairs.by_ref() {
                match pair {
                    ["currentEpoch", v] => conf.current_epoch = number(v, "currentEpoch")?,
                    ["lastVoteEpoch", v] => conf.last_vote_epoch = number(v, "lastVoteEpoch")?,
                    _ => return Err(format!("bad vars line '{line}'")),
                }
            }
            continue;
        }
        conf.nodes.push(parse_line(line)?);
    }
    Ok(conf)
}

/// A `nodes.conf` as Redis writes it (its nodes' lines, then the `vars` line).
pub fn render(conf: &NodesConf) -> String {
    let mut out = String::new();
    for node in &conf.nodes {
        out.push_str(&render_line(node));
        out.push('\n');
    }
    out.push_str(&format!("vars currentEpoch {} lastVoteEpoch {}\n", conf.current_epoch, conf.last_vote_epoch));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID_A: &str = "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca";
    const ID_B: &str = "67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1";

    #[test]
    fn lines_round_trip() {
        let text = format!(
            "{ID_A} 127.0.0.1:30001@40001,node-a myself,master - 0 1426238316232 1 connected 0-5460 6000 [5461->-{ID_B}] [5462-<-{ID_B}]\n\
             {ID_B} [::1]:30002@40002 slave,fail? {ID_A} 1426238317239 1426238316232 1 disconnected\n\
             vars currentEpoch 6 lastVoteEpoch 3\n"
        );
        let conf = parse(&text).unwrap();
        assert_eq!(conf.current_epoch, 6);
        assert_eq!(conf.nodes[0].hostname.as_deref(), Some("node-a"));
        assert_eq!(conf.nodes[0].slots, vec![(0, 5460), (6000, 6000)]);
        assert_eq!(conf.nodes[0].migrating, vec![(5461, ID_B.to_string())]);
        assert_eq!(conf.nodes[1].ip, "[::1]");
        assert_eq!(conf.nodes[1].flags, flag::SLAVE | flag::PFAIL);
        assert_eq!(render(&conf), text);
    }

    #[test]
    fn bad_lines_are_refused() {
        assert!(parse_line("abc 1.2.3.4:1@2 master - 0 0").is_err());
        assert!(parse_line(&format!("{ID_A} 1.2.3.4:1@2 boss - 0 0 0 connected")).is_err());
        assert!(parse_line(&format!("{ID_A} 1.2.3.4:1@2 master - 0 0 0 connected 16384")).is_err());
        assert!(parse_line(&format!("{ID_A} 1.2.3.4:1@2 master - 0 0 0 connected 9-3")).is_err());
        assert!(parse_line(&format!("{ID_A} nowhere master - 0 0 0 connected")).is_err());
        assert!(parse("vars currentEpoch x").is_err());
        let old = parse_line(&format!("{ID_A} 1.2.3.4:7000 noflags - 0 0 0 connected")).unwrap();
        assert_eq!((old.cport, old.flags), (17000, 0));
    }
}
