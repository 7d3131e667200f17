//! Replication with redis-server: Redis's own protocol, whose stream is plain RESP commands
//! (no `#MS:`/`#C:` annotations) and whose offsets count those bytes.
//!
//! - As a primary, [`PlainFeed`] is the stream every Redis replica (a peer that did not say
//!   `REPLCONF capa vermilion`) shares: each segment the log writes, as plain commands, plus
//!   the PINGs and `REPLCONF GETACK *` Redis's own primary would send. It has its own offsets
//!   and backlog; `marks` maps a Redis replica's acknowledged offset back to the log offset
//!   it stands for, so WAIT, FAILOVER and `min-replicas-to-write` work in one space.
//! - As a replica of redis-server, [`CommandCutter`] cuts the received stream into whole
//!   commands (whole MULTI blocks), each with the offset it ends at, for the executor, which
//!   runs them and logs them as its own records.

use std::collections::VecDeque;

use bytes::{Bytes, BytesMut};

use super::Backlog;
use crate::aof::format;
use crate::protocol::{DecodeLimits, RequestDecoder};

/// `PING`, as a Redis primary sends it to its replicas.
pub const PING: &[u8] = b"*1\r\n$4\r\nPING\r\n";
/// `REPLCONF GETACK *`: asks the replicas to acknowledge at once.
pub const GETACK: &[u8] = b"*3\r\n$8\r\nREPLCONF\r\n$6\r\nGETACK\r\n$1\r\n*\r\n";

/// A primary's stream for Redis replicas.
#[derive(Debug)]
pub struct PlainFeed {
    /// The offset after the last byte.
    pub offset: u64,
    pub backlog: Backlog,
    /// (log offset, plain offset) pairs, oldest first: the plain stream up to `.1` holds
    /// everything the log holds up to `.0`.
    marks: VecDeque<(u64, u64)>,
    /// The id of this stream's history. It is not the log's: an offset of one stream means
    /// nothing in the other, so a replica of one (a redis-server promoted from this feed)
    /// never takes a PSYNC of the other for a partial one.
    pub replid: String,
    /// The history this plain stream continues (a former primary's, after a promotion from
    /// a redis-server primary, or this feed's previous one), and the last offset of it.
    pub replid2: String,
    pub second_offset: Option<u64>,
    /// Since when no redis-server replica is attached (wall-clock ms).
    pub idle_since_ms: Option<i64>,
}

impl PlainFeed {
    /// A stream that starts at `plain` where the log is at `log`.
    pub fn new(log: u64, plain: u64, backlog_size: u64) -> PlainFeed {
        PlainFeed {
            offset: plain,
            backlog: Backlog::new(plain, backlog_size),
            marks: VecDeque::from([(log, plain)]),
            replid: super::new_replid(),
            replid2: super::NO_REPLID.to_string(),
            second_offset: None,
            idle_since_ms: None,
        }
    }

    /// A new history continuing this one from here (a promotion).
    pub fn shift_replid(&mut self) {
        self.replid2 = std::mem::replace(&mut self.replid, super::new_replid());
        self.second_offset = Some(self.offset);
    }

    /// Appends bytes that stand for the log up to `log`.
    pub fn push(&mut self, bytes: Bytes, log: u64) {
        self.offset += bytes.len() as u64;
        if !bytes.is_empty() {
            self.backlog.push(bytes);
        }
        self.marks.push_back((log, self.offset));
        // Marks older than the backlog serve no acknowledgement a replica can still send
        // (one that far behind resyncs).
        while self.marks.len() > 1 && self.marks.get(1).is_some_and(|m| m.1 < self.backlog.first_offset()) {
            self.marks.pop_front();
        }
    }

    /// The log offset a Redis replica that acknowledged `plain` has.
    pub fn log_offset(&self, plain: u64) -> u64 {
        let i = self.marks.partition_point(|m| m.1 <= plain);
        if i == 0 {
            0
        } else {
            self.marks[i - 1].0
        }
    }
}

