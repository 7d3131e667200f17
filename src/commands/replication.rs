//! Replication commands: REPLICAOF/SLAVEOF, ROLE, PSYNC/SYNC, REPLCONF, WAIT, and the INFO
//! replication section. The work itself (PSYNC, REPLICAOF) is the executor's
//! (`executor/replicate.rs`): handlers check arguments and leave a request.

use std::fmt::Write as _;

use bytes::Bytes;

use super::{arg_i64, BlockRequest, CmdError, Ctx, Next};
use crate::config::P;
use crate::protocol::Reply;
use crate::replication::{peer_ip, Failover, FailoverState, PeerState, ReplRequest};
use crate::state::ServerState;
use crate::util::eq_ignore_case;

/// ```text
/// REPLICAOF host port | REPLICAOF NO ONE
/// ```
pub fn replicaof(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if ctx.server.repl.failover.is_some() {
        return Err(CmdError::other("ERR REPLICAOF not allowed while failing over."));
    }
    if eq_ignore_case(&args[1], "no") && eq_ignore_case(&args[2], "one") {
        ctx.then(Next::Replication(Box::new(ReplRequest::ReplicaOf(None))));
        return Ok(Reply::OK);
    }
    let port = match crate::util::parse_i64(&args[2]) {
        Some(p) if (0..=65535).contains(&p) => p,
        _ => return Err(CmdError::other("ERR Invalid master port")),
    };
    let host = String::from_utf8_lossy(&args[1]).into_owned();
    ctx.then(Next::Replication(Box::new(ReplRequest::ReplicaOf(Some((host, port as u16))))));
    Ok(Reply::OK)
}

pub fn slaveof(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    replicaof(ctx, args)
}

/// ```text
/// ROLE
/// ```
pub fn role(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    let s = &*ctx.server;
    let repl = &s.repl;
    if let Some(m) = &repl.master {
        let state = m.shared.state_name();
        let offset = if m.synced || state == "connected" { repl.shown().1 as i64 } else { -1 };
        return Ok(Reply::Array(vec![
            Reply::bulk(b"slave"),
            Reply::Bulk(Bytes::from(m.host.clone())),
            Reply::Int(m.port as i64),
            Reply::bulk(state.as_bytes()),
            Reply::Int(offset),
        ]));
    }
    let peers = s
        .replica_peers()
        .filter(|(_, p)| p.state == PeerState::Online)
        .map(|(c, p)| {
            Reply::Array(vec![
                Reply::Bulk(Bytes::from(peer_ip(&c.addr).to_string())),
                Reply::Bulk(Bytes::from(c.replconf_port.to_string())),
                Reply::Bulk(Bytes::from(p.ack_offset.to_string())),
            ])
        })
        .collect();
    Ok(Reply::Array(vec![Reply::bulk(b"master"), Reply::Int(repl.offset as i64), Reply::Array(peers)]))
}

/// ```text
/// PSYNC replicationid offset
/// ```
/// An RDB-only transfer (`REPLCONF rdb-only 1`, redis-cli --rdb and --functions-rdb): the
/// file, encoded now from memory, as one bulk reply, then the connection closes, as Redis
/// ends such a transfer. No replication state is created.
fn rdb_transfer(ctx: &mut Ctx<'_>) -> Result<Reply, CmdError> {
    let data = dataset_rdb(ctx.ks, ctx.server, !ctx.client.rdb_functions_only);
    crate::log::notice(&format!("Sent an RDB-only transfer of {} bytes to {}", data.len(), ctx.client.addr));
    ctx.client.close_after_reply = true;
    Ok(Reply::Bulk(Bytes::from(data)))
}

/// The whole dataset (`data`: the keys too, not only the function libraries) as an RDB
/// file, encoded now: an RDB-only transfer, and a redis-server replica's full sync.
pub fn dataset_rdb(ks: &crate::db::Keyspace, server: &ServerState, data: bool) -> Vec<u8> {
    use crate::db::rdb_file;
    let now = crate::clock::now_ms();
    let aux = rdb_file::aux_fields(now, ks.used_memory());
    let libraries: Vec<Bytes> =
        server.scripts.as_ref().map(|e| e.functions.libraries().map(|l| l.code.clone()).collect()).unwrap_or_default();
    let hints = rdb_file::HintPolicy::new(server.config.get(crate::config::P::MaxmemoryPolicy), now, ks.lfu.decay_time);
    rdb_file::encode_all(ks, &aux, libraries.iter().map(|l| &l[..]), &hints, data)
}

pub fn psync(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if ctx.client.rdb_only {
        return rdb_transfer(ctx);
    }
    let failover = args.len() > 3 && eq_ignore_case(&args[3], "failover");
    let offset = arg_i64(&args[2])?;
    let replid = String::from_utf8_lossy(&args[1]).into_owned();
    ctx.then(Next::Replication(Box::new(ReplRequest::Psync { replid, offset, legacy: false, failover })));
    Ok(Reply::NoReply)
}

