//! Everything that depends on the operating system, the architecture or the loom
//! model lives below here.

pub(crate) mod cpus;
