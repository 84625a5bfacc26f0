//! RSMQ queues: names, namespaces, ids, seconds, sizes and messages; `RsmqMessage` and `RsmqAttributes`
//! results.

use super::*;
use crate::protocol::rsmq::{Attributes, Received};

pub fn qname(obj: &Bound<'_, PyAny>) -> Result<String> {
    checked_str(obj, validate::rsmq::is_qname, validate::rsmq::qname_error)
}

pub fn ns(obj: &Bound<'_, PyAny>) -> Result<String> {
    checked_str(obj, validate::rsmq::is_ns, validate::rsmq::ns_error)
}

pub fn id(obj: &Bound<'_, PyAny>) -> Result<String> {
    checked_str(obj, validate::rsmq::is_id, validate::rsmq::id_error)
}

/// Ids of `delete_batch`: the first bad one raises.
pub fn ids(obj: &Bound<'_, PyAny>) -> Result<Vec<String>> {
    items(obj, "ids")?.iter().map(id).collect()
}

/// A stored vt or delay: an int of seconds.
pub fn stored_seconds(obj: &Bound<'_, PyAny>, name: &str) -> Result<i64> {
    validate::rsmq::stored_seconds(name, int_value(obj), &repr(obj))
}

/// A per-call vt or delay in seconds -> ms.
pub fn call_ms(obj: &Bound<'_, PyAny>, name: &str) -> Result<u64> {
    validate::rsmq::call_ms(name, seconds_value(obj), &repr(obj))
}

pub fn maxsize(obj: &Bound<'_, PyAny>) -> Result<i64> {
    validate::rsmq::maxsize(int_value(obj), &repr(obj))
}

pub fn max_receives(obj: &Bound<'_, PyAny>, zero_clears: bool) -> Result<i64> {
    validate::rsmq::max_receives(int_value(obj), &repr(obj), zero_clears)
}

/// One RSMQ message: a str of valid Unicode within `max_bytes` (UTF-8).
pub fn message(obj: &Bound<'_, PyAny>, max_bytes: usize) -> Result<String> {
    let s = obj.cast::<PyString>().map_err(|_| {
        Error::new(
            ErrorKind::InvalidMessage,
            format!("an RSMQ message must be a str, got {}", type_name(obj)),
        )
    })?;
    let s = s.to_cow().map_err(|_| {
        Error::new(
            ErrorKind::InvalidMessage,
            "an RSMQ message is not valid Unicode (lone surrogate)",
        )
    })?;
    validate::rsmq::message_bytes(&s, max_bytes)?;
    Ok(s.into_owned())
}

/// Every message of an RSMQ batch.
pub fn messages(obj: &Bound<'_, PyAny>, max_bytes: usize) -> Result<Vec<String>> {
    batch(obj, |item| message(item, max_bytes))
}

static RSMQ_MESSAGE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

static RSMQ_ATTRIBUTES: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// `RsmqMessage` objects.
pub fn messages_py(py: Python<'_>, received: Vec<Received>) -> PyResult<Py<PyAny>> {
    let cls = RSMQ_MESSAGE.import(py, "ferroq.types", "RsmqMessage")?;
    let slots = [
        pyo3::intern!(py, "id"),
        pyo3::intern!(py, "message"),
        pyo3::intern!(py, "rc"),
        pyo3::intern!(py, "fr"),
        pyo3::intern!(py, "sent"),
    ];
    let batch = Batch::new(py, received.len())?;
    let mut out = Vec::with_capacity(received.len());
    for m in received {
        let values = [
            PyString::new(py, &m.id).into_any(),
            PyString::new(py, &m.message).into_any(),
            m.rc.into_pyobject(py)?.into_any(),
            m.fr.into_pyobject(py)?.into_any(),
            m.sent.into_pyobject(py)?.into_any(),
        ];
        out.push(batch.object(cls, slots, values)?);
    }
    Ok(PyList::new(py, out)?.into_any().unbind())
}

/// The first message as an `RsmqMessage`, or None.
pub fn message_py(py: Python<'_>, received: Vec<Received>) -> PyResult<Py<PyAny>> {
    match received.into_iter().next() {
        None => Ok(py.None()),
        Some(m) => {
            let cls = RSMQ_MESSAGE.import(py, "ferroq.types", "RsmqMessage")?;
            Ok(cls.call1((m.id, m.message, m.rc, m.fr, m.sent))?.unbind())
        }
    }
}

pub fn attributes_py(py: Python<'_>, a: Attributes) -> PyResult<Py<PyAny>> {
    let cls = RSMQ_ATTRIBUTES.import(py, "ferroq.types", "RsmqAttributes")?;
    let args = (
        a.vt,
        a.delay,
        a.maxsize,
        a.totalrecv,
        a.totalsent,
        a.created,
        a.modified,
        a.msgs,
        a.hiddenmsgs,
        a.max_receives,
        a.dead_letter,
    );
    Ok(cls.call1(args)?.unbind())
}
