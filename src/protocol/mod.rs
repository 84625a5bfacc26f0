//! The wire protocols, in pure Rust (no pyo3): key layout, validation, ids and batch-first operations.

pub mod common;
pub mod ids;
pub mod keys;
pub mod rfq;
pub mod rsmq;
pub mod validate;
