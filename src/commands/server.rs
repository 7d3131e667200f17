//! Server commands: INFO, CONFIG, TIME, LASTSAVE, SLOWLOG, SHUTDOWN, DEBUG.

use std::fmt::Write as _;

use bytes::Bytes;

use super::{help, help_reply, CmdError, Ctx};
use crate::config::{Config, SetError};
use crate::protocol::{ProtocolVersion, Reply};
use crate::state::ShutdownRequest;
use crate::util::eq_ignore_case;

/// The sections INFO prints with no argument, in Redis's order.
const DEFAULT_SECTIONS: &[&str] =
    &["server", "clients", "memory", "persistence", "stats", "replication", "cpu", "modules", "errorstats", "cluster", "keyspace"];
const ALL_EXTRA: &[&str] = &["commandstats", "latencystats"];

/// ```text
/// INFO [section [section ...]]
/// ```
pub fn info(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let mut wanted: Vec<String> = Vec::new();
    if args.len() == 1 {
        wanted.extend(DEFAULT_SECTIONS.iter().map(|s| s.to_string()));
    }
    for a in &args[1..] {
        let s = String::from_utf8_lossy(a).to_lowercase();
        match s.as_str() {
            "default" => wanted.extend(DEFAULT_SECTIONS.iter().map(|s| s.to_string())),
            "all" | "everything" => {
                wanted.extend(DEFAULT_SECTIONS.iter().map(|s| s.to_string()));
                wanted.extend(ALL_EXTRA.iter().map(|s| s.to_string()));
            }
            _ => wanted.push(s),
        }
    }
    let order = [
        "server",
        "clients",
        "memory",
        "persistence",
        "stats",
        "replication",
        "cpu",
        "modules",
        "commandstats",
        "errorstats",
        "latencystats",
        "cluster",
        "keyspace",
    ];
    let mut text = String::new();
    for section in order {
        if !wanted.iter().any(|w| w == section) {
            continue;
        }
        if !text.is_empty() {
            text.push_str("\r\n");
        }
        info_section(ctx, section, &mut text);
    }
    Ok(Reply::Verbatim(*b"txt", Bytes::from(text)))
}

fn human_bytes(n: u64) -> String {
    let n = n as f64;
    if n < 1024.0 {
        format!("{}B", n as u64)
    } else if n < 1024.0 * 1024.0 {
        format!("{:.2}K", n / 1024.0)
    } else if n < 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2}M", n / (1024.0 * 1024.0))
    } else {
        format!("{:.2}G", n / (1024.0 * 1024.0 * 1024.0))
    }
}

/// Resident set size and CPU times of this process, from /proc.
pub(super) fn process_usage() -> (u64, f64, f64) {
    let rss = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|p| p.parse::<u64>().ok()))
        .map_or(0, |pages| pages * 4096);
    let (user, sys) = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let after = s.rsplit_once(')')?.1.to_string();
            let f: Vec<&str> = after.split_whitespace().collect();
            Some((f.get(11)?.parse::<f64>().ok()? / 100.0, f.get(12)?.parse::<f64>().ok()? / 100.0))
        })
        .unwrap_or((0.0, 0.0));
    (rss, user, sys)
}

