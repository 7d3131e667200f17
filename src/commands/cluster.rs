//! Cluster mode is not implemented: CLUSTER's subcommands, READONLY, READWRITE and ASKING
//! answer what Redis answers when it runs without `cluster-enabled` (client libraries probe
//! `CLUSTER INFO` and read this error as "standalone server").

use bytes::Bytes;

use super::{CmdError, Ctx};
use crate::protocol::Reply;

pub fn disabled(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Err(CmdError::other("ERR This instance has cluster support disabled"))
}
