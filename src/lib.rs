//! ferroq's native core: a reliable message queue on Redis (redis-rs on tokio), exposed to Python as
//! `ferroq._ferroq`. Only `bindings/` and this file use pyo3; the rest is plain Rust.
//!
//! Fork safety: the tokio runtime and every client's connection pool remember the pid that built them;
//! a forked child (Spark's Python workers) builds its own on first use and never touches the parent's.

pub mod config;
pub mod errors;
pub mod fork;
pub mod limits;
pub mod pool;
pub mod protocol;
pub mod pyrepr;
pub mod scripts;
pub mod server_version;

mod bindings;

/// Every Rust allocation of the extension (Python's objects keep Python's allocator): see Cargo.toml.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// SHA1 of every embedded Lua script, by `<protocol>/<op>-<numkeys>` name.
#[pyfunction]
fn script_hashes(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let out = PyDict::new(py);
    for s in scripts::all() {
        out.set_item(s.name, &s.sha)?;
    }
    Ok(out)
}

/// The per-topic keys (backlog, nextlog, leases, deliveries, message prefix), for parity tests.
#[pyfunction]
fn rfq_keys(topic: &str) -> Vec<String> {
    protocol::keys::TopicKeys::new(topic).all()
}

/// A new rfq message id: uuid1 hex with a random node, as rfq 1.2+ makes them.
#[pyfunction]
fn new_message_id() -> String {
    protocol::ids::new_id()
}

/// The keys of an RSMQ queue: QUEUES set, queue ZSET, queue HASH, realtime channel (for parity tests).
#[pyfunction]
fn rsmq_keys(ns: &Bound<'_, PyAny>, qname: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    let ns = bindings::convert::rsmq::ns(ns)?;
    let qname = bindings::convert::rsmq::qname(qname)?;
    Ok(protocol::keys::RsmqKeys::new(&ns, &qname).all())
}

/// The keys of a stream (`[ferroq:stream:<name>]`), for parity tests. Raises InvalidName as `Client.stream` does.
#[pyfunction]
fn stream_keys(name: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    let name = bindings::convert::streams::stream_name(name)?;
    Ok(protocol::keys::StreamKeys::new(&name).all())
}

/// The key recording what the publish call with `token` appended to stream `name`, for parity tests.
#[pyfunction]
fn stream_published_key(name: &Bound<'_, PyAny>, token: &str) -> PyResult<String> {
    let name = bindings::convert::streams::stream_name(name)?;
    Ok(protocol::keys::stream_published(&name, token))
}

/// The record key of one publish chunk of topic `topic`, for parity tests.
#[pyfunction]
fn rfq_published_key(topic: &Bound<'_, PyAny>, token: &str) -> PyResult<String> {
    let topic = bindings::convert::rfq::topic_name(topic)?;
    Ok(protocol::keys::rfq_published(&topic, token))
}

/// The record key of one send chunk of RSMQ queue `qname`, for parity tests.
#[pyfunction]
fn rsmq_published_key(ns: &Bound<'_, PyAny>, qname: &Bound<'_, PyAny>, token: &str) -> PyResult<String> {
    let ns = bindings::convert::rsmq::ns(ns)?;
    let qname = bindings::convert::rsmq::qname(qname)?;
    Ok(protocol::keys::rsmq_published(&ns, &qname, token))
}

/// The record token of chunk `chunk` of an idempotent publish with `dedup_key`, for parity tests.
#[pyfunction]
fn dedup_token(dedup_key: &str, chunk: usize) -> String {
    protocol::keys::dedup_token(dedup_key, chunk)
}

/// `LIMITS`: every limit of [`limits`], by name, as a read-only mapping (`types.MappingProxyType`).
fn limits_mapping(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let all = PyDict::new(py);
    for (name, value) in limits::ALL {
        match *value {
            limits::Limit::Int(n) => all.set_item(name, n)?,
            limits::Limit::Float(x) => all.set_item(name, x)?,
        }
    }
    py.import("types")?.getattr("MappingProxyType")?.call1((all,))
}

#[pymodule]
fn _ferroq(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("LIMITS", limits_mapping(m.py())?)?;
    pool::set_warning_sink(bindings::exceptions::warn);
    bindings::runtime::register_exit_hook(m)?;
    m.add_function(wrap_pyfunction!(script_hashes, m)?)?;
    m.add_function(wrap_pyfunction!(rfq_keys, m)?)?;
    m.add_function(wrap_pyfunction!(new_message_id, m)?)?;
    m.add_function(wrap_pyfunction!(rsmq_keys, m)?)?;
    m.add_function(wrap_pyfunction!(stream_keys, m)?)?;
    m.add_function(wrap_pyfunction!(stream_published_key, m)?)?;
    m.add_function(wrap_pyfunction!(rfq_published_key, m)?)?;
    m.add_function(wrap_pyfunction!(rsmq_published_key, m)?)?;
    m.add_function(wrap_pyfunction!(dedup_token, m)?)?;
    m.add_function(wrap_pyfunction!(bindings::bench::bench_round_trips, m)?)?;
    m.add_class::<bindings::client::Client>()?;
    m.add_class::<bindings::topic::Topic>()?;
    m.add_class::<bindings::topic::ClaimAhead>()?;
    m.add_class::<bindings::core::DeferredBatch>()?;
    m.add_class::<bindings::rsmq::ReceiveAhead>()?;
    m.add_class::<bindings::client::AsyncClient>()?;
    m.add_class::<bindings::topic::AsyncTopic>()?;
    m.add_class::<bindings::rsmq::RsmqQueue>()?;
    m.add_class::<bindings::rsmq::AsyncRsmqQueue>()?;
    m.add_class::<bindings::stream::Stream>()?;
    m.add_class::<bindings::stream::AsyncStream>()?;
    m.add_class::<bindings::stream::ConsumerGroup>()?;
    m.add_class::<bindings::stream::AsyncConsumerGroup>()?;
    Ok(())
}
