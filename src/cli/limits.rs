//! The largest values the command line accepts where one limit serves several commands.

/// The largest key or value wirebench will generate (etcd's own request limit is 1.5 MiB).
pub const MAX_GENERATED: usize = 64 << 20;
