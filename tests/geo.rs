//! GEO commands, differentially: every case runs on vermilion and on the real redis-server
//! 7.0 and the raw reply bytes must be identical (RESP2, and RESP3 after HELLO 3), except
//! where Redis leaves the order unspecified (no ASC/DESC): there the arrays are compared
//! unordered. Plus the Paris 2024 venues data set loaded through its loader
//! (data/venues/load.sh) with the worked examples of docs/GEO.md, a seeded random test (env
//! `DIFF_SEED`), and a performance check (a 5 km search among 200,000 members).

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::diff::{Cmp, DiffPair};
use common::Rng;

const BASICS: &[&str] = &[
    "GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
    "GEOADD Sicily 13.361389 38.115556 Palermo",
    "GEOADD Sicily CH 13.5 38.1 Palermo 14 37 Agrigento",
    "GEOADD Sicily NX 13.361389 38.115556 Palermo 13.583333 37.316667 Agrigento2",
    "GEOADD Sicily XX CH 13.361389 38.115556 Palermo 1 1 NotThere",
    "GEOADD Sicily xx nx 1 1 a",
    "GEOADD Sicily nx ch 1 1",
    "GEOADD Sicily 1 1 a 2",
    "GEOADD Sicily 200 100 bad",
    "GEOADD Sicily -0 85.06 bad",
    "GEOADD Sicily 180.0000001 0 bad",
    "GEOADD Sicily abc 0 bad",
    "GEOADD Sicily 0 nan bad",
    "GEOADD Sicily 1e400 0 bad",
    "GEOADD Sicily 1 2 ok 200 100 bad",
    "EXISTS nothing",
    "GEOADD nothing XX 1 1 a",
    "EXISTS nothing",
    "ZRANGE Sicily 0 -1 WITHSCORES",
    "GEOPOS Sicily Palermo Catania nosuch Agrigento",
    "GEOPOS nokey a b",
    "GEOPOS Sicily",
    "GEOHASH Sicily Palermo Catania nosuch",
    "GEOHASH nokey a",
    "GEOHASH Sicily",
    "GEODIST Sicily Palermo Catania",
    "GEODIST Sicily Palermo Catania m",
    "GEODIST Sicily Palermo Catania KM",
    "GEODIST Sicily Palermo Catania ft",
    "GEODIST Sicily Palermo Catania mi",
    "GEODIST Sicily Palermo Catania yd",
    "GEODIST Sicily Palermo Catania km extra",
    "GEODIST Sicily Palermo nosuch",
    "GEODIST nokey a b",
    "GEODIST nokey a b yd",
    "GEODIST Sicily Palermo Palermo",
    "SET str x",
    "GEOADD str 1 1 a",
    "GEOADD str 1 1",
    "GEOADD str 200 1 a",
    "GEOPOS str a",
    "GEOHASH str a",
    "GEODIST str a b",
    "GEORADIUS str 1 1 1 km",
    "GEORADIUSBYMEMBER str a 1 km",
    "GEOSEARCH str FROMLONLAT 1 1 BYRADIUS 1 km",
    "GEOSEARCHSTORE dst str FROMLONLAT 1 1 BYRADIUS 1 km",
    "GEOSEARCHSTORE str Sicily FROMLONLAT 15 37 BYRADIUS 200 km",
    "TYPE str",
    // weird scores set by ZADD decode like Redis's C casts
    "ZADD weird 1e30 big -5 neg inf pinf -inf ninf 1e19 e19 1.5e19 e19b 0 zero 4503599627370496 max52",
    "GEOPOS weird big neg pinf ninf e19 e19b zero max52",
    "GEOHASH weird big neg pinf ninf e19 e19b zero max52",
    "GEODIST weird zero max52 km",
];

