//! Redis 7.0's cluster bus messages (`clusterMsg` in cluster.h), decoded and encoded byte for
//! byte: a 2,256-byte header (network byte order) then a body by message type. The first
//! piece of cluster mode (issue 34): nothing runs the bus yet; tests/cluster_bus.rs talks to
//! a real redis-server's bus with it, and the `cluster_bus` fuzz target feeds it garbage.
//!
//! Checks follow Redis's `clusterIsValidPacket`: the signature, the protocol version, the
//! total length against the buffer and against what the type and counts imply (exactly:
//! PUBLISH and MODULE carry their data where Redis's structs keep a placeholder).

use thiserror::Error;

/// Bytes of a node name (40 hex characters, no terminator).
pub const NAME_LEN: usize = 40;
/// Bytes of an IP field (`NET_IP_STR_LEN`), NUL-padded.
pub const IP_LEN: usize = 46;
/// The slot bitmap's bytes (16,384 slots).
pub const SLOT_BYTES: usize = 16384 / 8;
/// The header's size: where the body starts.
pub const HEADER_LEN: usize = 2256;
/// One gossip section.
pub const GOSSIP_LEN: usize = 104;
/// The bus protocol version Redis 7.0 speaks.
pub const PROTO_VER: u16 = 1;

/// Message types (`CLUSTERMSG_TYPE_*`).
pub mod kind {
    pub const PING: u16 = 0;
    pub const PONG: u16 = 1;
    pub const MEET: u16 = 2;
    pub const FAIL: u16 = 3;
    pub const PUBLISH: u16 = 4;
    pub const FAILOVER_AUTH_REQUEST: u16 = 5;
    pub const FAILOVER_AUTH_ACK: u16 = 6;
    pub const UPDATE: u16 = 7;
    pub const MFSTART: u16 = 8;
    pub const MODULE: u16 = 9;
    pub const PUBLISHSHARD: u16 = 10;
}

/// Node flags (`CLUSTER_NODE_*`).
pub mod flag {
    pub const MASTER: u16 = 1;
    pub const SLAVE: u16 = 2;
    pub const PFAIL: u16 = 4;
    pub const FAIL: u16 = 8;
    pub const MYSELF: u16 = 16;
    pub const HANDSHAKE: u16 = 32;
    pub const NOADDR: u16 = 64;
    pub const MEET: u16 = 128;
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum BusError {
    #[error("message shorter than its header")]
    Short,
    #[error("bad signature")]
    Signature,
    #[error("protocol version {0}")]
    Version(u16),
    #[error("total length {declared} for {actual} bytes")]
    Length { declared: u32, actual: usize },
    #[error("length {0} does not match message type {1}")]
    TypeLength(usize, u16),
    #[error("bad extension")]
    Extension,
}

/// The header every message carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub kind: u16,
    /// The sender's client port.
    pub port: u16,
    /// Gossip sections (PING, PONG, MEET).
    pub count: u16,
    pub current_epoch: u64,
    pub config_epoch: u64,
    pub offset: u64,
    pub sender: [u8; NAME_LEN],
    pub myslots: Box<[u8; SLOT_BYTES]>,
    /// The sender's primary, all zeros for none.
    pub slaveof: [u8; NAME_LEN],
    pub myip: [u8; IP_LEN],
    pub extensions: u16,
    pub pport: u16,
    pub cport: u16,
    pub flags: u16,
    pub state: u8,
    pub mflags: [u8; 3],
}

/// One node a PING, PONG or MEET tells about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gossip {
    pub nodename: [u8; NAME_LEN],
    pub ping_sent: u32,
    pub pong_received: u32,
    pub ip: [u8; IP_LEN],
    pub port: u16,
    pub cport: u16,
    pub flags: u16,
    pub pport: u16,
}

/// A PING/PONG/MEET extension: its type and its data (padding included, as sent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extension {
    pub kind: u16,
    pub data: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    Ping {
        gossip: Vec<Gossip>,
        extensions: Vec<Extension>,
    },
    Fail {
        about: [u8; NAME_LEN],
    },
    Publish {
        channel: Vec<u8>,
        message: Vec<u8>,
    },
    Update {
        config_epoch: u64,
        nodename: [u8; NAME_LEN],
        slots: Box<[u8; SLOT_BYTES]>,
    },
    Module {
        module_id: u64,
        kind: u8,
        payload: Vec<u8>,
    },
    /// FAILOVER_AUTH_REQUEST, FAILOVER_AUTH_ACK, MFSTART, and types this version does not
    /// know (their bytes after the header, kept).
    Other(Vec<u8>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub header: Header,
    pub body: Body,
}

struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], BusError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.buf.len()).ok_or(BusError::Short)?;
        let out = &self.buf[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], BusError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, BusError> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, BusError> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    fn u32(&mut self) -> Result<u32, BusError> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, BusError> {
        Ok(u64::from_be_bytes(self.array()?))
    }
}

/// The total length a message declares (bytes 4..8), once 8 bytes have arrived: how much
/// to read before [`decode`].
pub fn declared_len(buf: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(buf.get(4..8)?.try_into().ok()?))
}

/// Decodes one whole message (exactly `buf`).
pub fn decode(buf: &[u8]) -> Result<Message, BusError> {
    if buf.len() < HEADER_LEN {
        return Err(BusError::Short);
    }
    let mut r = Reader { buf, at: 0 };
    if r.take(4)? != b"RCmb" {
        return Err(BusError::Signature);
    }
    let totlen = r.u32()?;
    if totlen as usize != buf.len() {
        return Err(BusError::Length { declared: totlen, actual: buf.len() });
    }
    let ver = r.u16()?;
    if ver != PROTO_VER {
        return Err(BusError::Version(ver));
    }
    let port = r.u16()?;
    let kind = r.u16()?;
    let count = r.u16()?;
    let header = Header {
        kind,
        port,
        count,
        current_epoch: r.u64()?,
        config_epoch: r.u64()?,
        offset: r.u64()?,
        sender: r.array()?,
        myslots: Box::new(r.array()?),
        slaveof: r.array()?,
        myip: r.array()?,
        extensions: r.u16()?,
        pport: {
            r.take(30)?;
            r.u16()?
        },
        cport: r.u16()?,
        flags: r.u16()?,
        state: r.u8()?,
        mflags: r.array()?,
    };
    let rest = buf.len() - HEADER_LEN;
    let wrong = || BusError::TypeLength(buf.len(), kind);
    let body = match kind {
        kind::PING | kind::PONG | kind::MEET => {
            let gossip_bytes = count as usize * GOSSIP_LEN;
            if rest < gossip_bytes {
                return Err(wrong());
            }
            let mut gossip = Vec::with_capacity(count as usize);
            for _ in 0..count {
                gossip.push(Gossip {
                    nodename: r.array()?,
                    ping_sent: r.u32()?,
                    pong_received: r.u32()?,
                    ip: r.array()?,
                    port: r.u16()?,
                    cport: r.u16()?,
                    flags: r.u16()?,
                    pport: {
                        let p = r.u16()?;
                        r.take(2)?;
                        p
                    },
                });
            }
            let mut extensions = Vec::with_capacity(header.extensions.min(64) as usize);
            for _ in 0..header.extensions {
                let len = r.u32()? as usize;
                let ext_kind = r.u16()?;
                r.take(2)?;
                // The length counts its own 8-byte header; extensions stay 8-byte aligned.
                if len < 8 || !len.is_multiple_of(8) {
                    return Err(BusError::Extension);
                }
                extensions.push(Extension { kind: ext_kind, data: r.take(len - 8).map_err(|_| BusError::Extension)?.to_vec() });
            }
            if r.at != buf.len() {
                return Err(wrong());
            }
            Body::Ping { gossip, extensions }
        }
        kind::FAIL => {
            if rest != NAME_LEN {
                return Err(wrong());
            }
            Body::Fail { about: r.array()? }
        }
        kind::PUBLISH | kind::PUBLISHSHARD => {
            // Redis sizes it as its struct less the 8-byte placeholder plus the data.
            if rest < 8 {
                return Err(wrong());
            }
            let channel_len = r.u32()? as usize;
            let message_len = r.u32()? as usize;
            let data = channel_len.checked_add(message_len).ok_or_else(wrong)?;
            if rest != 8 + data {
                return Err(wrong());
            }
            let channel = r.take(channel_len)?.to_vec();
            let message = r.take(message_len)?.to_vec();
            Body::Publish { channel, message }
        }
        kind::UPDATE => {
            if rest != 8 + NAME_LEN + SLOT_BYTES {
                return Err(wrong());
            }
            Body::Update { config_epoch: r.u64()?, nodename: r.array()?, slots: Box::new(r.array()?) }
        }
        kind::MODULE => {
            if rest < 13 {
                return Err(wrong());
            }
            let module_id = r.u64()?;
            let len = r.u32()? as usize;
            let module_kind = r.u8()?;
            if Some(rest) != len.checked_add(13) {
                return Err(wrong());
            }
            Body::Module { module_id, kind: module_kind, payload: r.take(len)?.to_vec() }
        }
        kind::FAILOVER_AUTH_REQUEST | kind::FAILOVER_AUTH_ACK | kind::MFSTART if rest != 0 => return Err(wrong()),
        _ => Body::Other(buf[HEADER_LEN..].to_vec()),
    };
    Ok(Message { header, body })
}

