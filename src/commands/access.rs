//! Typed access to a key's value for the collection commands: the lookup (with lazy expiry),
//! the WRONGTYPE check, memory accounting on change, and deleting a collection that became
//! empty, written once for every type.

use bytes::Bytes;

use super::{CmdError, Ctx};
use crate::db::Value;

/// The value at `key` as type `T` for reading (`lookupKeyRead`): `Ok(None)` when absent,
/// WRONGTYPE when the key holds another type.
pub fn read<'c, T>(ctx: &'c mut Ctx<'_>, key: &[u8], pick: fn(&Value) -> Option<&T>) -> Result<Option<&'c T>, CmdError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    match ctx.ks.get(db, key, now) {
        None => Ok(None),
        Some(entry) => pick(&entry.value).map(Some).ok_or(CmdError::WrongType),
    }
}

/// Runs `f` on the value at `key` as type `T` (`lookupKeyWrite`), keeping the memory account
/// right, and deletes the key if the collection is empty afterwards (`is_empty`).
/// `Ok(None)` when the key is absent.
pub fn modify<T, R>(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    pick: fn(&mut Value) -> Option<&mut T>,
    is_empty: fn(&T) -> bool,
    f: impl FnOnce(&mut T) -> R,
) -> Result<Option<R>, CmdError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    match ctx.ks.write_position(db, key, now) {
        None => Ok(None),
        Some(pos) => modify_at(ctx, key, pos, pick, is_empty, f).map(Some),
    }
}

/// Like [`modify`], but creates the key with `create()` first when it is absent.
pub fn modify_or_create<T, R>(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    pick: fn(&mut Value) -> Option<&mut T>,
    is_empty: fn(&T) -> bool,
    create: impl FnOnce() -> Value,
    f: impl FnOnce(&mut T) -> R,
) -> Result<R, CmdError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let pos = match ctx.ks.write_position(db, key, now) {
        Some(pos) => pos,
        None => {
            let lru = crate::db::lru_clock(now);
            ctx.ks.db_mut(db).insert(Bytes::copy_from_slice(key), create(), None, lru);
            ctx.signal_created(key);
            // Not looked up again (a lookup counts an access: a new key's LFU counter
            // starts at Redis's 5, not 6).
            ctx.ks.db(db).position(key).ok_or(CmdError::NoSuchKey)?
        }
    };
    modify_at(ctx, key, pos, pick, is_empty, f)
}

/// The shared part: one hash lookup per command (the position from `write_position`), the
/// type check and the change inside `Db::modify_at`, which keeps the memory account.
fn modify_at<T, R>(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    pos: usize,
    pick: fn(&mut Value) -> Option<&mut T>,
    is_empty: fn(&T) -> bool,
    f: impl FnOnce(&mut T) -> R,
) -> Result<R, CmdError> {
    let db = ctx.db();
    let mut empty = false;
    let r = ctx.ks.db_mut(db).modify_at(pos, |entry| {
        let value = pick(&mut entry.value).ok_or(CmdError::WrongType)?;
        let r = f(value);
        empty = is_empty(value);
        Ok::<R, CmdError>(r)
    })?;
    if empty {
        ctx.ks.db_mut(db).remove(key);
    }
    Ok(r)
}
