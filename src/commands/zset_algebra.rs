//! ZINTER, ZUNION, ZDIFF and their STORE forms: sorted-set algebra with weights and
//! aggregates (Redis's `zunionInterDiffGenericCommand`).

use super::zsets::{limits, pairs_reply, store_result};
use super::{arg_i64, CmdError, Ctx};
use crate::db::zset::ops::{self, Aggregate, Src};
use crate::db::zset::ZSetValue;
use crate::db::Value;
use crate::protocol::Reply;
use crate::util::opt_is;
use crate::util::parse_f64;
use bytes::Bytes;

/// Which combination of the inputs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SetOp {
    Inter,
    Union,
    Diff,
}

/// Redis's `zunionInterDiffGenericCommand`. `name` is the command's name for errors.
fn setop_generic(ctx: &mut Ctx<'_>, args: &[Bytes], dst: Option<&Bytes>, op: SetOp, name: &str) -> Result<Reply, CmdError> {
    let nk_idx = if dst.is_some() { 2 } else { 1 };
    let setnum = arg_i64(&args[nk_idx])?;
    if setnum < 1 {
        return Err(CmdError::other(format!("ERR at least 1 input key is needed for '{name}' command")));
    }
    if setnum > (args.len() - nk_idx - 1) as i64 {
        return Err(CmdError::Syntax);
    }
    let setnum = setnum as usize;
    let keys = &args[nk_idx + 1..nk_idx + 1 + setnum];
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut present = Vec::with_capacity(setnum);
    for key in keys {
        match ctx.ks.get(db, key, now).map(|e| &e.value) {
            None => present.push(false),
            Some(Value::ZSet(_) | Value::Set(_)) => present.push(true),
            Some(_) => return Err(CmdError::WrongType),
        }
    }
    let mut weights = vec![1.0f64; setnum];
    let mut agg = Aggregate::Sum;
    let mut withscores = false;
    let mut j = nk_idx + 1 + setnum;
    while j < args.len() {
        let remaining = args.len() - j;
        if op != SetOp::Diff && remaining > setnum && opt_is(&args[j], "weights") {
            for (i, w) in weights.iter_mut().enumerate() {
                *w = parse_f64(&args[j + 1 + i]).ok_or_else(|| CmdError::other("ERR weight value is not a float"))?;
            }
            j += 1 + setnum;
        } else if op != SetOp::Diff && remaining >= 2 && opt_is(&args[j], "aggregate") {
            let a = &args[j + 1];
            agg = if opt_is(a, "sum") {
                Aggregate::Sum
            } else if opt_is(a, "min") {
                Aggregate::Min
            } else if opt_is(a, "max") {
                Aggregate::Max
            } else {
                return Err(CmdError::Syntax);
            };
            j += 2;
        } else if dst.is_none() && opt_is(&args[j], "withscores") {
            withscores = true;
            j += 1;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let dbref = ctx.ks.db(db);
    let mut srcs: Vec<(Src<'_>, f64)> = keys
        .iter()
        .zip(&present)
        .zip(&weights)
        .map(|((k, &p), &w)| {
            let src = match dbref.peek(k).map(|e| &e.value) {
                Some(Value::ZSet(z)) if p => Src::Z(z),
                Some(Value::Set(s)) if p => Src::S(s),
                _ => Src::Missing,
            };
            (src, w)
        })
        .collect();
    let result = match op {
        SetOp::Inter => {
            srcs.sort_by_key(|(s, _)| s.len());
            ops::inter(&srcs, agg)
        }
        SetOp::Union => {
            srcs.sort_by_key(|(s, _)| s.len());
            ops::union(&srcs, agg)
        }
        SetOp::Diff => ops::diff(&srcs),
    };
    let mut result = result;
    ops::sort_pairs(&mut result);
    match dst {
        None => Ok(pairs_reply(ctx, result, withscores)),
        Some(dst) => {
            let (entries, value) = limits(ctx);
            let maxlen = result.iter().map(|(m, _)| m.len()).max().unwrap_or(0);
            let small = result.len() as i64 <= entries && maxlen as i64 <= value;
            let mut z = if small { ZSetValue::new() } else { ZSetValue::new_skiplist() };
            for (m, s) in &result {
                z.insert(m, *s, i64::MAX, i64::MAX);
            }
            let event = match op {
                SetOp::Inter => "zinterstore",
                SetOp::Union => "zunionstore",
                SetOp::Diff => "zdiffstore",
            };
            Ok(store_result(ctx, dst, z, event))
        }
    }
}

/// ```text
/// ZINTER numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE <SUM | MIN | MAX>] [WITHSCORES]
/// ```
pub fn zinter(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    setop_generic(ctx, args, None, SetOp::Inter, "zinter")
}

/// ```text
/// ZINTERSTORE destination numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE <SUM | MIN | MAX>]
/// ```
pub fn zinterstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    setop_generic(ctx, args, Some(&args[1]), SetOp::Inter, "zinterstore")
}

/// ```text
/// ZUNION numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE <SUM | MIN | MAX>] [WITHSCORES]
/// ```
pub fn zunion(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    setop_generic(ctx, args, None, SetOp::Union, "zunion")
}

/// ```text
/// ZUNIONSTORE destination numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE <SUM | MIN | MAX>]
/// ```
pub fn zunionstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    setop_generic(ctx, args, Some(&args[1]), SetOp::Union, "zunionstore")
}

/// ```text
/// ZDIFF numkeys key [key ...] [WITHSCORES]
/// ```
pub fn zdiff(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    setop_generic(ctx, args, None, SetOp::Diff, "zdiff")
}

/// ```text
/// ZDIFFSTORE destination numkeys key [key ...]
/// ```
pub fn zdiffstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    setop_generic(ctx, args, Some(&args[1]), SetOp::Diff, "zdiffstore")
}