/// The records of log segments as plain RESP commands, with every EVALSHA (whose body a
/// Redis replica may not have: scripts are not in an RDB) turned into EVAL with the body
/// `body_of` finds.
pub fn plain_commands(data: &[u8], body_of: impl Fn(&[u8]) -> Option<Bytes>) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    format::replay(data, |r| {
        let name = r.argv[0];
        let ro = name.eq_ignore_ascii_case(b"evalsha_ro");
        let eval =
            ro || name.eq_ignore_ascii_case(b"evalsha") || name.eq_ignore_ascii_case(b"eval") || name.eq_ignore_ascii_case(b"eval_ro");
        let by_sha = ro || name.eq_ignore_ascii_case(b"evalsha");
        let body = match r.argv.get(1) {
            Some(sha) if by_sha => body_of(sha),
            Some(body) if eval => Some(Bytes::copy_from_slice(body)),
            _ => None,
        };
        match body {
            Some(body) => {
                let mut argv = r.argv.clone();
                if by_sha {
                    argv[0] = if ro { b"EVAL_RO" } else { b"EVAL" };
                }
                let body = redis_shebang(&body);
                argv[1] = &body;
                format::encode_command(&mut out, &argv);
            }
            // SCRIPT LOAD of a body with a flag redis-server does not know.
            None if name.eq_ignore_ascii_case(b"script") && r.argv.len() == 3 && r.argv[1].eq_ignore_ascii_case(b"load") => {
                let body = redis_shebang(&Bytes::copy_from_slice(r.argv[2]));
                format::encode_command(&mut out, &[r.argv[0], r.argv[1], &body]);
            }
            None => format::encode_command(&mut out, &r.argv),
        }
    });
    out
}

/// A script's body as redis-server accepts it: without the shebang flags only Vermilion
/// knows (`rollback`: the script ran whole here, so the replica runs it plainly). Other
/// bodies are returned as they are.
fn redis_shebang(body: &Bytes) -> Bytes {
    let Some(end) = crate::scripting::shebang_end(body).filter(|_| body.starts_with(b"#!")) else { return body.clone() };
    let line = &body[..end];
    let Some(at) = line.windows(6).position(|w| w == b"flags=") else { return body.clone() };
    let flags_end = line[at..].iter().position(|&b| b == b' ').map_or(line.len(), |p| at + p);
    let flags: Vec<&[u8]> = line[at + 6..flags_end].split(|&b| b == b',').filter(|f| *f != b"rollback").collect();
    if flags.len() == line[at + 6..flags_end].split(|&b| b == b',').count() {
        return body.clone();
    }
    let mut out = Vec::with_capacity(body.len());
    out.extend_from_slice(&line[..at]);
    if !flags.is_empty() {
        out.extend_from_slice(b"flags=");
        out.extend_from_slice(&flags.join(&b","[..]));
    }
    out.extend_from_slice(&line[flags_end..]);
    out.extend_from_slice(&body[end..]);
    Bytes::from(out)
}

/// Whole commands cut from a redis-server primary's stream.
#[derive(Debug, Default)]
pub struct Cut {
    /// Commands, in order; a MULTI block is never cut in two.
    pub commands: Vec<Vec<Bytes>>,
    /// The stream bytes they span (newlines between them included, as Redis counts them).
    pub len: u64,
}

/// Cuts a plain stream into commands, across reads.
#[derive(Debug, Default)]
pub struct CommandCutter {
    decoder: RequestDecoder,
    /// Commands decoded, not yet handed out (an open MULTI block).
    held: Vec<Vec<Bytes>>,
    held_len: u64,
    in_multi: bool,
    /// Bytes consumed since the last command ended (part of a command in progress).
    partial: u64,
}

