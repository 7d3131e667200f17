//! LOLWUT as Redis 7.0 answers it: the version line for 7 (and any version without a
//! drawing), Georg Nees's Schotter for VERSION 5 (Braille pixels) and the skyline for
//! VERSION 6 (grey levels in ANSI colours). The drawings are Redis's lolwut5.c and lolwut6.c,
//! their random parts drawn from the server's generator (Redis's `rand()` differs per process
//! too), so only their undisturbed parts match Redis byte for byte.

use bytes::Bytes;

use super::{arg_i64, CmdError, Ctx};
use crate::protocol::Reply;
use crate::util::eq_ignore_case;

/// ```text
/// LOLWUT [VERSION version] [version-specific arguments]
/// ```
pub fn lolwut(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    let mut version = crate::REDIS_VERSION.to_string();
    let mut params = &args[1..];
    if args.len() >= 3 && eq_ignore_case(&args[1], "version") {
        // Redis prints the version with `%u.0.0`.
        version = format!("{}.0.0", arg_i64(&args[2])? as u32);
        params = &args[3..];
    }
    let v = version.as_bytes();
    let text = match (v[0], v.get(1), v.get(2)) {
        (b'5', Some(b'.'), Some(c)) if *c != b'9' => schotter(ctx, params)?,
        (b'4', Some(b'.'), Some(b'9')) => schotter(ctx, params)?,
        (b'6', Some(b'.'), Some(c)) if *c != b'9' => skyline(ctx, params)?,
        (b'5', Some(b'.'), Some(b'9')) => skyline(ctx, params)?,
        _ => format!("Redis ver. {}\n", crate::REDIS_VERSION),
    };
    Ok(Reply::Verbatim(*b"txt", Bytes::from(text)))
}

/// The numeric parameter `i` (Redis's getLongFromObjectOrReply), or `default`.
fn param(params: &[Bytes], i: usize, default: i64) -> Result<i64, CmdError> {
    params.get(i).map_or(Ok(default), |p| arg_i64(p))
}

/// A uniform float in [0, 1] (Redis: `(float)rand() / RAND_MAX`).
fn unit(ctx: &mut Ctx<'_>) -> f32 {
    (ctx.server.random() >> 40) as f32 / ((1u64 << 24) - 1) as f32
}

/// Redis's `rand()`: a non-negative int.
fn rand(ctx: &mut Ctx<'_>) -> i32 {
    (ctx.server.random() >> 33) as i32
}

struct Canvas {
    width: i32,
    height: i32,
    pixels: Vec<u8>,
}

impl Canvas {
    fn new(width: i32, height: i32, color: u8) -> Canvas {
        Canvas { width, height, pixels: vec![color; (width.max(0) as usize) * (height.max(0) as usize)] }
    }

    fn set(&mut self, x: i32, y: i32, color: u8) {
        if x >= 0 && x < self.width && y >= 0 && y < self.height {
            self.pixels[(x + y * self.width) as usize] = color;
        }
    }

    fn get(&self, x: i32, y: i32) -> u8 {
        if x >= 0 && x < self.width && y >= 0 && y < self.height {
            self.pixels[(x + y * self.width) as usize]
        } else {
            0
        }
    }

    /// Bresenham's line, as lwDrawLine.
    fn line(&mut self, mut x1: i32, mut y1: i32, x2: i32, y2: i32, color: u8) {
        let (dx, dy) = ((x2 - x1).abs(), (y2 - y1).abs());
        let (sx, sy) = (if x1 < x2 { 1 } else { -1 }, if y1 < y2 { 1 } else { -1 });
        let mut err = dx - dy;
        loop {
            self.set(x1, y1, color);
            if x1 == x2 && y1 == y2 {
                break;
            }
            let e2 = err * 2;
            if e2 > -dy {
                err -= dy;
                x1 += sx;
            }
            if e2 < dx {
                err += dx;
                y1 += sy;
            }
        }
    }

    /// A square of side `size` centred on (x, y), rotated by `angle`: lwDrawSquare, with its
    /// float and double steps, and its 10-digit square root of 2 (the same pixels).
    #[allow(clippy::approx_constant)]
    fn square(&mut self, x: i32, y: i32, size: f32, angle: f32, color: u8) {
        use std::f64::consts::{FRAC_PI_2, FRAC_PI_4};
        let size = ((size as f64 / 1.4142135623) as f32 as f64).round() as f32;
        let mut k = (FRAC_PI_4 + angle as f64) as f32;
        let (mut px, mut py) = ([0i32; 4], [0i32; 4]);
        for j in 0..4 {
            px[j] = ((k as f64).sin() * size as f64 + x as f64).round() as i32;
            py[j] = ((k as f64).cos() * size as f64 + y as f64).round() as i32;
            k = (k as f64 + FRAC_PI_2) as f32;
        }
        for j in 0..4 {
            self.line(px[j], py[j], px[(j + 1) % 4], py[(j + 1) % 4], color);
        }
    }
}

