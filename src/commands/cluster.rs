//! CLUSTER's subcommands, READONLY, READWRITE and ASKING. Without `cluster-enabled` they
//! answer what Redis answers then (client libraries probe `CLUSTER INFO` and read the error
//! as "standalone server"). The cluster's state is `ServerState::cluster`; what the bus must
//! do after a change is queued there (`Cluster::out`) and carried out by the executor.

use bytes::Bytes;

use super::{arg_i64, help, help_reply, CmdError, Ctx};
use crate::cluster::bus::flag;
use crate::cluster::node::{name_str, Name, Node};
use crate::cluster::nodes_conf::render_line;
use crate::cluster::slot::{key_slot, SLOTS};
use crate::cluster::state::{MESSAGE_NAMES, STATE_OK};
use crate::cluster::Cluster;
use crate::protocol::Reply;

fn err(text: String) -> CmdError {
    CmdError::other(format!("ERR {text}"))
}

fn cluster<'c>(ctx: &'c mut Ctx<'_>) -> Result<&'c mut Cluster, CmdError> {
    ctx.server.cluster.as_deref_mut().ok_or_else(|| CmdError::other("ERR This instance has cluster support disabled"))
}

fn text(a: &[u8]) -> String {
    String::from_utf8_lossy(a).into_owned()
}

/// A slot argument (getSlotOrReply).
fn slot_arg(a: &[u8]) -> Result<u16, CmdError> {
    match std::str::from_utf8(a).ok().and_then(|s| s.parse::<i64>().ok()) {
        Some(s) if (0..SLOTS as i64).contains(&s) => Ok(s as u16),
        _ => Err(err("Invalid or out of range slot".into())),
    }
}

fn node_arg(c: &Cluster, a: &[u8]) -> Option<Name> {
    c.lookup(a).map(|n| n.name)
}

/// SETSLOT's target: a known master (`unknown`: the text for a name not known).
fn master_arg(c: &Cluster, a: &[u8], unknown: &str) -> Result<Name, CmdError> {
    let Some(n) = node_arg(c, a) else { return Err(err(format!("{unknown} {}", text(a)))) };
    if !c.nodes[&n].is_master() {
        return Err(CmdError::other("ERR Target node is not a master"));
    }
    Ok(n)
}

fn db0_size(ctx: &Ctx<'_>) -> usize {
    ctx.ks.db(0).len()
}

fn keys_in_slot(ctx: &mut Ctx<'_>, slot: u16, count: usize) -> Vec<Bytes> {
    ctx.ks.slot_keys(slot, count)
}

fn count_in_slot(ctx: &mut Ctx<'_>, slot: u16) -> usize {
    ctx.ks.slot_count(slot)
}

fn changed(c: &mut Cluster) {
    c.save_pending = true;
    c.update_state();
}

pub fn cluster_help(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    cluster(ctx)?;
    Ok(help_reply(help::CLUSTER))
}

pub fn cluster_myid(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    let c = cluster(ctx)?;
    Ok(Reply::Bulk(Bytes::copy_from_slice(&c.myself)))
}

pub fn cluster_keyslot(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    cluster(ctx)?;
    Ok(Reply::Int(key_slot(&args[2]) as i64))
}

pub fn cluster_info(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    let c = cluster(ctx)?;
    let (mut ok, mut pfail, mut fail) = (0, 0, 0);
    for n in c.slots.iter().flatten().filter_map(|n| c.nodes.get(n)) {
        if n.failed() {
            fail += 1;
        } else if n.has(flag::PFAIL) {
            pfail += 1;
        } else {
            ok += 1;
        }
    }
    let my_epoch = c.my_master().and_then(|m| c.nodes.get(&m)).unwrap_or(c.me()).config_epoch;
    let mut out = format!(
        "cluster_state:{}\r\ncluster_slots_assigned:{}\r\ncluster_slots_ok:{ok}\r\ncluster_slots_pfail:{pfail}\r\ncluster_slots_fail:{fail}\r\ncluster_known_nodes:{}\r\ncluster_size:{}\r\ncluster_current_epoch:{}\r\ncluster_my_epoch:{my_epoch}\r\n",
        if c.state == STATE_OK { "ok" } else { "fail" },
        c.assigned_slots(),
        c.nodes.len(),
        c.size,
        c.current_epoch,
    );
    for (dir, counts) in [("sent", c.sent), ("received", c.received)] {
        for (i, n) in counts.iter().enumerate().filter(|(_, n)| **n > 0) {
            out.push_str(&format!("cluster_stats_messages_{}_{dir}:{n}\r\n", MESSAGE_NAMES[i]));
        }
        out.push_str(&format!("cluster_stats_messages_{dir}:{}\r\n", counts.iter().sum::<u64>()));
    }
    out.push_str("total_cluster_links_buffer_limit_exceeded:0\r\n");
    Ok(Reply::Verbatim(*b"txt", out.into()))
}

