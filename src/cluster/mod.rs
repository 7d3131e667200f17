//! Redis Cluster (issue 34). So far the bus's message format (`bus.rs`) and hash slots
//! (`slot.rs`); cluster mode itself (`cluster-enabled`) is not offered yet, and CLUSTER answers
//! as Redis does without it (commands/cluster.rs).

pub mod bus;
pub mod slot;