impl CommandCutter {
    /// Takes what `buf` holds of whole commands; what is left waits for more bytes.
    pub fn cut(&mut self, buf: &mut BytesMut) -> Result<Cut, String> {
        let limits = DecodeLimits::default();
        let mut cut = Cut::default();
        loop {
            let before = buf.len();
            let decoded = self.decoder.decode(buf, &limits).map_err(|e| e.to_string())?;
            self.partial += (before - buf.len()) as u64;
            let Some(argv) = decoded else { return Ok(cut) };
            let len = std::mem::take(&mut self.partial);
            let name = &argv[0];
            let multi = name.eq_ignore_ascii_case(b"multi");
            let exec = name.eq_ignore_ascii_case(b"exec");
            self.held.push(argv);
            self.held_len += len;
            self.in_multi = (self.in_multi || multi) && !exec;
            if !self.in_multi {
                cut.commands.append(&mut self.held);
                cut.len += std::mem::take(&mut self.held_len);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_come_whole_with_their_bytes_and_multi_blocks_whole() {
        let stream = b"*1\r\n$4\r\nPING\r\n\n*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*1\r\n$5\r\nMULTI\r\n*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n*1\r\n$4\r\nEXEC\r\n";
        // Byte by byte: the same cut as at once.
        let mut cutter = CommandCutter::default();
        let mut buf = BytesMut::new();
        let (mut names, mut total) = (Vec::new(), 0);
        for (i, b) in stream.iter().enumerate() {
            buf.extend_from_slice(&[*b]);
            let cut = cutter.cut(&mut buf).unwrap();
            if i < 70 {
                // Inside the MULTI block nothing of it is handed out.
                assert!(cut.commands.iter().all(|c| &c[0][..] != b"MULTI"));
            }
            total += cut.len;
            names.extend(cut.commands.into_iter().map(|c| String::from_utf8_lossy(&c[0]).into_owned()));
        }
        assert_eq!(names, ["PING", "SELECT", "MULTI", "SET", "EXEC"]);
        assert_eq!(total, stream.len() as u64);
        assert!(buf.is_empty());
    }

    #[test]
    fn an_acknowledged_plain_offset_maps_to_the_log_offset_it_covers() {
        let mut feed = PlainFeed::new(100, 5000, 1 << 20);
        feed.push(Bytes::from_static(b"0123456789"), 130);
        feed.push(Bytes::from_static(PING), 130);
        feed.push(Bytes::from_static(b"abcde"), 150);
        assert_eq!(feed.log_offset(5000), 100);
        assert_eq!(feed.log_offset(5009), 100);
        assert_eq!(feed.log_offset(5010), 130);
        assert_eq!(feed.log_offset(5010 + PING.len() as u64), 130);
        assert_eq!(feed.log_offset(feed.offset), 150);
        assert_eq!(feed.log_offset(1), 0);
    }

    #[test]
    fn vermilion_shebang_flags_are_left_out_for_redis_server() {
        let cases: [(&[u8], &[u8]); 4] = [
            (b"#!lua flags=rollback\nreturn 1", b"#!lua \nreturn 1"),
            (b"#!lua flags=no-writes,rollback\nreturn 1", b"#!lua flags=no-writes\nreturn 1"),
            (b"#!lua flags=no-writes\nreturn 1", b"#!lua flags=no-writes\nreturn 1"),
            (b"return 1", b"return 1"),
        ];
        for (body, want) in cases {
            assert_eq!(&redis_shebang(&Bytes::copy_from_slice(body))[..], want);
        }
    }

    #[test]
    fn evalsha_goes_out_as_eval_with_its_body() {
        let mut log = Vec::new();
        format::encode_command(&mut log, &["EVALSHA", "abc", "0"]);
        format::encode_command(&mut log, &["SET", "k", "v"]);
        format::encode_checkpoint(&mut log, 0);
        let out = plain_commands(&log, |sha| (sha == b"abc").then(|| Bytes::from_static(b"return 1")));
        let mut want = Vec::new();
        format::encode_command(&mut want, &["EVAL", "return 1", "0"]);
        format::encode_command(&mut want, &["SET", "k", "v"]);
        assert_eq!(out, want);
    }
}
