//! sort commands (stubs until implemented).

use bytes::Bytes;

use super::{CmdError, Ctx};
use crate::protocol::Reply;

pub fn sort(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Err(CmdError::other("ERR not implemented yet"))
}

pub fn sort_ro(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Err(CmdError::other("ERR not implemented yet"))
}
