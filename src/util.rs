//! Number parsing and formatting with Redis's exact rules (shared by every command group).

use std::os::raw::{c_char, c_int, c_longlong};

extern "C" {
    fn vm_string2d(s: *const c_char, len: usize, out: *mut f64) -> c_int;
    fn vm_strtod_prefix(s: *const c_char, len: usize, out: *mut f64) -> usize;
    fn vm_fmt_g(d: f64, precision: c_int, out: *mut c_char, out_len: usize) -> c_int;
    fn vm_incrbyfloat(
        base: *const c_char,
        base_len: usize,
        base_int: c_longlong,
        base_is_int: c_int,
        incr: *const c_char,
        incr_len: usize,
        out: *mut c_char,
        out_len: usize,
    ) -> c_int;
    fn vm_fmt_g17(d: f64, out: *mut c_char, out_len: usize) -> c_int;
}

/// Redis's `string2ll`: an optional `-`, then digits with no leading zero, nothing else,
/// within the range of i64.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (neg, digits) = match s[0] {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    if neg {
        if v > (i64::MAX as u64) + 1 {
            None
        } else {
            Some((v as i64).wrapping_neg())
        }
    } else if v > i64::MAX as u64 {
        None
    } else {
        Some(v as i64)
    }
}

/// Redis's `string2ull`: `string2ll` when that reads a non-negative number, else C's
/// `strtoull` over the whole string (leading spaces, a sign, leading zeros; a `-` negates,
/// as strtoull does).
pub fn parse_u64_strict(s: &[u8]) -> Option<u64> {
    if let Some(v) = parse_i64(s) {
        return u64::try_from(v).ok();
    }
    let mut i = s.iter().take_while(|c| matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')).count();
    let neg = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let digits = &s[i..];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for &c in digits {
        v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

/// An I/O error as C's `strerror` words it (Rust's text adds " (os error N)").
pub fn strerror(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => text[..at].to_string(),
        _ => text,
    }
}

/// Redis's `string2d` (strtod, no leading space, no trailing garbage, no NaN).
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    let mut out = 0f64;
    // SAFETY: the helper reads exactly `len` bytes from `s` and writes one f64 to `out`.
    let ok = unsafe { vm_string2d(s.as_ptr() as *const c_char, s.len(), &mut out) };
    (ok == 1).then_some(out)
}

/// Formats a double as Redis replies it: `inf`/`-inf`, else `%.17g`.
pub fn format_double(d: f64) -> String {
    let mut buf = [0u8; 64];
    String::from_utf8_lossy(format_double_into(d, &mut buf)).into_owned()
}

/// "00" to "99", for writing two digits per division.
const DIGIT_PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Formats an integer without allocating (the reply encoder's hottest path: every integer
/// reply and every bulk length). Two digits per division by 100, as itoa does.
pub fn format_i64_into(n: i64, buf: &mut [u8; 20]) -> &[u8] {
    let mut v = n.unsigned_abs();
    let mut i = buf.len();
    while v >= 100 {
        let d = (v % 100) as usize * 2;
        v /= 100;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&DIGIT_PAIRS[d..d + 2]);
    }
    if v >= 10 {
        let d = v as usize * 2;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&DIGIT_PAIRS[d..d + 2]);
    } else {
        i -= 1;
        buf[i] = b'0' + v as u8;
    }
    if n < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    &buf[i..]
}

/// [`format_double`] into a stack buffer (no allocation: the script bridge pushes it to Lua
/// from frames that must own nothing).
pub fn format_double_into(d: f64, buf: &mut [u8; 64]) -> &[u8] {
    if d.is_infinite() {
        return if d > 0.0 { b"inf" } else { b"-inf" };
    }
    // Whole numbers below 1e15 print as their digits under %.17g (the common case: counts
    // and times passed to redis.call), without the cost of snprintf.
    if d.fract() == 0.0 && d.abs() < 1e15 && !(d == 0.0 && d.is_sign_negative()) {
        let mut digits = [0u8; 20];
        let s = format_i64_into(d as i64, &mut digits);
        buf[..s.len()].copy_from_slice(s);
        return &buf[..s.len()];
    }
    // SAFETY: snprintf writes at most `buf.len()` bytes including the terminator.
    let n = unsafe { vm_fmt_g17(d, buf.as_mut_ptr() as *mut c_char, buf.len()) };
    let n = (n.max(0) as usize).min(buf.len() - 1);
    &buf[..n]
}

