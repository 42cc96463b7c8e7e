//! The largest values the command line accepts where one limit serves several commands.

/// The largest key or value wirebench will generate (etcd's own request limit is 1.5 MiB).
pub const MAX_GENERATED: usize = 64 << 20;

/// The largest HTTP body file read (`--data-file`, `--data-lines`, a `--targets` file's bodies
/// all together): they are held in memory.
pub const MAX_BODY_FILE: u64 = 256 << 20;