const SEARCHES: &[&str] = &[
    "GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania 13.583333 37.316667 Agrigento",
    "GEOADD Sicily 12.758489 38.788135 edge1 17.241510 38.788135 edge2 12.5 37.8 Marsala 15.55 38.19 Messina",
    "GEORADIUS Sicily 15 37 200 km WITHDIST WITHCOORD WITHHASH ASC",
    "GEORADIUS Sicily 15 37 200 km WITHDIST WITHCOORD WITHHASH DESC",
    "~GEORADIUS Sicily 15 37 200 km",
    "~GEORADIUS Sicily 15 37 200 km WITHDIST",
    "GEORADIUS Sicily 15 37 200 km COUNT 2",
    "GEORADIUS Sicily 15 37 200 km COUNT 2 DESC WITHDIST",
    "~GEORADIUS Sicily 15 37 200 km COUNT 2 ANY",
    "GEORADIUS Sicily 15 37 200 km COUNT 2 ANY ASC",
    "GEORADIUS Sicily 15 37 200 km ANY",
    "GEORADIUS Sicily 15 37 200 km COUNT 0",
    "GEORADIUS Sicily 15 37 200 km COUNT -1",
    "GEORADIUS Sicily 15 37 200 km COUNT abc",
    "GEORADIUS Sicily 15 37 200 km COUNT",
    "GEORADIUS Sicily 15 37 200 km BOGUS",
    "GEORADIUS Sicily 15 37 200",
    "GEORADIUS Sicily 15 37 200 yd",
    "GEORADIUS Sicily 15 37 -1 km",
    "GEORADIUS Sicily 15 37 abc km",
    "GEORADIUS Sicily 200 37 1 km",
    "GEORADIUS Sicily 15 37 0 km",
    "GEORADIUS Sicily 15 37 -0 km",
    "GEORADIUS Sicily 15 37 inf km ASC",
    "GEORADIUS Sicily 15 37 200000 m ASC WITHDIST",
    "GEORADIUS Sicily 15 37 656168 ft ASC WITHDIST",
    "GEORADIUS Sicily 15 37 124.27 mi ASC WITHDIST",
    "GEORADIUS nokey 15 37 200 km",
    "GEORADIUS nokey 200 37 200 km",
    "GEORADIUS Sicily 15 37 200 km STORE out",
    "ZRANGE out 0 -1 WITHSCORES",
    "GEORADIUS Sicily 15 37 200 km STOREDIST out",
    "ZRANGE out 0 -1 WITHSCORES",
    "OBJECT ENCODING out",
    "GEORADIUS Sicily 15 37 200 km STOREDIST out COUNT 1 DESC",
    "ZRANGE out 0 -1 WITHSCORES",
    "GEORADIUS Sicily 15 37 200 km STORE out WITHDIST",
    "GEORADIUS Sicily 15 37 200 km STORE",
    "GEORADIUS Sicily 0 0 1 km STORE out",
    "EXISTS out",
    "SET out x",
    "GEORADIUS nokey 0 0 1 km STORE out",
    "EXISTS out",
    "GEORADIUS_RO Sicily 15 37 200 km ASC WITHDIST",
    "GEORADIUS_RO Sicily 15 37 200 km STORE out",
    "GEORADIUS_RO Sicily 15 37 200 km STOREDIST out",
    "GEORADIUSBYMEMBER Sicily Palermo 200 km WITHDIST WITHCOORD ASC",
    "GEORADIUSBYMEMBER Sicily Palermo 200 km WITHDIST WITHHASH DESC COUNT 3",
    "GEORADIUSBYMEMBER Sicily nosuch 200 km",
    "GEORADIUSBYMEMBER Sicily nosuch -200 yd",
    "GEORADIUSBYMEMBER Sicily Palermo -200 km",
    "GEORADIUSBYMEMBER Sicily Palermo 200 yd",
    "GEORADIUSBYMEMBER nokey nosuch abc yd",
    "GEORADIUSBYMEMBER nokey nosuch abc yd STORE out",
    "GEORADIUSBYMEMBER nokey nosuch abc yd BOGUS",
    "GEORADIUSBYMEMBER Sicily Palermo 100 km STORE out2 ASC",
    "ZRANGE out2 0 -1 WITHSCORES",
    "GEORADIUSBYMEMBER_RO Sicily Palermo 200 km WITHDIST ASC",
    "GEORADIUSBYMEMBER_RO Sicily Palermo 200 km STORE x",
    "GEOSEARCH Sicily FROMMEMBER Palermo BYRADIUS 200 km ASC WITHDIST WITHCOORD WITHHASH",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 400 400 km ASC WITHDIST",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 400 400 km DESC COUNT 2 WITHDIST",
    "~GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 400 400 km",
    "~GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 400 400 km COUNT 1 ANY",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 40 400 km ASC",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 400 40 km ASC",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 400 400 mi ASC WITHDIST",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 0 0 km",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX -1 1 km",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 1 -1 km",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX a 1 km",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 1 a km",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 1 1 yd",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 1 1",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1 km BYBOX 1 1 km",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 1 1 km BYRADIUS 1 km",
    "GEOSEARCH Sicily FROMLONLAT 15 37 FROMMEMBER Palermo BYRADIUS 1 km",
    "GEOSEARCH Sicily FROMMEMBER Palermo FROMLONLAT 15 37 BYRADIUS 1 km",
    "GEOSEARCH Sicily FROMMEMBER Palermo FROMMEMBER Catania BYRADIUS 100 km ASC",
    "GEOSEARCH Sicily BYRADIUS 1 km ASC",
    "geosearch Sicily BYRADIUS 1 km ASC",
    "GEOSEARCH Sicily FROMMEMBER Palermo ASC",
    "gEoSeArCh Sicily FROMMEMBER Palermo ASC",
    "GEOSEARCH Sicily FROMMEMBER nosuch BYRADIUS 1 km",
    "GEOSEARCH Sicily FROMLONLAT 200 37 BYRADIUS 1 km",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1 km ANY",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1 km STORE x",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1 km STOREDIST",
    "GEOSEARCH nokey FROMMEMBER nosuch BYRADIUS 1 km",
    "GEOSEARCH nokey FROMMEMBER nosuch BYRADIUS -1 km",
    "GEOSEARCH nokey FROMLONLAT 200 37 BYRADIUS 1 km",
    "GEOSEARCH nokey FROMMEMBER x",
    "GEOSEARCH Sicily FROMMEMBER Palermo BYRADIUS 200 km WITHCOORD\x00junk ASC",
    "GEOSEARCHSTORE dst Sicily FROMMEMBER Palermo BYRADIUS 200 km ASC",
    "ZRANGE dst 0 -1 WITHSCORES",
    "GEOSEARCHSTORE dst Sicily FROMMEMBER Palermo BYRADIUS 200 km STOREDIST DESC COUNT 2",
    "ZRANGE dst 0 -1 WITHSCORES",
    "GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYBOX 400 400 mi STOREDIST",
    "ZRANGE dst 0 -1 WITHSCORES",
    "GEOSEARCHSTORE dst Sicily FROMMEMBER Palermo BYRADIUS 200 km WITHDIST",
    "GEOSEARCHSTORE dst Sicily FROMMEMBER Palermo BYRADIUS 200 km STORE x",
    "GEOSEARCHSTORE dst Sicily FROMLONLAT 0 0 BYRADIUS 1 km",
    "EXISTS dst",
    "SET dst x",
    "EXPIRE dst 100",
    "GEOSEARCHSTORE dst Sicily FROMMEMBER Palermo BYRADIUS 1 km",
    "TTL dst",
    "GEOSEARCHSTORE dst nokey FROMMEMBER Palermo BYRADIUS 1 km",
    "EXISTS dst",
    "GEOSEARCHSTORE dst Sicily FROMMEMBER Palermo BYRADIUS 200 km COUNT 2 ANY",
    "ZCARD dst",
];

