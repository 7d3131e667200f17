//! Redis Cluster (issue 34): the bus's message format (`bus.rs`), hash slots (`slot.rs`),
//! the `nodes.conf` / CLUSTER NODES format (`nodes_conf.rs`), the nodes (`node.rs`), the
//! cluster state (`state.rs`), the bus protocol's rules (`gossip.rs`) and the bus's
//! connections (`link.rs`, the network edge). The executor owns the state and carries out
//! what it asks (`executor/cluster.rs`).

pub mod bus;
pub mod failover;
pub mod gossip;
pub mod link;
pub mod node;
pub mod nodes_conf;
pub mod slot;
pub mod state;

pub use node::{LinkId, Name};
pub use state::{Action, Cluster, Settings};
