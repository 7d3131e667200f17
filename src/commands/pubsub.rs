//! Pub/Sub: (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PUBLISH, SPUBLISH and PUBSUB.
//!
//! Subscriptions live on both sides: the client lists what it listens to (in subscription
//! order) and `ServerState::pubsub` maps each channel or pattern to its listeners. PUBLISH
//! encodes the message straight into each receiver's output buffer, in its own protocol (a
//! push frame in RESP3, an array in RESP2), and lists the receivers in `pushed` so the
//! executor releases their output after the command; the whole batch (a MULTI, later a
//! script) ends before anything leaves.

use bytes::Bytes;

use super::{help, help_reply, CmdError, Ctx};
use crate::glob::glob_match;
use crate::protocol::{encode_push, ProtocolVersion, Reply};
use crate::state::{Client, ClientId, ServerState, OUT_KEEP_BYTES};

/// The three subscription namespaces.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Channel,
    Pattern,
    Shard,
}

impl Kind {
    fn names(self) -> (&'static str, &'static str) {
        match self {
            Kind::Channel => ("subscribe", "unsubscribe"),
            Kind::Pattern => ("psubscribe", "punsubscribe"),
            Kind::Shard => ("ssubscribe", "sunsubscribe"),
        }
    }
}

fn client_list(client: &mut Client, kind: Kind) -> &mut Vec<Bytes> {
    match kind {
        Kind::Channel => &mut client.subs.channels,
        Kind::Pattern => &mut client.subs.patterns,
        Kind::Shard => &mut client.subs.shard_channels,
    }
}

fn server_map<'a>(ctx: &'a mut Ctx<'_>, kind: Kind) -> &'a mut std::collections::HashMap<Bytes, Vec<ClientId>> {
    match kind {
        Kind::Channel => &mut ctx.server.pubsub.channels,
        Kind::Pattern => &mut ctx.server.pubsub.patterns,
        Kind::Shard => &mut ctx.server.pubsub.shard_channels,
    }
}

/// The count Redis reports after a (un)subscription: shard subscriptions count apart.
fn count(client: &Client, kind: Kind) -> i64 {
    match kind {
        Kind::Shard => client.subs.shard_channels.len() as i64,
        _ => (client.subs.channels.len() + client.subs.patterns.len()) as i64,
    }
}

fn subscribe_generic(ctx: &mut Ctx<'_>, args: &[Bytes], kind: Kind) -> Result<Reply, CmdError> {
    // A client that expects one reply per command cannot subscribe (Redis lets SUBSCRIBE and
    // PSUBSCRIBE through inside EXEC, for backward compatibility, but not SSUBSCRIBE).
    if ctx.client.deny_blocking && (!ctx.client.in_exec() || matches!(kind, Kind::Shard)) {
        let name = String::from_utf8_lossy(&args[0]).to_uppercase();
        return Err(CmdError::Other(format!("ERR {name} isn't allowed for a DENY BLOCKING client").into()));
    }
    let mut replies = Vec::with_capacity(args.len() - 1);
    for name in &args[1..] {
        if !client_list(ctx.client, kind).contains(name) {
            client_list(ctx.client, kind).push(name.clone());
            let id = ctx.client.id;
            server_map(ctx, kind).entry(name.clone()).or_default().push(id);
        }
        replies.push(Reply::Push(vec![
            Reply::bulk(kind.names().0.as_bytes()),
            Reply::Bulk(name.clone()),
            Reply::Int(count(ctx.client, kind)),
        ]));
    }
    Ok(Reply::Sequence(replies))
}

fn remove_one(ctx: &mut Ctx<'_>, name: &Bytes, kind: Kind) -> bool {
    let list = client_list(ctx.client, kind);
    let Some(pos) = list.iter().position(|c| c == name) else { return false };
    list.remove(pos);
    let id = ctx.client.id;
    let map = server_map(ctx, kind);
    if let Some(ids) = map.get_mut(name) {
        ids.retain(|c| *c != id);
        if ids.is_empty() {
            map.remove(name);
        }
    }
    true
}

