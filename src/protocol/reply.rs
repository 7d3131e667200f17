//! The reply value every command produces, independent of the protocol version.

use std::borrow::Cow;

use bytes::Bytes;

/// A reply as the server means it; [`super::encode_reply`] renders it for RESP2 or RESP3.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// `+OK`
    Status(Cow<'static, str>),
    /// `-ERR ...`: the full text after the dash, starting with its code word.
    Error(Cow<'static, str>),
    Int(i64),
    Bulk(Bytes),
    /// The null bulk string (`$-1` in RESP2, `_` in RESP3).
    Nil,
    /// The null array (`*-1` in RESP2, `_` in RESP3).
    NilArray,
    Array(Vec<Reply>),
    /// A map in RESP3, a flat array of pairs in RESP2.
    Map(Vec<(Reply, Reply)>),
    /// A set in RESP3, an array in RESP2.
    Set(Vec<Reply>),
    /// A double in RESP3, a bulk string in RESP2.
    Double(f64),
    /// A double already formatted (Redis's human long-double text, as GEOPOS sends it):
    /// `,text` in RESP3, a bulk string in RESP2.
    DoubleText(String),
    /// `#t`/`#f` in RESP3, `:1`/`:0` in RESP2... except that Redis sends false as a null
    /// in RESP2 where it came from Lua; callers choose.
    Bool(bool),
    /// A verbatim string (`=len\r\ntxt:...`) in RESP3, a bulk string in RESP2.
    /// RESP3 `=`: a three-byte format (`txt`, `mkd`...) and the text.
    Verbatim([u8; 3], Bytes),
    /// A big number in RESP3, a bulk string in RESP2.
    BigNumber(String),
    /// An out-of-band push (`>`) in RESP3, an array in RESP2.
    Push(Vec<Reply>),
    /// RESP3 attributes (`|`) that precede a reply; nothing at all in RESP2.
    Attribute(Vec<(Reply, Reply)>),
    /// Nothing at all is sent (SHUTDOWN closes the connection without a reply).
    NoReply,
    /// Several replies to one command, sent one after the other (SUBSCRIBE a b c).
    Sequence(Vec<Reply>),
}

impl Reply {
    pub const OK: Reply = Reply::Status(Cow::Borrowed("OK"));

    pub fn status(s: &'static str) -> Reply {
        Reply::Status(Cow::Borrowed(s))
    }

    pub fn error(s: impl Into<Cow<'static, str>>) -> Reply {
        Reply::Error(s.into())
    }

    /// An error reply INFO errorstats does not count (Redis's `addReplySds` of a raw
    /// error, as DEBUG ERROR sends it): the executor counts only a top-level `Error`, and a
    /// sequence of one is encoded as that one reply.
    pub fn uncounted_error(text: impl Into<Cow<'static, str>>) -> Reply {
        Reply::Sequence(vec![Reply::Error(text.into())])
    }

    pub fn bulk(b: &[u8]) -> Reply {
        Reply::Bulk(Bytes::copy_from_slice(b))
    }

    pub fn bulk_string(s: impl Into<String>) -> Reply {
        Reply::Bulk(Bytes::from(s.into()))
    }

    pub fn is_error(&self) -> bool {
        matches!(self, Reply::Error(_))
    }

    pub fn from_opt_bytes(b: Option<&[u8]>) -> Reply {
        b.map_or(Reply::Nil, Reply::bulk)
    }
}
