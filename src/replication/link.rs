//! A replica's connection to its primary: a tokio task that does Redis's handshake (PING,
//! AUTH, REPLCONF listening-port and capa, PSYNC), receives the snapshot of a full sync into
//! a file, then cuts the stream into whole checkpointed segments and hands them to the
//! executor. It acknowledges the offset the executor reports as applied (at once, and every
//! second), and reconnects after a failure. It never touches data.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use super::plain::CommandCutter;
use super::{LinkShared, Resume, LINK_CONNECT, LINK_CONNECTED, LINK_CONNECTING, LINK_SYNC};
use crate::aof::format;
use crate::conn::Request;
use crate::log;

/// What the task needs to know (copied from the configuration when the link starts).
#[derive(Debug, Clone)]
pub struct LinkConfig {
    pub id: u64,
    pub host: String,
    pub port: u16,
    pub masterauth: String,
    pub masteruser: String,
    /// This server's port, for REPLCONF listening-port.
    pub listening_port: u16,
    /// Where the snapshot of a full sync is written (the log's directory when there is one;
    /// the name carries the link's generation, so two links never share it).
    pub sync_file: PathBuf,
    pub timeout: Duration,
    /// What the first PSYNC asks for, or a full sync.
    pub resume: Option<Resume>,
    /// The first PSYNC asks the primary, this server's caught-up replica, to take over
    /// (FAILOVER).
    pub failover: bool,
    /// `tls-replication yes`: the connector, or why it could not be built.
    pub tls: Option<Result<LinkTls, String>>,
}

/// The TLS connector of a link (a newtype: the connector has no Debug).
#[derive(Clone)]
pub struct LinkTls(pub tokio_rustls::TlsConnector);

impl std::fmt::Debug for LinkTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LinkTls")
    }
}

/// The link's connection, plain or TLS.
trait LinkIo: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> LinkIo for T {}
type Sock = Box<dyn LinkIo>;

/// Stream bytes handed to the executor and not applied yet, above which the link stops
/// reading (the primary's output limit for this replica then applies).
const MAX_QUEUED: u64 = 64 * 1024 * 1024;
/// A segment larger than this is not one a primary writes: the link drops.
const MAX_SEGMENT: usize = 1 << 30;
/// `#C:` + 16 hex digits + CRLF.
const CHECKPOINT_LINE: usize = 21;
/// The length of the end mark of a diskless transfer (`$EOF:<mark>`).
const EOF_MARK: usize = 40;

/// Runs the link until it is stopped. After each connection the executor says where the next
/// one resumes (it has applied everything the old one handed over by then: the answer comes
/// through the same ordered channel).
pub async fn run(cfg: LinkConfig, shared: Arc<LinkShared>, tx: crate::conn::RequestTx) {
    let mut resume = cfg.resume.clone();
    let mut first = true;
    loop {
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        shared.state.store(LINK_CONNECTING, Ordering::Release);
        log::notice(&format!("Connecting to MASTER {}:{}", cfg.host, cfg.port));
        let result = session(&cfg, &shared, &tx, &resume, first).await;
        first = false;
        shared.state.store(LINK_CONNECT, Ordering::Release);
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        match result {
            Ok(()) => log::notice("Connection with master lost."),
            Err(e) => log::warning(&format!("Replication link with MASTER {}:{}: {e}", cfg.host, cfg.port)),
        }
        let (answer, resume_at) = tokio::sync::oneshot::channel();
        if tx.send(Request::ReplLinkDown { link: cfg.id, resume: answer }).is_err() {
            return;
        }
        match resume_at.await {
            Ok(r) => resume = r,
            Err(_) => return,
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = shared.wake.notified() => {}
        }
    }
}

