//! Redis's Lua libraries (cjson, cmsgpack, struct, bit), written in Rust, installed as globals
//! (the sandbox makes their tables read-only afterwards).

use mlua::Lua;

pub fn install(lua: &Lua) -> mlua::Result<()> {
    let globals = lua.globals();
    globals.raw_set("cjson", super::lib_cjson::open(lua)?)?;
    globals.raw_set("cmsgpack", super::lib_cmsgpack::open(lua)?)?;
    globals.raw_set("struct", super::lib_struct::open(lua)?)?;
    globals.raw_set("bit", super::lib_bit::open(lua)?)?;
    Ok(())
}