pub fn cluster_nodes(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    let c = cluster(ctx)?;
    let mut out = String::new();
    for line in c.lines() {
        out.push_str(&render_line(&line));
        out.push('\n');
    }
    Ok(Reply::Verbatim(*b"txt", out.into()))
}

/// The replicas of master `m` that CLUSTER SLOTS lists (isReplicaAvailable).
fn replicas<'c>(c: &'c Cluster, m: &Name) -> impl Iterator<Item = &'c Node> {
    let m = *m;
    c.nodes.values().filter(move |n| !n.is_master() && n.slaveof == Some(m))
}

fn node_entry(n: &Node) -> Reply {
    let mut extra = Vec::new();
    if !n.hostname.is_empty() {
        extra.push((Reply::Bulk("hostname".into()), Reply::Bulk(n.hostname.clone().into())));
    }
    Reply::Array(vec![
        Reply::Bulk(n.ip.clone().into()),
        Reply::Int(n.port as i64),
        Reply::Bulk(Bytes::copy_from_slice(&n.name)),
        Reply::Map(extra),
    ])
}

pub fn cluster_slots(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    let c = cluster(ctx)?;
    let mut out = Vec::new();
    let mut s = 0usize;
    while s < SLOTS {
        let Some(owner) = c.slots[s] else {
            s += 1;
            continue;
        };
        let start = s;
        while s < SLOTS && c.slots[s] == Some(owner) {
            s += 1;
        }
        let Some(n) = c.nodes.get(&owner) else { continue };
        let mut entry = vec![Reply::Int(start as i64), Reply::Int(s as i64 - 1), node_entry(n)];
        entry.extend(replicas(c, &owner).filter(|r| !r.failed() && (r.repl_offset != 0 || r.has(flag::MYSELF))).map(node_entry));
        out.push(Reply::Array(entry));
    }
    Ok(Reply::Array(out))
}

fn shard_node(n: &Node) -> Reply {
    let mut m = vec![
        (Reply::Bulk("id".into()), Reply::Bulk(Bytes::copy_from_slice(&n.name))),
        (Reply::Bulk("port".into()), Reply::Int(n.port as i64)),
        (Reply::Bulk("ip".into()), Reply::Bulk(n.ip.clone().into())),
        (Reply::Bulk("endpoint".into()), Reply::Bulk(n.ip.clone().into())),
    ];
    if !n.hostname.is_empty() {
        m.push((Reply::Bulk("hostname".into()), Reply::Bulk(n.hostname.clone().into())));
    }
    let master = n.is_master();
    let health = if n.failed() {
        "fail"
    } else if !master && n.repl_offset == 0 {
        "loading"
    } else {
        "online"
    };
    m.push((Reply::Bulk("role".into()), Reply::Bulk(if master { "master" } else { "replica" }.into())));
    m.push((Reply::Bulk("replication-offset".into()), Reply::Int(n.repl_offset as i64)));
    m.push((Reply::Bulk("health".into()), Reply::Bulk(health.into())));
    Reply::Map(m)
}

pub fn cluster_shards(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    let c = cluster(ctx)?;
    let mut out = Vec::new();
    for m in c.nodes.values().filter(|n| n.is_master()) {
        let slots: Vec<Reply> = m.ranges().into_iter().flat_map(|(a, b)| [Reply::Int(a as i64), Reply::Int(b as i64)]).collect();
        let mut nodes = vec![shard_node(m)];
        nodes.extend(replicas(c, &m.name).map(shard_node));
        out.push(Reply::Map(vec![(Reply::Bulk("slots".into()), Reply::Array(slots)), (Reply::Bulk("nodes".into()), Reply::Array(nodes))]));
    }
    Ok(Reply::Array(out))
}

