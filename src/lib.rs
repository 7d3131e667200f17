//! Vermilion: a Redis-compatible data server whose core promise is the durability of
//! server-side Lua scripts.
//!
//! # Layout
//!
//! ```text
//!  server (tokio: listeners, one task per connection: read + decode)
//!     │  Request::Commands (a batch of argv)    ▲ replies: written to the socket by the
//!     ▼                                         │ executor, or by the task if it would block
//!  executor (one thread: owns Keyspace + ServerState, runs commands, cron)
//!     │
//!     ├── commands (table as data, dispatcher checks, one file per group)
//!     ├── db (keyspace, values, expiry)        ├── state (clients, stats, slowlog)
//!     └── protocol (RESP decode/encode)        └── config (parameters as data)
//! ```
//!
//! See docs/ARCHITECTURE.md for the invariants.

pub mod acl;
pub mod aof;
pub mod bgwrite;
pub mod clock;
pub mod cluster;
pub mod commands;
pub mod config;
pub mod conn;
pub mod db;
pub mod executor;
pub mod glob;
pub mod latency;
pub mod log;
pub mod notify;
pub mod protocol;
pub mod replication;
pub mod scripting;
pub mod server;
pub mod spec;
pub mod state;
pub mod tls;
pub mod tracking;
pub mod util;

/// The version reported in logs and INFO.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The Redis version we are compatible with (reported as `redis_version`).
pub const REDIS_VERSION: &str = "7.0.15";
