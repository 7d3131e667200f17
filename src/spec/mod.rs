//! The command table as data: each command's metadata (arity, flags, key positions and key
//! specs, ACL categories, tips, docs, Vermilion's traits), lookup by name and subcommand
//! resolution, the key arguments a command touches (`keyspec`), and the generic error texts
//! of the dispatcher. A leaf: no handlers (they are `commands::handlers`), no state, so the
//! ACL rules, the scripting engine and the executor all read it without depending on each
//! other.

mod entry;
pub mod keyspec;
mod table;

pub use entry::{Begin, CommandSpec, Doc, Find, Flag, Group, KeySpec, Trait};
pub use table::{COMMANDS, COMMAND_IDS};

use std::collections::HashMap;
use std::sync::OnceLock;

use bytes::Bytes;

use crate::protocol::Reply;

type CommandIndex = HashMap<&'static [u8], &'static CommandSpec, crate::util::FixedTableHasher>;

fn index() -> &'static CommandIndex {
    static INDEX: OnceLock<CommandIndex> = OnceLock::new();
    INDEX.get_or_init(|| COMMANDS.iter().map(|c| (c.name.as_bytes(), c)).collect())
}

/// Finds a top-level command by name, case-insensitively, without allocating.
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    thread_local! {
        /// The last command found: clients and streams send runs of the same command, and
        /// comparing the name costs less than hashing it and probing the table.
        static LAST: std::cell::Cell<Option<&'static CommandSpec>> = const { std::cell::Cell::new(None) };
    }
    if let Some(cmd) = LAST.get() {
        if cmd.name.as_bytes().eq_ignore_ascii_case(name) {
            return Some(cmd);
        }
    }
    let found = lookup_indexed(name);
    if found.is_some() {
        LAST.set(found);
    }
    found
}

fn lookup_indexed(name: &[u8]) -> Option<&'static CommandSpec> {
    let mut buf = [0u8; 32];
    if name.len() > buf.len() {
        return None;
    }
    let lower = &mut buf[..name.len()];
    lower.copy_from_slice(name);
    lower.make_ascii_lowercase();
    index().get(&*lower).copied()
}

/// The outcome of resolving an argv against the table.
pub enum Resolved {
    Found(&'static CommandSpec),
    Unknown,
    UnknownSubcommand,
    WrongArity(&'static CommandSpec),
}

/// Resolves `args` to a command or subcommand and checks its arity.
pub fn resolve(args: &[Bytes]) -> Resolved {
    let Some(cmd) = lookup(&args[0]) else {
        return Resolved::Unknown;
    };
    let cmd = if cmd.subcommands.is_empty() || args.len() < 2 {
        cmd
    } else {
        match cmd.subcommands.iter().find(|s| s.sub_name().as_bytes().eq_ignore_ascii_case(&args[1])) {
            Some(sub) => sub,
            None => return Resolved::UnknownSubcommand,
        }
    };
    if !cmd.arity_ok(args.len()) {
        return Resolved::WrongArity(cmd);
    }
    Resolved::Found(cmd)
}

/// Redis's reply to a command that is not in the table.
pub fn unknown_command_error(args: &[Bytes]) -> Reply {
    let mut list = String::new();
    for arg in &args[1..] {
        if list.len() >= 128 {
            break;
        }
        let room = 128 - list.len();
        let text = c_string_prefix(arg, room);
        list.push_str(&format!("'{text}' "));
    }
    let name = c_string_prefix(&args[0], 128);
    Reply::Error(sanitize(format!("ERR unknown command '{name}', with args beginning with: {list}")).into())
}

/// Redis's reply to an unknown subcommand of a container command.
pub fn unknown_subcommand_error(args: &[Bytes]) -> Reply {
    let sub = c_string_prefix(&args[1], 128);
    let name = String::from_utf8_lossy(&args[0]).to_uppercase();
    Reply::Error(sanitize(format!("ERR unknown subcommand '{sub}'. Try {name} HELP.")).into())
}

pub fn wrong_arity_error(cmd: &CommandSpec) -> Reply {
    Reply::Error(format!("ERR wrong number of arguments for '{}' command", cmd.name).into())
}

/// What `%.Ns` of a C string prints: up to the first NUL, at most `max` bytes.
pub fn c_string_prefix(arg: &[u8], max: usize) -> String {
    let end = arg.iter().position(|&b| b == 0).unwrap_or(arg.len()).min(max);
    String::from_utf8_lossy(&arg[..end]).into_owned()
}

/// Error texts must not break the protocol: Redis turns CR and LF into spaces.
pub fn sanitize(s: String) -> String {
    if s.contains(['\r', '\n']) {
        s.replace(['\r', '\n'], " ")
    } else {
        s
    }
}

/// Every command and subcommand of the table.
pub fn all_commands() -> impl Iterator<Item = &'static CommandSpec> {
    COMMANDS.iter().flat_map(|c| std::iter::once(c).chain(c.subcommands.iter()))
}