fn unsubscribe_generic(ctx: &mut Ctx<'_>, args: &[Bytes], kind: Kind) -> Result<Reply, CmdError> {
    let names: Vec<Bytes> = if args.len() > 1 { args[1..].to_vec() } else { client_list(ctx.client, kind).clone() };
    let verb = Reply::bulk(kind.names().1.as_bytes());
    if names.is_empty() {
        return Ok(Reply::Push(vec![verb, Reply::Nil, Reply::Int(count(ctx.client, kind))]));
    }
    let mut replies = Vec::with_capacity(names.len());
    for name in names {
        remove_one(ctx, &name, kind);
        replies.push(Reply::Push(vec![verb.clone(), Reply::Bulk(name), Reply::Int(count(ctx.client, kind))]));
    }
    Ok(Reply::Sequence(replies))
}

/// Drops every subscription of the client (RESET, disconnect).
pub fn unsubscribe_all(ctx: &mut Ctx<'_>) {
    for kind in [Kind::Channel, Kind::Pattern, Kind::Shard] {
        for name in client_list(ctx.client, kind).clone() {
            remove_one(ctx, &name, kind);
        }
    }
}

/// ```text
/// SUBSCRIBE channel [channel ...]
/// ```
pub fn subscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    subscribe_generic(ctx, args, Kind::Channel)
}

/// ```text
/// UNSUBSCRIBE [channel [channel ...]]
/// ```
pub fn unsubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    unsubscribe_generic(ctx, args, Kind::Channel)
}

/// ```text
/// PSUBSCRIBE pattern [pattern ...]
/// ```
pub fn psubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    subscribe_generic(ctx, args, Kind::Pattern)
}

/// ```text
/// PUNSUBSCRIBE [pattern [pattern ...]]
/// ```
pub fn punsubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    unsubscribe_generic(ctx, args, Kind::Pattern)
}

/// ```text
/// SSUBSCRIBE shardchannel [shardchannel ...]
/// ```
pub fn ssubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    subscribe_generic(ctx, args, Kind::Shard)
}

/// ```text
/// SUNSUBSCRIBE [shardchannel [shardchannel ...]]
/// ```
pub fn sunsubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    unsubscribe_generic(ctx, args, Kind::Shard)
}

/// Unsubscribes every client from the shard channels `gone` selects, each told with a
/// `sunsubscribe` message, as Redis's removeChannelsInSlot does when a cluster node stops
/// serving a slot. The running client is not in the server's map while it runs, so it is
/// passed apart; the others told are listed in `pushed` (for release).
pub fn drop_shard_channels(
    server: &mut ServerState,
    mut current: Option<&mut Client>,
    gone: impl Fn(&[u8]) -> bool,
    pushed: &mut Vec<ClientId>,
) {
    let channels: Vec<Bytes> = server.pubsub.shard_channels.keys().filter(|c| gone(c)).cloned().collect();
    for channel in channels {
        let ids = server.pubsub.shard_channels.remove(&channel).unwrap_or_default();
        for id in ids {
            let c = match current.as_deref_mut().filter(|c| c.id == id) {
                Some(c) => c,
                None => match server.clients.get_mut(&id) {
                    Some(c) => {
                        if !c.release_due {
                            c.release_due = true;
                            pushed.push(id);
                        }
                        c
                    }
                    None => continue,
                },
            };
            c.subs.shard_channels.retain(|x| *x != channel);
            let reply = Reply::Push(vec![
                Reply::Bulk(Bytes::from_static(b"sunsubscribe")),
                Reply::Bulk(channel.clone()),
                Reply::Int(c.subs.shard_channels.len() as i64),
            ]);
            let proto = c.push_proto();
            crate::protocol::encode_reply(&reply, proto, &mut c.out);
        }
    }
}

/// A message being delivered: its parts, encoded once per protocol version when it goes to
/// more than one receiver (straight into the receiver's output when it goes to one).
struct Delivery<'a> {
    parts: &'a [&'a [u8]],
    shared: bool,
    encoded: [Option<Vec<u8>>; 2],
}