/// One connection: handshake, sync, stream. Returns when the connection ends.
async fn session(
    cfg: &LinkConfig,
    shared: &LinkShared,
    tx: &crate::conn::RequestTx,
    resume: &Option<Resume>,
    first: bool,
) -> Result<(), String> {
    let addr = format!("{}:{}", cfg.host, cfg.port);
    let sock = match tokio::time::timeout(cfg.timeout, TcpStream::connect(&addr)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Err(format!("Error condition on socket for SYNC: {e}")),
        Err(_) => return Err("Timeout connecting to the MASTER...".into()),
    };
    let _ = sock.set_nodelay(true);
    let mut sock: Sock = match &cfg.tls {
        None => Box::new(sock),
        Some(Err(e)) => return Err(format!("TLS configuration: {e}")),
        Some(Ok(LinkTls(connector))) => {
            let name = crate::tls::server_name(&cfg.host)?;
            match tokio::time::timeout(cfg.timeout, connector.connect(name, sock)).await {
                Ok(Ok(s)) => Box::new(s),
                Ok(Err(e)) => return Err(format!("TLS handshake with MASTER: {e}")),
                Err(_) => return Err("Timeout in the TLS handshake with the MASTER...".into()),
            }
        }
    };
    // A reconnect asked for during the last connection is this one.
    shared.reconnect.store(false, Ordering::Release);
    log::notice("MASTER <-> REPLICA sync started");
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let reply = command(&mut sock, &mut buf, cfg, &["PING"]).await?;
    if !reply.starts_with("+PONG") && !reply.starts_with("-NOAUTH") && !reply.starts_with("-ERR operation not permitted") {
        return Err(format!("Error reply to PING from master: '{reply}'"));
    }
    if !cfg.masterauth.is_empty() {
        let reply = if cfg.masteruser.is_empty() {
            command(&mut sock, &mut buf, cfg, &["AUTH", &cfg.masterauth]).await?
        } else {
            command(&mut sock, &mut buf, cfg, &["AUTH", &cfg.masteruser, &cfg.masterauth]).await?
        };
        if reply.starts_with('-') {
            return Err(format!("Unable to AUTH to MASTER: {reply}"));
        }
    }
    let port = cfg.listening_port.to_string();
    let reply = command(&mut sock, &mut buf, cfg, &["REPLCONF", "listening-port", &port]).await?;
    if reply.starts_with('-') {
        log::notice(&format!("(Non critical) Master does not understand REPLCONF listening-port: {reply}"));
    }
    // `capa vermilion` asks a Vermilion primary for its own stream; redis-server ignores it.
    let reply = command(&mut sock, &mut buf, cfg, &["REPLCONF", "capa", "eof", "capa", "psync2", "capa", "vermilion"]).await?;
    if reply.starts_with('-') {
        log::notice(&format!("(Non critical) Master does not understand REPLCONF capa: {reply}"));
    }
    let (replid, offset) = match resume {
        Some(r) => (r.replid.clone(), (r.offset + 1).to_string()),
        None => ("?".to_string(), "-1".to_string()),
    };
    if resume.is_some() {
        log::notice(&format!("Trying a partial resynchronization (request {replid}:{offset})."));
    }
    let reply = if cfg.failover && first {
        command(&mut sock, &mut buf, cfg, &["PSYNC", &replid, &offset, "FAILOVER"]).await?
    } else {
        command(&mut sock, &mut buf, cfg, &["PSYNC", &replid, &offset]).await?
    };
    shared.last_io_ms.store(crate::clock::now_ms(), Ordering::Release);
    if let Some(rest) = reply.strip_prefix("+FULLRESYNC ") {
        let mut words = rest.split_whitespace();
        let (Some(id), Some(off)) = (words.next(), words.next().and_then(|o| o.parse::<u64>().ok())) else {
            return Err(format!("Bad FULLRESYNC reply from master: '{reply}'"));
        };
        log::notice(&format!("Full resync from master: {id}:{off}"));
        shared.state.store(LINK_SYNC, Ordering::Release);
        // Nothing of the new history is applied yet: acknowledge nothing of the old one.
        shared.applied.store(0, Ordering::Release);
        let plain = match receive_snapshot(&mut sock, &mut buf, cfg, shared).await {
            Ok(rdb) => rdb,
            Err(e) => {
                let _ = tokio::fs::remove_file(&cfg.sync_file).await;
                return Err(e);
            }
        };
        tx.send(Request::ReplSnapshot { link: cfg.id, replid: id.to_string(), offset: off, path: cfg.sync_file.clone() })
            .map_err(|_| "the executor is gone".to_string())?;
        shared.state.store(LINK_CONNECTED, Ordering::Release);
        stream(&mut sock, &mut buf, cfg, shared, tx, off, plain).await
    } else if let Some(rest) = reply.strip_prefix("+CONTINUE") {
        let id = rest.trim().to_string();
        let Some(from) = resume else {
            return Err("CONTINUE from MASTER to a full sync request".into());
        };
        log::notice("Successful partial resynchronization with master.");
        tx.send(Request::ReplContinue { link: cfg.id, replid: id }).map_err(|_| "the executor is gone".to_string())?;
        shared.state.store(LINK_CONNECTED, Ordering::Release);
        stream(&mut sock, &mut buf, cfg, shared, tx, from.offset, from.plain).await
    } else {
        Err(format!("Unexpected reply to PSYNC from master: '{reply}'"))
    }
}