/// LOLWUT VERSION 5 [cols] [squares-per-row] [squares-per-col]: Schotter.
fn schotter(ctx: &mut Ctx<'_>, params: &[Bytes]) -> Result<String, CmdError> {
    let cols = param(params, 0, 66)?.clamp(1, 1000) as i32;
    let per_row = param(params, 1, 8)?.clamp(1, 200) as i32;
    let per_col = param(params, 2, 12)?.clamp(1, 200) as i32;
    let width = cols * 2;
    let padding = if width > 4 { 2 } else { 0 };
    let side = (width - padding * 2) as f32 / per_row as f32;
    let height = (side * per_col as f32 + (padding * 2) as f32) as i32;
    let mut canvas = Canvas::new(width, height, 0);
    for y in 0..per_col {
        for x in 0..per_row {
            let mut sx = (x as f32 * side + side / 2.0 + padding as f32) as i32;
            let mut sy = (y as f32 * side + side / 2.0 + padding as f32) as i32;
            let mut angle = 0.0f32;
            if y > 1 {
                let mut r1 = unit(ctx) / per_col as f32 * y as f32;
                let mut r2 = unit(ctx) / per_col as f32 * y as f32;
                let mut r3 = unit(ctx) / per_col as f32 * y as f32;
                if rand(ctx) % 2 == 1 {
                    r1 = -r1;
                }
                if rand(ctx) % 2 == 1 {
                    r2 = -r2;
                }
                if rand(ctx) % 2 == 1 {
                    r3 = -r3;
                }
                angle = r1;
                sx = (sx as f32 + r2 * side / 3.0) as i32;
                sy = (sy as f32 + r3 * side / 3.0) as i32;
            }
            canvas.square(sx, sy, side, angle, 1);
        }
    }
    // Braille: 2x4 pixels per character.
    let mut text = String::new();
    let mut y = 0;
    while y < canvas.height {
        let mut x = 0;
        while x < canvas.width {
            let bits = [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (0, 3), (1, 3)];
            let byte = bits.iter().enumerate().fold(0u32, |b, (i, (dx, dy))| b | (((canvas.get(x + dx, y + dy) != 0) as u32) << i));
            text.push(char::from_u32(0x2800 + byte).unwrap_or(' '));
            x += 2;
        }
        if y != canvas.height - 1 {
            text.push('\n');
        }
        y += 4;
    }
    text.push_str("\nGeorg Nees - schotter, plotter on paper, 1968. Redis ver. ");
    text.push_str(crate::REDIS_VERSION);
    text.push('\n');
    Ok(text)
}

/// LOLWUT VERSION 6 [cols] [rows]: a skyline.
fn skyline(ctx: &mut Ctx<'_>, params: &[Bytes]) -> Result<String, CmdError> {
    let cols = param(params, 0, 80)?.clamp(1, 1000) as i32;
    let rows = param(params, 1, 20)?.clamp(1, 1000) as i32;
    let mut canvas = Canvas::new(cols, rows, 3);
    for color in [2u8, 1] {
        let mut offset = -10;
        while offset < canvas.width {
            offset += rand(ctx) % 8;
            let width = 10 + rand(ctx) % 9;
            let height = if color == 2 {
                canvas.height / 2 + (rand(ctx) % canvas.height) / 2
            } else {
                canvas.height / 2 + (rand(ctx) % canvas.height) / 3
            };
            skyscraper(ctx, &mut canvas, offset, width, height, false, color);
            offset += if color == 2 { width / 2 } else { width + 1 };
        }
    }
    let mut offset = -10;
    while offset < canvas.width {
        offset += rand(ctx) % 8;
        let mut width = 5 + rand(ctx) % 14;
        if width % 4 != 0 {
            width += width % 3;
        }
        let height = canvas.height / 3 + (rand(ctx) % canvas.height) / 2;
        skyscraper(ctx, &mut canvas, offset, width, height, true, 0);
        offset += width + 5;
    }
    let mut text = String::new();
    for y in 0..canvas.height {
        for x in 0..canvas.width {
            let escape = match canvas.get(x, y) {
                1 => "0;90;100m",
                2 => "0;37;47m",
                3 => "0;97;107m",
                _ => "0;30;40m",
            };
            text.push_str(&format!("\x1b[{escape} \x1b[0m"));
        }
        if y != canvas.height - 1 {
            text.push('\n');
        }
    }
    text.push_str(
        "\nDedicated to the 8 bit game developers of past and present.\nOriginal 8 bit image from Plaguemon by hikikomori. Redis ver. ",
    );
    text.push_str(crate::REDIS_VERSION);
    text.push('\n');
    Ok(text)
}

/// One skyscraper (lolwut6.c's generateSkyscraper): windows two pixels wide, in a random
/// grey other than the wall's.
fn skyscraper(ctx: &mut Ctx<'_>, canvas: &mut Canvas, xoff: i32, width: i32, height: i32, windows: bool, wall: u8) {
    let starty = canvas.height - 1;
    let endy = starty - height + 1;
    let mut y = starty;
    while y >= endy {
        for x in xoff..xoff + width {
            if y == endy && (x <= xoff + 1 || x >= xoff + width - 2) {
                continue;
            }
            let mut color = wall;
            if windows && x > xoff + 1 && x < xoff + width - 2 && y > endy + 1 && y < starty - 1 {
                let (relx, rely) = (x - (xoff + 1), y - (endy + 1));
                if (relx / 2) % 2 != 0 && rely % 2 != 0 {
                    loop {
                        color = 1 + (rand(ctx) % 2) as u8;
                        if color != wall {
                            break;
                        }
                    }
                    if relx % 2 != 0 {
                        color = canvas.get(x - 1, y);
                    }
                }
            }
            canvas.set(x, y, color);
        }
        y -= 1;
    }
}
