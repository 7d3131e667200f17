//! The cluster bus's connections (the network edge): the listener on the bus port, and one
//! task per link that cuts the byte stream into whole messages for the executor and writes
//! what the executor sends. Messages are checked and decoded by the executor (`bus::decode`);
//! here only the frame: the `RCmb` signature and a sane total length, else the link closes,
//! as Redis's clusterReadHandler does.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

use super::bus::HEADER_LEN;
use crate::conn::{Request, RequestTx};
use crate::log;

/// The shortest message Redis accepts (`CLUSTERMSG_MIN_LEN`: a header without its data).
const MIN_LEN: usize = HEADER_LEN;

/// A message longer than this closes the link (a PUBLISH's payload is the only large one).
const MAX_LEN: usize = 512 << 20;

/// How long one message may take to write before the link is given up.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// Link ids, shared by the listener and the connections the executor asks for.
pub static NEXT_LINK: AtomicU64 = AtomicU64::new(1);

pub fn next_link_id() -> u64 {
    NEXT_LINK.fetch_add(1, Ordering::Relaxed)
}

/// Accepts bus connections on `listener` until the process ends.
pub async fn listen(listener: std::net::TcpListener, tx: RequestTx) {
    let listener = match TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            log::warning(&format!("Cluster bus listener failed: {e}"));
            return;
        }
    };
    loop {
        match listener.accept().await {
            Ok((sock, _)) => {
                tokio::spawn(run(sock, next_link_id(), None, tx.clone()));
            }
            Err(e) => {
                log::warning(&format!("Cluster bus accept failed: {e}"));
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Connects to a node's bus port for the executor (`node`: the node's name).
pub async fn connect(ip: String, cport: u16, node: [u8; 40], timeout: Duration, tx: RequestTx) {
    let addr = if ip.contains(':') { format!("[{ip}]:{cport}") } else { format!("{ip}:{cport}") };
    match tokio::time::timeout(timeout, TcpStream::connect(&addr)).await {
        Ok(Ok(sock)) => run(sock, next_link_id(), Some(node), tx).await,
        _ => {
            let _ = tx.send(Request::ClusterConnectFailed { node });
        }
    }
}

/// One link: announces itself, then relays messages both ways until either side ends it.
async fn run(sock: TcpStream, link: u64, node: Option<[u8; 40]>, tx: RequestTx) {
    let _ = sock.set_nodelay(true);
    let peer_ip = sock.peer_addr().map(|a| a.ip().to_string()).unwrap_or_default();
    let local_ip = sock.local_addr().map(|a| a.ip().to_string()).unwrap_or_default();
    let (out_tx, out_rx) = unbounded_channel::<Vec<u8>>();
    if tx.send(Request::ClusterLinkUp { link, node, inbound: node.is_none(), peer_ip, local_ip, tx: out_tx }).is_err() {
        return;
    }
    relay(sock, link, out_rx, &tx).await;
    let _ = tx.send(Request::ClusterLinkDown { link });
}

async fn relay(mut sock: TcpStream, link: u64, mut out_rx: UnboundedReceiver<Vec<u8>>, tx: &RequestTx) {
    let mut buf = BytesMut::with_capacity(HEADER_LEN * 2);
    loop {
        tokio::select! {
            read = sock.read_buf(&mut buf) => {
                match read {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                while buf.len() >= 8 {
                    if &buf[..4] != b"RCmb" {
                        return;
                    }
                    let len = u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]) as usize;
                    if !(MIN_LEN..=MAX_LEN).contains(&len) {
                        return;
                    }
                    if buf.len() < len {
                        buf.reserve(len - buf.len());
                        break;
                    }
                    let frame = buf.split_to(len).to_vec();
                    if tx.send(Request::ClusterMessage { link, bytes: frame }).is_err() {
                        return;
                    }
                }
                if buf.is_empty() && buf.capacity() > 1 << 20 {
                    buf = BytesMut::with_capacity(HEADER_LEN * 2);
                }
            }
            out = out_rx.recv() => {
                let Some(bytes) = out else { return };
                // A peer that stops reading for this long loses the link (and its queue):
                // the executor sees it down and connects again.
                match tokio::time::timeout(WRITE_TIMEOUT, sock.write_all(&bytes)).await {
                    Ok(Ok(())) => {}
                    _ => return,
                }
            }
        }
    }
}