/// libc's `strtod` on the start of `s` (decimal, hex, `inf`, `nan(...)`, as glibc reads
/// them): the value and the bytes it used, or `None` when no number starts there. Only the
/// bytes a number can be made of are copied, so a long input costs nothing extra.
pub fn strtod_prefix(s: &[u8]) -> Option<(f64, usize)> {
    let len =
        s.iter().position(|&c| !(c.is_ascii_alphanumeric() || matches!(c, b'.' | b'+' | b'-' | b'(' | b')' | b'_'))).unwrap_or(s.len());
    let mut out = 0.0f64;
    // SAFETY: the helper reads exactly `len` bytes of `s` and writes one f64.
    let used = unsafe { vm_strtod_prefix(s.as_ptr() as *const c_char, len, &mut out) };
    (used > 0).then_some((out, used))
}

/// C's `printf("%.<precision>g", d)`.
pub fn format_g(d: f64, precision: i32) -> String {
    let mut buf = [0u8; 64];
    // SAFETY: snprintf writes at most `buf.len()` bytes including the terminator.
    let n = unsafe { vm_fmt_g(d, precision, buf.as_mut_ptr() as *mut c_char, buf.len()) };
    let n = (n.max(0) as usize).min(buf.len() - 1);
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// Why INCRBYFLOAT could not produce a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncrFloatError {
    BaseNotFloat,
    IncrNotFloat,
    NanOrInfinity,
}

/// The base of an INCRBYFLOAT: either an integer-encoded value or a string.
pub enum FloatBase<'a> {
    Int(i64),
    Str(&'a [u8]),
}

/// INCRBYFLOAT/HINCRBYFLOAT arithmetic in long double, formatted as Redis does (`%.17Lf`,
/// trailing zeros removed).
pub fn incr_by_float(base: FloatBase<'_>, incr: &[u8]) -> Result<Vec<u8>, IncrFloatError> {
    let mut out = vec![0u8; 5200];
    let (ptr, len, int, is_int) = match base {
        FloatBase::Int(n) => (std::ptr::null(), 0, n, 1),
        FloatBase::Str(s) => (s.as_ptr() as *const c_char, s.len(), 0, 0),
    };
    // SAFETY: the helper reads the given lengths and writes at most `out.len()` bytes.
    let n = unsafe {
        vm_incrbyfloat(ptr, len, int, is_int, incr.as_ptr() as *const c_char, incr.len(), out.as_mut_ptr() as *mut c_char, out.len())
    };
    match n {
        -1 => Err(IncrFloatError::BaseNotFloat),
        -2 => Err(IncrFloatError::IncrNotFloat),
        n if n < 0 => Err(IncrFloatError::NanOrInfinity),
        n => {
            out.truncate(n as usize);
            Ok(out)
        }
    }
}

/// An argument as C string functions see it: everything before the first NUL (Redis compares
/// options and parses numbers with C functions, so `"nx\0junk"` is `NX`).
pub fn cstr(arg: &[u8]) -> &[u8] {
    arg.iter().position(|&b| b == 0).map_or(arg, |end| &arg[..end])
}

/// `strcasecmp(arg, name) == 0` on Redis's C string.
pub fn opt_is(arg: &[u8], name: &str) -> bool {
    cstr(arg).eq_ignore_ascii_case(name.as_bytes())
}

