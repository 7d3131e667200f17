//! `vermilion-server [CONFIG_FILE] [--name value ...]`: the same invocation as redis-server.

use vermilion::config::Config;
use vermilion::config::P;
use vermilion::executor::{Executor, Request};
use vermilion::log;
use vermilion::server::Listener;

/// mimalloc, as Redis links jemalloc: the executor allocates and frees small buffers for
/// every command (arguments, values, a script's `redis.call` arguments), where glibc's
/// allocator showed as 15% of a script's time, and its small size classes carry no
/// per-allocation header, which matters for memory per key.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

extern "C" {
    /// mimalloc's own collection (in the library libmimalloc-sys links).
    fn mi_collect(force: bool);
    fn signal(signum: i32, handler: usize) -> usize;
    fn prctl(option: i32, arg2: u64, arg3: u64, arg4: u64, arg5: u64) -> i32;
}

/// `disable-thp yes` (the default), as Redis's `THPDisable`: no transparent huge pages for
/// this process. Redis does it when the kernel's mode is `always`; here in `madvise` mode
/// too, because mimalloc asks for huge pages on its arenas, and a 2 MB page faulted in for a
/// few live blocks inflates the resident set (1M list elements: 18.6 -> 16.6 B each).
fn disable_thp(config: &Config) {
    const PR_SET_THP_DISABLE: i32 = 41;
    if config.get(P::DisableThp) != "yes" {
        return;
    }
    // SAFETY: prctl with an integer option and integer arguments; it only sets a flag of
    // this process, and failure (an old kernel) leaves huge pages as they were.
    if unsafe { prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) } != 0 {
        log::verbose("Could not disable transparent huge pages for this process (prctl)");
    }
}

/// A file grown past RLIMIT_FSIZE must fail the write (EFBIG, handled as a write error by the
/// log) rather than kill the process, which is SIGXFSZ's default.
fn ignore_sigxfsz() {
    const SIGXFSZ: i32 = 25;
    const SIG_IGN: usize = 1;
    // SAFETY: installing SIG_IGN for one signal, before any other thread exists.
    unsafe { signal(SIGXFSZ, SIG_IGN) };
}

fn main() {
    ignore_sigxfsz();
    vermilion::util::set_allocator_name("mimalloc");
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-v" || a == "--version") {
        println!("Vermilion server v={} (Redis {} compatible)", vermilion::VERSION, vermilion::REDIS_VERSION);
        return;
    }
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("Usage: vermilion-server [/path/to/redis.conf] [options]\nExamples:\n  vermilion-server (run the server with default config)\n  vermilion-server /etc/redis/6379.conf\n  vermilion-server --port 7777\n  vermilion-server /etc/myredis.conf --loglevel verbose");
        return;
    }
    let config = match Config::from_args(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    // Into `dir` first, as Redis does while reading its config: a relative `logfile` (and
    // every data file) is then relative to it.
    let dir = config.get(P::Dir).to_string();
    if !dir.is_empty() {
        if let Err(e) = std::fs::create_dir_all(&dir).and_then(|_| std::env::set_current_dir(&dir)) {
            log::warning(&format!("Can't chdir to '{dir}': {e}"));
            std::process::exit(1);
        }
    }
    log::configure(log::Level::parse(config.get(P::Loglevel)), config.get(P::Logfile));
    disable_thp(&config);
    log::warning("oO0OoO0OoO0Oo Vermilion is starting oO0OoO0OoO0Oo");
    log::warning(&format!(
        "Vermilion version={}, redis_version={}, bits=64, pid={}, just started",
        vermilion::VERSION,
        vermilion::REDIS_VERSION,
        std::process::id()
    ));
    match &config.config_file {
        Some(path) => log::warning(&format!("Configuration loaded from {}", path.display())),
        None => log::warning("Warning: no config file specified, using the default config. In order to specify a config file use vermilion-server /path/to/redis.conf"),
    }
    let port = config.get_int(P::Port);
    let binds: Vec<String> = config.get(P::Bind).split_whitespace().map(str::to_string).collect();
    let io_threads = config.get_int(P::IoThreads).clamp(1, 64) as usize;

    // io-threads 1 (the default): the connections live on a current-thread runtime that the
    // executor thread drives while it waits for requests, so a request never crosses threads
    // (on a 2-core machine the hand-off cost a quarter of the throughput). More threads: a
    // runtime of their own.
    let built = if io_threads == 1 {
        tokio::runtime::Builder::new_current_thread().enable_all().build()
    } else {
        tokio::runtime::Builder::new_multi_thread().worker_threads(io_threads).enable_all().build()
    };
    let runtime = match built {
        Ok(rt) => rt,
        Err(e) => {
            log::warning(&format!("Failed to start the network runtime: {e}"));
            std::process::exit(1);
        }
    };
    // Signal handlers go in before the port opens: a SIGTERM that follows the first accepted
    // connection must find them (tokio keeps it until the loop below reads it).
    let signals = runtime.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
    });
    let tls_port = config.get_int(P::TlsPort);
    let tls = if tls_port > 0 {
        match vermilion::tls::acceptor(&config) {
            Ok(a) => Some(a),
            Err(e) => {
                log::warning(&format!("Failed to configure TLS: {e}"));
                std::process::exit(1);
            }
        }
    } else {
        None
    };
    let listeners = (|| {
        let mut out = Vec::new();
        if port > 0 {
            out.extend(vermilion::server::bind_all(&binds, port as u16, &[])?.into_iter().map(|socket| Listener { socket, tls: None }));
        }
        if let Some(acceptor) = &tls {
            let bound = vermilion::server::bind_all(&binds, tls_port as u16, &[])?;
            out.extend(bound.into_iter().map(|socket| Listener { socket, tls: Some(acceptor.clone()) }));
        }
        if out.is_empty() {
            return Err("Configured to not listen anywhere, exiting.".to_string());
        }
        Ok(out)
    })();
    vermilion::server::set_plain_port(port as u16);
    let listeners = match listeners {
        Ok(l) => l,
        Err(e) => {
            log::warning(&e);
            std::process::exit(1);
        }
    };
    let network = runtime.handle().clone();
    vermilion::replication::set_runtime(network.clone());
    let (driven, own) = if io_threads == 1 { (Some(runtime), None) } else { (None, Some(runtime)) };
    // SAFETY: mi_collect takes no pointers; it only walks the calling thread's heap.
    vermilion::util::set_memory_release(|force| unsafe { mi_collect(force) });
    let (handle, join) = match Executor::spawn(config, driven) {
        Ok(x) => x,
        Err(e) => {
            log::warning(&format!("Failed to start the executor: {e}"));
            std::process::exit(1);
        }
    };
    log::set_role(b'M');
    log::notice(&format!("Running mode=standalone, port={port}."));
    log::warning("Server initialized");
    // "Ready to accept connections" comes from the executor once the log is loaded.

    let tx = handle.tx.clone();
    network.spawn(async move {
        let (Ok(mut term), Ok(mut int)) = signals else {
            return;
        };
        loop {
            let name = tokio::select! {
                _ = term.recv() => "SIGTERM",
                _ = int.recv() => "SIGINT",
            };
            let _ = tx.send(Request::Signal { name });
        }
    });
    network.spawn(vermilion::server::serve(listeners, handle));
    // The executor decides when the process ends (SHUTDOWN or a signal); an executor that
    // panicked (its message is on stderr) ends the process with a failure.
    let panicked = join.join().is_err();
    if let Some(runtime) = own {
        runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    }
    std::process::exit(if panicked { 1 } else { 0 });
}
