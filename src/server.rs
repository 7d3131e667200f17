//! The network edge: tokio listeners and one task per connection.
//!
//! A connection task reads bytes, decodes every complete command in its buffer and sends them
//! to the executor as one batch. The executor writes the replies to the socket itself; the
//! task writes only what would have blocked. With 16 batches in flight it stops reading,
//! which bounds what a client that pipelines without reading can make the server hold.
//! Under `io-threads 1` these tasks run on the executor thread, while it waits for requests.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc::unbounded_channel;
use tokio_rustls::TlsAcceptor;

use crate::conn::read::{self, Decoded};
use crate::conn::{ExecutorHandle, Request, MAX_INFLIGHT};
use crate::log;
use crate::protocol::RequestDecoder;
use crate::state::{ClientOutput, ConnFlags};

/// A listening socket, plain or TLS (`tls-port`), bound (non-blocking) before the runtime
/// takes it.
pub struct Listener {
    pub socket: std::net::TcpListener,
    pub tls: Option<TlsAcceptor>,
}

/// The plain listeners' accept tasks, by address: CONFIG SET port/bind replaces them while
/// the server runs (`replace_plain_listeners`).
struct Accepting {
    tasks: Vec<(SocketAddr, tokio::task::JoinHandle<()>)>,
    exec: ExecutorHandle,
    next_id: Arc<AtomicU64>,
    runtime: tokio::runtime::Handle,
}

static PLAIN: std::sync::Mutex<Option<Accepting>> = std::sync::Mutex::new(None);

/// Starts accepting connections on every listener (until the process ends, or until CONFIG
/// SET replaces a plain one).
pub async fn serve(listeners: Vec<Listener>, exec: ExecutorHandle) {
    let next_id = Arc::new(AtomicU64::new(1));
    let runtime = tokio::runtime::Handle::current();
    let mut plain = Vec::new();
    for listener in listeners {
        let addr = listener.socket.local_addr();
        let task = accept_loop(&runtime, listener, exec.clone(), next_id.clone());
        if let Ok(addr) = addr {
            plain.push((addr, task));
        }
    }
    // TLS listeners are not replaced: only the plain ones are kept by address.
    plain.retain(|(addr, _)| is_plain_port(addr));
    if let Ok(mut guard) = PLAIN.lock() {
        *guard = Some(Accepting { tasks: plain, exec, next_id, runtime });
    }
}

/// Plain listeners are recorded by the port they were bound to at start (`PLAIN_PORT`).
static PLAIN_PORT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

fn is_plain_port(addr: &SocketAddr) -> bool {
    addr.port() as u32 == PLAIN_PORT.load(Ordering::Relaxed)
}

/// Records the port the plain listeners are on (the TLS ones are kept apart by it).
pub fn set_plain_port(port: u16) {
    PLAIN_PORT.store(port as u32, Ordering::Relaxed);
}

