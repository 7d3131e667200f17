//! The replication stream's records before they are written: the framing the log and a
//! server without the log share. The log ([`super::Aof`]) writes a batch to its file; a
//! server with `appendonly no` and replicas keeps only the offset ([`MemLog`]). Either way
//! the batch, closed by its checkpoint, is the segment replicas receive, so the stream's
//! bytes and offsets are the same with and without a log.

use std::collections::HashSet;

use bytes::Bytes;

use super::format;

/// Records of the current batch and what framing them needs.
#[derive(Default)]
pub struct Stream {
    /// Records of the current batch, not yet written.
    pub buf: Vec<u8>,
    /// The database the stream's reader is in (None: the next record needs a SELECT).
    pub selected_db: Option<usize>,
    /// SHA1s whose body this stream epoch holds (base script table, SCRIPT LOAD and EVAL
    /// records): an EVALSHA of one of them is recorded as is, any other as EVAL.
    pub epoch_scripts: HashSet<String>,
    /// The stream is a replica's copy of its primary's: whole segments arrive with their
    /// checkpoints ([`Stream::append_stream`]) and no checkpoint of ours is added, so the
    /// bytes (and offsets) stay the primary's.
    pub verbatim: bool,
    /// Keep a copy of every segment written, in `teed` (replicas are attached: the segments
    /// are the replication stream).
    pub tee: bool,
    pub teed: Vec<Bytes>,
}

impl Stream {
    /// Appends one record in database `db` (a SELECT first if the stream is elsewhere), with
    /// the frozen time of a script record right before it.
    pub fn command<A: AsRef<[u8]>>(&mut self, db: usize, argv: &[A], time_ms: Option<i64>) {
        if self.selected_db != Some(db) {
            format::encode_command(&mut self.buf, &[b"SELECT".as_slice(), db.to_string().as_bytes()]);
            self.selected_db = Some(db);
        }
        if let Some(ms) = time_ms {
            format::encode_time(&mut self.buf, ms);
        }
        format::encode_command(&mut self.buf, argv);
    }

    /// Appends whole segments of a primary's stream (records and checkpoints), as received.
    pub fn append_stream(&mut self, segments: &[u8]) {
        self.buf.extend_from_slice(segments);
    }

    /// Closes the batch with its checkpoint (unless verbatim); returns where the records
    /// ended, for a writer that must take the checkpoint back after a failed write.
    pub fn seal(&mut self) -> usize {
        let records_end = self.buf.len();
        if !self.verbatim {
            format::encode_checkpoint(&mut self.buf, 0);
        }
        records_end
    }

    /// The sealed batch was written: a copy goes to `teed` if replicas want it.
    pub fn written(&mut self) {
        if self.tee {
            self.teed.push(Bytes::copy_from_slice(&self.buf));
        }
        self.buf.clear();
    }
}

/// The stream of a server without the log: records framed as the log frames them, counted,
/// handed to replicas and the backlog, and not kept.
pub struct MemLog {
    pub rec: Stream,
    /// The stream offset after everything flushed.
    pub offset: u64,
}

impl MemLog {
    pub fn new(offset: u64) -> MemLog {
        MemLog { rec: Stream { tee: true, ..Stream::default() }, offset }
    }

    /// The offset at the end of the records buffered so far.
    pub fn buffered_end(&self) -> u64 {
        self.offset + self.rec.buf.len() as u64
    }

    /// Ends the batch: its segment goes to `teed`.
    pub fn flush(&mut self) {
        if self.rec.buf.is_empty() {
            return;
        }
        self.rec.seal();
        self.offset += self.rec.buf.len() as u64;
        self.rec.written();
    }
}
