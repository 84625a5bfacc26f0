//! Core errors -> the classes of `ferroq.exceptions` (the one place this mapping lives).

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
pub fn to_pyerr(py: Python<'_>, err: Error) -> PyErr {
    match instance(py, &err) {
        Ok(exc) => PyErr::from_value(exc),
        Err(import_failed) => {
            let e = PyRuntimeError::new_err(err.message);
            e.set_cause(py, Some(import_failed));
            e
        }
    }
}

/// `warnings.warn(message, RuntimeWarning)`: the sink of the pools' warnings about the server (see
/// `pool::set_warning_sink`). Runs on a runtime thread, so a warning turned into an error (`-W error`)
/// cannot reach the caller: it is reported as unraisable instead.
pub fn warn(message: &str) {
    crate::bindings::runtime::with_python(|py| {
        let warned = py.import("warnings").and_then(|w| {
            w.call_method1(
                "warn",
                (message, py.get_type::<pyo3::exceptions::PyRuntimeWarning>(), 2),
            )
        });
        if let Err(e) = warned {
            e.write_unraisable(py, None);
        }
    });
}

/// `Result` -> `PyResult` with [`to_pyerr`].
pub trait IntoPy<T> {
    fn py_err(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPy<T> for crate::errors::Result<T> {
    fn py_err(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_pyerr(py, e))
    }
}
