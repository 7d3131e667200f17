//! GEO commands: GEOADD, GEOHASH, GEOPOS, GEODIST, GEORADIUS, GEORADIUSBYMEMBER (and their
//! `_RO` forms), GEOSEARCH and GEOSEARCHSTORE, with redis-server 7.0's replies, error texts
//! and checking order. Points live in ordinary sorted sets whose scores are 52-bit geohashes
//! (see [`geohash`]); a search scans only the score ranges of the geohash cells covering
//! the area (the centre cell and up to 8 neighbours), as Redis does.

#[path = "../db/geohash.rs"]
pub mod geohash;

use bytes::Bytes;

use self::geohash::{Shape, ShapeKind, LAT_MAX, LAT_MIN, LONG_MAX, LONG_MIN};
use super::access::read;
use super::{CmdError, Ctx};
use crate::db::zset::ops::{zset_add, AddOut, CH, NX, XX};
use crate::db::zset::{ScoreRange, ZSetValue};
use crate::db::Value;
use crate::notify;
use crate::protocol::Reply;
use crate::util::{parse_f64, parse_i64};

// Geo keys are sorted sets: the same typed access as the sorted-set commands.
use super::zsets::{add_to_zset, limits, pick};
use crate::util::opt_is;

/// `getDoubleFromObjectOrReply` with a custom message.
fn double_or(arg: &[u8], msg: &'static str) -> Result<f64, CmdError> {
    parse_f64(arg).ok_or(CmdError::other(msg))
}

/// `extractLongLatOrReply`.
fn extract_lonlat(lon: &[u8], lat: &[u8]) -> Result<[f64; 2], CmdError> {
    let x = parse_f64(lon).ok_or(CmdError::NotFloat)?;
    let y = parse_f64(lat).ok_or(CmdError::NotFloat)?;
    if !(LONG_MIN..=LONG_MAX).contains(&x) || !(LAT_MIN..=LAT_MAX).contains(&y) {
        return Err(CmdError::other(format!("ERR invalid longitude,latitude pair {x:.6},{y:.6}")));
    }
    Ok([x, y])
}

/// `extractUnitOrReply`: meters per unit.
fn extract_unit(arg: &[u8]) -> Result<f64, CmdError> {
    if opt_is(arg, "m") {
        Ok(1.0)
    } else if opt_is(arg, "km") {
        Ok(1000.0)
    } else if opt_is(arg, "ft") {
        Ok(0.3048)
    } else if opt_is(arg, "mi") {
        Ok(1609.34)
    } else {
        Err(CmdError::other("ERR unsupported unit provided. please use M, KM, FT, MI"))
    }
}

/// `extractDistanceOrReply`: (radius in the unit, meters per unit).
fn extract_distance(radius: &[u8], unit: &[u8]) -> Result<(f64, f64), CmdError> {
    let r = double_or(radius, "ERR need numeric radius")?;
    if r < 0.0 {
        return Err(CmdError::other("ERR radius cannot be negative"));
    }
    Ok((r, extract_unit(unit)?))
}

/// `extractBoxOrReply`: (width, height, meters per unit).
fn extract_box(width: &[u8], height: &[u8], unit: &[u8]) -> Result<(f64, f64, f64), CmdError> {
    let w = double_or(width, "ERR need numeric width")?;
    let h = double_or(height, "ERR need numeric height")?;
    if h < 0.0 || w < 0.0 {
        return Err(CmdError::other("ERR height or width cannot be negative"));
    }
    Ok((w, h, extract_unit(unit)?))
}

/// Redis's `ld2string(..., LD_STR_HUMAN)`: `%.17Lf` without trailing zeros.
fn human_text(v: f64) -> String {
    let mut s = format!("{v:.17}");
    if s.contains('.') {
        let trimmed = s.trim_end_matches('0').trim_end_matches('.').len();
        s.truncate(trimmed);
    }
    if s == "-0" {
        s = "0".into();
    }
    s
}

/// `addReplyHumanLongDouble`: a bulk string in RESP2. In RESP3 Redis sends a double (`,`)
/// with the same text; the reply type carrying preformatted double text does not exist yet,
/// so RESP3 gets the plain double (same value, `%.17g` digits).
fn human_double(v: f64, _resp3: bool) -> Reply {
    Reply::DoubleText(human_text(v))
}

/// `addReplyDoubleDistance`: Redis's `fixedpoint_d2string(d, 4)` (the value times 10^4
/// rounded with `llrint`, ties to even, then written with 4 decimals) as a bulk string in
/// both protocols.
fn distance_reply(d: f64) -> Reply {
    Reply::Bulk(Bytes::from(fixed4(d)))
}

