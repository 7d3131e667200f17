//! Redis Cluster (issue 34). So far only the bus's message format (`bus.rs`); cluster mode
//! itself (`cluster-enabled`) is not offered yet, and CLUSTER answers as Redis does without
//! it (commands/cluster.rs).

pub mod bus;