/// Points at the limits: the poles' Mercator limits, the antimeridian, the origin.
const EXTREMES: &[&str] = &[
    "GEOADD ex 180 85.05112878 ne 180 -85.05112878 se -180 85.05112878 nw -180 -85.05112878 sw",
    "GEOADD ex 179.9999 0 e1 -179.9999 0 w1 179.5 10 e2 -179.5 10 w2 0 0 origin 0 85 np 0 -85 sp",
    "GEOADD ex 179.99 -16.5 fiji1 -179.99 -16.5 fiji2 -149.267 -17.847 teahupoo",
    "ZRANGE ex 0 -1 WITHSCORES",
    "GEOPOS ex ne se nw sw e1 w1 origin np sp",
    "GEOHASH ex ne se nw sw e1 w1 origin np sp",
    "GEODIST ex e1 w1 m",
    "GEODIST ex ne sw km",
    "GEODIST ex np sp mi",
    "GEODIST ex fiji1 fiji2 ft",
    "GEORADIUS ex 180 0 100 km ASC WITHDIST",
    "GEORADIUS ex -180 0 100 km ASC WITHDIST",
    "GEORADIUS ex 179.9 -16.5 50 km ASC WITHDIST",
    "GEORADIUS ex 0 85 500 km ASC WITHDIST WITHCOORD",
    "GEORADIUS ex 0 -85 500 km ASC WITHDIST WITHCOORD",
    "GEORADIUS ex 0 85.05112878 2000 km ASC WITHDIST",
    "GEORADIUS ex 180 85.05112878 10 km ASC WITHDIST WITHHASH",
    "GEORADIUS ex 0 0 20000 km ASC WITHDIST",
    "GEORADIUS ex 0 0 5000 km ASC WITHDIST",
    "GEORADIUS ex 0 0 inf m DESC",
    "GEOSEARCH ex FROMLONLAT 180 0 BYBOX 500 500 km ASC WITHDIST",
    "GEOSEARCH ex FROMLONLAT -179.9 -16.5 BYBOX 100 100 km ASC WITHDIST",
    "GEOSEARCH ex FROMMEMBER ne BYBOX 40000 40000 km ASC WITHDIST",
    "GEOSEARCH ex FROMMEMBER teahupoo BYRADIUS 4000 km ASC WITHDIST",
    "GEOSEARCH ex FROMLONLAT 0 0 BYBOX 1e10 1e10 m ASC",
];

