//! MODULE: Vermilion loads no modules (they are Redis's C API). LIST answers an empty list,
//! which is how client libraries and tools find out what a server offers; LOAD, LOADEX and
//! UNLOAD answer what Redis answers when the module cannot be loaded or is not there, behind
//! the same `enable-module-command` protection.

use bytes::Bytes;

use super::{help, help_reply, CmdError, Ctx};
use crate::protocol::Reply;

pub fn module_list(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(Reply::Array(Vec::new()))
}

pub fn module_help(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    Ok(help_reply(help::MODULE))
}

pub fn module_load(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    protected(ctx)?;
    crate::log::warning("Module loading is not supported: Vermilion has no module API");
    Err(CmdError::other("ERR Error loading the extension. Please check the server logs."))
}

pub fn module_loadex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<Reply, CmdError> {
    module_load(ctx, args)
}

pub fn module_unload(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Result<Reply, CmdError> {
    protected(ctx)?;
    Err(CmdError::other("ERR Error unloading module: no such module with that name"))
}

/// Redis's PROTECTED_CONFIG check for MODULE LOAD/LOADEX/UNLOAD.
fn protected(ctx: &Ctx<'_>) -> Result<(), CmdError> {
    if super::server::allowed_by(ctx, crate::config::P::EnableModuleCommand) {
        return Ok(());
    }
    Err(CmdError::other(
        "ERR MODULE command not allowed. If the enable-module-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.",
    ))
}