/// A SCAN-family cursor, parsed as Redis does with `strtoul`: no leading space, an optional
/// sign (a minus wraps around), decimal digits up to the first NUL, no overflow. The empty
/// string is cursor 0. `None`: "ERR invalid cursor".
pub fn parse_scan_cursor(arg: &[u8]) -> Option<u64> {
    let s = cstr(arg);
    let Some(&first) = s.first() else {
        return Some(0);
    };
    if matches!(first, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        return None;
    }
    let (neg, digits) = match first {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

/// Appends the decimal form of `n`.
pub fn i64_bytes(n: i64) -> Vec<u8> {
    n.to_string().into_bytes()
}

/// ASCII lowercase copy, for case-insensitive option matching.
/// Lowercase hexadecimal of `bytes` (SHA1 digests, DEBUG DIGEST).
pub fn hex(bytes: &[u8]) -> String {
    let mut out = vec![0u8; bytes.len() * 2];
    hex_into(bytes, &mut out);
    // Only ASCII digits and a-f were written.
    String::from_utf8(out).unwrap_or_default()
}

/// Writes `bytes` as lowercase hex into `out` (twice their length). A table lookup per digit:
/// EVAL hashes every body it gets, and `format!`'s machinery per byte was a tenth of its time.
pub fn hex_into(bytes: &[u8], out: &mut [u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for (b, pair) in bytes.iter().zip(out.chunks_exact_mut(2)) {
        pair[0] = DIGITS[(b >> 4) as usize];
        pair[1] = DIGITS[(b & 15) as usize];
    }
}

pub fn eq_ignore_case(a: &[u8], b: &str) -> bool {
    a.eq_ignore_ascii_case(b.as_bytes())
}

/// Redis's `sdscatrepr`.
pub fn sds_repr(s: &[u8]) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for &c in s {
        match c {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x07 => out.push_str("\\a"),
            0x08 => out.push_str("\\b"),
            c if c.is_ascii_graphic() || c == b' ' => out.push(c as char),
            c => out.push_str(&format!("\\x{c:02x}")),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strerror_is_c_text() {
        let e = std::fs::read("/nonexistent/file").unwrap_err();
        assert_eq!(strerror(&e), "No such file or directory");
        assert_eq!(strerror(&std::io::Error::other("plain")), "plain");
    }

    #[test]
    fn integers_format_as_to_string_does() {
        let mut values = vec![0, 9, 10, 99, 100, 101, 999, 1000, i64::MAX, i64::MIN, i64::MIN + 1];
        let mut p = 1i64;
        for _ in 0..18 {
            p *= 10;
            values.extend([p - 1, p, p + 1, -(p - 1), -p, -(p + 1)]);
        }
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..10_000 {
            x = xorshift(x);
            values.push(x as i64 >> (x % 63));
        }
        for v in values {
            assert_eq!(format_i64_into(v, &mut [0; 20]), v.to_string().as_bytes(), "{v}");
        }
    }

    #[test]
    fn string2ll_rules() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-0"), None);
        assert_eq!(parse_i64(b"007"), None);
        assert_eq!(parse_i64(b"+1"), None);
        assert_eq!(parse_i64(b" 1"), None);
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
    }

    #[test]
    fn floats_like_libc() {
        assert_eq!(parse_f64(b"1.5"), Some(1.5));
        assert_eq!(parse_f64(b"inf"), Some(f64::INFINITY));
        assert_eq!(parse_f64(b"nan"), None);
        assert_eq!(parse_f64(b" 1"), None);
        assert_eq!(parse_f64(b"1x"), None);
        assert_eq!(parse_f64(b"1\0"), None);
        assert_eq!(incr_by_float(FloatBase::Str(b"1\0"), b"1"), Err(IncrFloatError::BaseNotFloat));
        assert_eq!(format_double(1.1), "1.1000000000000001");
        assert_eq!(format_double(3.0), "3");
        assert_eq!(incr_by_float(FloatBase::Str(b"0.1"), b"0.2").unwrap(), b"0.3");
        assert_eq!(incr_by_float(FloatBase::Int(10), b"-10").unwrap(), b"0");
        assert_eq!(incr_by_float(FloatBase::Str(b"abc"), b"1"), Err(IncrFloatError::BaseNotFloat));
    }

    #[test]
    fn whole_numbers_format_as_snprintf_does() {
        let mut cases =
            vec![0.0, -0.0, 1.0, -1.0, 9.0, 10.0, -10.0, 1e14, 1e15 - 1.0, -(1e15 - 1.0), 1e15, 1e16, 1e17, 2f64.powi(53), 1.5, -2.5];
        let mut x = 1u64;
        for _ in 0..2000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            cases.push(((x >> 11) % 2_000_000_000_000_000) as f64 - 1e15);
            cases.push((x >> 40) as f64);
        }
        for d in cases {
            let mut buf = [0u8; 64];
            assert_eq!(format_double_into(d, &mut buf), format_g(d, 17).as_bytes(), "{d}");
        }
    }
}

/// `n` random lowercase hex digits (replication ids, cluster node names): std's
/// `RandomState`, seeded from the OS once per process, mixed with the time and pid.
pub fn random_hex(n: usize) -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut out = String::with_capacity(n + 16);
    let mut seed = crate::clock::now_ms() as u64 ^ ((std::process::id() as u64) << 32);
    while out.len() < n {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(seed);
        seed = h.finish();
        out.push_str(&format!("{seed:016x}"));
    }
    out.truncate(n);
    out
}

/// One step of Marsaglia's xorshift64: a fast pseudo-random sequence for sampling and
/// skiplist levels, never for secrets. `x` must not be 0.
pub fn xorshift(mut x: u64) -> u64 {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x
}

/// A word-at-a-time multiplicative hash (FxHash's mix), for [`FixedTableHasher`]: the command
/// name and config parameter lookups hash a name on every command, and a 25-byte parameter
/// name takes 4 steps here where a byte-wise hash takes 25.
#[derive(Default)]
pub struct NameHasher(u64);

impl std::hash::Hasher for NameHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut h = self.0;
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            h = (h.rotate_left(5) ^ u64::from_le_bytes(b)).wrapping_mul(K);
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            h = (h.rotate_left(5) ^ u64::from_le_bytes(b) ^ rest.len() as u64).wrapping_mul(K);
        }
        self.0 = h;
    }
}

