//! The shape of a command table entry: everything the dispatcher and `COMMAND` need to know
//! about a command, as plain data.

/// Command flags, as Redis 7 names them in `COMMAND INFO`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flag {
    Write,
    ReadOnly,
    DenyOom,
    Module,
    Admin,
    PubSub,
    NoScript,
    Blocking,
    Loading,
    Stale,
    SkipMonitor,
    SkipSlowlog,
    Asking,
    Fast,
    NoAuth,
    MayReplicate,
    NoMandatoryKeys,
    AllowBusy,
    NoMulti,
    MovableKeys,
    NoAsyncLoading,
}

impl Flag {
    pub fn as_str(self) -> &'static str {
        match self {
            Flag::Write => "write",
            Flag::ReadOnly => "readonly",
            Flag::DenyOom => "denyoom",
            Flag::Module => "module",
            Flag::Admin => "admin",
            Flag::PubSub => "pubsub",
            Flag::NoScript => "noscript",
            Flag::Blocking => "blocking",
            Flag::Loading => "loading",
            Flag::Stale => "stale",
            Flag::SkipMonitor => "skip_monitor",
            Flag::SkipSlowlog => "skip_slowlog",
            Flag::Asking => "asking",
            Flag::Fast => "fast",
            Flag::NoAuth => "no_auth",
            Flag::MayReplicate => "may_replicate",
            Flag::NoMandatoryKeys => "no_mandatory_keys",
            Flag::AllowBusy => "allow_busy",
            Flag::NoMulti => "no_multi",
            Flag::MovableKeys => "movablekeys",
            Flag::NoAsyncLoading => "no_async_loading",
        }
    }
}

/// The command groups of `COMMAND DOCS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    Generic,
    String,
    List,
    Set,
    SortedSet,
    Hash,
    PubSub,
    Transactions,
    Connection,
    Server,
    Scripting,
    HyperLogLog,
    Cluster,
    Geo,
    Stream,
    Bitmap,
}

impl Group {
    pub fn as_str(self) -> &'static str {
        match self {
            Group::Generic => "generic",
            Group::String => "string",
            Group::List => "list",
            Group::Set => "set",
            Group::SortedSet => "sorted-set",
            Group::Hash => "hash",
            Group::PubSub => "pubsub",
            Group::Transactions => "transactions",
            Group::Connection => "connection",
            Group::Server => "server",
            Group::Scripting => "scripting",
            Group::HyperLogLog => "hyperloglog",
            Group::Cluster => "cluster",
            Group::Geo => "geo",
            Group::Stream => "stream",
            Group::Bitmap => "bitmap",
        }
    }
}

/// Vermilion's own traits of a command (the `+words` of tools/commands.txt): what the
/// executor does differently for it, as data of the table rather than lists of names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trait {
    /// Allowed in RESP2 subscribed mode.
    Subscribed,
    /// Runs at once inside MULTI instead of being queued.
    NotQueued,
    /// A script sees its reply sorted by bytes (Redis's CMD_SORT_FOR_SCRIPT), so the same
    /// script replays the same way.
    ScriptSorted,
    /// A script sees its field/value pairs sorted by field.
    ScriptSortedPairs,
    /// Its result comes from state the log does not replay (subscribers, memory figures,
    /// keys active expiry has not deleted yet): a script calling it is logged as its effects.
    ScriptRandom,
    /// Not random for a script despite Redis's `nondeterministic_output` tip (time is frozen
    /// in a script and travels with its record: TTL, PTTL).
    ScriptDeterministic,
    /// Runs the script given as its first argument (EVAL, EVAL_RO): its shebang declares
    /// the flags the pre-run checks use.
    ScriptBody,
    /// Runs a cached script by SHA1 (EVALSHA, EVALSHA_RO).
    ScriptSha,
    /// Runs a library function by name (FCALL, FCALL_RO).
    ScriptFunction,
    /// CLIENT TRACKING does not remember the keys it names (EVAL_RO, EVALSHA_RO: the
    /// script's own reads are remembered).
    NoKeyTracking,
    /// Empties whole databases (FLUSHALL, FLUSHDB): a rewrite in progress captures no key
    /// before it.
    EmptiesDatabases,
    /// Touches keys it does not name (SCAN, RANDOMKEY: Redis's hidden
    /// TOUCHES_ARBITRARY_KEYS): the DELs of keys it expires go to the log one by one, not
    /// wrapped in MULTI/EXEC.
    ArbitraryKeys,
    /// Runs the commands MULTI queued (EXEC): what the pre-run checks and a write pause ask
    /// of it, they ask of its queue (Redis's `mstate.cmd_flags`), and a refusal discards the
    /// transaction.
    RunsQueue,
    /// Writes a key of another database than the client's (COPY with DB, SWAPDB): a
    /// background walk in progress completes before it, and an all-or-nothing script may not
    /// run it.
    OtherDatabase,
    /// Writes its key in the database an argument names, where no key spec points (MOVE;
    /// a walk needs nothing more: the moved copy carries the walk's mark): an all-or-nothing
    /// script may not run it.
    MovesKey,
    /// Reads keys its arguments' patterns name, where no key spec points (SORT's BY and
    /// GET): a debugging session's private view copies the whole database first.
    PatternKeys,
}