fn info_section(ctx: &mut Ctx<'_>, section: &str, out: &mut String) {
    let s = &*ctx.server;
    let uptime = s.started.elapsed().as_secs();
    match section {
        "server" => {
            let _ = write!(
                out,
                "# Server\r\nredis_version:{}\r\nredis_git_sha1:00000000\r\nredis_git_dirty:0\r\nredis_build_id:0\r\nredis_mode:standalone\r\nos:{} {}\r\narch_bits:64\r\nmonotonic_clock:POSIX clock_gettime\r\nmultiplexing_api:epoll\r\natomicvar_api:c11-builtin\r\ngcc_version:0.0.0\r\nprocess_id:{}\r\nprocess_supervised:no\r\nrun_id:{}\r\ntcp_port:{}\r\nserver_time_usec:{}\r\nuptime_in_seconds:{}\r\nuptime_in_days:{}\r\nhz:{}\r\nconfigured_hz:{}\r\nlru_clock:{}\r\nexecutable:{}\r\nconfig_file:{}\r\nio_threads_active:0\r\nvermilion_version:{}\r\n",
                crate::REDIS_VERSION,
                std::env::consts::OS,
                std::env::consts::ARCH,
                std::process::id(),
                s.run_id,
                s.config.get("port"),
                crate::clock::now_us(),
                uptime,
                uptime / 86400,
                s.config.get("hz"),
                s.config.get("hz"),
                (crate::clock::now_ms() / 1000) & ((1 << 24) - 1),
                s.executable,
                s.config.config_file.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
                crate::VERSION,
            );
        }
        "clients" => {
            let _ = write!(
                out,
                "# Clients\r\nconnected_clients:{}\r\ncluster_connections:0\r\nmaxclients:{}\r\nclient_recent_max_input_buffer:0\r\nclient_recent_max_output_buffer:0\r\nblocked_clients:{}\r\ntracking_clients:{}\r\nclients_in_timeout_table:0\r\n",
                s.clients.len() + 1,
                s.config.get("maxclients"),
                s.clients.values().filter(|c| c.blocked.is_some()).count(),
                s.tracking.clients
            );
        }
        "memory" => {
            let m = super::diagnostics::MemoryFigures::gather(ctx);
            let s = &*ctx.server;
            let maxmemory = s.config.get_int("maxmemory") as u64;
            let engine = s.scripts.as_deref();
            let lua = engine.map_or(0, |e| e.lua_memory()) as u64;
            let scripts = engine.map_or(0, |e| e.count());
            let scripts_mem = engine.map_or(0, |e| e.scripts_memory()) as u64;
            let functions = engine.map(|e| &e.functions);
            let (funcs, libs) = functions.map_or((0, 0), |f| (f.function_count(), f.library_count()));
            let vm_functions = functions.map_or(0, |f| f.lua_memory()) as u64;
            let functions_mem = functions.map_or(0, |f| f.memory()) as u64;
            let system = crate::util::total_memory().unwrap_or(0);
            let (used, rss) = (m.used, m.rss);
            // Fields in Redis 7.0's order. Without allocator accounting, the allocator's
            // figures are the memory account's (allocated, active) and the resident set.
            let _ = write!(
                out,
                "# Memory\r\nused_memory:{used}\r\nused_memory_human:{}\r\nused_memory_rss:{rss}\r\nused_memory_rss_human:{}\r\nused_memory_peak:{}\r\nused_memory_peak_human:{}\r\nused_memory_peak_perc:{:.2}%\r\nused_memory_overhead:{}\r\nused_memory_startup:{}\r\nused_memory_dataset:{}\r\nused_memory_dataset_perc:{:.2}%\r\nallocator_allocated:{used}\r\nallocator_active:{used}\r\nallocator_resident:{rss}\r\ntotal_system_memory:{system}\r\ntotal_system_memory_human:{}\r\nused_memory_lua:{lua}\r\nused_memory_vm_eval:{lua}\r\nused_memory_lua_human:{}\r\nused_memory_scripts_eval:{scripts_mem}\r\nnumber_of_cached_scripts:{scripts}\r\nnumber_of_functions:{funcs}\r\nnumber_of_libraries:{libs}\r\nused_memory_vm_functions:{vm_functions}\r\nused_memory_vm_total:{}\r\nused_memory_vm_total_human:{}\r\nused_memory_functions:{functions_mem}\r\nused_memory_scripts:{}\r\nused_memory_scripts_human:{}\r\nmaxmemory:{maxmemory}\r\nmaxmemory_human:{}\r\nmaxmemory_policy:{}\r\nallocator_frag_ratio:1.00\r\nallocator_frag_bytes:0\r\nallocator_rss_ratio:{:.2}\r\nallocator_rss_bytes:{}\r\nrss_overhead_ratio:1.00\r\nrss_overhead_bytes:0\r\nmem_fragmentation_ratio:{:.2}\r\nmem_fragmentation_bytes:{}\r\nmem_not_counted_for_evict:{}\r\nmem_replication_backlog:{}\r\nmem_total_replication_buffers:{}\r\nmem_clients_slaves:{}\r\nmem_clients_normal:{}\r\nmem_cluster_links:0\r\nmem_aof_buffer:0\r\nmem_allocator:{}\r\nactive_defrag_running:0\r\nlazyfree_pending_objects:0\r\nlazyfreed_objects:0\r\n",
                human_bytes(used),
                human_bytes(rss),
                m.peak,
                human_bytes(m.peak),
                m.peak_percentage(),
                m.startup,
                m.startup,
                m.dataset,
                m.dataset_percentage(),
                human_bytes(system),
                human_bytes(lua),
                lua + vm_functions,
                human_bytes(lua + vm_functions),
                scripts_mem + functions_mem,
                human_bytes(scripts_mem + functions_mem),
                human_bytes(maxmemory),
                s.config.get("maxmemory-policy"),
                m.fragmentation(),
                m.fragmentation_bytes(),
                m.fragmentation(),
                m.fragmentation_bytes(),
                m.clients_replicas,
                m.backlog,
                m.clients_replicas,
                m.clients_replicas,
                m.clients_normal,
                crate::util::allocator_name(),
            );
        }
        "persistence" => {
            let aof = s.aof_info.clone();
            let _ = write!(
                out,
                "# Persistence\r\nloading:0\r\nasync_loading:0\r\ncurrent_cow_peak:0\r\ncurrent_cow_size:0\r\ncurrent_cow_size_age:0\r\ncurrent_fork_perc:0.00\r\ncurrent_save_keys_processed:0\r\ncurrent_save_keys_total:0\r\nrdb_changes_since_last_save:{}\r\nrdb_bgsave_in_progress:0\r\nrdb_last_save_time:{}\r\nrdb_last_bgsave_status:ok\r\nrdb_last_bgsave_time_sec:-1\r\nrdb_current_bgsave_time_sec:-1\r\nrdb_saves:0\r\nrdb_last_cow_size:0\r\nrdb_last_load_keys_expired:0\r\nrdb_last_load_keys_loaded:0\r\naof_enabled:{}\r\naof_rewrite_in_progress:{}\r\naof_rewrite_scheduled:0\r\naof_last_rewrite_time_sec:{}\r\naof_current_rewrite_time_sec:{}\r\naof_last_bgrewrite_status:{}\r\naof_rewrites:{}\r\naof_rewrites_consecutive_failures:0\r\naof_last_write_status:{}\r\naof_last_cow_size:0\r\nmodule_fork_in_progress:0\r\nmodule_fork_last_cow_size:0\r\n",
                s.dirty,
                s.lastsave,
                aof.is_some() as u8,
                aof.as_ref().is_some_and(|a| a.rewrite_in_progress) as u8,
                aof.as_ref().map_or(-1, |a| a.last_rewrite_time_sec),
                aof.as_ref().map_or(-1, |a| a.current_rewrite_time_sec),
                if aof.as_ref().is_none_or(|a| a.last_rewrite_ok) { "ok" } else { "err" },
                aof.as_ref().map_or(0, |a| a.rewrites),
                if aof.as_ref().is_none_or(|a| a.write_ok) { "ok" } else { "err" },
            );
            if let Some(a) = aof {
                let _ = write!(
                    out,
                    "aof_current_size:{}\r\naof_base_size:{}\r\naof_pending_rewrite:0\r\naof_buffer_length:{}\r\naof_pending_bio_fsync:{}\r\naof_delayed_fsync:0\r\n",
                    a.current_size, a.base_size, a.buffer_length, a.pending_fsync as u8
                );
            }
        }
        "stats" => {
            let st = &s.stats;
            let _ = write!(
                out,
                "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\ninstantaneous_ops_per_sec:0\r\ntotal_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\ntotal_net_repl_input_bytes:0\r\ntotal_net_repl_output_bytes:0\r\ninstantaneous_input_kbps:0.00\r\ninstantaneous_output_kbps:0.00\r\ninstantaneous_input_repl_kbps:0.00\r\ninstantaneous_output_repl_kbps:0.00\r\nrejected_connections:{}\r\nsync_full:{}\r\nsync_partial_ok:{}\r\nsync_partial_err:{}\r\nexpired_keys:{}\r\nexpired_stale_perc:0.00\r\nexpired_time_cap_reached_count:0\r\nexpire_cycle_cpu_milliseconds:{}\r\nevicted_keys:{}\r\nevicted_clients:0\r\ntotal_eviction_exceeded_time:0\r\ncurrent_eviction_exceeded_time:0\r\nkeyspace_hits:{}\r\nkeyspace_misses:{}\r\npubsub_channels:{}\r\npubsub_patterns:{}\r\npubsubshard_channels:{}\r\nlatest_fork_usec:0\r\ntotal_forks:0\r\nmigrate_cached_sockets:0\r\nslave_expires_tracked_keys:0\r\nactive_defrag_hits:0\r\nactive_defrag_misses:0\r\nactive_defrag_key_hits:0\r\nactive_defrag_key_misses:0\r\ntotal_active_defrag_time:0\r\ncurrent_active_defrag_time:0\r\ntracking_total_keys:{}\r\ntracking_total_items:{}\r\ntracking_total_prefixes:{}\r\nunexpected_error_replies:0\r\ntotal_error_replies:{}\r\ndump_payload_sanitizations:0\r\ntotal_reads_processed:{}\r\ntotal_writes_processed:{}\r\nio_threaded_reads_processed:0\r\nio_threaded_writes_processed:0\r\nreply_buffer_shrinks:0\r\nreply_buffer_expands:0\r\n",
                st.total_connections_received,
                st.total_commands_processed,
                ctx.server.limits.net_input_bytes.load(std::sync::atomic::Ordering::Relaxed),
                st.net_output_bytes,
                st.rejected_connections,
                s.repl.sync_full,
                s.repl.sync_partial_ok,
                s.repl.sync_partial_err,
                ctx.ks.stats.expired_keys,
                ctx.ks.stats.expire_cycle_time_us / 1000,
                ctx.ks.stats.evicted_keys,
                ctx.ks.stats.keyspace_hits,
                ctx.ks.stats.keyspace_misses,
                s.pubsub.channels.len(),
                s.pubsub.patterns.len(),
                s.pubsub.shard_channels.len(),
                s.tracking.keys.len(),
                s.tracking.keys.values().map(|v| v.len()).sum::<usize>(),
                s.clients.values().filter_map(|c| c.tracking.as_ref()).map(|m| m.prefixes.len()).sum::<usize>(),
                st.total_error_replies,
                s.limits.reads_processed.load(std::sync::atomic::Ordering::Relaxed),
                st.writes_processed,
            );
        }
        "replication" => out.push_str(&super::replication::info_section(s)),
        "cpu" => {
            let (_, user, sys) = process_usage();
            let _ = write!(
                out,
                "# CPU\r\nused_cpu_sys:{sys:.6}\r\nused_cpu_user:{user:.6}\r\nused_cpu_sys_children:0.000000\r\nused_cpu_user_children:0.000000\r\nused_cpu_sys_main_thread:{sys:.6}\r\nused_cpu_user_main_thread:{user:.6}\r\n"
            );
        }
        "modules" => out.push_str("# Modules\r\n"),
        "cluster" => out.push_str("# Cluster\r\ncluster_enabled:0\r\n"),
        "latencystats" => {
            out.push_str("# Latencystats\r\n");
            let percentiles: Vec<(&str, f64)> =
                s.config.get("latency-tracking-info-percentiles").split(' ').filter_map(|w| w.parse().ok().map(|p| (w, p))).collect();
            for (name, h) in super::diagnostics::latency_histograms(s) {
                let _ = write!(out, "latency_percentiles_usec_{name}:");
                for (i, (label, p)) in percentiles.iter().enumerate() {
                    let sep = if i + 1 < percentiles.len() { "," } else { "" };
                    let _ = write!(out, "p{label}={:.3}{sep}", h.value_at_percentile(*p) as f64 / 1000.0);
                }
                out.push_str("\r\n");
            }
        }
        "errorstats" => {
            out.push_str("# Errorstats\r\n");
            let mut errors: Vec<(&String, &u64)> = s.stats.errors.iter().collect();
            errors.sort();
            for (code, count) in errors {
                let _ = write!(out, "errorstat_{code}:count={count}\r\n");
            }
        }
        "commandstats" => {
            out.push_str("# Commandstats\r\n");
            let mut cmds: Vec<_> = super::all_commands()
                .filter_map(|c| s.stats.commands.get(c.id).filter(|st| st.calls + st.rejected_calls > 0).map(|st| (c.name, st)))
                .collect();
            cmds.sort_by_key(|(name, _)| *name);
            for (name, st) in cmds {
                let per = if st.calls > 0 { st.usec as f64 / st.calls as f64 } else { 0.0 };
                let _ = write!(
                    out,
                    "cmdstat_{name}:calls={},usec={},usec_per_call={per:.2},rejected_calls={},failed_calls={}\r\n",
                    st.calls, st.usec, st.rejected_calls, st.failed_calls
                );
            }
        }
        "keyspace" => {
            out.push_str("# Keyspace\r\n");
            let now = ctx.now_ms;
            let mut seed = now as u64 | 1;
            let mut rng = || {
                seed = crate::util::xorshift(seed);
                seed
            };
            for (i, db) in ctx.ks.dbs.iter().enumerate() {
                if !db.is_empty() {
                    let avg = db.avg_ttl_ms(now, &mut rng);
                    let _ = write!(out, "db{i}:keys={},expires={},avg_ttl={avg}\r\n", db.len(), db.volatile_len());
                }
            }
        }
        _ => {}
    }
}