fn assert_ok(d: &mut DiffPair, name: &str, script: &[&str]) {
    d.assert_script(name, script);
}

#[test]
fn curated_resp2() {
    let mut d = DiffPair::start();
    assert_ok(&mut d, "basics", BASICS);
    assert_ok(&mut d, "searches", SEARCHES);
    assert_ok(&mut d, "extremes", EXTREMES);
}

#[test]
fn curated_resp3() {
    let mut d = DiffPair::start();
    let _ = d.hello(3).unwrap();
    // Everything except coordinates (see `resp3_coordinates`).
    assert_ok(
        &mut d,
        "resp3",
        &[
            "GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
            "GEOHASH Sicily Palermo nosuch",
            "GEOPOS Sicily nosuch",
            "GEOPOS nokey a",
            "GEODIST Sicily Palermo Catania km",
            "GEODIST Sicily Palermo nosuch",
            "GEODIST nokey a b",
            "GEORADIUS Sicily 15 37 200 km WITHDIST WITHHASH ASC",
            "GEORADIUS Sicily 15 37 200 km ASC",
            "GEOSEARCH Sicily FROMMEMBER Palermo BYRADIUS 200 km DESC WITHDIST",
            "GEOSEARCH nokey FROMMEMBER Palermo BYRADIUS 200 km",
            "GEOSEARCHSTORE d Sicily FROMMEMBER Palermo BYRADIUS 200 km STOREDIST",
            "ZRANGE d 0 -1 WITHSCORES",
            "GEORADIUS Sicily 15 37 200 yd",
        ],
    );
}

/// RESP3 coordinates: Redis sends `,13.36138933897018433` (a double with the human
/// `%.17Lf` text), which needs a reply type carrying preformatted double text.
#[test]
fn resp3_coordinates() {
    let mut d = DiffPair::start();
    let _ = d.hello(3).unwrap();
    assert_ok(
        &mut d,
        "resp3 coords",
        &[
            "GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
            "GEOPOS Sicily Palermo nosuch",
            "GEORADIUS Sicily 15 37 200 km WITHCOORD ASC",
        ],
    );
}

