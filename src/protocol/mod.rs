//! The wire protocol: RESP2/RESP3 request decoding and reply encoding, with no I/O.
//!
//! The decoder is incremental (it keeps its place between reads, like Redis's query buffer
//! parser) so a frame that arrives one byte at a time, or a pipeline of a million tiny
//! commands, costs linear time. The encoder turns a [`Reply`] into bytes for the protocol
//! version the client chose with HELLO.

mod decoder;
mod encode;
mod reply;
mod split;

pub use decoder::{DecodeLimits, ProtocolError, RequestDecoder, PROTO_INLINE_MAX_SIZE};
pub use encode::{encode_push, encode_reply, encode_request, ProtocolVersion};
pub use reply::Reply;
pub use split::split_args;
