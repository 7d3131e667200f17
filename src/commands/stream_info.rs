//! XINFO STREAM, GROUPS, CONSUMERS and HELP (Redis 7.0's `xinfoCommand`).

use bytes::Bytes;

use super::access::read;
use super::help;
use super::streams::{entry_reply, id_reply, pick};
use super::{help_reply, subcommand_syntax_error, CmdError, Ctx};
use crate::db::stream::{Group, StreamId, StreamValue};
use crate::protocol::Reply;
use crate::spec::c_string_prefix;
use crate::util::{opt_is, parse_i64};

fn field(name: &'static str) -> Reply {
    Reply::Bulk(Bytes::from_static(name.as_bytes()))
}

fn stream_of<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> Result<&'c StreamValue, CmdError> {
    read(ctx, key, pick)?.ok_or(CmdError::NoSuchKey)
}

fn entries_read(g: &Group) -> Reply {
    if g.entries_read >= 0 {
        Reply::Int(g.entries_read)
    } else {
        Reply::Nil
    }
}

fn lag(s: &StreamValue, g: &Group) -> Reply {
    s.lag(g).map_or(Reply::Nil, Reply::Int)
}

/// The nodes of Redis's radix tree over the nodes' 16-byte master IDs (XINFO's
/// `radix-tree-nodes`): the root, each branching point, each key's leaf, and a compressed
/// node for every run of two bytes or more between them.
fn rax_nodes(keys: &[[u8; 16]]) -> i64 {
    fn lcp(a: &[u8; 16], b: &[u8; 16]) -> usize {
        a.iter().zip(b).take_while(|(x, y)| x == y).count()
    }
    fn below(keys: &[[u8; 16]], depth: usize) -> i64 {
        if keys.len() == 1 {
            return 1;
        }
        1 + children(keys, depth)
    }
    fn children(keys: &[[u8; 16]], depth: usize) -> i64 {
        let mut n = 0;
        let mut i = 0;
        while i < keys.len() {
            let b = keys[i][depth];
            let end = i + keys[i..].iter().take_while(|k| k[depth] == b).count();
            let group = &keys[i..end];
            let next = if group.len() == 1 { 16 } else { lcp(&group[0], &group[group.len() - 1]) };
            n += (next - depth >= 2) as i64 + below(group, next);
            i = end;
        }
        n
    }
    match keys {
        [] => 1,
        _ => {
            let shared = lcp(&keys[0], &keys[keys.len() - 1]);
            1 + if shared > 0 { below(keys, shared) } else { children(keys, 0) }
        }
    }
}

