//! geo commands (stubs until implemented).

use bytes::Bytes;

use super::{CmdError, Ctx};
use crate::protocol::Reply;

pub fn geoadd(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Err(CmdError::other("ERR not implemented yet"))
}

pub fn geohash(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Err(CmdError::other("ERR not implemented yet"))
}

pub fn geopos(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Err(CmdError::other("ERR not implemented yet"))
}

pub fn geodist(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Err(CmdError::other("ERR not implemented yet"))
}

pub fn georadius(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Err(CmdError::other("ERR not implemented yet"))
}

pub fn georadius_ro(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Err(CmdError::other("ERR not implemented yet"))
}

pub fn georadiusbymember(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Err(CmdError::other("ERR not implemented yet"))
}

pub fn georadiusbymember_ro(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Err(CmdError::other("ERR not implemented yet"))
}

pub fn geosearch(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Err(CmdError::other("ERR not implemented yet"))
}

pub fn geosearchstore(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Err(CmdError::other("ERR not implemented yet"))
}
