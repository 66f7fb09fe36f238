//! Shared harness of the benches.