/// ```text
/// XINFO STREAM key [FULL [COUNT count]]
/// ```
pub fn xinfo_stream(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    // The key first, then the options, as Redis looks them up.
    let s = stream_of(ctx, &args[2])?;
    let opts = &args[3..];
    let (full, count) = match opts.len() {
        0 => (false, 10),
        1 | 3 => {
            if !opt_is(&opts[0], "full") {
                return Err(subcommand_syntax_error(args));
            }
            let mut count = 10;
            if opts.len() == 3 {
                if !opt_is(&opts[1], "count") {
                    return Err(subcommand_syntax_error(args));
                }
                count = parse_i64(&opts[2]).ok_or(CmdError::NotInteger)?;
                if count < 0 {
                    count = 10;
                }
            }
            (true, count as usize)
        }
        _ => return Err(subcommand_syntax_error(args)),
    };
    let masters: Vec<[u8; 16]> = s.layout().iter().map(|(id, _, _)| id.encode()).collect();
    let mut map = vec![
        (field("length"), Reply::Int(s.len() as i64)),
        (field("radix-tree-keys"), Reply::Int(s.node_count() as i64)),
        (field("radix-tree-nodes"), Reply::Int(rax_nodes(&masters))),
        (field("last-generated-id"), id_reply(s.last_id)),
        (field("max-deleted-entry-id"), id_reply(s.max_deleted_id)),
        (field("entries-added"), Reply::Int(s.entries_added as i64)),
        (field("recorded-first-entry-id"), id_reply(s.first_id)),
    ];
    if !full {
        let edge = |first: bool| match s.range(StreamId::MIN, StreamId::MAX, !first, 1).pop() {
            Some((id, f)) => entry_reply(id, f),
            None => Reply::Nil,
        };
        map.push((field("groups"), Reply::Int(s.groups.len() as i64)));
        map.push((field("first-entry"), edge(true)));
        map.push((field("last-entry"), edge(false)));
        return Ok(Reply::Map(map));
    }
    let limit = if count == 0 { usize::MAX } else { count };
    map.push((field("entries"), super::streams::entries_reply(s.range(StreamId::MIN, StreamId::MAX, false, count))));
    let groups = s
        .groups
        .iter()
        .map(|(name, g)| {
            let pel = g
                .pel
                .iter()
                .take(limit)
                .map(|(id, n)| {
                    Reply::Array(vec![
                        id_reply(*id),
                        Reply::Bulk(n.consumer.clone()),
                        Reply::Int(n.delivery_time),
                        Reply::Int(n.delivery_count as i64),
                    ])
                })
                .collect();
            let consumers = g
                .consumers
                .iter()
                .map(|(cname, c)| {
                    let pending = c
                        .pel
                        .iter()
                        .take(limit)
                        .filter_map(|id| g.pel.get(id).map(|n| (id, n)))
                        .map(|(id, n)| Reply::Array(vec![id_reply(*id), Reply::Int(n.delivery_time), Reply::Int(n.delivery_count as i64)]))
                        .collect();
                    Reply::Map(vec![
                        (field("name"), Reply::Bulk(cname.clone())),
                        (field("seen-time"), Reply::Int(c.seen_time)),
                        (field("pel-count"), Reply::Int(c.pel.len() as i64)),
                        (field("pending"), Reply::Array(pending)),
                    ])
                })
                .collect();
            Reply::Map(vec![
                (field("name"), Reply::Bulk(name.clone())),
                (field("last-delivered-id"), id_reply(g.last_id)),
                (field("entries-read"), entries_read(g)),
                (field("lag"), lag(s, g)),
                (field("pel-count"), Reply::Int(g.pel.len() as i64)),
                (field("pending"), Reply::Array(pel)),
                (field("consumers"), Reply::Array(consumers)),
            ])
        })
        .collect();
    map.push((field("groups"), Reply::Array(groups)));
    Ok(Reply::Map(map))
}

/// ```text
/// XINFO GROUPS key
/// ```
pub fn xinfo_groups(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let s = stream_of(ctx, &args[2])?;
    Ok(Reply::Array(
        s.groups
            .iter()
            .map(|(name, g)| {
                Reply::Map(vec![
                    (field("name"), Reply::Bulk(name.clone())),
                    (field("consumers"), Reply::Int(g.consumers.len() as i64)),
                    (field("pending"), Reply::Int(g.pel.len() as i64)),
                    (field("last-delivered-id"), id_reply(g.last_id)),
                    (field("entries-read"), entries_read(g)),
                    (field("lag"), lag(s, g)),
                ])
            })
            .collect(),
    ))
}

/// ```text
/// XINFO CONSUMERS key group
/// ```
pub fn xinfo_consumers(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let now = super::streams::wall_ms(ctx);
    let s = stream_of(ctx, &args[2])?;
    let Some(g) = s.groups.get(&args[3]) else {
        return Err(CmdError::other(format!(
            "NOGROUP No such consumer group '{}' for key name '{}'",
            c_string_prefix(&args[3], usize::MAX),
            c_string_prefix(&args[2], usize::MAX)
        )));
    };
    Ok(Reply::Array(
        g.consumers
            .iter()
            .map(|(name, c)| {
                Reply::Map(vec![
                    (field("name"), Reply::Bulk(name.clone())),
                    (field("pending"), Reply::Int(c.pel.len() as i64)),
                    (field("idle"), Reply::Int((now - c.seen_time).max(0))),
                ])
            })
            .collect(),
    ))
}

/// ```text
/// XINFO HELP
/// ```
pub fn xinfo_help(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(help_reply(help::XINFO))
}

#[cfg(test)]
mod tests {
    use super::rax_nodes;

    fn key(ms: u64) -> [u8; 16] {
        crate::db::stream::StreamId::new(ms, 0).encode()
    }

    #[test]
    fn rax_node_count_follows_the_radix_tree_shape() {
        assert_eq!(rax_nodes(&[]), 1);
        assert_eq!(rax_nodes(&[key(1)]), 2);
        // Keys differing only in their 8th byte: a shared prefix, a branch, two leaves
        // behind compressed tails.
        assert_eq!(rax_nodes(&[key(1), key(2)]), 6);
    }
}
