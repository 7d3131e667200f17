//! Incremental request decoder: multibulk (`*N\r\n$len\r\n...`) and inline commands.
//!
//! It follows Redis's `processMultibulkBuffer`/`processInlineBuffer` step by step, so the
//! limits and the protocol error texts are Redis's own. State survives between calls: a
//! half-received command keeps the arguments already parsed, so each byte is looked at once.

use bytes::{Buf, Bytes, BytesMut};

use crate::util::parse_i64;

/// Longest inline line, or multibulk/bulk header line, Redis accepts (64 KiB).
pub const PROTO_INLINE_MAX_SIZE: usize = 64 * 1024;

/// Limits that depend on configuration and on whether the client has authenticated.
#[derive(Debug, Clone, Copy)]
pub struct DecodeLimits {
    /// `proto-max-bulk-len`.
    pub max_bulk_len: i64,
    /// True while the client still has to AUTH: Redis then caps frames much lower.
    pub unauthenticated: bool,
}

impl Default for DecodeLimits {
    fn default() -> Self {
        DecodeLimits { max_bulk_len: 512 * 1024 * 1024, unauthenticated: false }
    }
}

/// A violation of the protocol; the connection answers `-ERR Protocol error: ...` and closes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Protocol error: {0}")]
pub struct ProtocolError(pub String);

impl ProtocolError {
    fn new(msg: impl Into<String>) -> Self {
        ProtocolError(msg.into())
    }
}

/// Decoder state for one connection.
#[derive(Debug, Default)]
pub struct RequestDecoder {
    /// Arguments still expected by the multibulk in progress (0: none in progress).
    multibulk_left: usize,
    /// Length of the bulk whose header was read, awaiting its payload.
    bulk_len: Option<usize>,
    args: Vec<Bytes>,
    /// The bytes of `args`, kept as they come (CLIENT LIST reads it after every read).
    args_len: usize,
}

impl RequestDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// True when part of a command has been consumed but not completed.
    /// Bytes of the arguments of the command in progress parsed so far (CLIENT LIST
    /// `argv-mem` of a client that sent part of a command).
    pub fn partial_argv_len(&self) -> usize {
        self.args_len
    }

    pub fn in_progress(&self) -> bool {
        self.multibulk_left > 0
    }

    /// Decodes the next complete command from `buf`, consuming its bytes.
    ///
    /// `Ok(None)`: more input is needed (what was consumed is remembered). Empty commands
    /// (`*0`, blank inline lines) are skipped, as Redis skips them.
    pub fn decode(&mut self, buf: &mut BytesMut, limits: &DecodeLimits) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        loop {
            if self.multibulk_left == 0 {
                if buf.is_empty() {
                    return Ok(None);
                }
                let parsed = if buf[0] == b'*' { self.multibulk_header(buf, limits)? } else { self.inline(buf)? };
                match parsed {
                    Header::Incomplete => return Ok(None),
                    Header::Empty => continue,
                    Header::Command(args) => return Ok(Some(args)),
                    Header::Started => {}
                }
            }
            while self.multibulk_left > 0 {
                let len = match self.bulk_len {
                    Some(len) => len,
                    None => {
                        let Some(cr) = memchr(b'\r', buf) else {
                            if buf.len() > PROTO_INLINE_MAX_SIZE {
                                return Err(ProtocolError::new("too big bulk count string"));
                            }
                            return Ok(None);
                        };
                        if cr + 2 > buf.len() {
                            return Ok(None);
                        }
                        if buf[0] != b'$' {
                            return Err(ProtocolError(format!("expected '$', got '{}'", buf[0] as char)));
                        }
                        let n = match parse_i64(&buf[1..cr]) {
                            Some(n) if n >= 0 && n <= limits.max_bulk_len => n,
                            _ => return Err(ProtocolError::new("invalid bulk length")),
                        };
                        if limits.unauthenticated && n > 16384 {
                            return Err(ProtocolError::new("unauthenticated bulk length"));
                        }
                        buf.advance(cr + 2);
                        let len = n as usize;
                        // Make room for the payload up front, but never trust a header with
                        // more than a modest reservation: the bytes must actually arrive.
                        let want = (len + 2).saturating_sub(buf.len()).min(1 << 20);
                        buf.reserve(want);
                        self.bulk_len = Some(len);
                        len
                    }
                };
                if buf.len() < len + 2 {
                    return Ok(None);
                }
                let arg = buf.split_to(len).freeze();
                // Redis does not check the two bytes after the payload; neither do we.
                buf.advance(2);
                self.args_len += arg.len();
                self.args.push(arg);
                self.bulk_len = None;
                self.multibulk_left -= 1;
            }
            self.args_len = 0;
            return Ok(Some(std::mem::take(&mut self.args)));
        }
    }

    fn multibulk_header(&mut self, buf: &mut BytesMut, limits: &DecodeLimits) -> Result<Header, ProtocolError> {
        let Some(cr) = memchr(b'\r', buf) else {
            if buf.len() > PROTO_INLINE_MAX_SIZE {
                return Err(ProtocolError::new("too big mbulk count string"));
            }
            return Ok(Header::Incomplete);
        };
        if cr + 2 > buf.len() {
            return Ok(Header::Incomplete);
        }
        let count = match parse_i64(&buf[1..cr]) {
            Some(n) if n <= i32::MAX as i64 => n,
            _ => return Err(ProtocolError::new("invalid multibulk length")),
        };
        if limits.unauthenticated && count > 10 {
            return Err(ProtocolError::new("unauthenticated multibulk length"));
        }
        buf.advance(cr + 2);
        if count <= 0 {
            return Ok(Header::Empty);
        }
        self.multibulk_left = count as usize;
        self.args = Vec::with_capacity((count as usize).min(1024));
        self.args_len = 0;
        Ok(Header::Started)
    }

    fn inline(&mut self, buf: &mut BytesMut) -> Result<Header, ProtocolError> {
        let Some(nl) = memchr(b'\n', buf) else {
            if buf.len() > PROTO_INLINE_MAX_SIZE {
                return Err(ProtocolError::new("too big inline request"));
            }
            return Ok(Header::Incomplete);
        };
        let line_end = if nl > 0 && buf[nl - 1] == b'\r' { nl - 1 } else { nl };
        let parts = super::split_args(&buf[..line_end]).ok_or_else(|| ProtocolError::new("unbalanced quotes in request"))?;
        buf.advance(nl + 1);
        if parts.is_empty() {
            return Ok(Header::Empty);
        }
        Ok(Header::Command(parts.into_iter().map(Bytes::from).collect()))
    }
}

