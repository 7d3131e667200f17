//! Redis Cluster (issue 34). So far the bus's message format (`bus.rs`), hash slots
//! (`slot.rs`) and the `nodes.conf` / CLUSTER NODES format (`nodes_conf.rs`); cluster mode itself (`cluster-enabled`) is not offered yet, and CLUSTER answers
//! as Redis does without it (commands/cluster.rs).

pub mod bus;
pub mod nodes_conf;
pub mod slot;