/// The slots of ADDSLOTS/DELSLOTS (`ranges`: the RANGE forms), each checked before any
/// changes.
fn slot_list(c: &Cluster, args: &[Bytes], ranges: bool, add: bool) -> Result<Vec<u16>, CmdError> {
    let mut slots = Vec::new();
    if ranges {
        for pair in args[2..].chunks(2) {
            let (a, b) = (slot_arg(&pair[0])?, slot_arg(&pair[1])?);
            if a > b {
                return Err(err(format!("start slot number {a} is greater than end slot number {b}")));
            }
            slots.extend(a..=b);
        }
    } else {
        for a in &args[2..] {
            slots.push(slot_arg(a)?);
        }
    }
    let mut seen = vec![false; SLOTS];
    for &s in &slots {
        if add && c.slots[s as usize].is_some() {
            return Err(err(format!("Slot {s} is already busy")));
        }
        if !add && c.slots[s as usize].is_none() {
            return Err(err(format!("Slot {s} is already unassigned")));
        }
        if std::mem::replace(&mut seen[s as usize], true) {
            return Err(err(format!("Slot {s} specified multiple times")));
        }
    }
    Ok(slots)
}

fn assign(ctx: &mut Ctx<'_>, args: &[Bytes], ranges: bool, add: bool) -> Result<Reply, CmdError> {
    if ranges && !(args.len() - 2).is_multiple_of(2) {
        return Err(CmdError::other(format!("ERR wrong number of arguments for 'cluster|{}' command", text(&args[1]).to_lowercase())));
    }
    let c = cluster(ctx)?;
    let slots = slot_list(c, args, ranges, add)?;
    let me = c.myself;
    for s in slots {
        if add {
            c.importing.remove(&s);
        }
        c.set_owner(s, add.then_some(me));
    }
    changed(c);
    Ok(Reply::OK)
}

pub fn cluster_addslots(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    assign(ctx, args, false, true)
}

pub fn cluster_addslotsrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    assign(ctx, args, true, true)
}

pub fn cluster_delslots(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    assign(ctx, args, false, false)
}

pub fn cluster_delslotsrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    assign(ctx, args, true, false)
}

pub fn cluster_flushslots(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    if db0_size(ctx) != 0 {
        return Err(CmdError::other("ERR DB must be empty to perform CLUSTER FLUSHSLOTS."));
    }
    let c = cluster(ctx)?;
    let me = c.myself;
    for s in 0..SLOTS as u16 {
        if c.slots[s as usize] == Some(me) {
            c.set_owner(s, None);
        }
    }
    changed(c);
    Ok(Reply::OK)
}

pub fn cluster_countkeysinslot(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    cluster(ctx)?;
    let slot = arg_i64(&args[2])?;
    if !(0..SLOTS as i64).contains(&slot) {
        return Err(CmdError::other("ERR Invalid slot"));
    }
    Ok(Reply::Int(count_in_slot(ctx, slot as u16) as i64))
}

pub fn cluster_getkeysinslot(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    cluster(ctx)?;
    let (slot, count) = (arg_i64(&args[2])?, arg_i64(&args[3])?);
    if !(0..SLOTS as i64).contains(&slot) || count < 0 {
        return Err(CmdError::other("ERR Invalid slot or number of keys"));
    }
    let keys = keys_in_slot(ctx, slot as u16, count as usize);
    Ok(Reply::Array(keys.into_iter().map(Reply::Bulk).collect()))
}

pub fn cluster_meet(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if args.len() > 5 {
        return Err(CmdError::other("ERR unknown subcommand or wrong number of arguments for 'meet'. Try CLUSTER HELP."));
    }
    let now = ctx.now_ms;
    let c = cluster(ctx)?;
    let port = std::str::from_utf8(&args[3]).ok().and_then(|p| p.parse::<i64>().ok());
    let Some(port) = port else { return Err(err(format!("Invalid TCP base port specified: {}", text(&args[3])))) };
    let cport = match args.get(4) {
        Some(a) => match std::str::from_utf8(a).ok().and_then(|p| p.parse::<i64>().ok()) {
            Some(p) => p,
            None => return Err(err(format!("Invalid TCP bus port specified: {}", text(a)))),
        },
        None => port.saturating_add(10000),
    };
    let ip = text(&args[2]);
    let valid = (1..=65535).contains(&port) && (1..=65535).contains(&cport);
    if !valid || !c.start_handshake(&ip, port as u16, cport as u16, now) {
        return Err(err(format!("Invalid node address specified: {ip}:{}", text(&args[3]))));
    }
    Ok(Reply::OK)
}

