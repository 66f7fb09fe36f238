//! The tier ladder's process-wide measurements.

// The ladder does not feed these estimates yet (its restructuring is under way);
// until it does, only `stats()` and the tests read them.
#[allow(dead_code)]
pub(crate) mod estimate;