/// ```text
/// CONFIG GET parameter [parameter ...]
/// ```
pub fn config_get(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let mut pairs: Vec<(Reply, Reply)> = Vec::new();
    // Keyed by the name matched (a parameter's own or an alias: Redis lists both when both
    // are asked for), case-insensitively.
    let mut seen = std::collections::HashSet::new();
    for pattern in &args[2..] {
        // A plain name (no glob characters) is looked up directly and echoed as typed.
        if !pattern.iter().any(|c| matches!(c, b'*' | b'?' | b'[')) {
            let name = String::from_utf8_lossy(pattern);
            if let Some(param) = Config::param(&name) {
                if seen.insert(name.to_ascii_lowercase()) {
                    pairs.push((Reply::Bulk(pattern.clone()), Reply::bulk_string(ctx.server.config.get(param.name).to_string())));
                }
            }
            continue;
        }
        for (name, value) in ctx.server.config.matching(pattern) {
            if seen.insert(name.to_string()) {
                pairs.push((Reply::bulk(name.as_bytes()), Reply::bulk_string(value)));
            }
        }
    }
    Ok(Reply::Map(pairs))
}

/// ```text
/// CONFIG SET parameter value [parameter value ...]
/// ```
/// All or nothing, in Redis's two passes: the names first (unknown, immutable, protected,
/// given twice: the first problem in argument order), then every value on a copy before any
/// takes effect. A parameter and its alias are two names, as in Redis (the later one wins).
pub fn config_set(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if !args.len().is_multiple_of(2) {
        return Err(CmdError::Syntax);
    }
    let failed = |name: &str, reason: &str| {
        CmdError::Other(format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {reason}").into())
    };
    let pairs: Vec<(String, String)> = args[2..]
        .chunks(2)
        .map(|pair| (String::from_utf8_lossy(&pair[0]).into_owned(), String::from_utf8_lossy(&pair[1]).into_owned()))
        .collect();
    // Pass 1: the names. An unknown name anywhere is reported unless an earlier name failed.
    let mut problem: Option<CmdError> = None;
    let mut given: Vec<String> = Vec::new();
    let mut names: Vec<&'static str> = Vec::new();
    for (name, _) in &pairs {
        let Some(param) = Config::param(name) else {
            return Err(problem.unwrap_or_else(|| {
                CmdError::Other(format!("ERR Unknown option or number of arguments for CONFIG SET - '{name}'").into())
            }));
        };
        let lower = name.to_ascii_lowercase();
        if problem.is_none() {
            if !param.mutable {
                problem = Some(failed(name, "can't set immutable config"));
            } else if crate::config::PROTECTED.contains(&param.name) && !allowed_by(ctx, "enable-protected-configs") {
                // Where files go is for the configuration file alone, unless it says otherwise.
                problem = Some(failed(name, "can't set protected config"));
            } else if given.contains(&lower) {
                problem = Some(failed(name, "duplicate parameter"));
            }
        }
        given.push(lower);
        if !names.contains(&param.name) {
            names.push(param.name);
        }
    }
    if let Some(err) = problem {
        return Err(err);
    }
    // Pass 2: the values, on a copy.
    let mut staged: Config = ctx.server.config.clone();
    for (name, value) in &pairs {
        let checked = match staged.set(name, value, false) {
            Ok(()) => apply_check(Config::param(name).map_or("", |p| p.name), value),
            Err(SetError::Unknown) => Err("Unknown option".into()),
            Err(SetError::Invalid(reason)) => Err(reason),
        };
        if let Err(reason) = checked {
            return Err(failed(name, &reason));
        }
    }
    ctx.server.config = staged;
    for name in names {
        apply(ctx, name);
    }
    ctx.server.config_changed();
    ctx.ks.lfu.log_factor = ctx.server.config.get_int("lfu-log-factor").max(0) as u64;
    ctx.ks.lfu.decay_time = ctx.server.config.get_int("lfu-decay-time").max(0) as u64;
    Ok(Reply::OK)
}

/// Side-effect checks that can fail before anything is applied.
fn apply_check(name: &str, value: &str) -> Result<(), String> {
    if name == "dir" && !std::path::Path::new(value).is_dir() {
        return Err("No such file or directory".into());
    }
    Ok(())
}

/// DEBUG PROTOCOL: one test value of each RESP3 type, as Redis's debug.c sends them.
fn debug_protocol(ctx: &mut Ctx<'_>, name: &[u8]) -> Result<Reply, CmdError> {
    let resp3 = ctx.client.proto == ProtocolVersion::Resp3;
    let name = String::from_utf8_lossy(name).to_ascii_lowercase();
    let ints = || (0..3).map(Reply::Int).collect::<Vec<_>>();
    Ok(match name.as_str() {
        "string" => Reply::bulk(b"Hello World"),
        "integer" => Reply::Int(12345),
        // Redis's test value, not π.
        #[allow(clippy::approx_constant)]
        "double" => Reply::Double(3.141),
        "bignum" => Reply::BigNumber("1234567999999999999999999999999999999".into()),
        "null" => Reply::Nil,
        "array" => Reply::Array(ints()),
        "set" => Reply::Set(ints()),
        "map" => Reply::Map((0..3).map(|j| (Reply::Int(j), Reply::Bool(j == 1))).collect()),
        "attrib" => Reply::Sequence(vec![
            Reply::Attribute(vec![(
                Reply::bulk(b"key-popularity"),
                Reply::Array(vec![Reply::bulk(b"key:123"), Reply::Int(90)]),
            )]),
            Reply::bulk(b"Some real reply following the attribute"),
        ]),
        "push" if !resp3 => return Err(CmdError::other("ERR RESP2 is not supported by this command")),
        "push" => Reply::Sequence(vec![
            Reply::Push(vec![Reply::bulk(b"server-cpu-usage"), Reply::Int(42)]),
            Reply::bulk(b"Some real reply following the push reply"),
        ]),
        "true" => Reply::Bool(true),
        "false" => Reply::Bool(false),
        "verbatim" => Reply::Verbatim(*b"txt", Bytes::from_static(b"This is a verbatim\nstring")),
        _ => {
            return Err(CmdError::other(
                "ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false",
            ))
        }
    })
}

/// Effects of a changed parameter beyond its stored value.
fn apply(ctx: &mut Ctx<'_>, name: &str) {
    let config = &ctx.server.config;
    match name {
        "loglevel" | "logfile" => crate::log::configure(crate::log::Level::parse(config.get("loglevel")), config.get("logfile")),
        "dir" => {
            let _ = std::env::set_current_dir(config.get("dir"));
        }
        "protected-mode" => ctx.acl_changed(),
        "requirepass" => {
            // The default user's password; like Redis, nobody is logged out.
            let pass = config.get("requirepass").to_string();
            ctx.server.acl.set_requirepass(&pass);
            ctx.acl_changed();
        }
        "appendonly" | "appendfsync" => ctx.server.persist_request = Some(crate::state::PersistRequest::Reconfigure),
        _ => {}
    }
}

/// ```text
/// CONFIG REWRITE
/// ```
pub fn config_rewrite(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    let Some(path) = ctx.server.config.config_file.clone() else {
        return Err(CmdError::other("ERR The server is running without a config file"));
    };
    let old = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(CmdError::Other(format!("ERR Rewriting config file: {}", crate::util::strerror(&e)).into())),
    };
    // Users go in the config file unless an ACL file holds them (as in Redis).
    let users: Vec<String> = if ctx.server.config.get("aclfile").is_empty() {
        ctx.server.acl.users.values().map(|u| format!("user {} {}", u.name, u.describe())).collect()
    } else {
        Vec::new()
    };
    let text = crate::config::rewrite::rewrite(&old, &ctx.server.config, &users);
    // Written aside and renamed: a crash never leaves half a config file.
    let tmp = path.with_extension(format!("rewrite-{}", std::process::id()));
    let written = std::fs::write(&tmp, text).and_then(|_| std::fs::rename(&tmp, &path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        crate::log::warning(&format!("CONFIG REWRITE failed: {e}"));
        return Err(CmdError::Other(format!("ERR Rewriting config file: {}", crate::util::strerror(&e)).into()));
    }
    crate::log::notice("CONFIG REWRITE executed with success.");
    Ok(Reply::OK)
}

pub fn config_resetstat(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    ctx.server.stats = Default::default();
    ctx.ks.stats = Default::default();
    ctx.server.limits.net_input_bytes.store(0, std::sync::atomic::Ordering::Relaxed);
    ctx.server.limits.reads_processed.store(0, std::sync::atomic::Ordering::Relaxed);
    Ok(Reply::OK)
}

pub fn config_help(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(help_reply(help::CONFIG))
}

/// ```text
/// TIME
/// ```
pub fn time(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    let us = crate::clock::now_us();
    Ok(Reply::Array(vec![Reply::bulk_string((us / 1_000_000).to_string()), Reply::bulk_string((us % 1_000_000).to_string())]))
}

/// ```text
/// BGREWRITEAOF
/// ```
/// The executor does the rewrite once the handler returns.
pub fn bgrewriteaof(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    ctx.server.persist_request = Some(crate::state::PersistRequest::Rewrite);
    Ok(Reply::NoReply)
}

/// ```text
/// SAVE
/// ```
pub fn save(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    ctx.server.persist_request = Some(crate::state::PersistRequest::Save);
    Ok(Reply::NoReply)
}

/// ```text
/// BGSAVE [SCHEDULE]
/// ```
pub fn bgsave(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let schedule = match args.get(1) {
        None => false,
        Some(a) if eq_ignore_case(a, "schedule") => true,
        Some(_) => return Err(CmdError::Syntax),
    };
    ctx.server.persist_request = Some(crate::state::PersistRequest::BgSave { schedule });
    Ok(Reply::NoReply)
}

/// ```text
/// LASTSAVE
/// ```
pub fn lastsave(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(Reply::Int(ctx.server.lastsave))
}

/// ```text
/// SLOWLOG GET [count]
/// ```
pub fn slowlog_get(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if args.len() > 3 {
        return Err(crate::commands::subcommand_syntax_error(args));
    }
    let count = match args.get(2) {
        None => 10,
        Some(a) => match crate::util::parse_i64(a) {
            Some(n) if n >= -1 => n,
            _ => return Err(CmdError::other("ERR count should be greater than or equal to -1")),
        },
    };
    let take = if count == -1 { usize::MAX } else { count as usize };
    let entries = ctx
        .server
        .slowlog
        .iter()
        .take(take)
        .map(|e| {
            Reply::Array(vec![
                Reply::Int(e.id as i64),
                Reply::Int(e.time),
                Reply::Int(e.duration_us as i64),
                Reply::Array(e.args.iter().cloned().map(Reply::Bulk).collect()),
                Reply::bulk_string(e.addr.clone()),
                Reply::Bulk(e.name.clone()),
            ])
        })
        .collect();
    Ok(Reply::Array(entries))
}

pub fn slowlog_len(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(Reply::Int(ctx.server.slowlog.len() as i64))
}

pub fn slowlog_reset(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    ctx.server.slowlog.clear();
    Ok(Reply::OK)
}

pub fn slowlog_help(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(help_reply(help::SLOWLOG))
}

/// ```text
/// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]
/// ```
/// On success nothing is replied: the connection closes as the server exits.
pub fn shutdown(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let (mut save, mut nosave, mut abort) = (false, false, false);
    for a in &args[1..] {
        if eq_ignore_case(a, "nosave") {
            nosave = true;
        } else if eq_ignore_case(a, "save") {
            save = true;
        } else if eq_ignore_case(a, "now") || eq_ignore_case(a, "force") {
        } else if eq_ignore_case(a, "abort") {
            abort = true;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    if (save && nosave) || (abort && args.len() > 2) {
        return Err(CmdError::Syntax);
    }
    if abort {
        return Err(CmdError::other("ERR No shutdown in progress."));
    }
    ctx.server.shutdown = Some(ShutdownRequest { save: !nosave });
    ctx.client.close_after_reply = true;
    Ok(Reply::NoReply)
}

/// What an `enable-*-command`/`enable-protected-configs` setting allows this client:
/// `local` means loopback clients only.
pub(super) fn allowed_by(ctx: &Ctx<'_>, setting: &str) -> bool {
    match ctx.server.config.get(setting) {
        "yes" => true,
        "local" => ctx.client.addr.starts_with("127.") || ctx.client.addr.starts_with("[::1]"),
        _ => false,
    }
}

/// ```text
/// DEBUG SLEEP seconds | SET-ACTIVE-EXPIRE 0|1 | OBJECT key | HELP
/// ```
/// Allowed per `enable-debug-command` (`local`, our default, means loopback clients only).
pub fn debug(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if !allowed_by(ctx, "enable-debug-command") {
        return Err(CmdError::other("ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."));
    }
    let sub = String::from_utf8_lossy(&args[1]).to_lowercase();
    match (sub.as_str(), args.len()) {
        ("sleep", 3) => {
            let secs = crate::util::parse_f64(&args[2]).unwrap_or(0.0);
            if secs > 0.0 && secs.is_finite() {
                // Blocks the executor on purpose: that is what DEBUG SLEEP is for.
                std::thread::sleep(std::time::Duration::from_secs_f64(secs.min(3600.0)));
            }
            Ok(Reply::OK)
        }
        ("set-active-expire", 3) => {
            ctx.server.active_expire_enabled = crate::util::parse_i64(&args[2]).unwrap_or(1) != 0;
            Ok(Reply::OK)
        }
        ("digest", 2) => Ok(Reply::Status(crate::db::digest::dataset_digest(ctx.ks).into())),
        ("digest-value", _) => {
            let db = ctx.db();
            Ok(Reply::Array(
                args[2..].iter().map(|k| Reply::Status(crate::db::digest::value_digest(ctx.ks.db(db).peek(k)).into())).collect(),
            ))
        }
        ("reload", _) => {
            ctx.server.persist_request = Some(crate::state::PersistRequest::Reload);
            Ok(Reply::NoReply)
        }
        ("loadaof", 2) => {
            ctx.server.persist_request = Some(crate::state::PersistRequest::LoadAof);
            Ok(Reply::NoReply)
        }
        ("object", 3) => {
            let db = ctx.db();
            let Some(entry) = ctx.ks.db(db).peek(&args[2]) else {
                return Err(CmdError::NoSuchKey);
            };
            Ok(Reply::Status(
                format!(
                    "Value at:0x0 refcount:1 encoding:{} serializedlength:{} lru:0 lru_seconds_idle:0",
                    entry.value.encoding(),
                    entry.value.mem_usage()
                )
                .into(),
            ))
        }
        ("protocol", 3) => debug_protocol(ctx, &args[2]),
        ("populate", 3..=5) => debug_populate(ctx, args),
        ("change-repl-id", 2) => {
            // A new history: nobody can continue the old one from here.
            let repl = &mut ctx.server.repl;
            repl.replid = crate::replication::new_replid();
            repl.replid2 = crate::replication::NO_REPLID.to_string();
            repl.second_offset = None;
            Ok(Reply::OK)
        }
        // Vermilion's lists are not quicklists of listpacks: there is nothing to tune or show.
        ("quicklist-packed-threshold", 3) => {
            Err(CmdError::other("ERR DEBUG QUICKLIST-PACKED-THRESHOLD is not supported: lists are not quicklists here"))
        }
        ("listpack", 3) => Err(CmdError::other("ERR DEBUG LISTPACK is not supported: values are not listpacks here")),
        ("help", _) => Ok(help_reply(&[
            "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CHANGE-REPL-ID",
            "    Change the replication IDs of the instance.",
            "    Dangerous: should be used only for testing the replication subsystem.",
            "DIGEST",
            "    Output a hex signature representing the current DB content.",
            "DIGEST-VALUE <key> [<key> ...]",
            "    Output a hex signature of the values of all the specified keys.",
            "LOADAOF",
            "    Flush the AOF buffers on disk and reload the AOF in memory.",
            "OBJECT <key>",
            "    Show low level info about the key and associated value.",
            "POPULATE <count> [<prefix>] [<size>]",
            "    Create <count> string keys named key:<num>. If <prefix> is specified then",
            "    it is used instead of the 'key' prefix. These are logged (as MSETs), so",
            "    they survive a restart and reach replicas.",
            "PROTOCOL <type>",
            "    Reply with a test value of the specified type. <type> can be: string,",
            "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
            "    true, false.",
            "RELOAD [option value] ...",
            "    Save the RDB on disk and reload it back to memory.",
            "SET-ACTIVE-EXPIRE <0|1>",
            "    Setting it to 0 disables expiring keys in background when they are not",
            "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
            "    default.",
            "SLEEP <seconds>",
            "    Stop the server for <seconds>. Decimals allowed.",
            "HELP",
            "    Prints this help.",
        ])),
        _ => Err(crate::commands::subcommand_syntax_error(args)),
    }
}

/// The value DEBUG POPULATE gives key number `j`: `value:<j>`, or with a size, that text
/// cut or padded with zero bytes to `size`.
pub fn populate_value(j: u64, size: usize) -> Vec<u8> {
    let mut v = format!("value:{j}").into_bytes();
    if size > 0 {
        v.resize(size, 0);
    }
    v
}

/// The key DEBUG POPULATE `args` names number `j`. Redis formats it with `snprintf("%s:%lu")` into 128 bytes: the prefix ends at a zero
/// byte and the key at 127 bytes.
pub fn populate_key(args: &[Bytes], j: u64) -> Vec<u8> {
    let prefix: &[u8] = args.get(3).map_or(b"key", |p| &p[..]);
    let prefix = prefix.split(|&c| c == 0).next().unwrap_or_default();
    let mut key = prefix.to_vec();
    key.extend_from_slice(format!(":{j}").as_bytes());
    key.truncate(127);
    key
}

fn populate_arg(arg: &[u8]) -> Result<u64, CmdError> {
    match crate::util::parse_i64(arg) {
        Some(n) if n >= 0 => Ok(n as u64),
        _ => Err(CmdError::other("ERR value is out of range, must be positive")),
    }
}

/// ```text
/// DEBUG POPULATE count [prefix] [size]
/// ```
/// Creates string keys `prefix:0..count` (existing ones are left alone), as Redis's test
/// suite and users filling a test instance expect. Unlike Redis, what it creates is logged
/// (as MSETs, see `executor/persist.rs`), so it survives a restart and reaches replicas.
fn debug_populate(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let count = populate_arg(&args[2])?;
    let size = match args.get(4) {
        Some(a) => populate_arg(a)?,
        None => 0,
    };
    // A value is a string: no longer than one may be (Redis would try to allocate it).
    if size as i128 > ctx.server.config.get_int("proto-max-bulk-len") as i128 {
        return Err(CmdError::StringTooLong);
    }
    // Redis sizes the key table first and answers this when it cannot: keys that could
    // never fit in this machine's memory (32 bytes each at least, plus their values) fail
    // the same way instead of filling memory until the process is killed.
    if count.saturating_mul(32 + size) > crate::util::total_memory().unwrap_or(u64::MAX) {
        return Err(CmdError::other("ERR OOM in dictTryExpand"));
    }
    let size = size as usize;
    let (db, now) = (ctx.db(), ctx.now_ms);
    let watched = !ctx.server.watchers.is_empty() || ctx.server.tracking.clients > 0;
    let mut created = 0;
    for j in 0..count {
        let key = populate_key(args, j);
        if ctx.ks.exists(db, &key, now) {
            continue;
        }
        let value = crate::db::Value::Str(crate::db::StrValue { data: populate_value(j, size), enc: crate::db::StrEncoding::Auto });
        ctx.ks.db_mut(db).upsert(&key, value, None, crate::db::lru_clock(now), ctx.server.lfu_policy);
        ctx.notify(crate::notify::NEW, "new", &key);
        if watched {
            ctx.server.also_modified.push((db, Bytes::from(key)));
        }
        created += 1;
    }
    ctx.dirty(created);
    Ok(Reply::OK)
}

/// ```text
/// MONITOR
/// ```
pub fn monitor(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    // Inside EXEC (or a script), where one reply per command is expected.
    if ctx.client.deny_blocking {
        return Err(CmdError::other("ERR MONITOR isn't allowed for DENY BLOCKING client"));
    }
    if !ctx.client.monitor {
        ctx.client.monitor = true;
        ctx.server.monitors.push(ctx.client.id);
    }
    Ok(Reply::OK)
}

/// One MONITOR line, as Redis prints it: `+<sec>.<usec> [<db> <addr>] "arg" ...`, each
/// argument quoted with `sdscatrepr`'s escapes.
pub fn monitor_line(now_us: i64, db: usize, addr: &str, args: &[Bytes]) -> Reply {
    let mut line = format!("{}.{:06} [{} {}]", now_us / 1_000_000, now_us % 1_000_000, db, addr);
    for a in args {
        line.push(' ');
        line.push_str(&crate::util::sds_repr(a));
    }
    Reply::Status(line.into())
}
