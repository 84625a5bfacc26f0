//! Core errors -> the classes of `ferroq.exceptions` (the one place this mapping lives).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyModule, PyTuple};

use crate::errors::{Error, ErrorKind};

static MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn module(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    MODULE
        .get_or_try_init(py, || Ok(py.import("ferroq.exceptions")?.unbind()))
        .map(|m| m.bind(py))
}

fn class_name(kind: &ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Connection | ErrorKind::Closed | ErrorKind::Loading => "ConnectionFailed",
        ErrorKind::Tls => "TlsError",
        ErrorKind::Timeout => "CommandTimeout",
        ErrorKind::ServerUnavailable => "ServerUnavailable",
        ErrorKind::InvalidArgument => "InvalidArgument",
        ErrorKind::InvalidName => "InvalidName",
        ErrorKind::InvalidMessage => "InvalidMessage",
        ErrorKind::MessageTooLarge => "MessageTooLarge",
        ErrorKind::QueueNotFound => "QueueNotFound",
        ErrorKind::QueueExists => "QueueExists",
        ErrorKind::Batch(_) => "BatchError",
        ErrorKind::OutOfMemory => "OutOfMemory",
        ErrorKind::PermissionDenied => "PermissionDenied",
        ErrorKind::UnsupportedServer => "UnsupportedServer",
        ErrorKind::Protocol => "ProtocolError",
        ErrorKind::NoScript | ErrorKind::Server { .. } => "ServerError",
    }
}

/// The exception instance for `err`.
pub fn instance<'py>(py: Python<'py>, err: &Error) -> PyResult<Bound<'py, PyAny>> {
    let cls = module(py)?.getattr(class_name(&err.kind))?;
    match &err.kind {
        ErrorKind::Batch(errors) => {
            let items = PyList::empty(py);
            for (index, e) in errors {
                items.append(PyTuple::new(
                    py,
                    [index.into_pyobject(py)?.into_any(), instance(py, e)?],
                )?)?;
            }
            let kwargs = PyDict::new(py);
            kwargs.set_item("errors", items)?;
            cls.call((err.message.as_str(),), Some(&kwargs))
        }
        ErrorKind::Server { code } => {
            let kwargs = PyDict::new(py);
            kwargs.set_item("code", code)?;
            cls.call((err.message.as_str(),), Some(&kwargs))
        }
        ErrorKind::NoScript => {
            let kwargs = PyDict::new(py);
            kwargs.set_item("code", "NOSCRIPT")?;
            cls.call((err.message.as_str(),), Some(&kwargs))
        }
        _ => cls.call1((err.message.as_str(),)),
    }
}

/// `err` as a Python exception of `ferroq.exceptions`.
fn to_pyerr(py: Python<'_>, err: Error) -> PyErr {
    match instance(py, &err) {
        Ok(exc) => PyErr::from_value(exc),
        Err(import_failed) => {
            let e = PyRuntimeError::new_err(err.message);
            e.set_cause(py, Some(import_failed));
            e
        }
    }
}

/// Warnings of the pools about the server, not issued yet (see [`warn`]).
static PENDING_WARNINGS: Mutex<Vec<String>> = Mutex::new(Vec::new());
static ANY_PENDING: AtomicBool = AtomicBool::new(false);

/// The sink of the pools' warnings about the server (see `pool::set_warning_sink`). They arise inside a
/// call, on a thread that drives a runtime, where no Python code may run (it could call in again), so
/// they are kept until the call hands back its result: then [`issue_warnings`] issues them.
pub fn warn(message: &str) {
    PENDING_WARNINGS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(message.to_string());
    ANY_PENDING.store(true, Ordering::Release);
}

/// `warnings.warn(message, RuntimeWarning)` for each warning [`warn`] kept. The call itself succeeded,
/// so a warning turned into an error (`-W error`) is reported as unraisable instead of raised.
pub fn issue_warnings(py: Python<'_>) {
    if !ANY_PENDING.swap(false, Ordering::AcqRel) {
        return;
    }
    let pending = std::mem::take(&mut *PENDING_WARNINGS.lock().unwrap_or_else(|e| e.into_inner()));
    for message in pending {
        let warned = py
            .import("warnings")
            .and_then(|w| w.call_method1("warn", (message, py.get_type::<pyo3::exceptions::PyRuntimeWarning>())));
        if let Err(e) = warned {
            e.write_unraisable(py, None);
        }
    }
}

/// Core errors cross into Python as the classes of `ferroq.exceptions`, so `?` works in the bindings.
impl From<Error> for PyErr {
    fn from(err: Error) -> PyErr {
        Python::attach(|py| to_pyerr(py, err))
    }
}