impl<'a> Delivery<'a> {
    fn new(parts: &'a [&'a [u8]], receivers: usize) -> Delivery<'a> {
        Delivery { parts, shared: receivers > 1, encoded: [None, None] }
    }

    fn append_to(&mut self, c: &mut Client) {
        if !self.shared {
            encode_push(self.parts, c.push_proto(), &mut c.out);
            return;
        }
        let proto = c.push_proto();
        let slot = &mut self.encoded[(proto == ProtocolVersion::Resp3) as usize];
        let bytes = slot.get_or_insert_with(|| {
            let mut out = Vec::new();
            encode_push(self.parts, proto, &mut out);
            out
        });
        c.out.extend_from_slice(bytes);
    }
}

/// Appends `msg` to each receiver's output in its protocol, and marks the receivers for
/// release with this batch (once each: a subscriber already marked is not listed again).
/// The running client is not in the server's map while it runs, so it is passed apart.
fn deliver_all(
    clients: &mut crate::state::ClientTable,
    pushed: &mut Vec<ClientId>,
    current: &mut Option<&mut Client>,
    ids: &[ClientId],
    msg: &mut Delivery<'_>,
) {
    for &id in ids {
        if let Some(c) = current.as_deref_mut().filter(|c| c.id == id) {
            msg.append_to(c);
        } else if let Some(c) = clients.get_mut(&id) {
            let before = c.out.len();
            msg.append_to(c);
            // Listed again once when its output passes the limit of what may be kept back.
            let grew_past = before < OUT_KEEP_BYTES && c.out.len() >= OUT_KEEP_BYTES;
            if !c.release_due || grew_past {
                c.release_due = true;
                pushed.push(id);
            }
        }
    }
}

/// PUBLISH for any caller: returns the number of receivers.
pub fn publish_message(ctx: &mut Ctx<'_>, channel: &Bytes, message: &Bytes, shard: bool) -> i64 {
    if ctx.effects.private {
        return receivers(ctx.server, channel, shard);
    }
    publish_raw(ctx.server, Some(&mut *ctx.client), channel, message, shard, &mut ctx.effects.pushed)
}

/// PUBLISH where there may be no running client (the cron's expiry events). The receivers
/// whose output got the message are listed in `pushed` (for release).
pub fn publish_raw(
    server: &mut ServerState,
    mut current: Option<&mut Client>,
    channel: &Bytes,
    message: &Bytes,
    shard: bool,
    pushed: &mut Vec<ClientId>,
) -> i64 {
    let mut receivers = 0;
    let ServerState { pubsub, clients, .. } = server;
    let (map, verb): (_, &[u8]) = if shard { (&pubsub.shard_channels, b"smessage") } else { (&pubsub.channels, b"message") };
    if let Some(ids) = map.get(channel) {
        let parts = [verb, &channel[..], &message[..]];
        let mut msg = Delivery::new(&parts, ids.len());
        deliver_all(clients, pushed, &mut current, ids, &mut msg);
        receivers += ids.len() as i64;
    }
    if !shard {
        for (pattern, ids) in pubsub.patterns.iter().filter(|(p, _)| glob_match(p, channel, false)) {
            let parts: [&[u8]; 4] = [b"pmessage", &pattern[..], &channel[..], &message[..]];
            let mut msg = Delivery::new(&parts, ids.len());
            deliver_all(clients, pushed, &mut current, ids, &mut msg);
            receivers += ids.len() as i64;
        }
    }
    receivers
}

/// How many receivers a PUBLISH (`shard`: SPUBLISH) would reach now, delivering nothing.
fn receivers(server: &ServerState, channel: &Bytes, shard: bool) -> i64 {
    let pubsub = &server.pubsub;
    if shard {
        return pubsub.shard_channels.get(channel).map_or(0, |ids| ids.len() as i64);
    }
    let direct = pubsub.channels.get(channel).map_or(0, |ids| ids.len());
    let patterns: usize = pubsub.patterns.iter().filter(|(p, _)| glob_match(p, channel, false)).map(|(_, ids)| ids.len()).sum();
    (direct + patterns) as i64
}

/// ```text
/// PUBLISH channel message
/// ```
pub fn publish(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let receivers = publish_message(ctx, &args[1], &args[2], false);
    propagate(ctx, args, false);
    Ok(Reply::Int(receivers))
}