pub fn cluster_forget(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let now = ctx.now_ms;
    let c = cluster(ctx)?;
    let Some(n) = node_arg(c, &args[2]) else { return Err(err(format!("Unknown node {}", text(&args[2])))) };
    if n == c.myself {
        return Err(CmdError::other("ERR I tried hard but I can't forget myself..."));
    }
    if c.my_master() == Some(n) {
        return Err(CmdError::other("ERR Can't forget my master!"));
    }
    c.blacklist.insert(n, now + 60_000);
    c.del_node(&n);
    changed(c);
    Ok(Reply::OK)
}

pub fn cluster_count_failure_reports(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let now = ctx.now_ms;
    let c = cluster(ctx)?;
    let Some(n) = node_arg(c, &args[2]) else { return Err(err(format!("Unknown node {}", text(&args[2])))) };
    Ok(Reply::Int(c.valid_fail_reports(&n, now) as i64))
}

pub fn cluster_saveconfig(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    cluster(ctx)?.save_pending = true;
    // The executor writes it (and answers an error if it cannot) after this command.
    ctx.server.cluster_save_reply = true;
    Ok(Reply::OK)
}

pub fn cluster_bumpepoch(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    let c = cluster(ctx)?;
    let bumped = crate::cluster::state::bump_epoch_without_consensus(c);
    let epoch = c.me().config_epoch;
    Ok(Reply::Status(format!("{} {epoch}", if bumped { "BUMPED" } else { "STILL" }).into()))
}

pub fn cluster_set_config_epoch(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let epoch = arg_i64(&args[2])?;
    let c = cluster(ctx)?;
    if epoch < 0 {
        return Err(err(format!("Invalid config epoch specified: {epoch}")));
    }
    if c.nodes.len() > 1 {
        return Err(CmdError::other("ERR The user can assign a config epoch only when the node does not know any other node."));
    }
    if c.me().config_epoch != 0 {
        return Err(CmdError::other("ERR Node config epoch is already non-zero"));
    }
    c.me_mut().config_epoch = epoch as u64;
    c.current_epoch = c.current_epoch.max(epoch as u64);
    changed(c);
    Ok(Reply::OK)
}

pub fn cluster_setslot(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if !cluster(ctx)?.me().is_master() {
        return Err(CmdError::other("ERR Please use SETSLOT only with masters."));
    }
    let slot = slot_arg(&args[2])?;
    let action = text(&args[3]).to_ascii_lowercase();
    let invalid = || CmdError::other("ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP");
    let held = if action == "node" { count_in_slot(ctx, slot) } else { 0 };
    let c = cluster(ctx)?;
    let me = c.myself;
    match (action.as_str(), args.len()) {
        ("migrating", 5) => {
            if c.slots[slot as usize] != Some(me) {
                return Err(err(format!("I'm not the owner of hash slot {slot}")));
            }
            let n = master_arg(c, &args[4], "I don't know about node")?;
            c.migrating.insert(slot, n);
        }
        ("importing", 5) => {
            if c.slots[slot as usize] == Some(me) {
                return Err(err(format!("I'm already the owner of hash slot {slot}")));
            }
            let n = master_arg(c, &args[4], "I don't know about node")?;
            c.importing.insert(slot, n);
        }
        ("stable", 4) => {
            c.migrating.remove(&slot);
            c.importing.remove(&slot);
        }
        ("node", 5) => {
            let n = master_arg(c, &args[4], "Unknown node")?;
            if c.slots[slot as usize] == Some(me) && n != me && held != 0 {
                return Err(err(format!("Can't assign hashslot {slot} to a different node while I still hold keys for this hash slot.")));
            }
            if held == 0 {
                c.migrating.remove(&slot);
            }
            let was_mine = c.slots[slot as usize] == Some(me);
            let imported = n == me && c.importing.remove(&slot).is_some();
            if imported {
                crate::cluster::state::bump_epoch_without_consensus(c);
            }
            c.set_owner(slot, Some(n));
            // The end of an import: this node owns the slot under an epoch of its own, and
            // tells everyone at once.
            if imported {
                c.broadcast_pong();
            }
            // A master left without slots follows the node that took its last one.
            if was_mine && n != me && c.me().numslots == 0 && c.settings.allow_replica_migration {
                c.set_my_master(n);
            }
        }
        _ => return Err(invalid()),
    }
    changed(c);
    Ok(Reply::OK)
}

