//! The wire protocols, in plain Rust (no Python bindings): key layout, validation, ids and batch-first operations.

pub mod arrow;
pub mod arrow_read;
pub mod common;
pub mod ids;
pub mod keys;
pub mod rfq;
pub mod rsmq;
pub mod streams;
pub mod validate;
