//! The server starts, answers PING over raw bytes and with a real client, and exits on SHUTDOWN.

mod common;

use common::Server;

#[test]
fn ping_raw_and_client() {
    let server = Server::start(&[]);
    let mut raw = server.raw();
    assert_eq!(raw.call(&[b"PING"]), b"+PONG\r\n");
    let mut con = server.client();
    let pong: String = redis::cmd("PING").query(&mut con).unwrap();
    assert_eq!(pong, "PONG");
}
