//! MEMORY and LATENCY: what the server knows of its memory and of its slow moments.

use bytes::Bytes;

use super::{arg_i64, help, help_reply, CmdError, CommandSpec, Ctx};
use crate::protocol::Reply;
use crate::util::eq_ignore_case;

/// ```text
/// MEMORY USAGE key [SAMPLES count]
/// ```
/// The key's bytes as the memory account counts them (key, value, entry overhead): the
/// estimate `used_memory` and eviction use, computed for the whole value (no sampling).
pub fn memory_usage(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    // SAMPLES may repeat; a negative count is a syntax error, as in Redis.
    let mut j = 3;
    while j < args.len() {
        if !eq_ignore_case(&args[j], "samples") || j + 1 >= args.len() || arg_i64(&args[j + 1])? < 0 {
            return Err(CmdError::Syntax);
        }
        j += 2;
    }
    let db = ctx.db();
    let d = ctx.ks.db(db);
    Ok(match d.peek(&args[2]) {
        Some(entry) if d.expire_of(&args[2], entry).is_none_or(|at| at > ctx.now_ms) => {
            Reply::Int(crate::db::entry_mem(&args[2], entry) as i64)
        }
        _ => Reply::Nil,
    })
}

/// What the server knows of its memory, for INFO memory and MEMORY STATS alike. There is
/// no allocator accounting: the allocator's "allocated" and "active" are the memory
/// account's estimate (`used_memory`), its "resident" the process's resident set.
pub(super) struct MemoryFigures {
    pub used: u64,
    pub peak: u64,
    pub startup: u64,
    pub dataset: u64,
    pub rss: u64,
    pub backlog: u64,
    pub clients_normal: u64,
    pub clients_replicas: u64,
    pub lua: u64,
    pub keys: u64,
}

impl MemoryFigures {
    /// Reads the figures now (and raises the recorded peak to the current use).
    pub(super) fn gather(ctx: &mut Ctx<'_>) -> MemoryFigures {
        let used = ctx.ks.used_memory() as u64;
        let dataset = ctx.ks.total_mem() as u64;
        ctx.server.memory_peak = ctx.server.memory_peak.max(used);
        let (mut clients_normal, mut clients_replicas) = (0, 0);
        for c in ctx.server.clients.values() {
            let mem = c.out.capacity() as u64 + c.flags.task_pending.load(std::sync::atomic::Ordering::Relaxed);
            if c.replica.is_some() {
                clients_replicas += mem;
            } else {
                clients_normal += mem;
            }
        }
        MemoryFigures {
            used,
            peak: ctx.server.memory_peak,
            startup: used - dataset,
            dataset,
            rss: super::info::process_usage().0,
            backlog: ctx.server.repl.backlog.as_ref().map_or(0, |b| b.capacity),
            clients_normal,
            clients_replicas,
            lua: ctx.server.scripts.as_deref().map_or(0, |e| e.lua_memory()) as u64,
            keys: ctx.ks.dbs.iter().map(|d| d.len() as u64).sum(),
        }
    }

    /// Redis's `dataset_perc`: the data's share of what was allocated after startup.
    pub(super) fn dataset_percentage(&self) -> f64 {
        let net = self.used.saturating_sub(self.startup);
        if net > 0 {
            self.dataset as f64 * 100.0 / net as f64
        } else {
            0.0
        }
    }

    pub(super) fn peak_percentage(&self) -> f64 {
        if self.peak > 0 {
            self.used as f64 * 100.0 / self.peak as f64
        } else {
            0.0
        }
    }

    /// The resident set over the memory account (Redis's `mem_fragmentation_ratio`).
    pub(super) fn fragmentation(&self) -> f64 {
        if self.used > 0 {
            self.rss as f64 / self.used as f64
        } else {
            0.0
        }
    }

    pub(super) fn fragmentation_bytes(&self) -> i64 {
        self.rss as i64 - self.used as i64
    }
}

/// ```text
/// MEMORY STATS
/// ```
pub fn memory_stats(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    let m = MemoryFigures::gather(ctx);
    let int = |n: u64| Reply::Int(n as i64);
    let k = |s: &'static str| Reply::bulk(s.as_bytes());
    let mut fields = vec![
        (k("peak.allocated"), int(m.peak)),
        (k("total.allocated"), int(m.used)),
        (k("startup.allocated"), int(m.startup)),
        (k("replication.backlog"), int(m.backlog)),
        (k("clients.slaves"), int(m.clients_replicas)),
        (k("clients.normal"), int(m.clients_normal)),
        (k("cluster.links"), int(0)),
        (k("aof.buffer"), int(0)),
        (k("lua.caches"), int(m.lua)),
        (k("functions.caches"), int(0)),
    ];
    for (i, d) in ctx.ks.dbs.iter().enumerate() {
        if d.is_empty() {
            continue;
        }
        let overhead = Reply::Map(vec![
            (k("overhead.hashtable.main"), int(d.len() as u64 * 24)),
            (k("overhead.hashtable.expires"), int(0)),
            (k("overhead.hashtable.slot-to-keys"), int(0)),
        ]);
        fields.push((Reply::Bulk(Bytes::from(format!("db.{i}"))), overhead));
    }
    fields.extend([
        (k("overhead.total"), int(m.startup + m.backlog + m.clients_normal + m.clients_replicas + m.lua)),
        (k("keys.count"), int(m.keys)),
        (k("keys.bytes-per-key"), int(m.dataset.checked_div(m.keys).unwrap_or(0))),
        (k("dataset.bytes"), int(m.dataset)),
        (k("dataset.percentage"), Reply::Double(m.dataset_percentage())),
        (k("peak.percentage"), Reply::Double(m.peak_percentage())),
        (k("allocator.allocated"), int(m.used)),
        (k("allocator.active"), int(m.used)),
        (k("allocator.resident"), int(m.rss)),
        (k("allocator-fragmentation.ratio"), Reply::Double(1.0)),
        (k("allocator-fragmentation.bytes"), int(0)),
        (k("allocator-rss.ratio"), Reply::Double(m.fragmentation())),
        (k("allocator-rss.bytes"), Reply::Int(m.fragmentation_bytes())),
        (k("rss-overhead.ratio"), Reply::Double(1.0)),
        (k("rss-overhead.bytes"), int(0)),
        (k("fragmentation"), Reply::Double(m.fragmentation())),
        (k("fragmentation.bytes"), Reply::Int(m.fragmentation_bytes())),
    ]);
    Ok(Reply::Map(fields))
}