/// Encodes a message; a PING, PONG or MEET's `count` and `extensions` are taken from its
/// body. Reserved bytes are written as zeros (what decoding skips).
pub fn encode(m: &Message) -> Vec<u8> {
    let h = &m.header;
    let mut out = Vec::with_capacity(HEADER_LEN + 256);
    let (count, extensions) = match &m.body {
        Body::Ping { gossip, extensions } => (gossip.len() as u16, extensions.len() as u16),
        _ => (h.count, h.extensions),
    };
    out.extend_from_slice(b"RCmb");
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&PROTO_VER.to_be_bytes());
    out.extend_from_slice(&h.port.to_be_bytes());
    out.extend_from_slice(&h.kind.to_be_bytes());
    out.extend_from_slice(&count.to_be_bytes());
    out.extend_from_slice(&h.current_epoch.to_be_bytes());
    out.extend_from_slice(&h.config_epoch.to_be_bytes());
    out.extend_from_slice(&h.offset.to_be_bytes());
    out.extend_from_slice(&h.sender);
    out.extend_from_slice(&h.myslots[..]);
    out.extend_from_slice(&h.slaveof);
    out.extend_from_slice(&h.myip);
    out.extend_from_slice(&extensions.to_be_bytes());
    out.extend_from_slice(&[0; 30]);
    out.extend_from_slice(&h.pport.to_be_bytes());
    out.extend_from_slice(&h.cport.to_be_bytes());
    out.extend_from_slice(&h.flags.to_be_bytes());
    out.push(h.state);
    out.extend_from_slice(&h.mflags);
    debug_assert_eq!(out.len(), HEADER_LEN);
    match &m.body {
        Body::Ping { gossip, extensions } => {
            for g in gossip {
                out.extend_from_slice(&g.nodename);
                out.extend_from_slice(&g.ping_sent.to_be_bytes());
                out.extend_from_slice(&g.pong_received.to_be_bytes());
                out.extend_from_slice(&g.ip);
                out.extend_from_slice(&g.port.to_be_bytes());
                out.extend_from_slice(&g.cport.to_be_bytes());
                out.extend_from_slice(&g.flags.to_be_bytes());
                out.extend_from_slice(&g.pport.to_be_bytes());
                out.extend_from_slice(&[0; 2]);
            }
            for e in extensions {
                let padded = e.data.len().div_ceil(8) * 8;
                out.extend_from_slice(&((8 + padded) as u32).to_be_bytes());
                out.extend_from_slice(&e.kind.to_be_bytes());
                out.extend_from_slice(&[0; 2]);
                out.extend_from_slice(&e.data);
                out.resize(out.len() + padded - e.data.len(), 0);
            }
        }
        Body::Fail { about } => out.extend_from_slice(about),
        Body::Publish { channel, message } => {
            out.extend_from_slice(&(channel.len() as u32).to_be_bytes());
            out.extend_from_slice(&(message.len() as u32).to_be_bytes());
            out.extend_from_slice(channel);
            out.extend_from_slice(message);
        }
        Body::Update { config_epoch, nodename, slots } => {
            out.extend_from_slice(&config_epoch.to_be_bytes());
            out.extend_from_slice(nodename);
            out.extend_from_slice(&slots[..]);
        }
        Body::Module { module_id, kind, payload } => {
            out.extend_from_slice(&module_id.to_be_bytes());
            out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
            out.push(*kind);
            out.extend_from_slice(payload);
        }
        Body::Other(bytes) => out.extend_from_slice(bytes),
    }
    let total = out.len() as u32;
    out[4..8].copy_from_slice(&total.to_be_bytes());
    out
}