fn accept_loop(
    runtime: &tokio::runtime::Handle,
    listener: Listener,
    exec: ExecutorHandle,
    next_id: Arc<AtomicU64>,
) -> tokio::task::JoinHandle<()> {
    runtime.spawn(async move {
        let socket = match TcpListener::from_std(listener.socket) {
            Ok(s) => s,
            Err(e) => {
                log::warning(&format!("Can't accept on a listening socket: {e}"));
                return;
            }
        };
        loop {
            match socket.accept().await {
                Ok((sock, peer)) => {
                    let id = next_id.fetch_add(1, Ordering::Relaxed);
                    tokio::spawn(connection(sock, peer, id, exec.clone(), listener.tls.clone()));
                }
                Err(e) => {
                    log::warning(&format!("Accepting client connection: {e}"));
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
            }
        }
    })
}

/// The addresses `bind` names on `port`, each with whether it may be unavailable (a
/// leading `-`).
fn addresses(binds: &[String], port: u16) -> Result<Vec<(SocketAddr, bool)>, String> {
    binds
        .iter()
        .map(|b| {
            let (optional, host) = match b.strip_prefix('-') {
                Some(h) => (true, h),
                None => (false, b.as_str()),
            };
            let host = match host {
                "*" => "0.0.0.0",
                "::*" => "::",
                h => h,
            };
            match format!("{host}:{port}").parse().or_else(|_| format!("[{host}]:{port}").parse()) {
                Ok(a) => Ok((a, optional)),
                Err(_) => Err(format!("Invalid bind address '{host}'")),
            }
        })
        .collect()
}

/// Binds every address of `bind` on `port`, non-blocking, except those in `keep` (already
/// listening there).
pub fn bind_all(binds: &[String], port: u16, keep: &[SocketAddr]) -> Result<Vec<std::net::TcpListener>, String> {
    let mut out = Vec::new();
    let mut any = false;
    for (addr, optional) in addresses(binds, port)? {
        if keep.contains(&addr) {
            any = true;
            continue;
        }
        match std::net::TcpListener::bind(addr).and_then(|l| l.set_nonblocking(true).map(|_| l)) {
            Ok(l) => {
                any = true;
                out.push(l);
            }
            Err(e) if optional => log::verbose(&format!("Skipping optional bind {addr}: {e}")),
            Err(e) => return Err(format!("Warning: Could not create server TCP listening socket {addr}: {e}")),
        }
    }
    if !any {
        return Err("Failed listening on port (tcp), aborting.".into());
    }
    Ok(out)
}

/// CONFIG SET port/bind: listens on `binds` at `port` (0: nowhere), keeping the listeners
/// already on an address asked for and closing the others (their connections go on).
/// Nothing changes on failure.
pub fn replace_plain_listeners(binds: &[String], port: u16) -> Result<(), String> {
    let mut guard = PLAIN.lock().map_err(|_| "the listeners' registry is unavailable".to_string())?;
    let Some(acc) = guard.as_mut() else { return Err("not listening".into()) };
    let current: Vec<SocketAddr> = acc.tasks.iter().map(|(a, _)| *a).collect();
    let (requested, new) = if port == 0 {
        (Vec::new(), Vec::new())
    } else {
        let requested: Vec<SocketAddr> = addresses(binds, port)?.into_iter().map(|(a, _)| a).collect();
        (requested, bind_all(binds, port, &current)?)
    };
    let mut kept = Vec::new();
    for (addr, task) in acc.tasks.drain(..) {
        if requested.contains(&addr) {
            kept.push((addr, task));
        } else {
            task.abort();
        }
    }
    for socket in new {
        if let Ok(addr) = socket.local_addr() {
            kept.push((addr, accept_loop(&acc.runtime, Listener { socket, tls: None }, acc.exec.clone(), acc.next_id.clone())));
        }
    }
    acc.tasks = kept;
    set_plain_port(port);
    Ok(())
}

/// A TLS handshake that takes longer than this is dropped (it holds a connection slot).
const TLS_HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

async fn connection(sock: TcpStream, peer: SocketAddr, id: u64, exec: ExecutorHandle, tls: Option<TlsAcceptor>) {
    let _ = sock.set_nodelay(true);
    let laddr = sock.local_addr().map(|a| a.to_string()).unwrap_or_default();
    let Some(acceptor) = tls else {
        // The executor writes replies itself through a duplicate of the socket (non-blocking,
        // like the original); the task writes only what would have blocked.
        let dup = {
            use std::os::fd::AsFd;
            sock.as_fd().try_clone_to_owned().ok().map(std::net::TcpStream::from)
        };
        let (reader, writer) = sock.into_split();
        // A connection accepted while the dataset loads is read by its task for good: the
        // executor, busy loading, would see it only afterwards, and it must answer LOADING.
        let reading = if exec.inline_reads && !exec.limits.loading.load(Ordering::Acquire) {
            Reading::Executor(reader)
        } else {
            Reading::Task(reader)
        };
        return client(reading, writer, dup, peer, laddr, id, exec).await;
    };
    match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(sock)).await {
        Ok(Ok(stream)) => {
            // Encrypted bytes: every reply goes through the task.
            let (reader, writer) = tokio::io::split(stream);
            client(Reading::Task(reader), writer, None, peer, laddr, id, exec).await;
        }
        Ok(Err(e)) => log::verbose(&format!("Error accepting a client connection: {e} (addr={peer} laddr={laddr})")),
        Err(_) => log::verbose(&format!("TLS handshake timed out (addr={peer})")),
    }
}

/// Who reads a connection: its task, or the executor thread (`ExecutorHandle::inline_reads`).
enum Reading<R> {
    Task(R),
    Executor(tokio::net::tcp::OwnedReadHalf),
}

/// One client connection, whatever carries it: the limits checked on accept, then the
/// request/reply loop.
async fn client<R, W>(
    reading: Reading<R>,
    mut writer: W,
    dup: Option<std::net::TcpStream>,
    peer: SocketAddr,
    laddr: String,
    id: u64,
    exec: ExecutorHandle,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let limits = exec.limits.clone();
    let connected = limits.connected.fetch_add(1, Ordering::Relaxed) + 1;
    if connected > limits.maxclients.load(Ordering::Relaxed) {
        let _ = writer.write_all(b"-ERR max number of clients reached\r\n").await;
        let _ = writer.flush().await;
        limits.connected.fetch_sub(1, Ordering::Relaxed);
        return;
    }
    // Protected mode: with no password for the default user, only loopback clients.
    if limits.protected.load(Ordering::Relaxed) && !peer.ip().is_loopback() && !is_mapped_loopback(&peer) {
        let _ = writer.write_all(PROTECTED_MODE_DENIED).await;
        let _ = writer.flush().await;
        limits.connected.fetch_sub(1, Ordering::Relaxed);
        return;
    }
    let (tx, mut rx) = unbounded_channel();
    let flags = Arc::new(ConnFlags::default());
    flags.authenticated.store(!limits.auth_required.load(Ordering::Relaxed), Ordering::Relaxed);
    let (reader, inline) = match reading {
        Reading::Task(r) => (Some(r), None),
        Reading::Executor(r) => (None, Some(r)),
    };
    let connect = Request::Connect { id, addr: peer.to_string(), laddr, tx, flags: flags.clone(), sock: dup, reader: inline };
    if exec.tx.send(connect).is_ok() {
        run_connection(reader, writer, id, &exec, &mut rx, &flags).await;
    }
    let _ = exec.tx.send(Request::Disconnect { id });
    flags.release_slot(&limits);
}