pub fn cluster_replicate(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let keys = db0_size(ctx);
    let c = cluster(ctx)?;
    let Some(n) = node_arg(c, &args[2]) else { return Err(err(format!("Unknown node {}", text(&args[2])))) };
    if n == c.myself {
        return Err(CmdError::other("ERR Can't replicate myself"));
    }
    if !c.nodes[&n].is_master() {
        return Err(CmdError::other("ERR I can only replicate a master, not a replica."));
    }
    if c.me().is_master() && (c.me().numslots != 0 || keys != 0) {
        return Err(CmdError::other("ERR To set a master the node must be empty and without assigned slots."));
    }
    c.set_my_master(n);
    changed(c);
    Ok(Reply::OK)
}

/// CLUSTER REPLICAS, and CLUSTER SLAVES (the same handler in the table).
pub fn cluster_replicas(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let c = cluster(ctx)?;
    let Some(n) = node_arg(c, &args[2]) else { return Err(err(format!("Unknown node {}", text(&args[2])))) };
    if !c.nodes[&n].is_master() {
        return Err(CmdError::other("ERR The specified node is not a master"));
    }
    let lines: Vec<Reply> = replicas(c, &n).map(|r| Reply::Bulk(render_line(&c.line_of(r)).into())).collect();
    Ok(Reply::Array(lines))
}

pub fn cluster_reset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let hard = match args.get(2).map(|a| text(a).to_ascii_lowercase()) {
        None => false,
        Some(m) if m == "soft" => false,
        Some(m) if m == "hard" => true,
        Some(_) => return Err(CmdError::other("ERR syntax error")),
    };
    if args.len() > 3 {
        return Err(CmdError::other("ERR syntax error"));
    }
    let keys = db0_size(ctx);
    let c = cluster(ctx)?;
    if c.me().is_master() && keys != 0 {
        return Err(CmdError::other("ERR CLUSTER RESET can't be called with master nodes containing keys"));
    }
    let was_replica = !c.me().is_master();
    c.reset(hard);
    changed(c);
    if was_replica {
        // A replica becomes an empty master (the executor stops replication and flushes).
        c.role_changed = true;
        c.flush_data = true;
    }
    Ok(Reply::OK)
}

pub fn cluster_links(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    let c = cluster(ctx)?;
    let mut out = Vec::new();
    for n in c.nodes.values() {
        for (link, dir) in [(n.link, "to"), (n.inbound, "from")] {
            let Some(l) = link.and_then(|id| c.links.get(&id)) else { continue };
            out.push(Reply::Map(vec![
                (Reply::Bulk("direction".into()), Reply::Bulk(dir.into())),
                (Reply::Bulk("node".into()), Reply::Bulk(name_str(&n.name).to_string().into())),
                (Reply::Bulk("create-time".into()), Reply::Int(l.ctime)),
                (Reply::Bulk("events".into()), Reply::Bulk("r".into())),
                (Reply::Bulk("send-buffer-allocated".into()), Reply::Int(0)),
                (Reply::Bulk("send-buffer-used".into()), Reply::Int(0)),
            ]));
        }
    }
    Ok(Reply::Array(out))
}

pub fn cluster_failover(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if args.len() > 3 {
        return Err(CmdError::other("ERR unknown subcommand or wrong number of arguments for 'failover'. Try CLUSTER HELP."));
    }
    let (force, takeover) = match args.get(2).map(|a| text(a).to_ascii_lowercase()) {
        None => (false, false),
        Some(o) if o == "force" => (true, false),
        Some(o) if o == "takeover" => (true, true),
        Some(_) => return Err(CmdError::Syntax),
    };
    let now = ctx.now_ms;
    let c = cluster(ctx)?;
    if c.me().is_master() {
        return Err(CmdError::other("ERR You should send CLUSTER FAILOVER to a replica"));
    }
    let Some(master) = c.me().slaveof.and_then(|m| c.nodes.get(&m)) else {
        return Err(CmdError::other("ERR I'm a replica but my master is unknown to me"));
    };
    if !force && (master.failed() || master.link.is_none()) {
        return Err(CmdError::other("ERR Master is down or failed, please use CLUSTER FAILOVER FORCE"));
    }
    if takeover {
        c.election.mf_end = now + crate::cluster::failover::MF_TIMEOUT_MS;
        c.takeover_now();
    } else {
        c.start_manual_failover(force, now);
    }
    Ok(Reply::OK)
}

pub fn readonly(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    cluster(ctx)?;
    ctx.client.cluster_readonly = true;
    Ok(Reply::OK)
}

pub fn readwrite(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    cluster(ctx)?;
    ctx.client.cluster_readonly = false;
    Ok(Reply::OK)
}

pub fn asking(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    cluster(ctx)?;
    ctx.client.asking = true;
    Ok(Reply::OK)
}