/// A NUL-padded text field (an IP) as a string.
pub fn field_text(field: &[u8]) -> String {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).into_owned()
}

/// `text` in a NUL-padded field of `N` bytes (cut to fit, one NUL kept).
pub fn text_field<const N: usize>(text: &str) -> [u8; N] {
    let mut out = [0u8; N];
    let n = text.len().min(N - 1);
    out[..n].copy_from_slice(&text.as_bytes()[..n]);
    out
}

impl Header {
    /// A header from `sender` with every other field empty.
    pub fn new(kind: u16, sender: [u8; NAME_LEN]) -> Header {
        Header {
            kind,
            port: 0,
            count: 0,
            current_epoch: 0,
            config_epoch: 0,
            offset: 0,
            sender,
            myslots: Box::new([0; SLOT_BYTES]),
            slaveof: [0; NAME_LEN],
            myip: [0; IP_LEN],
            extensions: 0,
            pport: 0,
            cport: 0,
            flags: 0,
            state: 0,
            mflags: [0; 3],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ping() -> Message {
        let mut header = Header::new(kind::PING, [b'a'; NAME_LEN]);
        header.port = 7000;
        header.cport = 17000;
        header.flags = flag::MASTER;
        header.myslots[0] = 0x80;
        header.myip = text_field("127.0.0.1");
        let gossip = vec![Gossip {
            nodename: [b'b'; NAME_LEN],
            ping_sent: 1,
            pong_received: 2,
            ip: text_field("10.0.0.2"),
            port: 7001,
            cport: 17001,
            flags: flag::SLAVE,
            pport: 0,
        }];
        let extensions = vec![Extension { kind: 0, data: b"host\0\0\0\0".to_vec() }];
        Message { header, body: Body::Ping { gossip, extensions } }
    }

    #[test]
    fn messages_round_trip() {
        let m = ping();
        let bytes = encode(&m);
        assert_eq!(bytes.len(), HEADER_LEN + GOSSIP_LEN + 16);
        let back = decode(&bytes).unwrap();
        assert_eq!(back.header.count, 1);
        assert_eq!(back.header.extensions, 1);
        assert_eq!(back.body, m.body);
        assert_eq!(field_text(&back.header.myip), "127.0.0.1");
        for body in [
            Body::Fail { about: [b'c'; NAME_LEN] },
            Body::Publish { channel: b"ch".to_vec(), message: b"hello world".to_vec() },
            Body::Publish { channel: b"a".to_vec(), message: b"b".to_vec() },
            Body::Update { config_epoch: 9, nodename: [b'd'; NAME_LEN], slots: Box::new([0xff; SLOT_BYTES]) },
            Body::Other(Vec::new()),
        ] {
            let kind = match body {
                Body::Fail { .. } => kind::FAIL,
                Body::Publish { .. } => kind::PUBLISH,
                Body::Update { .. } => kind::UPDATE,
                _ => kind::MFSTART,
            };
            let m = Message { header: Header::new(kind, [b'e'; NAME_LEN]), body };
            assert_eq!(decode(&encode(&m)).unwrap().body, m.body);
        }
    }

    #[test]
    fn bad_messages_are_refused() {
        let bytes = encode(&ping());
        assert_eq!(decode(&bytes[..100]), Err(BusError::Short));
        let mut wrong = bytes.clone();
        wrong[0] = b'X';
        assert_eq!(decode(&wrong), Err(BusError::Signature));
        let mut cut = bytes.clone();
        cut.pop();
        assert!(matches!(decode(&cut), Err(BusError::Length { .. })));
        let mut ver = bytes.clone();
        ver[9] = 2;
        assert_eq!(decode(&ver), Err(BusError::Version(2)));
        let mut count = bytes.clone();
        count[15] = 200;
        assert!(decode(&count).is_err());
    }
}
