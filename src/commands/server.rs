//! server commands (stub).

use bytes::Bytes;

use super::{CmdError, Ctx};
use crate::protocol::Reply;

pub fn info(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Err(CmdError::other("ERR not implemented yet"))
}

pub fn config_get(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Err(CmdError::other("ERR not implemented yet"))
}

pub fn config_set(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Err(CmdError::other("ERR not implemented yet"))
}

pub fn config_resetstat(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Err(CmdError::other("ERR not implemented yet"))
}

pub fn config_help(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Err(CmdError::other("ERR not implemented yet"))
}

pub fn time(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Err(CmdError::other("ERR not implemented yet"))
}

pub fn lastsave(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Err(CmdError::other("ERR not implemented yet"))
}

pub fn slowlog_get(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Err(CmdError::other("ERR not implemented yet"))
}

pub fn slowlog_len(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Err(CmdError::other("ERR not implemented yet"))
}

pub fn slowlog_reset(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Err(CmdError::other("ERR not implemented yet"))
}

pub fn slowlog_help(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Err(CmdError::other("ERR not implemented yet"))
}

pub fn shutdown(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Err(CmdError::other("ERR not implemented yet"))
}

pub fn debug(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Err(CmdError::other("ERR not implemented yet"))
}
