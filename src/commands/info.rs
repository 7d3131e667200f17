//! INFO: every section Redis 7.0 prints, from the server's state.

use std::fmt::Write as _;

use bytes::Bytes;

use super::{CmdError, Ctx};
use crate::config::P;
use crate::protocol::Reply;

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
                s.config.get(P::Port),
                crate::clock::now_us(),
                uptime,
                uptime / 86400,
                s.config.get(P::Hz),
                s.config.get(P::Hz),
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
                s.config.get(P::Maxclients),
                s.clients.values().filter(|c| c.blocked.is_some()).count(),
                s.tracking.clients
            );
        }
        "memory" => {
            let m = super::diagnostics::MemoryFigures::gather(ctx);
            let s = &*ctx.server;
            let maxmemory = s.config.get_int(P::Maxmemory) as u64;
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
                s.config.get(P::MaxmemoryPolicy),
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
                "# Persistence\r\nloading:0\r\nasync_loading:0\r\ncurrent_cow_peak:0\r\ncurrent_cow_size:0\r\ncurrent_cow_size_age:0\r\ncurrent_fork_perc:0.00\r\ncurrent_save_keys_processed:0\r\ncurrent_save_keys_total:0\r\nrdb_changes_since_last_save:{}\r\nrdb_bgsave_in_progress:{}\r\nrdb_last_save_time:{}\r\nrdb_last_bgsave_status:{}\r\nrdb_last_bgsave_time_sec:{}\r\nrdb_current_bgsave_time_sec:{}\r\nrdb_saves:{}\r\nrdb_last_cow_size:0\r\nrdb_last_load_keys_expired:{}\r\nrdb_last_load_keys_loaded:{}\r\naof_enabled:{}\r\naof_rewrite_in_progress:{}\r\naof_rewrite_scheduled:0\r\naof_last_rewrite_time_sec:{}\r\naof_current_rewrite_time_sec:{}\r\naof_last_bgrewrite_status:{}\r\naof_rewrites:{}\r\naof_rewrites_consecutive_failures:0\r\naof_last_write_status:{}\r\naof_last_cow_size:0\r\nmodule_fork_in_progress:0\r\nmodule_fork_last_cow_size:0\r\n",
                s.dirty,
                s.rdb.bgsave_since.is_some() as u8,
                s.lastsave,
                if s.rdb.last_bgsave_failed { "err" } else { "ok" },
                s.rdb.last_bgsave_secs.unwrap_or(-1),
                s.rdb.bgsave_since.map_or(-1, |since| crate::clock::now_ms() / 1000 - since),
                s.rdb.saves,
                s.rdb.last_load_keys_expired,
                s.rdb.last_load_keys_loaded,
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
        "cluster" => out.push_str(if ctx.server.cluster.is_some() {
            "# Cluster\r\ncluster_enabled:1\r\n"
        } else {
            "# Cluster\r\ncluster_enabled:0\r\n"
        }),
        "latencystats" => {
            out.push_str("# Latencystats\r\n");
            let percentiles: Vec<(&str, f64)> =
                s.config.get(P::LatencyTrackingInfoPercentiles).split(' ').filter_map(|w| w.parse().ok().map(|p| (w, p))).collect();
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