/// An IPv4 loopback address seen through an IPv6 socket (`::ffff:127.0.0.1`).
fn is_mapped_loopback(peer: &SocketAddr) -> bool {
    match peer.ip() {
        std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
        std::net::IpAddr::V4(_) => false,
    }
}

/// Redis 7.0's text, sent on accept before the connection is closed.
const PROTECTED_MODE_DENIED: &[u8] = b"-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n";

/// The connection's loop: the executor's output written in order, and, unless the executor
/// reads the connection itself (`reader` is `None`), the reads turned into batches.
async fn run_connection<R, W>(
    mut reader: Option<R>,
    mut writer: W,
    id: u64,
    exec: &ExecutorHandle,
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<ClientOutput>,
    flags: &ConnFlags,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = BytesMut::with_capacity(if reader.is_some() { 16 * 1024 } else { 0 });
    let mut decoder = RequestDecoder::new();
    // After a protocol error the last batch is on its way: read nothing more.
    let mut closing = false;
    loop {
        let reading = reader.is_some() && !closing;
        if reading {
            read::make_room(&mut buf);
        }
        let at_limit = flags.inflight.load(Ordering::Acquire) >= MAX_INFLIGHT;
        tokio::select! {
            out = rx.recv() => {
                match out {
                    Some(ClientOutput::Replies(bytes)) => {
                        // flush: a TLS stream may hold encrypted bytes back (no-op on TCP).
                        let ok = writer.write_all(&bytes).await.is_ok() && writer.flush().await.is_ok();
                        let n = bytes.len() as u64;
                        let left = flags.task_pending.fetch_sub(n, Ordering::AcqRel) - n;
                        if left < crate::conn::OUTPUT_LOW_WATER && flags.throttled.swap(false, Ordering::AcqRel) {
                            let _ = exec.tx.send(Request::Drained { id });
                        }
                        if !ok {
                            return;
                        }
                    }
                    Some(ClientOutput::Stream { head, parts }) => {
                        let ok = send_stream(&mut writer, head, parts).await;
                        flags.task_pending.fetch_sub(1, Ordering::AcqRel);
                        if !ok {
                            return;
                        }
                    }
                    Some(ClientOutput::Close(bytes)) => {
                        let _ = writer.write_all(&bytes).await;
                        let _ = writer.shutdown().await;
                        return;
                    }
                    None => return,
                }
            }
            _ = flags.resume.notified(), if reading && at_limit => {}
            read = read_some(&mut reader, &mut buf), if reading && !at_limit => {
                let n = read.unwrap_or_default();
                read::count_read(&exec.limits, n);
                if n == 0 {
                    return;
                }
                match read::decode(&mut buf, &mut decoder, id, &exec.limits, &exec.script_watch, flags) {
                    Decoded::Batch { cmds, protocol_error } => {
                        closing = protocol_error.is_some();
                        if exec.tx.send(Request::Commands { id, cmds, protocol_error }).is_err() {
                            return;
                        }
                    }
                    Decoded::Answered(bytes) => {
                        if writer.write_all(&bytes).await.is_err() || writer.flush().await.is_err() {
                            return;
                        }
                    }
                    Decoded::Nothing => {}
                    Decoded::Close => return,
                }
            }
        }
    }
}

/// One read into `buf` (only polled while there is a reader).
async fn read_some<R: AsyncRead + Unpin>(reader: &mut Option<R>, buf: &mut BytesMut) -> std::io::Result<usize> {
    match reader {
        Some(r) => r.read_buf(buf).await,
        None => std::future::pending().await,
    }
}

/// Writes a replication stream job: `head`, then each file range, in order.
async fn send_stream<W: AsyncWrite + Unpin>(writer: &mut W, head: Vec<u8>, parts: Vec<(std::fs::File, u64, u64)>) -> bool {
    use tokio::io::AsyncSeekExt;
    if writer.write_all(&head).await.is_err() {
        return false;
    }
    for (file, start, len) in parts {
        let mut file = tokio::fs::File::from_std(file);
        if file.seek(std::io::SeekFrom::Start(start)).await.is_err() {
            return false;
        }
        let mut range = file.take(len);
        match tokio::io::copy(&mut range, writer).await {
            Ok(n) if n == len => {}
            _ => return false,
        }
    }
    writer.flush().await.is_ok()
}