/// ```text
/// SYNC
/// ```
pub fn sync(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    if ctx.client.rdb_only {
        return rdb_transfer(ctx);
    }
    ctx.then(Next::Replication(Box::new(ReplRequest::Psync { replid: "?".into(), offset: -1, legacy: true, failover: false })));
    Ok(Reply::NoReply)
}

/// ```text
/// REPLCONF option value [option value ...]
/// ```
pub fn replconf(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if args.len().is_multiple_of(2) {
        return Err(CmdError::Syntax);
    }
    for pair in args[1..].chunks(2) {
        let (opt, val) = (&pair[0], &pair[1]);
        if eq_ignore_case(opt, "listening-port") {
            let port = arg_i64(val)?;
            ctx.client.replconf_port = port.clamp(0, 65535) as u16;
        } else if eq_ignore_case(opt, "ack") {
            // Acknowledgements get no reply (a replica does not read one).
            let Some(offset) = crate::util::parse_i64(val) else { return Ok(Reply::NoReply) };
            if let Some(peer) = ctx.client.replica.as_mut() {
                // A redis-server replica counts the plain stream's bytes.
                let offset = match (&ctx.server.repl.plain, peer.plain) {
                    (Some(feed), true) if offset >= 0 => feed.log_offset(offset as u64) as i64,
                    _ => offset,
                };
                if offset >= 0 && offset as u64 > peer.ack_offset {
                    peer.ack_offset = offset as u64;
                }
                peer.ack_time_ms = crate::clock::now_ms();
                ctx.server.repl.acked = true;
            }
            return Ok(Reply::NoReply);
        } else if eq_ignore_case(opt, "getack") {
            return Ok(Reply::NoReply);
        } else if eq_ignore_case(opt, "rdb-only") {
            match crate::util::parse_i64(val) {
                Some(n @ 0..=1) => ctx.client.rdb_only = n == 1,
                Some(_) => return Err(CmdError::other("ERR value is out of range, value must between 0 and 1")),
                None => return Err(CmdError::NotInteger),
            }
        } else if eq_ignore_case(opt, "rdb-filter-only") {
            let filters = crate::protocol::split_args(val).ok_or_else(|| CmdError::other("ERR Missing rdb-filter-only values"))?;
            if let Some(bad) = filters.iter().find(|f| !eq_ignore_case(f, "functions")) {
                return Err(CmdError::Other(format!("ERR Unsupported rdb-filter-only option: {}", String::from_utf8_lossy(bad)).into()));
            }
            ctx.client.rdb_functions_only = !filters.is_empty();
            // An empty filter (redis-cli --replica) wants the stream and no data: the
            // snapshot it gets is skipped. A transfer of the RDB alone asks rdb-only too.
        } else if eq_ignore_case(opt, "capa") {
            ctx.client.capa_vermilion |= eq_ignore_case(val, "vermilion");
        } else if !eq_ignore_case(opt, "ip-address") {
            return Err(CmdError::Other(format!("ERR Unrecognized REPLCONF option: {}", String::from_utf8_lossy(opt)).into()));
        }
    }
    Ok(Reply::OK)
}