/// ```text
/// MEMORY DOCTOR
/// ```
pub fn memory_doctor(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    // Redis's verdict below 5 MB of data; above, what it says when it finds nothing wrong
    // (the allocator figures it inspects have no counterpart here).
    let text = if ctx.ks.total_mem() < 5 * 1024 * 1024 {
        "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n"
    } else {
        "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n"
    };
    Ok(Reply::Verbatim(*b"txt", Bytes::from_static(text.as_bytes())))
}

/// ```text
/// MEMORY MALLOC-STATS
/// ```
pub fn memory_malloc_stats(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(Reply::Verbatim(*b"txt", Bytes::from_static(b"Stats not supported for the current allocator")))
}

/// ```text
/// MEMORY PURGE
/// ```
pub fn memory_purge(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    // As Redis purges jemalloc's dirty pages: the allocator returns what it holds unused.
    crate::util::release_memory(true);
    Ok(Reply::OK)
}

pub fn memory_help(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(help_reply(help::MEMORY))
}

/// ```text
/// LATENCY LATEST
/// ```
pub fn latency_latest(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    let rows = ctx.server.latency.events.iter().filter_map(|(name, s)| {
        let (t, ms) = s.samples.back()?;
        Some(Reply::Array(vec![Reply::bulk(name.as_bytes()), Reply::Int(*t), Reply::Int(*ms as i64), Reply::Int(s.max as i64)]))
    });
    Ok(Reply::Array(rows.collect()))
}

/// ```text
/// LATENCY HISTORY event
/// ```
pub fn latency_history(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let name = String::from_utf8_lossy(&args[2]);
    let Some(series) = ctx.server.latency.events.get(name.as_ref()) else { return Ok(Reply::Array(Vec::new())) };
    Ok(Reply::Array(series.samples.iter().map(|(t, ms)| Reply::Array(vec![Reply::Int(*t), Reply::Int(*ms as i64)])).collect()))
}

/// ```text
/// LATENCY RESET [event ...]
/// ```
pub fn latency_reset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let names: Vec<String> = args[2..].iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect();
    Ok(Reply::Int(ctx.server.latency.reset(&names) as i64))
}

/// ```text
/// LATENCY DOCTOR
/// ```
pub fn latency_doctor(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    let events = &ctx.server.latency.events;
    let text = if ctx.server.settings.latency_threshold_ms == 0 {
        "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n".to_string()
    } else if events.is_empty() {
        "Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n".to_string()
    } else {
        let mut t =
            "Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n".to_string();
        for (i, (name, s)) in events.iter().enumerate() {
            let n = s.samples.len().max(1) as u64;
            let avg = s.samples.iter().map(|(_, ms)| ms).sum::<u64>() / n;
            t.push_str(&format!(
                "{}. {name}: {} latency spikes (average {avg}ms). Worst all time event {}ms.\n",
                i + 1,
                s.samples.len(),
                s.max
            ));
        }
        t.push_str("\nCheck the slow log (SLOWLOG GET) for the commands behind them.\n");
        t
    };
    Ok(Reply::Verbatim(*b"txt", Bytes::from(text)))
}

/// LATENCY GRAPH and LATENCY HISTOGRAM: not kept here.
pub fn latency_graph(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Err(CmdError::other("ERR LATENCY GRAPH is not supported by Vermilion: use LATENCY HISTORY"))
}

/// The commands with a latency histogram, in the table's order (subcommands after their
/// container), by full name.
pub fn latency_histograms(s: &crate::state::ServerState) -> Vec<(&'static str, &crate::latency::Histogram)> {
    let histogram = |c: &CommandSpec| s.stats.latency.get(c.id).and_then(|h| h.as_deref()).map(|h| (c.name, h));
    super::all_commands().filter_map(histogram).collect()
}

/// ```text
/// LATENCY HISTOGRAM [command ...]
/// ```
/// Each command's calls and cumulative counts at powers of two microseconds (Redis's
/// histogram_usec); named commands include their subcommands; unknown names are skipped.
pub fn latency_histogram(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let all = latency_histograms(ctx.server);
    let wanted = |name: &str| {
        args.len() == 2
            || args[2..].iter().any(|a| {
                let a = String::from_utf8_lossy(a).to_ascii_lowercase();
                name == a || name.split_once('|').is_some_and(|(container, _)| container == a)
            })
    };
    let entry = |h: &crate::latency::Histogram| {
        let buckets = h.cumulative_usec().into_iter().map(|(us, n)| (Reply::Int(us as i64), Reply::Int(n as i64))).collect();
        Reply::Map(vec![(Reply::bulk(b"calls"), Reply::Int(h.total() as i64)), (Reply::bulk(b"histogram_usec"), Reply::Map(buckets))])
    };
    Ok(Reply::Map(all.into_iter().filter(|(name, _)| wanted(name)).map(|(name, h)| (Reply::bulk(name.as_bytes()), entry(h))).collect()))
}

pub fn latency_help(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(help_reply(help::LATENCY))
}
