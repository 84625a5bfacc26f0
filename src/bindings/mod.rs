//! The PyO3 layer: the only code besides `lib.rs` that touches Python.
//!
//! `core` (arguments, operations, the sync runner, a client's pool) and `asyncio` (the asyncio runner)
//! know no handle type; each protocol's handles (`topic`, `rsmq`, `stream`) build on them, and `client`
//! makes those handles. Each sync class and its asyncio twin come from one macro over one `...Core`, and
//! `methods` (`py_methods!`, first: the others use it) writes the methods that only run an operation.

#[macro_use]
mod methods;

pub mod arrow;
pub mod arrow_read;
pub mod asyncio;
pub mod bench;
pub mod client;
pub mod convert;
pub mod core;
pub mod exceptions;
pub mod rsmq;
pub mod runtime;
pub mod stream;
pub mod topic;