fn loader_output() -> Vec<u8> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/data/venues");
    let out = Command::new("sh").arg(format!("{dir}/load.sh")).arg(dir).output().expect("run data/venues/load.sh");
    assert!(out.status.success(), "loader failed: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// The queries of docs/GEO.md.
pub const VENUE_EXAMPLES: &[&str] = &[
    "GEOSEARCH venues FROMLONLAT 2.3470 48.8620 BYRADIUS 5 km ASC WITHDIST",
    "GEOPOS stations \"Gare de Lyon\"",
    "GEOSEARCHSTORE near:gare-de-lyon venues FROMLONLAT 2.37300127744674683 48.84430106328419186 BYRADIUS 25 km STOREDIST",
    "ZINTER 2 near:gare-de-lyon event:athletics WEIGHTS 1 0 WITHSCORES",
    "ZINTER 2 venues line:rer-c WEIGHTS 0 1",
    "GEOPOS venues \"Chateau de Versailles\" Invalides",
    "GEORADIUSBYMEMBER stations \"Champ de Mars-Tour Eiffel\" 3 km ASC WITHDIST",
    "GEODIST venues \"Stade de France\" \"Chateau de Versailles\" km",
    "GEODIST venues \"Marseille Marina\" Teahupoo km",
    "GEOHASH venues \"Stade de France\" Teahupoo",
    "GEOSEARCH venues FROMMEMBER \"Eiffel Tower Stadium\" BYBOX 4 2 km ASC WITHCOORD",
    "GEOSEARCH venues FROMMEMBER \"Stade de France\" BYRADIUS 1000 km DESC COUNT 5 WITHDIST",
    "~SMEMBERS event:football",
    "GEOSEARCH stations FROMMEMBER Concorde BYRADIUS 2 km ASC",
];

#[test]
fn venues_data_set() {
    let resp = loader_output();
    let commands = resp.windows(3).filter(|w| w == b"\r\n*").count() + 1;
    assert!(commands > 100, "loader wrote {commands} commands");
    let mut d = DiffPair::start();
    d.check_raw(&resp, commands, Cmp::Exact).unwrap();
    d.assert_script("venue checks", &["ZCARD venues", "ZCARD stations", "SCARD line:rer-c", "EXISTS event:surfing"]);
    d.assert_script("venue examples", VENUE_EXAMPLES);
}

fn seed() -> u64 {
    std::env::var("DIFF_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |t| t.as_nanos() as u64) | 1)
}

const UNITS: [&str; 4] = ["m", "km", "ft", "mi"];

#[test]
fn random_searches() {
    let seed = seed();
    eprintln!("random_searches: DIFF_SEED={seed}");
    let mut r = Rng(seed);
    let mut d = DiffPair::start();
    let deadline = Instant::now() + Duration::from_secs(8);
    let mut n = 0;
    let mut failures = Vec::new();
    while Instant::now() < deadline && failures.len() < 5 {
        // A cluster somewhere (poles and antimeridian included), points spread around it.
        let key = format!("g{}", r.below(4));
        let clat = r.range(-85.0, 85.0);
        let clon = r.range(-180.0, 180.0);
        let spread = [0.01, 0.5, 5.0, 60.0][r.below(4) as usize];
        let mut add = vec!["GEOADD".to_string(), key.clone()];
        for _ in 0..1 + r.below(40) {
            let lon = (clon + r.range(-spread, spread)).clamp(-180.0, 180.0);
            let lat = (clat + r.range(-spread, spread)).clamp(-85.05112878, 85.05112878);
            add.extend([format!("{lon:.6}"), format!("{lat:.6}"), format!("m{}", r.below(3000))]);
        }
        let mut cmds = vec![add];
        let unit = UNITS[r.below(4) as usize];
        let per_unit = match unit {
            "m" => 1.0,
            "km" => 1000.0,
            "ft" => 0.3048,
            _ => 1609.34,
        };
        let meters = spread * 111_000.0 * r.range(0.05, 2.0);
        let size = format!("{:.3}", meters / per_unit);
        let (qlon, qlat) = ((clon + r.range(-spread, spread)).clamp(-180.0, 180.0), (clat + r.range(-spread, spread)).clamp(-85.0, 85.0));
        let from: Vec<String> = if r.below(3) == 0 {
            vec!["FROMMEMBER".into(), format!("m{}", r.below(3000))]
        } else {
            vec!["FROMLONLAT".into(), format!("{qlon:.6}"), format!("{qlat:.6}")]
        };
        let by: Vec<String> = if r.below(2) == 0 {
            vec!["BYRADIUS".into(), size.clone(), unit.into()]
        } else {
            let h = format!("{:.3}", meters * r.range(0.2, 2.0) / per_unit);
            vec!["BYBOX".into(), size.clone(), h, unit.into()]
        };
        let sort = ["", "ASC", "DESC"][r.below(3) as usize];
        let mut opts: Vec<String> = Vec::new();
        if !sort.is_empty() {
            opts.push(sort.into());
        }
        let count = r.below(3) == 0;
        let any = count && r.below(2) == 0;
        if count {
            opts.extend(["COUNT".into(), (1 + r.below(10)).to_string()]);
            if any {
                opts.push("ANY".into());
            }
        }
        for w in ["WITHDIST", "WITHCOORD", "WITHHASH"] {
            if r.below(2) == 0 {
                opts.push(w.into());
            }
        }
        // Without ASC/DESC (and COUNT without ANY, which sorts), the order is unspecified.
        let ordered = !sort.is_empty() || (count && !any);
        let mut search = vec!["GEOSEARCH".to_string(), key.clone()];
        search.extend(from.iter().cloned());
        search.extend(by.iter().cloned());
        search.extend(opts.iter().cloned());
        cmds.push(search);
        if r.below(4) == 0 {
            let mut st = vec!["GEOSEARCHSTORE".to_string(), "dst".into(), key.clone()];
            st.extend(from.iter().cloned());
            st.extend(by.iter().cloned());
            st.extend(opts.iter().filter(|o| !o.starts_with("WITH")).cloned());
            if r.below(2) == 0 {
                st.push("STOREDIST".into());
            }
            cmds.push(st);
            cmds.push(["ZRANGE", "dst", "0", "-1", "WITHSCORES"].iter().map(|s| s.to_string()).collect());
        }
        if r.below(4) == 0 && by[0] == "BYRADIUS" {
            let mut gr = vec!["GEORADIUS".to_string(), key.clone(), format!("{qlon:.6}"), format!("{qlat:.6}"), size, unit.into()];
            gr.extend(opts.iter().cloned());
            cmds.push(gr);
        }
        if r.below(3) == 0 {
            let u = UNITS[r.below(4) as usize];
            cmds.push(vec!["GEODIST".into(), key.clone(), format!("m{}", r.below(3000)), format!("m{}", r.below(3000)), u.into()]);
            cmds.push(vec!["GEOPOS".into(), key.clone(), format!("m{}", r.below(3000)), format!("m{}", r.below(3000))]);
            cmds.push(vec!["GEOHASH".into(), key.clone(), format!("m{}", r.below(3000))]);
        }
        for (i, c) in cmds.iter().enumerate() {
            let unordered = i > 0 && !ordered && (c[0] == "GEOSEARCH" || c[0] == "GEORADIUS");
            let res = if unordered { d.check_unordered(c) } else { d.check(c) };
            if let Err(e) = res {
                failures.push(e.to_string());
            }
            n += 1;
        }
    }
    eprintln!("random_searches: {n} commands compared");
    assert!(failures.is_empty(), "DIFF_SEED={seed}: {} differences:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn search_does_not_scan_everything() {
    let mut d = DiffPair::start();
    let mut r = Rng(12345);
    // 200,000 points in a ~100 km square around Paris.
    for batch in 0..200 {
        let mut cmd = vec!["GEOADD".to_string(), "big".into()];
        for i in 0..1000 {
            cmd.push(format!("{:.6}", 2.35 + r.range(-0.68, 0.68)));
            cmd.push(format!("{:.6}", 48.85 + r.range(-0.45, 0.45)));
            cmd.push(format!("p{}", batch * 1000 + i));
        }
        let _ = d.check(&cmd).unwrap();
    }
    let _ = d.check(&["ZCARD", "big"]).unwrap();
    let query = ["GEOSEARCH", "big", "FROMLONLAT", "2.35", "48.85", "BYRADIUS", "5", "km", "ASC", "COUNT", "50", "WITHDIST"];
    let _ = d.check(&query).unwrap();
    let _ = d.check_unordered(&["GEOSEARCH", "big", "FROMLONLAT", "2.1", "48.7", "BYRADIUS", "5", "km"]).unwrap();
    let runs = 20;
    let start = Instant::now();
    for i in 0..runs {
        let lon = format!("{:.4}", 2.0 + 0.03 * i as f64);
        let got = d.ours_call(&["GEOSEARCH", "big", "FROMLONLAT", &lon, "48.85", "BYRADIUS", "5", "km"]);
        assert!(got.is_ok());
    }
    let each = start.elapsed() / runs;
    // ~1,600 points match; a full scan of 200,000 (with a haversine each) would take far longer.
    assert!(each < Duration::from_millis(60), "a 5 km GEOSEARCH took {each:?}");
}