enum Header {
    Incomplete,
    Empty,
    Started,
    Command(Vec<Bytes>),
}

/// `strchr` on Redis's NUL-terminated query buffer: a NUL byte hides everything after it, so
/// a line with a NUL before its end is not complete until the length limit says otherwise.
fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|&b| b == needle || b == 0).filter(|&i| haystack[i] == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(input: &[u8]) -> (Vec<Vec<Vec<u8>>>, Option<ProtocolError>) {
        let mut dec = RequestDecoder::new();
        let mut buf = BytesMut::from(input);
        let mut out = Vec::new();
        loop {
            match dec.decode(&mut buf, &DecodeLimits::default()) {
                Ok(Some(args)) => out.push(args.into_iter().map(|a| a.to_vec()).collect()),
                Ok(None) => return (out, None),
                Err(e) => return (out, Some(e)),
            }
        }
    }

    #[test]
    fn multibulk_and_inline() {
        let (cmds, err) = decode_all(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n\r\nset a \"b c\"\n*0\r\n");
        assert!(err.is_none());
        assert_eq!(cmds.len(), 3);
        assert_eq!(cmds[0], vec![b"GET".to_vec(), b"k".to_vec()]);
        assert_eq!(cmds[1], vec![b"PING".to_vec()]);
        assert_eq!(cmds[2], vec![b"set".to_vec(), b"a".to_vec(), b"b c".to_vec()]);
    }

    #[test]
    fn byte_at_a_time() {
        let input = b"*3\r\n$3\r\nSET\r\n$5\r\nhello\r\n$5\r\nworld\r\n";
        let mut dec = RequestDecoder::new();
        let mut buf = BytesMut::new();
        let mut got = None;
        for &b in input.iter() {
            buf.extend_from_slice(&[b]);
            if let Some(args) = dec.decode(&mut buf, &DecodeLimits::default()).unwrap() {
                got = Some(args);
            }
        }
        assert_eq!(got.unwrap().len(), 3);
        assert!(buf.is_empty());
    }

    #[test]
    fn errors_match_redis() {
        assert_eq!(decode_all(b"*abc\r\n").1.unwrap().to_string(), "Protocol error: invalid multibulk length");
        assert_eq!(decode_all(b"*1\r\n+x\r\n").1.unwrap().to_string(), "Protocol error: expected '$', got '+'");
        assert_eq!(decode_all(b"*1\r\n$-5\r\n").1.unwrap().to_string(), "Protocol error: invalid bulk length");
        assert_eq!(decode_all(b"*1\r\n$999999999999\r\n").1.unwrap().to_string(), "Protocol error: invalid bulk length");
        assert_eq!(decode_all(b"set \"a\n").1.unwrap().to_string(), "Protocol error: unbalanced quotes in request");
        // As in Redis, a NUL hides the line end: the line waits until it is too long.
        assert_eq!(decode_all(b"ECHO a\0b\r\n"), (vec![], None));
        let long = vec![b'a'; PROTO_INLINE_MAX_SIZE + 1];
        assert_eq!(decode_all(&long).1.unwrap().to_string(), "Protocol error: too big inline request");
    }
}
