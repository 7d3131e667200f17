//! What one read of a client connection turns into, wherever the read happens: in the
//! connection's task (TLS, `io-threads` above 1, connections accepted while loading) or on
//! the executor thread itself (`executor/readers.rs`). Both sides share this step so the
//! limits, the statistics and the answers given without the executor stay one rule.

use std::sync::atomic::Ordering;

use bytes::{Bytes, BytesMut};

use super::{busy_answers, ConnFlags, SharedLimits};
use crate::log;
use crate::protocol::{DecodeLimits, RequestDecoder};
use crate::scripting::ScriptWatch;

/// The outcome of decoding what a connection's buffer holds.
pub enum Decoded {
    /// Commands for the executor; `protocol_error` ends the batch and then the connection.
    Batch { cmds: Vec<Vec<Bytes>>, protocol_error: Option<String> },
    /// Nothing complete yet.
    Nothing,
    /// The query buffer passed its limit: close without a reply.
    Close,
    /// A busy script or a load holds the executor: the connection answers by itself.
    Answered(Vec<u8>),
}

/// Counts one read of `n` bytes (0: the end of the stream) in INFO's totals.
pub fn count_read(limits: &SharedLimits, n: usize) {
    // Every read counts, the one that finds the end of the stream too (as Redis's).
    limits.reads_processed.fetch_add(1, Ordering::Relaxed);
    limits.net_input_bytes.fetch_add(n as u64, Ordering::Relaxed);
}

/// Decodes every complete command in `buf`. A batch for the executor is counted in
/// `flags.inflight` before it is handed over, so the executor's decrement never comes first.
pub fn decode(
    buf: &mut BytesMut,
    decoder: &mut RequestDecoder,
    id: u64,
    limits: &SharedLimits,
    watch: &ScriptWatch,
    flags: &ConnFlags,
) -> Decoded {
    let decode_limits = DecodeLimits {
        max_bulk_len: limits.proto_max_bulk_len.load(Ordering::Relaxed),
        unauthenticated: !flags.authenticated.load(Ordering::Relaxed),
    };
    let mut cmds = Vec::new();
    let mut protocol_error = None;
    loop {
        match decoder.decode(buf, &decode_limits) {
            Ok(Some(args)) => {
                if cmds.capacity() == 0 {
                    // Sized at once: one command when the read ends with it (the usual
                    // request without pipelining), else room for a pipeline's first few.
                    cmds = Vec::with_capacity(if buf.is_empty() { 1 } else { 16 });
                }
                cmds.push(args);
            }
            Ok(None) => break,
            Err(e) => {
                log::verbose(&format!("Protocol error ({}) from client: id={id}", e.0));
                protocol_error = Some(e.to_string());
                break;
            }
        }
    }
    flags.qbuf.store(buf.len() as u64, Ordering::Relaxed);
    flags.qbuf_cap.store(buf.capacity() as u64, Ordering::Relaxed);
    flags.argv_partial.store(decoder.partial_argv_len() as u64, Ordering::Relaxed);
    if protocol_error.is_none() && buf.len() as u64 > limits.client_query_buffer_limit.load(Ordering::Relaxed) {
        log::warning(&format!(
            "Closing client that reached max query buffer length: id={id} (qbuf initial bytes: {:?})",
            String::from_utf8_lossy(&buf[..buf.len().min(64)])
        ));
        return Decoded::Close;
    }
    if cmds.is_empty() && protocol_error.is_none() {
        return Decoded::Nothing;
    }
    // While a script is busy the executor cannot answer; the connection does, if it has
    // nothing in flight (its replies would otherwise overtake earlier ones).
    let replica = flags.replica.load(Ordering::Acquire);
    let idle = flags.inflight.load(Ordering::Acquire) == 0;
    if !replica && protocol_error.is_none() && idle && watch.is_busy() {
        if let Some(bytes) = busy_answers(watch, &cmds, flags) {
            return Decoded::Answered(bytes);
        }
    }
    // While the log loads, the executor is busy replaying it: the connection answers, as
    // Redis answers every command during loading.
    if !replica && protocol_error.is_none() && idle && limits.loading.load(Ordering::Acquire) {
        let mut bytes = Vec::new();
        for cmd in &cmds {
            if cmd.first().is_some_and(|c| c.eq_ignore_ascii_case(b"info")) {
                let text = limits.loading_info();
                bytes.extend_from_slice(format!("${}\r\n{text}\r\n", text.len()).as_bytes());
            } else {
                bytes.extend_from_slice(b"-LOADING Redis is loading the dataset in memory\r\n");
            }
        }
        return Decoded::Answered(bytes);
    }
    flags.inflight.fetch_add(1, Ordering::AcqRel);
    Decoded::Batch { cmds, protocol_error }
}

/// Keeps a query buffer's room for the next read: a buffer a big request grew goes back to
/// its usual size once it is empty, as Redis's cron resizes a query buffer past 32 KB
/// (PROTO_RESIZE_THRESHOLD).
pub fn make_room(buf: &mut BytesMut) {
    if buf.is_empty() && buf.capacity() > 32 * 1024 {
        *buf = BytesMut::with_capacity(16 * 1024);
    } else if buf.capacity() - buf.len() < 4096 {
        buf.reserve(16 * 1024);
    }
}