fn fixed4(d: f64) -> String {
    if d == 0.0 {
        return "0.0000".into();
    }
    let scaled = (d * 10000.0).round_ties_even();
    // llrint of an out-of-range value gives LLONG_MIN on x86.
    let v = if scaled.is_finite() && scaled.abs() < 9.2e18 { scaled as i64 } else { i64::MIN };
    let sign = if v < 0 { "-" } else { "" };
    let u = v.unsigned_abs();
    format!("{sign}{}.{:04}", u / 10000, u % 10000)
}

fn coord_reply(xy: [f64; 2], resp3: bool) -> Reply {
    Reply::Array(vec![human_double(xy[0], resp3), human_double(xy[1], resp3)])
}

// ---------------------------------------------------------------------------------------
// GEOADD / GEOHASH / GEOPOS / GEODIST

/// ```text
/// GEOADD key [NX | XX] [CH] longitude latitude member [longitude latitude member ...]
/// ```
pub fn geoadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let mut flags = 0u8;
    let mut idx = 2;
    while idx < args.len() {
        let a = &args[idx];
        if opt_is(a, "nx") {
            flags |= NX;
        } else if opt_is(a, "xx") {
            flags |= XX;
        } else if opt_is(a, "ch") {
            flags |= CH;
        } else {
            break;
        }
        idx += 1;
    }
    let rest = args.len() - idx;
    if !rest.is_multiple_of(3) || (flags & NX != 0 && flags & XX != 0) {
        return Err(CmdError::Syntax);
    }
    let mut points = Vec::with_capacity(rest / 3);
    for p in args[idx..].chunks(3) {
        let xy = extract_lonlat(&p[0], &p[1])?;
        let score = geohash::score_of(xy[0], xy[1]).unwrap_or(0.0);
        points.push((score, &p[2]));
    }
    // What ZADD (which Redis hands the rewritten command to) says about no elements.
    if points.is_empty() {
        return Err(CmdError::Syntax);
    }
    let key = &args[1];
    let (mut added, mut updated) = (0u64, 0u64);
    let lim = limits(ctx);
    add_to_zset(ctx, key, flags & XX != 0, |z| {
        for (score, member) in &points {
            match zset_add(z, *score, member, flags, lim) {
                AddOut::Added(_) => added += 1,
                AddOut::Updated(_) => updated += 1,
                _ => {}
            }
        }
    })?;
    ctx.dirty(added + updated);
    // Redis runs GEOADD as a ZADD.
    if added + updated > 0 {
        ctx.signal_modified(key);
        ctx.notify(notify::ZSET, "zadd", key);
    }
    Ok(Reply::Int((if flags & CH != 0 { added + updated } else { added }) as i64))
}

/// ```text
/// GEOHASH key [member [member ...]]
/// ```
pub fn geohash(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let z = read(ctx, &args[1], pick)?;
    let out = args[2..]
        .iter()
        .map(|m| match z.and_then(|z| z.score(m)) {
            Some(score) => Reply::bulk(&geohash::geohash_string(score)),
            None => Reply::Nil,
        })
        .collect();
    Ok(Reply::Array(out))
}

/// ```text
/// GEOPOS key [member [member ...]]
/// ```
pub fn geopos(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let resp3 = ctx.resp3();
    let z = read(ctx, &args[1], pick)?;
    let out = args[2..]
        .iter()
        .map(|m| match z.and_then(|z| z.score(m)) {
            Some(score) => coord_reply(geohash::lonlat_of(score), resp3),
            None => Reply::NilArray,
        })
        .collect();
    Ok(Reply::Array(out))
}

/// ```text
/// GEODIST key member1 member2 [M | KM | FT | MI]
/// ```
pub fn geodist(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let mut to_meter = 1.0;
    if args.len() == 5 {
        to_meter = extract_unit(&args[4])?;
    } else if args.len() > 5 {
        return Err(CmdError::Syntax);
    }
    let Some(z) = read(ctx, &args[1], pick)? else {
        return Ok(Reply::Nil);
    };
    let (Some(s1), Some(s2)) = (z.score(&args[2]), z.score(&args[3])) else {
        return Ok(Reply::Nil);
    };
    let a = geohash::lonlat_of(s1);
    let b = geohash::lonlat_of(s2);
    Ok(distance_reply(geohash::distance(a[0], a[1], b[0], b[1]) / to_meter))
}

// ---------------------------------------------------------------------------------------
// GEORADIUS family and GEOSEARCH[STORE]

