//! A file written by a thread of its own while the executor serializes: the executor hands
//! over chunks of bytes; the thread writes them, keeps a running CRC-64 of everything, appends
//! it (little endian) at the end, and fsyncs. Both the log's base snapshot and the RDB file
//! are written this way, each with its own checksum.

use std::io::Write;
use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, Sender};

/// The checksum a file ends with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checksum {
    /// CRC-64/XZ, the log's base snapshot frame.
    Xz,
    /// CRC-64/Jones, Redis's RDB file.
    Redis,
}

enum Chunk {
    Data(Vec<u8>),
    Finish,
}

pub struct BgWriter {
    tx: Sender<Chunk>,
    done: Receiver<Result<u64, String>>,
}

static REDIS_CRC: crc::Crc<u64, crc::Table<16>> = crc::Crc::<u64, crc::Table<16>>::new(&crc::CRC_64_REDIS);

impl BgWriter {
    /// Creates `path` and starts the thread (`name`) that writes it.
    pub fn spawn(name: &str, path: &PathBuf, checksum: Checksum) -> std::io::Result<BgWriter> {
        let file = std::fs::File::create(path)?;
        let (tx, rx) = channel::<Chunk>();
        let (done_tx, done) = channel();
        std::thread::Builder::new().name(name.into()).spawn(move || {
            let _ = done_tx.send(write_chunks(file, rx, checksum));
        })?;
        Ok(BgWriter { tx, done })
    }

    pub fn send(&self, bytes: Vec<u8>) {
        if !bytes.is_empty() {
            let _ = self.tx.send(Chunk::Data(bytes));
        }
    }

    /// No more chunks: the thread appends the checksum, fsyncs and reports.
    pub fn finish(&self) {
        let _ = self.tx.send(Chunk::Finish);
    }

    /// The result once the thread has finished (the file's size), or None while it works.
    pub fn poll(&self) -> Option<Result<u64, String>> {
        self.done.try_recv().ok()
    }

    /// Waits for the thread to finish.
    pub fn wait(&self) -> Result<u64, String> {
        self.done.recv().unwrap_or_else(|_| Err("the writer thread stopped".into()))
    }
}

/// Bytes on their way to a [`BgWriter`]: the serializer appends to `buf`, which goes to the
/// thread whenever it passes about a megabyte.
pub struct Chunks {
    pub buf: Vec<u8>,
    pub writer: BgWriter,
    finished: bool,
}

/// Bytes buffered before a chunk goes to the writer thread.
const CHUNK: usize = 1 << 20;

impl Chunks {
    pub fn new(writer: BgWriter, start: Vec<u8>) -> Chunks {
        Chunks { buf: start, writer, finished: false }
    }

    /// Hands the buffer over once it is big enough.
    pub fn ship(&mut self) {
        if self.buf.len() >= CHUNK {
            self.writer.send(std::mem::take(&mut self.buf));
        }
    }

    /// Once: `tail` appends the format's end, then the last chunk and the finish go.
    pub fn finish(&mut self, tail: impl FnOnce(&mut Vec<u8>)) {
        if !self.finished {
            self.finished = true;
            tail(&mut self.buf);
            self.writer.send(std::mem::take(&mut self.buf));
            self.writer.finish();
        }
    }
}

fn write_chunks(file: std::fs::File, rx: Receiver<Chunk>, checksum: Checksum) -> Result<u64, String> {
    let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
    let mut xz = crc64fast::Digest::new();
    let mut redis = REDIS_CRC.digest();
    let mut size = 0u64;
    for chunk in rx {
        match chunk {
            Chunk::Data(bytes) => {
                match checksum {
                    Checksum::Xz => xz.write(&bytes),
                    Checksum::Redis => redis.update(&bytes),
                }
                size += bytes.len() as u64;
                w.write_all(&bytes).map_err(|e| e.to_string())?;
            }
            Chunk::Finish => {
                let sum = match checksum {
                    Checksum::Xz => xz.sum64(),
                    Checksum::Redis => redis.finalize(),
                };
                w.write_all(&sum.to_le_bytes()).map_err(|e| e.to_string())?;
                let file = w.into_inner().map_err(|e| e.to_string())?;
                file.sync_all().map_err(|e| e.to_string())?;
                return Ok(size + 8);
            }
        }
    }
    Err("the write was abandoned".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_checksum_matches_the_payload_crc() {
        let dir = std::env::temp_dir().join(format!("vermilion-bgwrite-{}", std::process::id()));
        let w = BgWriter::spawn("t", &dir, Checksum::Redis).unwrap();
        w.send(b"1234".to_vec());
        w.send(b"56789".to_vec());
        w.finish();
        assert_eq!(w.wait(), Ok(17));
        let data = std::fs::read(&dir).unwrap();
        let _ = std::fs::remove_file(&dir);
        assert_eq!(u64::from_le_bytes(data[9..].try_into().unwrap()), crate::db::rdb::crc64(b"123456789"));
    }
}
