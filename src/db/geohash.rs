//! Geohash maths, ported from Redis 7.0's geohash.c / geohash_helper.c so scores, decoded
//! coordinates, distances and the cells a search visits are bit-for-bit Redis's.
//!
//! A score is a 52-bit interleaved geohash (step 26): latitude bits at even positions,
//! longitude bits at odd ones, over longitude [-180, 180] and latitude
//! [-85.05112878, 85.05112878] (the Web Mercator limits).

pub const STEP_MAX: u8 = 26;
pub const LAT_MIN: f64 = -85.05112878;
pub const LAT_MAX: f64 = 85.05112878;
pub const LONG_MIN: f64 = -180.0;
pub const LONG_MAX: f64 = 180.0;

const D_R: f64 = std::f64::consts::PI / 180.0;
pub const EARTH_RADIUS_IN_METERS: f64 = 6372797.560856;
const MERCATOR_MAX: f64 = 20037726.37;

/// A geohash of `step` bits per coordinate (`GeoHashBits`). `bits == 0 && step == 0` is
/// the "zero" (excluded) cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct HashBits {
    pub bits: u64,
    pub step: u8,
}

impl HashBits {
    pub fn is_zero(&self) -> bool {
        self.bits == 0 && self.step == 0
    }

    /// `geohashAlign52Bits`: the hash as a 52-bit score prefix.
    pub fn align52(&self) -> u64 {
        self.bits << (52 - self.step as u32 * 2)
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    pub min: f64,
    pub max: f64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Area {
    pub longitude: Range,
    pub latitude: Range,
}

pub const WGS84_LONG: Range = Range { min: LONG_MIN, max: LONG_MAX };
pub const WGS84_LAT: Range = Range { min: LAT_MIN, max: LAT_MAX };
/// The standard geohash ranges (GEOHASH re-encodes with these).
pub const STD_LAT: Range = Range { min: -90.0, max: 90.0 };

fn deg_rad(ang: f64) -> f64 {
    ang * D_R
}

fn rad_deg(ang: f64) -> f64 {
    ang / D_R
}

/// Interleaves the low 32 bits of `x` (even positions) and `y` (odd positions).
fn interleave64(xlo: u32, ylo: u32) -> u64 {
    const B: [u64; 5] = [0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F, 0x00FF00FF00FF00FF, 0x0000FFFF0000FFFF];
    const S: [u32; 5] = [1, 2, 4, 8, 16];
    let mut x = xlo as u64;
    let mut y = ylo as u64;
    for i in (0..5).rev() {
        x = (x | (x << S[i])) & B[i];
        y = (y | (y << S[i])) & B[i];
    }
    x | (y << 1)
}

/// The inverse: even bits to the low 32 bits, odd bits to the high 32 bits.
fn deinterleave64(interleaved: u64) -> u64 {
    const B: [u64; 6] =
        [0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F, 0x00FF00FF00FF00FF, 0x0000FFFF0000FFFF, 0x00000000FFFFFFFF];
    const S: [u32; 6] = [0, 1, 2, 4, 8, 16];
    let mut x = interleaved;
    let mut y = interleaved >> 1;
    for i in 0..6 {
        x = (x | (x >> S[i])) & B[i];
        y = (y | (y >> S[i])) & B[i];
    }
    x | (y << 32)
}

/// `geohashEncode`: `None` outside the WGS84 limits or the given ranges.
pub fn encode(long_range: Range, lat_range: Range, longitude: f64, latitude: f64, step: u8) -> Option<HashBits> {
    if step > 32 || step == 0 {
        return None;
    }
    if !(-180.0..=180.0).contains(&longitude) || !(-85.05112878..=85.05112878).contains(&latitude) {
        return None;
    }
    if latitude < lat_range.min || latitude > lat_range.max || longitude < long_range.min || longitude > long_range.max {
        return None;
    }
    let mut lat_offset = (latitude - lat_range.min) / (lat_range.max - lat_range.min);
    let mut long_offset = (longitude - long_range.min) / (long_range.max - long_range.min);
    lat_offset *= (1u64 << step) as f64;
    long_offset *= (1u64 << step) as f64;
    Some(HashBits { bits: interleave64(lat_offset as u32, long_offset as u32), step })
}

/// `geohashDecode`: the cell's bounds.
pub fn decode(hash: HashBits, long_range: Range, lat_range: Range) -> Option<Area> {
    if hash.is_zero() {
        return None;
    }
    let sep = deinterleave64(hash.bits);
    let lat_scale = lat_range.max - lat_range.min;
    let long_scale = long_range.max - long_range.min;
    let ilato = sep as u32;
    let ilono = (sep >> 32) as u32;
    let div = (1u64 << hash.step) as f64;
    Some(Area {
        latitude: Range {
            min: lat_range.min + (ilato as f64 * 1.0 / div) * lat_scale,
            max: lat_range.min + (ilato.wrapping_add(1) as f64 * 1.0 / div) * lat_scale,
        },
        longitude: Range {
            min: long_range.min + (ilono as f64 * 1.0 / div) * long_scale,
            max: long_range.min + (ilono.wrapping_add(1) as f64 * 1.0 / div) * long_scale,
        },
    })
}

/// `geohashDecodeAreaToLongLat`: the cell centre, clamped to the WGS84 limits.
fn area_center(area: &Area) -> [f64; 2] {
    let lon = ((area.longitude.min + area.longitude.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let lat = ((area.latitude.min + area.latitude.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    [lon, lat]
}

/// C's `(uint64_t)double` as gcc compiles it on x86-64 (out-of-range values included).
fn c_double_to_u64(x: f64) -> u64 {
    const TWO63: f64 = 9223372036854775808.0;
    if x.is_nan() {
        return 1 << 63;
    }
    if x < TWO63 {
        if x >= -TWO63 {
            x as i64 as u64
        } else {
            1 << 63
        }
    } else {
        let y = x - TWO63;
        let v = if y < TWO63 { y as i64 as u64 } else { 1 << 63 };
        v ^ (1 << 63)
    }
}

/// The score of a point (`geohashEncodeWGS84` + `geohashAlign52Bits`); `None` outside
/// the limits.
pub fn score_of(longitude: f64, latitude: f64) -> Option<f64> {
    encode(WGS84_LONG, WGS84_LAT, longitude, latitude, STEP_MAX).map(|h| h.align52() as f64)
}

/// `decodeGeohash`: the point (cell centre) a score stands for, `[longitude, latitude]`.
pub fn lonlat_of(score: f64) -> [f64; 2] {
    let hash = HashBits { bits: c_double_to_u64(score), step: STEP_MAX };
    // step != 0, so the hash is never "zero" and decoding cannot fail.
    decode(hash, WGS84_LONG, WGS84_LAT).map_or([0.0, 0.0], |a| area_center(&a))
}

/// The 11-character standard geohash GEOHASH returns for a score.
pub fn geohash_string(score: f64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let xy = lonlat_of(score);
    let bits = encode(WGS84_LONG, STD_LAT, xy[0], xy[1], STEP_MAX).map_or(0, |h| h.bits);
    let mut out = [b'0'; 11];
    for (i, c) in out.iter_mut().enumerate().take(10) {
        let idx = (bits >> (52 - (i + 1) * 5)) & 0x1f;
        *c = ALPHABET[idx as usize];
    }
    out
}

/// `geohashGetLatDistance`: the distance along a meridian.
pub fn lat_distance(lat1d: f64, lat2d: f64) -> f64 {
    EARTH_RADIUS_IN_METERS * (deg_rad(lat2d) - deg_rad(lat1d)).abs()
}

/// `geohashGetDistance`: haversine great-circle distance in meters (along the meridian
/// when the longitudes are practically the same, as Redis 7.0 does).
pub fn distance(lon1d: f64, lat1d: f64, lon2d: f64, lat2d: f64) -> f64 {
    let lon1r = deg_rad(lon1d);
    let lon2r = deg_rad(lon2d);
    let v = ((lon2r - lon1r) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1d, lat2d);
    }
    let lat1r = deg_rad(lat1d);
    let lat2r = deg_rad(lat2d);
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_IN_METERS * a.sqrt().asin()
}

/// The search area of GEORADIUS / GEOSEARCH (`GeoShape`): sizes in the request's unit,
/// `conversion` meters per unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ShapeKind {
    Circle { radius: f64 },
    Box { width: f64, height: f64 },
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shape {
    pub kind: ShapeKind,
    /// The centre, `[longitude, latitude]`.
    pub xy: [f64; 2],
    pub conversion: f64,
}

impl Shape {
    /// `geoWithinShape`: the decoded point and its distance from the centre (meters) when
    /// the point of `score` lies in the shape.
    pub fn contains(&self, score: f64) -> Option<([f64; 2], f64)> {
        let xy = lonlat_of(score);
        let (x1, y1, x2, y2) = (self.xy[0], self.xy[1], xy[0], xy[1]);
        match self.kind {
            ShapeKind::Circle { radius } => {
                let d = distance(x1, y1, x2, y2);
                (d <= radius * self.conversion).then_some((xy, d))
            }
            ShapeKind::Box { width, height } => {
                let (width_m, height_m) = (width * self.conversion, height * self.conversion);
                // `geohashGetDistanceIfInRectangle`: the cheaper latitude test first.
                if lat_distance(y2, y1) > height_m / 2.0 || distance(x2, y2, x1, y2) > width_m / 2.0 {
                    return None;
                }
                Some((xy, distance(x1, y1, x2, y2)))
            }
        }
    }
}

/// `geohashEstimateStepsByRadius`.
pub fn estimate_steps_by_radius(mut range_meters: f64, lat: f64) -> u8 {
    if range_meters == 0.0 {
        return 26;
    }
    let mut step: i32 = 1;
    while range_meters < MERCATOR_MAX {
        range_meters *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

/// `geohashBoundingBox`: `[min_lon, min_lat, max_lon, max_lat]`.
fn bounding_box(shape: &Shape) -> [f64; 4] {
    let [longitude, latitude] = shape.xy;
    let (height, width) = match shape.kind {
        ShapeKind::Circle { radius } => (shape.conversion * radius, shape.conversion * radius),
        ShapeKind::Box { width, height } => (shape.conversion * (height / 2.0), shape.conversion * (width / 2.0)),
    };
    let lat_delta = rad_deg(height / EARTH_RADIUS_IN_METERS);
    let long_delta_top = rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(latitude + lat_delta).cos());
    let long_delta_bottom = rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(latitude - lat_delta).cos());
    let southern = latitude < 0.0;
    [
        if southern { longitude - long_delta_bottom } else { longitude - long_delta_top },
        latitude - lat_delta,
        if southern { longitude + long_delta_bottom } else { longitude + long_delta_top },
        latitude + lat_delta,
    ]
}

fn move_x(hash: &mut HashBits, d: i8) {
    if d == 0 {
        return;
    }
    let mut x = hash.bits & 0xaaaaaaaaaaaaaaaa;
    let y = hash.bits & 0x5555555555555555;
    let zz = 0x5555555555555555u64 >> (64 - hash.step as u32 * 2);
    if d > 0 {
        x = x.wrapping_add(zz + 1);
    } else {
        x |= zz;
        x = x.wrapping_sub(zz + 1);
    }
    x &= 0xaaaaaaaaaaaaaaaau64 >> (64 - hash.step as u32 * 2);
    hash.bits = x | y;
}

fn move_y(hash: &mut HashBits, d: i8) {
    if d == 0 {
        return;
    }
    let x = hash.bits & 0xaaaaaaaaaaaaaaaa;
    let mut y = hash.bits & 0x5555555555555555;
    let zz = 0xaaaaaaaaaaaaaaaau64 >> (64 - hash.step as u32 * 2);
    if d > 0 {
        y = y.wrapping_add(zz + 1);
    } else {
        y |= zz;
        y = y.wrapping_sub(zz + 1);
    }
    y &= 0x5555555555555555u64 >> (64 - hash.step as u32 * 2);
    hash.bits = x | y;
}

fn moved(hash: HashBits, dx: i8, dy: i8) -> HashBits {
    let mut h = hash;
    move_x(&mut h, dx);
    move_y(&mut h, dy);
    h
}

/// The cells to scan for a shape (`geohashCalculateAreasByShapeWGS84`), in Redis's visiting
/// order: centre, N, S, E, W, NE, NW, SE, SW. Excluded cells are zero.
pub fn search_cells(shape: &Shape) -> [HashBits; 9] {
    let [min_lon, min_lat, max_lon, max_lat] = bounding_box(shape);
    let [longitude, latitude] = shape.xy;
    let radius_meters = match shape.kind {
        ShapeKind::Circle { radius } => radius,
        ShapeKind::Box { width, height } => ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt(),
    } * shape.conversion;
    let mut steps = estimate_steps_by_radius(radius_meters, latitude);
    let cells_at = |steps: u8| {
        let hash = encode(WGS84_LONG, WGS84_LAT, longitude, latitude, steps).unwrap_or_default();
        let n = [
            hash,
            moved(hash, 0, 1),
            moved(hash, 0, -1),
            moved(hash, 1, 0),
            moved(hash, -1, 0),
            moved(hash, 1, 1),
            moved(hash, -1, 1),
            moved(hash, 1, -1),
            moved(hash, -1, -1),
        ];
        (n, decode(hash, WGS84_LONG, WGS84_LAT))
    };
    let (mut n, mut area) = cells_at(steps);
    let dec = |h: HashBits| decode(h, WGS84_LONG, WGS84_LAT);
    let decrease = match (dec(n[1]), dec(n[2]), dec(n[3]), dec(n[4])) {
        (Some(north), Some(south), Some(east), Some(west)) => {
            north.latitude.max < max_lat || south.latitude.min > min_lat || east.longitude.max < max_lon || west.longitude.min > min_lon
        }
        _ => false,
    };
    if steps > 1 && decrease {
        steps -= 1;
        (n, area) = cells_at(steps);
    }
    if let (true, Some(area)) = (steps >= 2, area) {
        let zero = HashBits::default();
        if area.latitude.min < min_lat {
            n[2] = zero;
            n[8] = zero;
            n[7] = zero;
        }
        if area.latitude.max > max_lat {
            n[1] = zero;
            n[5] = zero;
            n[6] = zero;
        }
        if area.longitude.min < min_lon {
            n[4] = zero;
            n[8] = zero;
            n[6] = zero;
        }
        if area.longitude.max > max_lon {
            n[3] = zero;
            n[7] = zero;
            n[5] = zero;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleave_roundtrip() {
        for (x, y) in [(0u32, 0u32), (1, 0), (0, 1), (0x3ffffff, 0x1234567), (u32::MAX, 7)] {
            let v = deinterleave64(interleave64(x, y));
            assert_eq!((v as u32, (v >> 32) as u32), (x, y));
        }
    }

    #[test]
    fn palermo() {
        let s = score_of(13.361389, 38.115556).unwrap();
        assert_eq!(s, 3479099956230698.0);
        assert_eq!(&geohash_string(s), b"sqc8b49rny0");
    }
}