const RADIUS_COORDS: u8 = 1;
const RADIUS_MEMBER: u8 = 2;
const RADIUS_NOSTORE: u8 = 4;
const GEOSEARCH: u8 = 8;
const GEOSEARCHSTORE: u8 = 16;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Sort {
    None,
    Asc,
    Desc,
}

/// A parsed search request.
struct Query {
    shape: Shape,
    withdist: bool,
    withhash: bool,
    withcoords: bool,
    sort: Sort,
    any: bool,
    count: i64,
    storekey: Option<Bytes>,
    storedist: bool,
}

/// One point found (`geoPoint`).
struct GeoPoint {
    xy: [f64; 2],
    dist: f64,
    score: f64,
    member: Bytes,
}

fn member_lonlat(z: &ZSetValue, member: &[u8]) -> Result<[f64; 2], CmdError> {
    z.score(member).map(geohash::lonlat_of).ok_or(CmdError::other("ERR could not decode requested zset member"))
}

/// The argument parsing of `georadiusGeneric`, in its order (errors included).
fn parse_query(args: &[Bytes], flags: u8, z: Option<&ZSetValue>) -> Result<Query, CmdError> {
    let mut shape = Shape { kind: ShapeKind::Circle { radius: 0.0 }, xy: [0.0, 0.0], conversion: 0.0 };
    let mut storekey = None;
    let base = if flags & RADIUS_COORDS != 0 {
        shape.xy = extract_lonlat(&args[2], &args[3])?;
        let (radius, conversion) = extract_distance(&args[4], &args[5])?;
        shape.kind = ShapeKind::Circle { radius };
        shape.conversion = conversion;
        6
    } else if flags & RADIUS_MEMBER != 0 {
        if let Some(z) = z {
            shape.xy = member_lonlat(z, &args[2])?;
            let (radius, conversion) = extract_distance(&args[3], &args[4])?;
            shape.kind = ShapeKind::Circle { radius };
            shape.conversion = conversion;
        }
        5
    } else if flags & GEOSEARCHSTORE != 0 {
        storekey = Some(args[1].clone());
        3
    } else {
        2
    };
    let mut q = Query {
        shape,
        withdist: false,
        withhash: false,
        withcoords: false,
        sort: Sort::None,
        any: false,
        count: 0,
        storekey,
        storedist: false,
    };
    let (mut frommember, mut fromloc, mut byradius, mut bybox) = (false, false, false, false);
    let search = flags & GEOSEARCH != 0;
    let can_store = flags & RADIUS_NOSTORE == 0 && !search;
    let opts = &args[base.min(args.len())..];
    let remaining = opts.len();
    let mut i = 0;
    while i < remaining {
        let arg = &opts[i];
        if opt_is(arg, "withdist") {
            q.withdist = true;
        } else if opt_is(arg, "withhash") {
            q.withhash = true;
        } else if opt_is(arg, "withcoord") {
            q.withcoords = true;
        } else if opt_is(arg, "any") {
            q.any = true;
        } else if opt_is(arg, "asc") {
            q.sort = Sort::Asc;
        } else if opt_is(arg, "desc") {
            q.sort = Sort::Desc;
        } else if opt_is(arg, "count") && i + 1 < remaining {
            q.count = parse_i64(&opts[i + 1]).ok_or(CmdError::NotInteger)?;
            if q.count <= 0 {
                return Err(CmdError::other("ERR COUNT must be > 0"));
            }
            i += 1;
        } else if opt_is(arg, "store") && i + 1 < remaining && can_store {
            q.storekey = Some(opts[i + 1].clone());
            q.storedist = false;
            i += 1;
        } else if opt_is(arg, "storedist") && i + 1 < remaining && can_store {
            q.storekey = Some(opts[i + 1].clone());
            q.storedist = true;
            i += 1;
        } else if opt_is(arg, "storedist") && search && flags & GEOSEARCHSTORE != 0 {
            q.storedist = true;
        } else if opt_is(arg, "frommember") && i + 1 < remaining && search && !fromloc {
            if let Some(z) = z {
                q.shape.xy = member_lonlat(z, &opts[i + 1])?;
            }
            frommember = true;
            i += 1;
        } else if opt_is(arg, "fromlonlat") && i + 2 < remaining && search && !frommember {
            q.shape.xy = extract_lonlat(&opts[i + 1], &opts[i + 2])?;
            fromloc = true;
            i += 2;
        } else if opt_is(arg, "byradius") && i + 2 < remaining && search && !bybox {
            let (radius, conversion) = extract_distance(&opts[i + 1], &opts[i + 2])?;
            q.shape.kind = ShapeKind::Circle { radius };
            q.shape.conversion = conversion;
            byradius = true;
            i += 2;
        } else if opt_is(arg, "bybox") && i + 3 < remaining && search && !byradius {
            let (width, height, conversion) = extract_box(&opts[i + 1], &opts[i + 2], &opts[i + 3])?;
            q.shape.kind = ShapeKind::Box { width, height };
            q.shape.conversion = conversion;
            bybox = true;
            i += 3;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    if q.storekey.is_some() && (q.withdist || q.withhash || q.withcoords) {
        let what = if flags & GEOSEARCHSTORE != 0 { "GEOSEARCHSTORE" } else { "STORE option in GEORADIUS" };
        return Err(CmdError::other(format!("ERR {what} is not compatible with WITHDIST, WITHHASH and WITHCOORD options")));
    }
    let name = || {
        let a = &args[0];
        let end = a.iter().position(|&b| b == 0).unwrap_or(a.len());
        String::from_utf8_lossy(&a[..end]).into_owned()
    };
    if search && !(frommember || fromloc) {
        return Err(CmdError::other(format!("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {}", name())));
    }
    if search && !(byradius || bybox) {
        return Err(CmdError::other(format!("ERR exactly one of BYRADIUS and BYBOX can be specified for {}", name())));
    }
    if q.any && q.count == 0 {
        return Err(CmdError::other("ERR the ANY argument requires COUNT argument"));
    }
    Ok(q)
}

/// `geoGetPointsInRange`: the points of one cell's score range `[min, max)` that lie in the
/// shape, scanned from the first score in range with the skiplist (never the whole set).
fn points_in_cell(z: &ZSetValue, cell: geohash::HashBits, shape: &Shape, out: &mut Vec<GeoPoint>, limit: usize) {
    let min = cell.align52() as f64;
    let next = geohash::HashBits { bits: cell.bits.wrapping_add(1), step: cell.step };
    let max = next.align52() as f64;
    let range = ScoreRange { min, max, minex: false, maxex: true };
    let mut cur = z.first_in_score(&range).map(|(_, id)| id);
    while let Some(id) = cur {
        let (member, score) = z.get(id);
        if !range.lte_max(score) {
            break;
        }
        if let Some((xy, dist)) = shape.contains(score) {
            out.push(GeoPoint { xy, dist, score, member: Bytes::copy_from_slice(member) });
        }
        if limit != 0 && out.len() >= limit {
            break;
        }
        cur = z.next(id);
    }
}

/// `membersOfAllNeighbors`: the centre cell and its neighbours in Redis's order, skipping a
/// cell equal to the one processed just before (large radii) and stopping at `limit`.
fn search(z: &ZSetValue, shape: &Shape, limit: usize) -> Vec<GeoPoint> {
    let cells = geohash::search_cells(shape);
    let mut out = Vec::new();
    let mut last_processed = 0;
    for (i, cell) in cells.iter().enumerate() {
        if cell.is_zero() {
            continue;
        }
        if last_processed != 0 && *cell == cells[last_processed] {
            continue;
        }
        if !out.is_empty() && limit != 0 && out.len() >= limit {
            break;
        }
        points_in_cell(z, *cell, shape, &mut out, limit);
        last_processed = i;
    }
    out
}

/// `georadiusGeneric`.
fn georadius_generic(ctx: &mut Ctx<'_>, args: &[Bytes], src: usize, flags: u8) -> Result<Reply, CmdError> {
    let resp3 = ctx.resp3();
    let (q, found) = {
        let z = read(ctx, &args[src], pick)?;
        let mut q = parse_query(args, flags, z)?;
        match z {
            None => (q, None),
            Some(z) => {
                // COUNT without ordering returns the closest ones (ANY excepted).
                if q.count != 0 && q.sort == Sort::None && !q.any {
                    q.sort = Sort::Asc;
                }
                let limit = if q.any { q.count as usize } else { 0 };
                let points = search(z, &q.shape, limit);
                (q, Some(points))
            }
        }
    };
    let Some(mut points) = found else {
        // No source key: an empty reply, or STORE deletes the destination.
        return Ok(match &q.storekey {
            Some(dst) => {
                ctx.delete_key(dst);
                Reply::Int(0)
            }
            None => Reply::Array(Vec::new()),
        });
    };
    let returned = if q.count == 0 { points.len() } else { points.len().min(q.count as usize) };
    match q.sort {
        Sort::None => {}
        Sort::Asc => points.sort_by(|a, b| a.dist.partial_cmp(&b.dist).unwrap_or(std::cmp::Ordering::Equal)),
        Sort::Desc => points.sort_by(|a, b| b.dist.partial_cmp(&a.dist).unwrap_or(std::cmp::Ordering::Equal)),
    }
    points.truncate(returned);
    let conversion = q.shape.conversion;
    let Some(dst) = q.storekey else {
        let options = q.withdist as usize + q.withhash as usize + q.withcoords as usize;
        let out = points
            .into_iter()
            .map(|gp| {
                if options == 0 {
                    return Reply::Bulk(gp.member);
                }
                let mut item = Vec::with_capacity(options + 1);
                item.push(Reply::Bulk(gp.member));
                if q.withdist {
                    item.push(distance_reply(gp.dist / conversion));
                }
                if q.withhash {
                    item.push(Reply::Int(gp.score as i64));
                }
                if q.withcoords {
                    item.push(coord_reply(gp.xy, resp3));
                }
                Reply::Array(item)
            })
            .collect();
        return Ok(Reply::Array(out));
    };
    if returned == 0 {
        ctx.delete_key(&dst);
        return Ok(Reply::Int(0));
    }
    let (entries, value) = limits(ctx);
    let maxlen = points.iter().map(|p| p.member.len()).max().unwrap_or(0);
    let small = returned as i64 <= entries && maxlen as i64 <= value;
    let mut z = if small { ZSetValue::new() } else { ZSetValue::new_skiplist() };
    for gp in &points {
        let score = if q.storedist { gp.dist / conversion } else { gp.score };
        z.insert(&gp.member, score, i64::MAX, i64::MAX);
    }
    ctx.set_key(&dst, Value::ZSet(z));
    ctx.dirty(returned as u64);
    ctx.notify(notify::ZSET, if flags & GEOSEARCH != 0 { "geosearchstore" } else { "georadiusstore" }, &dst);
    Ok(Reply::Int(returned as i64))
}

/// ```text
/// GEORADIUS key longitude latitude radius <M | KM | FT | MI> [WITHCOORD] [WITHDIST]
///   [WITHHASH] [COUNT count [ANY]] [ASC | DESC] [STORE key] [STOREDIST key]
/// ```
pub fn georadius(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    georadius_generic(ctx, args, 1, RADIUS_COORDS)
}

/// ```text
/// GEORADIUS_RO key longitude latitude radius <M | KM | FT | MI> [WITHCOORD] [WITHDIST]
///   [WITHHASH] [COUNT count [ANY]] [ASC | DESC]
/// ```
pub fn georadius_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    georadius_generic(ctx, args, 1, RADIUS_COORDS | RADIUS_NOSTORE)
}

/// ```text
/// GEORADIUSBYMEMBER key member radius <M | KM | FT | MI> [WITHCOORD] [WITHDIST] [WITHHASH]
///   [COUNT count [ANY]] [ASC | DESC] [STORE key] [STOREDIST key]
/// ```
pub fn georadiusbymember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    georadius_generic(ctx, args, 1, RADIUS_MEMBER)
}

