//! `nodes.conf` / CLUSTER NODES text (`cluster::nodes_conf`) from arbitrary bytes: parsing never
//! panics, and what parses, written back, parses to the same nodes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vermilion::cluster::nodes_conf;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(conf) = nodes_conf::parse(&text) {
        let again = nodes_conf::render(&conf);
        assert_eq!(nodes_conf::parse(&again).as_ref(), Ok(&conf), "written back: {again:?}");
    }
});