/// Sends one command and reads its one-line reply.
async fn command(sock: &mut Sock, buf: &mut BytesMut, cfg: &LinkConfig, argv: &[&str]) -> Result<String, String> {
    let mut out = Vec::new();
    format::encode_command(&mut out, argv);
    sock.write_all(&out).await.map_err(|e| format!("Error writing to MASTER: {e}"))?;
    sock.flush().await.map_err(|e| format!("Error writing to MASTER: {e}"))?;
    read_line(sock, buf, cfg).await
}

/// Reads one reply line, skipping the bare newlines a primary sends as keepalives.
async fn read_line(sock: &mut Sock, buf: &mut BytesMut, cfg: &LinkConfig) -> Result<String, String> {
    loop {
        while buf.first() == Some(&b'\n') {
            buf.advance(1);
        }
        if let Some(nl) = buf.iter().position(|&c| c == b'\n') {
            let line = String::from_utf8_lossy(&buf[..nl]).trim_end_matches('\r').to_string();
            buf.advance(nl + 1);
            return Ok(line);
        }
        if buf.len() > 64 * 1024 {
            return Err("Reply line from MASTER too long".into());
        }
        fill(sock, buf, cfg).await?;
    }
}

async fn fill(sock: &mut Sock, buf: &mut BytesMut, cfg: &LinkConfig) -> Result<(), String> {
    buf.reserve(64 * 1024);
    match tokio::time::timeout(cfg.timeout, sock.read_buf(buf)).await {
        Ok(Ok(0)) => Err("Connection closed by MASTER".into()),
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(format!("Error reading from MASTER: {e}")),
        Err(_) => Err("Timeout receiving from MASTER".into()),
    }
}

/// The snapshot of a full sync, written to `sync_file`: `$<len>\r\n` and that many bytes,
/// or (a diskless redis-server primary) `$EOF:<40-byte mark>\r\n`, the bytes, then the mark.
/// Returns whether it is an RDB file (the primary is a redis-server).
async fn receive_snapshot(sock: &mut Sock, buf: &mut BytesMut, cfg: &LinkConfig, shared: &LinkShared) -> Result<bool, String> {
    let header = read_line(sock, buf, cfg).await?;
    let (mut left, mark) = match header.strip_prefix("$EOF:") {
        Some(mark) if mark.len() == EOF_MARK => (u64::MAX, Some(mark.as_bytes().to_vec())),
        _ => match header.strip_prefix('$').and_then(|l| l.parse::<u64>().ok()) {
            Some(len) => (len, None),
            None => return Err(format!("Bad protocol from MASTER, the first byte is not '$' (we received '{header}')")),
        },
    };
    match &mark {
        Some(_) => log::notice("MASTER <-> REPLICA sync: receiving streamed RDB from master with EOF to disk"),
        None => log::notice(&format!("MASTER <-> REPLICA sync: receiving {left} bytes from master to disk")),
    }
    // tokio's file: the disk writes run off the runtime's worker threads.
    let mut file = tokio::fs::File::create(&cfg.sync_file)
        .await
        .map_err(|e| format!("Opening the temp file needed for MASTER <-> REPLICA synchronization: {e}"))?;
    let mut head = Vec::new();
    loop {
        // With a mark: everything before it, keeping back what may be its start.
        let (take, done) = match &mark {
            Some(m) => match buf.windows(EOF_MARK).position(|w| w == &m[..]) {
                Some(at) => (at, true),
                None => (buf.len().saturating_sub(EOF_MARK - 1), false),
            },
            None => {
                let take = (buf.len() as u64).min(left) as usize;
                (take, left == take as u64)
            }
        };
        if take > 0 {
            if head.len() < 5 {
                head.extend_from_slice(&buf[..take.min(5 - head.len())]);
            }
            file.write_all(&buf[..take]).await.map_err(|e| format!("Write error writing the sync file: {e}"))?;
            buf.advance(take);
            left = left.saturating_sub(take as u64);
        }
        if done {
            if mark.is_some() {
                buf.advance(EOF_MARK);
            }
            break;
        }
        if shared.stop.load(Ordering::Acquire) {
            return Err("the link was stopped".into());
        }
        fill(sock, buf, cfg).await?;
        shared.last_io_ms.store(crate::clock::now_ms(), Ordering::Release);
    }
    file.sync_all().await.map_err(|e| format!("Error syncing the sync file: {e}"))?;
    Ok(crate::db::rdb_file::is_rdb(&head))
}