/// ```text
/// GEORADIUSBYMEMBER_RO key member radius <M | KM | FT | MI> [WITHCOORD] [WITHDIST]
///   [WITHHASH] [COUNT count [ANY]] [ASC | DESC]
/// ```
pub fn georadiusbymember_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    georadius_generic(ctx, args, 1, RADIUS_MEMBER | RADIUS_NOSTORE)
}

/// ```text
/// GEOSEARCH key <FROMMEMBER member | FROMLONLAT longitude latitude>
///   <BYRADIUS radius <M | KM | FT | MI> | BYBOX width height <M | KM | FT | MI>>
///   [ASC | DESC] [COUNT count [ANY]] [WITHCOORD] [WITHDIST] [WITHHASH]
/// ```
pub fn geosearch(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    georadius_generic(ctx, args, 1, GEOSEARCH)
}

/// ```text
/// GEOSEARCHSTORE destination source <FROMMEMBER member | FROMLONLAT longitude latitude>
///   <BYRADIUS radius <M | KM | FT | MI> | BYBOX width height <M | KM | FT | MI>>
///   [ASC | DESC] [COUNT count [ANY]] [STOREDIST]
/// ```
pub fn geosearchstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    georadius_generic(ctx, args, 2, GEOSEARCH | GEOSEARCHSTORE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_format() {
        assert_eq!(human_text(13.361389338970184), "13.36138933897018433");
        assert_eq!(human_text(-0.0), "0");
        assert_eq!(human_text(2.0), "2");
        assert_eq!(fixed4(5745416.56755), "5745416.5676");
        assert_eq!(fixed4(0.5), "0.5000");
        assert_eq!(fixed4(166.27415156960033), "166.2742");
    }
}
