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
    match ctx.ks.get_mut(db, key, now) {
        None => return Ok(None),
        Some(entry) => {
            if pick(&mut entry.value).is_none() {
                return Err(CmdError::WrongType);
            }
        }
    }
    let mut empty = false;
    let r = ctx.ks.db_mut(db).modify(key, |entry| {
        // The type was checked above; the executor is single-threaded, nothing changed since.
        let value = pick(&mut entry.value)?;
        let r = f(value);
        empty = is_empty(value);
        Some(r)
    });
    if empty {
        ctx.ks.db_mut(db).remove(key);
    }
    Ok(r.flatten())
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
    if ctx.ks.get_mut(db, key, now).is_none() {
        let lru = crate::db::lru_clock(now);
        ctx.ks.db_mut(db).insert(Bytes::copy_from_slice(key), create(), None, lru);
    }
    modify(ctx, key, pick, is_empty, f)?.ok_or(CmdError::NoSuchKey)
}