/// For tables built once from static data (the command table, the config parameters): their
/// keys are fixed, so a client cannot flood them, and a keyed hash (SipHash) buys nothing.
pub type FixedTableHasher = std::hash::BuildHasherDefault<NameHasher>;

/// How the binary's allocator gives freed memory back to the system: mimalloc keeps freed
/// pages until its heap is collected, so a burst (a subscriber's 32 MB output buffer, the old
/// buffer of a grown table) would otherwise stay in the resident set after it is gone.
static RELEASE_MEMORY: std::sync::OnceLock<fn(bool)> = std::sync::OnceLock::new();

/// Installs the allocator's collection (`force`: return everything now, as MEMORY PURGE asks).
pub fn set_memory_release(release: fn(bool)) {
    let _ = RELEASE_MEMORY.set(release);
}

/// Runs the installed collection, if any: the cron every 100 ms, MEMORY PURGE forced.
pub fn release_memory(force: bool) {
    if let Some(release) = RELEASE_MEMORY.get() {
        release(force);
    }
}

/// The machine's physical memory in bytes (`MemTotal` of /proc/meminfo), if known.
pub fn total_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb = info.lines().find_map(|l| l.strip_prefix("MemTotal:"))?.trim().trim_end_matches("kB").trim();
    kb.parse::<u64>().ok()?.checked_mul(1024)
}

static ALLOCATOR_NAME: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

/// Names the global allocator for INFO's `mem_allocator` (the server binary sets it; the
/// library alone runs on the system's).
pub fn set_allocator_name(name: &'static str) {
    let _ = ALLOCATOR_NAME.set(name);
}

pub fn allocator_name() -> &'static str {
    ALLOCATOR_NAME.get().copied().unwrap_or("libc")
}
