//! Redis's Lua libraries (cjson, cmsgpack, struct) on arbitrary bytes, through EVAL on a real
//! executor: whatever the input, the script gets a value or a Lua error, and the server never
//! panics or crashes (the shapes of the known Redis Lua CVEs live in this space).
#![no_main]

use std::cell::RefCell;

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use vermilion::config::Config;
use vermilion::executor::{Executor, Request};
use vermilion::state::ClientOutput;

type Rx = tokio::sync::mpsc::UnboundedReceiver<ClientOutput>;

thread_local! {
    static EXEC: RefCell<(Executor, Rx)> = RefCell::new({
        let mut exec = Executor::new(Config::new());
        let rx = exec.connect_detached(1);
        (exec, rx)
    });
}

const SCRIPTS: &[&str] = &[
    "return {pcall(cjson.decode, ARGV[1])}",
    "local ok, v = pcall(cjson.decode, ARGV[1]) if ok then return {pcall(cjson.encode, v)} end return v",
    "return {pcall(cmsgpack.unpack, ARGV[1])}",
    "local t = {pcall(cmsgpack.unpack, ARGV[1])} if t[1] then return {pcall(cmsgpack.pack, unpack(t, 2))} end return 0",
    "return {pcall(struct.unpack, ARGV[1], ARGV[2])}",
    "return {pcall(struct.pack, ARGV[1], 1, 2, 'x', 3.5)}",
    "return {pcall(struct.size, ARGV[1])}",
    "return {pcall(bit.tohex, #ARGV[1] * 7919 - 2^31, #ARGV[2] - 9)}",
];

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let script = SCRIPTS[data[0] as usize % SCRIPTS.len()];
    // The rest splits at its first NUL into two arguments (a format and data for struct).
    let rest = &data[1..];
    let (a, b) = match rest.iter().position(|&c| c == 0) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &rest[..0]),
    };
    let argv = vec![
        Bytes::from_static(b"EVAL"),
        Bytes::copy_from_slice(script.as_bytes()),
        Bytes::from_static(b"0"),
        Bytes::copy_from_slice(a),
        Bytes::copy_from_slice(b),
    ];
    EXEC.with(|cell| {
        let (exec, rx) = &mut *cell.borrow_mut();
        exec.handle(Request::Commands { id: 1, cmds: vec![argv], protocol_error: None });
        exec.release_replies();
        let mut got = false;
        while let Ok(ClientOutput::Replies(bytes)) = rx.try_recv() {
            got |= !bytes.is_empty();
        }
        assert!(got, "every EVAL gets a reply");
    });
});
