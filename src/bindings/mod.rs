//! The PyO3 layer: the only code besides `lib.rs` that touches Python.

pub mod arrow;
pub mod arrow_read;
pub mod async_client;
pub mod client;
pub mod convert;
pub mod exceptions;
pub mod rsmq;
pub mod runtime;
pub mod stream;