/// A key specification (Redis 7's `key_specs`), compiled by the generator into typed data:
/// where a command's keys begin, how many follow, and what the command does to them.
#[derive(Debug, Clone, Copy)]
pub struct KeySpec {
    /// As COMMAND INFO prints them: `RO`/`RW`/`OW`/`RM`, `access`, `insert`, `update`,
    /// `delete`, `not_key`, `incomplete`, `variable_flags`...
    pub flags: &'static [&'static str],
    pub begin: Begin,
    pub find: Find,
}

/// Where a key spec's keys begin (`begin_search`).
#[derive(Debug, Clone, Copy)]
pub enum Begin {
    /// At this argument.
    Index(i64),
    /// After `keyword`, searched from `startfrom` (negative: from the end, backwards).
    Keyword { keyword: &'static str, startfrom: i64 },
    /// Only the command's own key finder knows (SORT's BY and GET).
    Unknown,
}

/// How many keys follow (`find_keys`).
#[derive(Debug, Clone, Copy)]
pub enum Find {
    /// Up to `lastkey` past the first (negative: from the end; with `limit`, a fraction of
    /// what remains), every `keystep`.
    Range {
        lastkey: i64,
        keystep: i64,
        limit: i64,
    },
    /// The count is the argument `keynumidx` past the first; the keys start `firstkey` past it.
    Keynum {
        keynumidx: i64,
        firstkey: i64,
        keystep: i64,
    },
    Unknown,
}

impl KeySpec {
    pub fn has_flag(&self, name: &str) -> bool {
        self.flags.contains(&name)
    }
}

/// A small static document tree, for the nested parts of `COMMAND INFO` (key specs).
#[derive(Debug)]
pub enum Doc {
    Str(&'static str),
    Int(i64),
    Arr(&'static [Doc]),
    Map(&'static [(&'static str, Doc)]),
}

/// One command (or subcommand: `name` is then `container|sub`).
pub struct CommandSpec {
    /// Dense index over commands and subcommands (for per-command counters).
    pub id: usize,
    pub name: &'static str,
    /// Redis's arity: N means exactly N arguments (name included), -N at least N.
    pub arity: i32,
    pub flags: &'static [Flag],
    pub first_key: i32,
    pub last_key: i32,
    pub key_step: i32,
    /// ACL categories, as `COMMAND INFO` lists them.
    pub acl: &'static [&'static str],
    /// Hints such as `nondeterministic_output` (what makes a script random-dirty).
    pub tips: &'static [&'static str],
    /// As COMMAND INFO prints them.
    pub key_specs: &'static [Doc],
    /// The same, typed, for the code that follows them (`keyspec.rs`).
    pub keys: &'static [KeySpec],
    pub group: Group,
    pub summary: &'static str,
    pub since: &'static str,
    /// Empty when Redis documents none (MONITOR, SYNC, PSYNC).
    pub complexity: &'static str,
    pub doc_flags: &'static [&'static str],
    /// For deprecated commands: since when, and what to use instead (else empty).
    pub deprecated_since: &'static str,
    pub replaced_by: &'static str,
    pub traits: &'static [Trait],
    pub subcommands: &'static [CommandSpec],
}

impl CommandSpec {
    pub fn has(&self, flag: Flag) -> bool {
        self.flags.contains(&flag)
    }

    pub fn is(&self, t: Trait) -> bool {
        self.traits.contains(&t)
    }

    pub fn arity_ok(&self, argc: usize) -> bool {
        let argc = argc as i64;
        let arity = self.arity as i64;
        if arity >= 0 {
            argc == arity
        } else {
            argc >= -arity
        }
    }

    /// The part after `|` for a subcommand, the whole name otherwise.
    pub fn sub_name(&self) -> &'static str {
        self.name.rsplit('|').next().unwrap_or(self.name)
    }

    /// True for commands whose output or effect depends on more than their arguments and
    /// the data (Redis 7's `nondeterministic_output` tip; the old `random` flag).
    pub fn is_random(&self) -> bool {
        self.tips.contains(&"nondeterministic_output")
    }

    /// The key positions in `args` (legacy first/last/step), for COMMAND GETKEYS.
    pub fn key_positions(&self, argc: usize) -> Vec<usize> {
        if self.first_key <= 0 {
            return Vec::new();
        }
        let last = if self.last_key < 0 { argc as i64 + self.last_key as i64 } else { self.last_key as i64 };
        let step = self.key_step.max(1) as usize;
        let mut out = Vec::new();
        let mut i = self.first_key as usize;
        while (i as i64) <= last && i < argc {
            out.push(i);
            i += step;
        }
        out
    }
}
