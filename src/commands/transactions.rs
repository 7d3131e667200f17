//! MULTI, EXEC, DISCARD, WATCH, UNWATCH.
//!
//! MULTI only marks the client: from then on the executor queues its commands (answering
//! QUEUED) instead of running them. EXEC asks the executor to run the queue atomically, the
//! way a blocking command asks to be parked: it states `Next::Exec`. WATCH records
//! (db, key) pairs in `ServerState::watchers`; the executor marks every watcher of a key that a
//! command modifies (or that expires, or that FLUSHDB/FLUSHALL/SWAPDB wipe), and EXEC then
//! answers a null array.

use bytes::Bytes;

use super::{CmdError, Ctx};
use crate::protocol::Reply;

/// ```text
/// MULTI
/// ```
pub fn multi(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    if ctx.client.txn.multi.is_some() {
        return Err(CmdError::other("ERR MULTI calls can not be nested"));
    }
    ctx.client.txn.multi = Some(Vec::new());
    Ok(Reply::OK)
}

/// ```text
/// EXEC
/// ```
pub fn exec(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    if ctx.client.txn.multi.is_none() {
        return Err(CmdError::other("ERR EXEC without MULTI"));
    }
    ctx.then(super::Next::Exec);
    Ok(Reply::NoReply)
}

/// ```text
/// DISCARD
/// ```
pub fn discard(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    if ctx.client.txn.multi.is_none() {
        return Err(CmdError::other("ERR DISCARD without MULTI"));
    }
    discard_transaction(ctx);
    Ok(Reply::OK)
}

/// Forgets the queued commands and every watched key (DISCARD, EXEC, RESET).
pub fn discard_transaction(ctx: &mut Ctx<'_>) {
    ctx.client.txn.multi = None;
    ctx.client.txn.multi_dirty = false;
    unwatch_all(ctx);
}

/// ```text
/// WATCH key [key ...]
/// ```
pub fn watch(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    if ctx.client.txn.multi.is_some() {
        return Err(CmdError::other("ERR WATCH inside MULTI is not allowed"));
    }
    let db = ctx.db();
    for key in &args[1..] {
        let slot = (db, key.clone());
        if ctx.client.txn.watched.contains(&slot) {
            continue;
        }
        // A key already logically expired is remembered as such (and left in place, as
        // Redis does): only a change after WATCH can abort the transaction.
        let now = ctx.now_ms;
        if ctx.ks.db(db).expire_at(key).is_some_and(|at| at <= now) {
            ctx.client.txn.watched_expired.push(slot.clone());
        }
        ctx.server.watchers.entry(slot.clone()).or_default().push(ctx.client.id);
        ctx.client.txn.watched.push(slot);
    }
    Ok(Reply::OK)
}

/// ```text
/// UNWATCH
/// ```
pub fn unwatch(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    unwatch_all(ctx);
    Ok(Reply::OK)
}

fn unwatch_all(ctx: &mut Ctx<'_>) {
    let id = ctx.client.id;
    ctx.client.txn.watched_expired.clear();
    for slot in std::mem::take(&mut ctx.client.txn.watched) {
        if let Some(ids) = ctx.server.watchers.get_mut(&slot) {
            ids.retain(|c| *c != id);
            if ids.is_empty() {
                ctx.server.watchers.remove(&slot);
            }
        }
    }
    ctx.client.txn.cas_dirty = false;
}