/// Where a PUBLISH goes besides this node's subscribers: in cluster mode over the bus to
/// every node (SPUBLISH: to the nodes serving this shard), and not to replicas, as Redis
/// does; else to replicas.
fn propagate(ctx: &mut Ctx<'_>, args: &[Bytes], shard: bool) {
    match ctx.server.cluster.as_deref_mut() {
        Some(c) => {
            if !ctx.effects.private {
                c.propagate_publish(&args[1], &args[2], shard);
            }
            ctx.effects.logged = super::Logged::As(Vec::new());
        }
        None => ctx.effects.logged = super::Logged::ToReplicas,
    }
}

/// ```text
/// SPUBLISH shardchannel message
/// ```
pub fn spublish(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let receivers = publish_message(ctx, &args[1], &args[2], true);
    propagate(ctx, args, true);
    Ok(Reply::Int(receivers))
}

fn channels_matching(map: &std::collections::HashMap<Bytes, Vec<ClientId>>, pattern: Option<&Bytes>) -> Reply {
    let mut names: Vec<&Bytes> = map.keys().filter(|c| pattern.is_none_or(|p| glob_match(p, c, false))).collect();
    names.sort();
    Reply::Array(names.into_iter().map(|c| Reply::Bulk(c.clone())).collect())
}

/// ```text
/// PUBSUB CHANNELS [pattern]
/// ```
pub fn pubsub_channels(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    // One pattern at most (the table's arity lets more through, Redis's handler does not).
    if args.len() > 3 {
        return Err(crate::commands::subcommand_syntax_error(args));
    }
    Ok(channels_matching(&ctx.server.pubsub.channels, args.get(2)))
}

/// ```text
/// PUBSUB SHARDCHANNELS [pattern]
/// ```
pub fn pubsub_shardchannels(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if args.len() > 3 {
        return Err(crate::commands::subcommand_syntax_error(args));
    }
    Ok(channels_matching(&ctx.server.pubsub.shard_channels, args.get(2)))
}

fn numsub(map: &std::collections::HashMap<Bytes, Vec<ClientId>>, names: &[Bytes]) -> Reply {
    let mut out = Vec::with_capacity(names.len() * 2);
    for name in names {
        out.push(Reply::Bulk(name.clone()));
        out.push(Reply::Int(map.get(name).map_or(0, |ids| ids.len() as i64)));
    }
    Reply::Array(out)
}

/// ```text
/// PUBSUB NUMSUB [channel ...]
/// ```
pub fn pubsub_numsub(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(numsub(&ctx.server.pubsub.channels, &args[2..]))
}

/// ```text
/// PUBSUB SHARDNUMSUB [shardchannel ...]
/// ```
pub fn pubsub_shardnumsub(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(numsub(&ctx.server.pubsub.shard_channels, &args[2..]))
}

/// ```text
/// PUBSUB NUMPAT
/// ```
pub fn pubsub_numpat(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(Reply::Int(ctx.server.pubsub.patterns.len() as i64))
}

pub fn pubsub_help(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(help_reply(help::PUBSUB))
}

/// Publishes the pending keyspace events: `__keyspace@<db>__:<key>` carries the event name,
/// `__keyevent@<db>__:<event>` the key (per the K and E flags).
pub fn publish_notifications(
    server: &mut ServerState,
    mut current: Option<&mut Client>,
    notifications: Vec<crate::notify::Notification>,
    pushed: &mut Vec<ClientId>,
) {
    let flags = server.settings.notify_flags;
    for n in notifications {
        if flags & crate::notify::KEYSPACE != 0 {
            let mut channel = format!("__keyspace@{}__:", n.db).into_bytes();
            channel.extend_from_slice(&n.key);
            publish_raw(server, current.as_deref_mut(), &Bytes::from(channel), &Bytes::from_static(n.event.as_bytes()), false, pushed);
        }
        if flags & crate::notify::KEYEVENT != 0 {
            let channel = Bytes::from(format!("__keyevent@{}__:{}", n.db, n.event));
            publish_raw(server, current.as_deref_mut(), &channel, &n.key, false, pushed);
        }
    }
}