/// The stream: whole segments (`plain`: whole commands of a redis-server's stream) go to the
/// executor, each tagged with the stream offset it starts at (`next`); acknowledgements go
/// back every second, and as soon as what preceded an acknowledgement request (a bare
/// newline; `REPLCONF GETACK` from a redis-server) is applied.
async fn stream(
    sock: &mut Sock,
    buf: &mut BytesMut,
    cfg: &LinkConfig,
    shared: &LinkShared,
    tx: &crate::conn::RequestTx,
    mut next: u64,
    plain: bool,
) -> Result<(), String> {
    let mut cutter = plain.then(CommandCutter::default);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    // Bytes before `scanned` hold no checkpoint line: a segment is looked for only when new
    // bytes may close one (a long segment is not scanned again at every read).
    let mut scanned: usize = 0;
    loop {
        // A checkpoint line is 21 bytes: one not yet whole at the last look starts within
        // the 21 bytes before where that look ended.
        if let Some(cutter) = cutter.as_mut() {
            deliver_commands(cutter, buf, cfg.id, tx, shared, &mut next)?;
        } else if buf.first() == Some(&b'\n') || find(&buf[scanned.saturating_sub(CHECKPOINT_LINE)..], b"#C:") {
            deliver(buf, cfg.id, tx, shared, &mut next)?;
        }
        scanned = buf.len();
        if buf.len() > MAX_SEGMENT {
            return Err(format!("A segment from MASTER longer than {MAX_SEGMENT} bytes"));
        }
        buf.reserve(64 * 1024);
        let room = shared.queued.load(Ordering::Acquire) < MAX_QUEUED;
        tokio::select! {
            read = sock.read_buf(buf), if room => {
                match read {
                    Ok(0) => return Ok(()),
                    Ok(_) => shared.last_io_ms.store(crate::clock::now_ms(), Ordering::Release),
                    Err(e) => return Err(format!("Error reading from MASTER: {e}")),
                }
            }
            // The executor is behind: read again once it caught up a little (not reading is
            // not the primary's silence).
            _ = tokio::time::sleep(Duration::from_millis(5)), if !room => {
                shared.last_io_ms.store(crate::clock::now_ms(), Ordering::Release);
            }
            _ = shared.wake.notified() => {
                if shared.ack_wanted.swap(false, Ordering::AcqRel) || shared.stop.load(Ordering::Acquire) {
                    ack(sock, shared).await?;
                }
            }
            _ = tick.tick() => {
                ack(sock, shared).await?;
                let idle = crate::clock::now_ms() - shared.last_io_ms.load(Ordering::Acquire);
                if room && idle > cfg.timeout.as_millis() as i64 {
                    return Err("MASTER timeout: no data nor PING received...".into());
                }
            }
        }
        if shared.stop.load(Ordering::Acquire) {
            return Ok(());
        }
        if shared.reconnect.swap(false, Ordering::AcqRel) {
            return Err("Connection with master closed by CLIENT KILL".into());
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Sends REPLCONF ACK with the offset applied and written.
async fn ack(sock: &mut Sock, shared: &LinkShared) -> Result<(), String> {
    let offset = shared.applied.load(Ordering::Acquire);
    let mut out = Vec::new();
    format::encode_command(&mut out, &["REPLCONF", "ACK", &offset.to_string()]);
    sock.write_all(&out).await.map_err(|e| format!("Error writing to MASTER: {e}"))?;
    sock.flush().await.map_err(|e| format!("Error writing to MASTER: {e}"))
}

/// Hands every whole, checksum-verified segment at the front of `buf` to the executor,
/// skipping the newlines between segments. A newline is an acknowledgement request: it goes
/// to the executor too, and reaches it behind the segments before it (one ordered channel),
/// so the acknowledgement covers them.
fn deliver(buf: &mut BytesMut, link: u64, tx: &crate::conn::RequestTx, shared: &LinkShared, next: &mut u64) -> Result<(), String> {
    let cut = split_segments(buf);
    for data in cut.segments {
        let len = data.len() as u64;
        shared.queued.fetch_add(len, Ordering::AcqRel);
        tx.send(Request::ReplStream { link, offset: *next, data }).map_err(|_| "the executor is gone".to_string())?;
        *next += len;
    }
    if let Some((at, reason)) = cut.error {
        return Err(format!("Bad replication stream from MASTER at stream offset {}: {reason}", *next + at as u64));
    }
    if cut.ack_requested {
        tx.send(Request::ReplAckWanted { link }).map_err(|_| "the executor is gone".to_string())?;
    }
    Ok(())
}

/// Hands the whole commands at the front of `buf` (a redis-server's stream) to the executor.
fn deliver_commands(
    cutter: &mut CommandCutter,
    buf: &mut BytesMut,
    link: u64,
    tx: &crate::conn::RequestTx,
    shared: &LinkShared,
    next: &mut u64,
) -> Result<(), String> {
    let cut = cutter.cut(buf).map_err(|e| format!("Bad replication stream from MASTER after offset {}: {e}", *next))?;
    if cut.len > 0 {
        shared.queued.fetch_add(cut.len, Ordering::AcqRel);
        tx.send(Request::ReplCommands { link, offset: *next, len: cut.len, commands: cut.commands })
            .map_err(|_| "the executor is gone".to_string())?;
        *next += cut.len;
    }
    Ok(())
}

/// What [`split_segments`] found at the front of a buffer.
#[derive(Debug, Default)]
pub struct Cut {
    /// Whole segments, each closed by its (verified) checkpoint line, in order.
    pub segments: Vec<bytes::Bytes>,
    /// A newline was skipped between segments (an acknowledgement request).
    pub ack_requested: bool,
    /// Bytes no primary writes, at this position of what is left in the buffer.
    pub error: Option<(usize, String)>,
}

/// Takes every whole segment (records up to a checkpoint whose CRC-64 matches) off the front
/// of `buf`, skipping newlines between segments; what is left is an unfinished segment, or
/// bytes that are wrong (`Cut::error`). No I/O: the replica's link uses it on what it reads.
pub fn split_segments(buf: &mut BytesMut) -> Cut {
    let mut cut = Cut::default();
    loop {
        while buf.first() == Some(&b'\n') {
            buf.advance(1);
            cut.ack_requested = true;
        }
        if buf.is_empty() {
            return cut;
        }
        let verdict = format::check(buf);
        let whole = verdict.tail_start;
        if whole > 0 {
            cut.segments.push(buf.split_to(whole).freeze());
        }
        match verdict.problem {
            Some(format::Problem::Corrupt { offset, reason }) if offset > whole || buf.first() != Some(&b'\n') => {
                cut.error = Some((offset.saturating_sub(whole), reason));
                return cut;
            }
            // A newline after the segments taken: go on past it.
            Some(format::Problem::Corrupt { .. }) => continue,
            _ => return cut,
        }
    }
}
