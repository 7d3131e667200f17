//! Command errors, and their mapping to Redis's error texts in one place.

use std::borrow::Cow;

use crate::protocol::Reply;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CmdError {
    #[error("WRONGTYPE Operation against a key holding the wrong kind of value")]
    WrongType,
    #[error("ERR value is not an integer or out of range")]
    NotInteger,
    #[error("ERR value is not a valid float")]
    NotFloat,
    #[error("ERR syntax error")]
    Syntax,
    #[error("ERR increment or decrement would overflow")]
    Overflow,
    #[error("ERR no such key")]
    NoSuchKey,
    #[error("ERR DB index is out of range")]
    DbIndexOutOfRange,
    #[error("ERR invalid expire time in '{0}' command")]
    InvalidExpire(String),
    #[error("ERR string exceeds maximum allowed size (proto-max-bulk-len)")]
    StringTooLong,
    /// Any other error: the full text, code word first.
    #[error("{0}")]
    Other(Cow<'static, str>),
}

impl CmdError {
    pub fn other(s: impl Into<Cow<'static, str>>) -> Self {
        CmdError::Other(s.into())
    }

    pub fn into_reply(self) -> Reply {
        match self {
            CmdError::Other(s) => Reply::Error(s),
            e => Reply::Error(e.to_string().into()),
        }
    }
}
