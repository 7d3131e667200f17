//! Encoding replies (RESP2 or RESP3) and requests (multibulk) into bytes.

use super::Reply;
use crate::util::format_double;
use crate::util::format_i64_into as fmt_i64;

/// The protocol a client speaks: 2 until it says `HELLO 3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProtocolVersion {
    #[default]
    Resp2,
    Resp3,
}

/// Appends the encoding of `reply` to `out`.
pub fn encode_reply(reply: &Reply, proto: ProtocolVersion, out: &mut Vec<u8>) {
    let resp3 = proto == ProtocolVersion::Resp3;
    match reply {
        Reply::Status(s) => line(out, b'+', s.as_bytes()),
        Reply::Error(s) => line(out, b'-', s.as_bytes()),
        Reply::Int(n) => int_line(out, b':', *n),
        Reply::Bulk(b) => bulk(out, b),
        Reply::Nil => out.extend_from_slice(if resp3 { b"_\r\n" } else { b"$-1\r\n" }),
        Reply::NilArray => out.extend_from_slice(if resp3 { b"_\r\n" } else { b"*-1\r\n" }),
        Reply::Array(items) => {
            int_line(out, b'*', items.len() as i64);
            for item in items {
                encode_reply(item, proto, out);
            }
        }
        Reply::Map(pairs) => {
            if resp3 {
                int_line(out, b'%', pairs.len() as i64);
            } else {
                int_line(out, b'*', 2 * pairs.len() as i64);
            }
            for (k, v) in pairs {
                encode_reply(k, proto, out);
                encode_reply(v, proto, out);
            }
        }
        Reply::Attribute(pairs) => {
            if resp3 {
                int_line(out, b'|', pairs.len() as i64);
                for (k, v) in pairs {
                    encode_reply(k, proto, out);
                    encode_reply(v, proto, out);
                }
            }
        }
        Reply::Set(items) => {
            int_line(out, if resp3 { b'~' } else { b'*' }, items.len() as i64);
            for item in items {
                encode_reply(item, proto, out);
            }
        }
        Reply::Push(items) => {
            int_line(out, if resp3 { b'>' } else { b'*' }, items.len() as i64);
            for item in items {
                encode_reply(item, proto, out);
            }
        }
        Reply::Double(d) => {
            let text = format_double(*d);
            if resp3 {
                line(out, b',', text.as_bytes());
            } else {
                bulk(out, text.as_bytes());
            }
        }
        Reply::DoubleText(text) => {
            if resp3 {
                line(out, b',', text.as_bytes());
            } else {
                bulk(out, text.as_bytes());
            }
        }
        Reply::Bool(b) => {
            if resp3 {
                out.extend_from_slice(if *b { b"#t\r\n" } else { b"#f\r\n" });
            } else {
                int_line(out, b':', *b as i64);
            }
        }
        Reply::Verbatim(format, text) => {
            if resp3 {
                int_line(out, b'=', (text.len() + 4) as i64);
                out.extend_from_slice(format);
                out.push(b':');
                out.extend_from_slice(text);
                out.extend_from_slice(b"\r\n");
            } else {
                bulk(out, text);
            }
        }
        Reply::NoReply => {}
        Reply::Sequence(items) => {
            for item in items {
                encode_reply(item, proto, out);
            }
        }
        Reply::BigNumber(n) => {
            if resp3 {
                line(out, b'(', n.as_bytes());
            } else {
                bulk(out, n.as_bytes());
            }
        }
    }
}

/// Appends `args` as a multibulk request (the form clients send and the log stores).
pub fn encode_request<A: AsRef<[u8]>>(args: &[A], out: &mut Vec<u8>) {
    bulks(out, b'*', args);
}

/// Appends a Pub/Sub message (`message`/`pmessage`... and its bulk parts): a push frame in
/// RESP3, an array in RESP2. Written straight from the parts, with no `Reply` built.
pub fn encode_push(parts: &[&[u8]], proto: ProtocolVersion, out: &mut Vec<u8>) {
    out.reserve(8 + parts.iter().map(|p| p.len() + 16).sum::<usize>());
    bulks(out, if proto == ProtocolVersion::Resp3 { b'>' } else { b'*' }, parts);
}

/// An aggregate header (`prefix` and the count) followed by each item as a bulk string.
fn bulks<A: AsRef<[u8]>>(out: &mut Vec<u8>, prefix: u8, items: &[A]) {
    int_line(out, prefix, items.len() as i64);
    for item in items {
        bulk(out, item.as_ref());
    }
}

/// A simple string or error line. A CR or LF inside would end the line early and break the
/// stream, so they go out as spaces (as Redis maps them in its error and status replies),
/// whatever the reply was built from.
fn line(out: &mut Vec<u8>, prefix: u8, text: &[u8]) {
    out.push(prefix);
    let start = out.len();
    out.extend_from_slice(text);
    if text.iter().any(|&b| b == b'\r' || b == b'\n') {
        for b in &mut out[start..] {
            if *b == b'\r' || *b == b'\n' {
                *b = b' ';
            }
        }
    }
    out.extend_from_slice(b"\r\n");
}

fn int_line(out: &mut Vec<u8>, prefix: u8, n: i64) {
    out.push(prefix);
    let mut buf = itoa_buf();
    out.extend_from_slice(fmt_i64(n, &mut buf));
    out.extend_from_slice(b"\r\n");
}

fn bulk(out: &mut Vec<u8>, data: &[u8]) {
    int_line(out, b'$', data.len() as i64);
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

fn itoa_buf() -> [u8; 20] {
    [0u8; 20]
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn enc(r: &Reply, p: ProtocolVersion) -> String {
        let mut out = Vec::new();
        encode_reply(r, p, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn resp2_and_resp3_shapes() {
        use ProtocolVersion::*;
        assert_eq!(enc(&Reply::Int(i64::MIN), Resp2), ":-9223372036854775808\r\n");
        assert_eq!(enc(&Reply::Nil, Resp2), "$-1\r\n");
        assert_eq!(enc(&Reply::NilArray, Resp2), "*-1\r\n");
        assert_eq!(enc(&Reply::Nil, Resp3), "_\r\n");
        let map = Reply::Map(vec![(Reply::Bulk(Bytes::from_static(b"a")), Reply::Int(1))]);
        assert_eq!(enc(&map, Resp2), "*2\r\n$1\r\na\r\n:1\r\n");
        assert_eq!(enc(&map, Resp3), "%1\r\n$1\r\na\r\n:1\r\n");
        assert_eq!(enc(&Reply::Double(1.5), Resp3), ",1.5\r\n");
        assert_eq!(enc(&Reply::Double(1.5), Resp2), "$3\r\n1.5\r\n");
        assert_eq!(enc(&Reply::Verbatim(*b"txt", Bytes::from_static(b"hi")), Resp3), "=6\r\ntxt:hi\r\n");
        assert_eq!(enc(&Reply::Error("ERR a\r\nb".into()), Resp2), "-ERR a  b\r\n");
        assert_eq!(enc(&Reply::Status("x\ny".into()), Resp3), "+x y\r\n");
    }
}