/// ```text
/// FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT milliseconds]
/// ```
/// Checks the arguments and the roles as Redis does, in its order, then pauses writes: the
/// executor (`executor/replicate/failover.rs`) waits for a replica to catch up and hands it
/// the primary's role.
pub fn failover(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if args.len() == 2 && eq_ignore_case(&args[1], "abort") {
        if ctx.server.repl.failover.is_none() {
            return Err(CmdError::other("ERR No failover in progress."));
        }
        ctx.then(Next::Replication(Box::new(ReplRequest::FailoverAbort)));
        return Ok(Reply::OK);
    }
    let (mut timeout, mut force, mut target) = (0i64, false, None::<(String, i64)>);
    let mut j = 1;
    while j < args.len() {
        if eq_ignore_case(&args[j], "timeout") && j + 1 < args.len() && timeout == 0 {
            timeout = arg_i64(&args[j + 1])?;
            if timeout <= 0 {
                return Err(CmdError::other("ERR FAILOVER timeout must be greater than 0"));
            }
            j += 2;
        } else if eq_ignore_case(&args[j], "to") && j + 2 < args.len() && target.is_none() {
            let port = arg_i64(&args[j + 2])?;
            target = Some((String::from_utf8_lossy(&args[j + 1]).into_owned(), port));
            j += 3;
        } else if eq_ignore_case(&args[j], "force") && !force {
            force = true;
            j += 1;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let s = &*ctx.server;
    if s.repl.failover.is_some() {
        return Err(CmdError::other("ERR FAILOVER already in progress."));
    }
    if s.repl.master.is_some() {
        return Err(CmdError::other("ERR FAILOVER is not valid when server is a replica."));
    }
    if s.replica_peers().next().is_none() {
        return Err(CmdError::other("ERR FAILOVER requires connected replicas."));
    }
    if force && (timeout == 0 || target.is_none()) {
        return Err(CmdError::other("ERR FAILOVER with force option requires both a timeout and target HOST and IP."));
    }
    let target = match target {
        Some((host, port)) => {
            let Some((_, peer)) = s.find_replica(&host, port) else {
                return Err(CmdError::other("ERR FAILOVER target HOST and PORT is not a replica."));
            };
            if peer.state != PeerState::Online {
                return Err(CmdError::other("ERR FAILOVER target replica is not online."));
            }
            crate::log::notice(&format!("FAILOVER requested to {host}:{port}."));
            Some((host, port as u16))
        }
        None => {
            crate::log::notice("FAILOVER requested to any replica.");
            None
        }
    };
    let deadline_ms = (timeout > 0).then(|| crate::clock::now_ms().saturating_add(timeout));
    ctx.server.repl.failover = Some(Failover { state: FailoverState::WaitForSync, target, deadline_ms, force, link: None });
    ctx.then(Next::Replication(Box::new(ReplRequest::FailoverStart)));
    Ok(Reply::OK)
}

/// ```text
/// WAIT numreplicas timeout
/// ```
pub fn wait(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if ctx.server.repl.master.is_some() {
        return Err(CmdError::other("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated."));
    }
    let needed = arg_i64(&args[1])?;
    let timeout = crate::util::parse_i64(&args[2]).ok_or_else(|| CmdError::other("ERR timeout is not an integer or out of range"))?;
    if timeout < 0 {
        return Err(CmdError::other("ERR timeout is negative"));
    }
    let offset = ctx.client.log_wait;
    let count = ctx.server.acked_replicas(offset);
    if ctx.client.deny_blocking || count as i64 >= needed {
        return Ok(Reply::Int(count as i64));
    }
    let deadline_ms = match timeout {
        0 => None,
        t => Some(crate::clock::now_ms().checked_add(t).ok_or_else(|| CmdError::other("ERR timeout is out of range"))?),
    };
    ctx.client.wait_target = Some((offset, needed.max(0) as usize));
    ctx.then(Next::Block(Box::new(BlockRequest {
        kind: super::BlockKind::NoKey,
        keys: Vec::new(),
        deadline_ms,
        timeout_reply: Reply::Int(count as i64),
        rerun: None,
    })));
    Ok(Reply::NoReply)
}

/// INFO's replication section, with Redis 7.0's fields.
pub fn info_section(s: &ServerState) -> String {
    let repl = &s.repl;
    let now = crate::clock::now_ms();
    let mut out = String::from("# Replication\r\n");
    if let Some(m) = &repl.master {
        let up = m.synced;
        let last_io = (now - m.shared.last_io_ms.load(std::sync::atomic::Ordering::Acquire)).max(0) / 1000;
        let syncing = m.shared.state.load(std::sync::atomic::Ordering::Acquire) == crate::replication::LINK_SYNC;
        let _ = write!(
            out,
            "role:slave\r\nmaster_host:{}\r\nmaster_port:{}\r\nmaster_link_status:{}\r\nmaster_last_io_seconds_ago:{}\r\nmaster_sync_in_progress:{}\r\nslave_read_repl_offset:{}\r\nslave_repl_offset:{}\r\n",
            m.host,
            m.port,
            if up { "up" } else { "down" },
            if up { last_io } else { -1 },
            syncing as u8,
            repl.shown().1,
            repl.shown().1
        );
        if !up {
            let _ = write!(out, "master_link_down_since_seconds:{}\r\n", (now - m.down_since_ms).max(0) / 1000);
        }
        let _ = write!(
            out,
            "slave_priority:{}\r\nslave_read_only:{}\r\nreplica_announced:1\r\n",
            s.config.get(P::ReplicaPriority),
            s.settings.replica_read_only as u8
        );
    } else {
        out.push_str("role:master\r\n");
    }
    let _ = write!(out, "connected_slaves:{}\r\n", s.replica_peers().count());
    let (needed, max_lag) = s.settings.min_replicas;
    if needed > 0 && repl.master.is_none() {
        let _ = write!(out, "min_slaves_good_slaves:{}\r\n", s.good_replicas(max_lag));
    }
    for (i, (c, p)) in s.replica_peers().enumerate() {
        let state = match p.state {
            PeerState::WaitSnapshot => "wait_bgsave",
            PeerState::Online => "online",
        };
        let _ = write!(
            out,
            "slave{i}:ip={},port={},state={state},offset={},lag={}\r\n",
            peer_ip(&c.addr),
            c.replconf_port,
            p.ack_offset,
            (now - p.ack_time_ms).max(0) / 1000
        );
    }
    let (active, first, histlen) = match &repl.backlog {
        Some(b) => (1, b.first_offset() + 1, b.histlen()),
        None => (0, 0, 0),
    };
    let _ = write!(
        out,
        "master_failover_state:{}\r\nmaster_replid:{}\r\nmaster_replid2:{}\r\nmaster_repl_offset:{}\r\nsecond_repl_offset:{}\r\nrepl_backlog_active:{active}\r\nrepl_backlog_size:{}\r\nrepl_backlog_first_byte_offset:{first}\r\nrepl_backlog_histlen:{histlen}\r\n",
        Failover::state_name(repl.failover.as_ref()),
        repl.shown().0,
        repl.replid2,
        repl.shown().1,
        repl.second_offset.map_or(-1, |o| o as i64 + 1),
        s.config.get(P::ReplBacklogSize),
    );
    out
}
