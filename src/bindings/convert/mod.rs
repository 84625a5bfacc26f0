//! Python values <-> core values: the argument checks that need Python types, and the result objects of
//! `ferroq.types`. What every protocol uses is here; each protocol's own conversions are in its module.

pub mod rfq;
pub mod rsmq;
pub mod streams;

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyIterator, PyList, PyMapping, PyString, PyTuple, PyType,
};

use crate::errors::{Error, ErrorKind, Result};
use crate::protocol::common::Fields;
use crate::protocol::keys::{TopicKeys, TopicList};
use crate::protocol::validate;
use crate::pyrepr::py_repr;

static MESSAGE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

static STREAM_ENTRY: PyOnceLock<Py<PyType>> = PyOnceLock::new();

fn message_class(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    MESSAGE.import(py, "ferroq.types", "Message")
}

fn stream_entry_class(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    STREAM_ENTRY.import(py, "ferroq.types", "StreamEntry")
}

/// Python's `repr(obj)` as error messages show it (cut when long, see `pyrepr::shown`).
pub fn repr(obj: &Bound<'_, PyAny>) -> String {
    crate::pyrepr::shown(
        obj.repr()
            .map(|r| r.to_string())
            .unwrap_or_else(|_| "<unprintable>".into()),
    )
}

pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".into())
}

/// An int that is not a bool.
fn int_value(obj: &Bound<'_, PyAny>) -> Option<i64> {
    if obj.is_instance_of::<PyBool>() || !obj.is_instance_of::<PyInt>() {
        return None;
    }
    // Too large for i64 is out of every range anyway.
    Some(obj.extract::<i64>().unwrap_or(i64::MAX))
}

/// A finite int or float that is not a bool.
fn seconds_value(obj: &Bound<'_, PyAny>) -> Option<f64> {
    if obj.is_instance_of::<PyBool>() || !(obj.is_instance_of::<PyInt>() || obj.is_instance_of::<PyFloat>()) {
        return None;
    }
    obj.extract::<f64>().ok().filter(|v| v.is_finite())
}

pub fn flag(obj: &Bound<'_, PyAny>, name: &str) -> Result<bool> {
    if obj.is_instance_of::<PyBool>() {
        Ok(obj.is_truthy().unwrap_or(false))
    } else {
        Err(Error::invalid(format!("{name} must be a bool, got {}", repr(obj))))
    }
}

pub fn count(obj: &Bound<'_, PyAny>) -> Result<usize> {
    validate::count(int_value(obj), &repr(obj))
}

/// An int option from 1 to `most` (no upper bound if None).
pub fn int_option(obj: &Bound<'_, PyAny>, name: &str, most: Option<i64>) -> Result<i64> {
    match (int_value(obj), most) {
        (Some(v), Some(m)) if (1..=m).contains(&v) => Ok(v),
        (Some(v), None) if v >= 1 => Ok(v),
        _ => {
            let bounds = most.map_or_else(|| ">= 1".to_string(), |m| format!("from 1 to {m}"));
            Err(Error::invalid(format!(
                "{name} must be an int {bounds}, got {}",
                repr(obj)
            )))
        }
    }
}

pub fn timeout(obj: &Bound<'_, PyAny>, name: &str) -> Result<f64> {
    crate::config::timeout(name, seconds_value(obj), &repr(obj)).map(|d| d.as_secs_f64())
}

/// The error text recorded by a dead-letter move: a str ('' when not given).
pub fn error_text(obj: Option<&Bound<'_, PyAny>>) -> Result<String> {
    match obj {
        None => Ok(String::new()),
        Some(o) => o
            .cast::<PyString>()
            .ok()
            .and_then(|s| s.to_cow().ok().map(|c| c.into_owned()))
            .ok_or_else(|| Error::invalid(format!("error must be a str, got {}", type_name(o)))),
    }
}

pub fn block(obj: Option<&Bound<'_, PyAny>>) -> Result<Option<f64>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => validate::block(Some(seconds_value(o)), &repr(o)),
    }
}

fn str_of(obj: &Bound<'_, PyAny>) -> Option<Result<String>> {
    let s = obj.cast::<PyString>().ok()?;
    Some(s.to_cow().map(|c| c.into_owned()).map_err(|_| {
        Error::new(
            ErrorKind::InvalidMessage,
            "a message field is not valid Unicode (lone surrogate)",
        )
    }))
}

/// One message: a Mapping of non-empty str to str, within `max_bytes`.
pub fn fields(obj: &Bound<'_, PyAny>, max_bytes: usize) -> Result<Fields> {
    fields_within(obj, max_bytes, None)
}

/// One message (see [`fields`]) of at most `max_fields` fields when given, counted before the fields are read.
fn fields_within(obj: &Bound<'_, PyAny>, max_bytes: usize, max_fields: Option<usize>) -> Result<Fields> {
    let not_mapping = || {
        Error::new(
            ErrorKind::InvalidMessage,
            format!("a message must be a mapping of str to str, got {}", type_name(obj)),
        )
    };
    let out = if let Ok(d) = obj.cast::<PyDict>() {
        // A dict is read in place: no list of its items first (a publish converts a dict per message).
        field_count(d.len(), max_fields)?;
        let mut out = Vec::with_capacity(d.len());
        for (k, v) in d.iter() {
            out.push(field(&k, &v)?);
        }
        out
    } else {
        let m = obj.cast::<PyMapping>().map_err(|_| not_mapping())?;
        let items = m.items().map_err(|_| not_mapping())?;
        let mut pairs: Vec<(Bound<'_, PyAny>, Bound<'_, PyAny>)> = Vec::with_capacity(items.len());
        for item in items.iter() {
            pairs.push(item.extract().map_err(|_| not_mapping())?);
        }
        field_count(pairs.len(), max_fields)?;
        pairs.iter().map(|(k, v)| field(k, v)).collect::<Result<Fields>>()?
    };
    validate::fields(&out, max_bytes)?;
    Ok(out)
}

/// A message has at least one field, and at most `max_fields` when given.
fn field_count(n: usize, max_fields: Option<usize>) -> Result<()> {
    if n == 0 {
        return Err(Error::new(
            ErrorKind::InvalidMessage,
            "a message must have at least one field",
        ));
    }
    match max_fields {
        Some(most) => validate::field_count(n, most),
        None => Ok(()),
    }
}

/// One field of a message: a non-empty str name and a str value.
fn field(k: &Bound<'_, PyAny>, v: &Bound<'_, PyAny>) -> Result<(String, String)> {
    let key = match str_of(k) {
        Some(key) => key?,
        None => {
            return Err(Error::new(
                ErrorKind::InvalidMessage,
                format!("message field names must be str, got {}", type_name(k)),
            ))
        }
    };
    if key.is_empty() {
        return Err(Error::new(
            ErrorKind::InvalidMessage,
            "message field names must be non-empty",
        ));
    }
    let value = match str_of(v) {
        Some(value) => value?,
        None => {
            return Err(Error::new(
                ErrorKind::InvalidMessage,
                format!("message field {} must be a str, got {}", py_repr(&key), type_name(v)),
            ))
        }
    };
    Ok((key, value))
}

/// The iterator of a batch argument: any iterable except a str, bytes, mapping or Message.
pub fn iterator<'py>(obj: &Bound<'py, PyAny>, what: &str) -> Result<Bound<'py, PyIterator>> {
    let py = obj.py();
    let single = obj.is_instance_of::<PyString>()
        || obj.is_instance_of::<PyBytes>()
        || obj.is_instance_of::<PyByteArray>()
        || obj.is_instance_of::<PyDict>()
        || obj.cast::<PyMapping>().is_ok()
        || message_class(py).is_ok_and(|cls| obj.is_instance(cls).unwrap_or(false))
        || stream_entry_class(py).is_ok_and(|cls| obj.is_instance(cls).unwrap_or(false));
    if single {
        return Err(Error::invalid(format!(
            "{what} must be an iterable of items, not a single {}",
            type_name(obj)
        )));
    }
    obj.try_iter()
        .map_err(|_| Error::invalid(format!("{what} must be an iterable, got {}", type_name(obj))))
}

/// The items of a batch argument (see [`iterator`]).
fn items<'py>(obj: &Bound<'py, PyAny>, what: &str) -> Result<Vec<Bound<'py, PyAny>>> {
    iterator(obj, what)?
        .map(|item| item.map_err(|e| Error::invalid(format!("iterating {what} failed: {e}"))))
        .collect()
}

/// Every item checked by `check`, or each bad one as (`start` + its index, error).
fn checked<T>(
    items: &[Bound<'_, PyAny>],
    start: usize,
    check: impl Fn(&Bound<'_, PyAny>) -> Result<T>,
) -> std::result::Result<Vec<T>, Vec<(usize, Error)>> {
    let mut out = Vec::with_capacity(items.len());
    let mut errors = Vec::new();
    for (index, item) in items.iter().enumerate() {
        match check(item) {
            Ok(f) => out.push(f),
            Err(e) => errors.push((start + index, e)),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// Every message of a batch checked by `check`; BatchError listing each bad one.
fn batch<T>(obj: &Bound<'_, PyAny>, check: impl Fn(&Bound<'_, PyAny>) -> Result<T>) -> Result<Vec<T>> {
    let items = items(obj, "messages")?;
    checked(&items, 0, check).map_err(|errors| validate::batch_error(errors, items.len()))
}

/// A str argument checked by `check`; anything else gets `error(repr)`.
fn checked_str(obj: &Bound<'_, PyAny>, check: fn(&str) -> bool, error: fn(&str) -> Error) -> Result<String> {
    let s = obj
        .cast::<PyString>()
        .ok()
        .and_then(|s| s.to_cow().ok())
        .ok_or_else(|| error(&repr(obj)))?;
    if check(&s) {
        Ok(s.into_owned())
    } else {
        Err(error(&repr(obj)))
    }
}

pub fn fields_dict<'py>(py: Python<'py>, fields: &Fields) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in fields {
        d.set_item(k, v)?;
    }
    Ok(d)
}

/// The result objects of one call, made in bulk: what a batch of messages costs Python beyond its data.
///
/// - Field names become one str object each, shared by every message of the batch (they mostly share them).
/// - Objects of the plain `__slots__` classes of `ferroq.types` (`Message`, `StreamEntry`, `RsmqMessage`)
///   are made as their `__init__` makes them, by setting each slot, without running it: no Python frame and
///   no argument tuples per object.
/// - The cyclic garbage collector waits until a batch of [`GC_PAUSE_FROM`] objects or more is made (it is
///   paused, if it was running, and resumed when this is dropped). Each object allocated counts towards
///   its next collection, so a batch of 1000 messages would set it off several times, and each time it
///   would go over the batch made so far, and every tenth time over older objects too. No Python code runs
///   while it is paused (nothing here calls into Python), so no other thread sees it paused. A smaller batch
///   sets it off once at most, which costs less than pausing it (a single claim or receive).
/// - Those objects are then not tracked by the collector, as an object of a PyO3 class without
///   `__traverse__` is not: they hold only str, int, None and a dict of str, so no cycle runs through them
///   unless a caller builds one (a message put into its own fields), which would then never be freed.
///   Tracked, the messages a worker holds were promoted to the oldest generation batch after batch, and
///   set off full collections of the whole heap: about 10% of a worker's CPU.
pub struct Batch<'py> {
    py: Python<'py>,
    names: Vec<(String, Bound<'py, PyString>)>,
    resume_gc: Option<Bound<'py, PyAny>>,
}

/// The fewest objects of a batch for which the garbage collector is paused (see [`Batch`]).
const GC_PAUSE_FROM: usize = 100;

/// Field names kept per batch; a batch whose messages have more distinct names makes the rest per message.
const SHARED_NAMES: usize = 64;

impl<'py> Batch<'py> {
    /// A batch of `len` objects.
    pub fn new(py: Python<'py>, len: usize) -> PyResult<Self> {
        let mut resume_gc = None;
        if len >= GC_PAUSE_FROM {
            let gc = py.import("gc")?;
            if gc.call_method0("isenabled")?.is_truthy()? {
                gc.call_method0("disable")?;
                resume_gc = Some(gc.getattr("enable")?);
            }
        }
        Ok(Self {
            py,
            names: Vec::new(),
            resume_gc,
        })
    }

    fn name(&mut self, k: &str) -> Bound<'py, PyString> {
        if let Some((_, s)) = self.names.iter().find(|(n, _)| n == k) {
            return s.clone();
        }
        let s = PyString::new(self.py, k);
        if self.names.len() < SHARED_NAMES {
            self.names.push((k.to_string(), s.clone()));
        }
        s
    }

    pub fn fields(&mut self, fields: &Fields) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(self.py);
        for (k, v) in fields {
            d.set_item(self.name(k), v)?;
        }
        Ok(d)
    }

    /// An object of `cls`, a plain `__slots__` class, with `slots[i]` set to `values[i]`.
    pub fn object<const N: usize>(
        &self,
        cls: &Bound<'py, PyType>,
        slots: [&Bound<'py, PyString>; N],
        values: [Bound<'py, PyAny>; N],
    ) -> PyResult<Bound<'py, PyAny>> {
        // SAFETY: PyType_GenericAlloc returns a new reference to a zeroed instance of `cls`, or NULL with an
        // exception set; it is what object.__new__ does for such a class once its arguments are checked.
        let obj =
            unsafe { Bound::from_owned_ptr_or_err(self.py, pyo3::ffi::PyType_GenericAlloc(cls.as_type_ptr(), 0))? };
        for (slot, value) in slots.into_iter().zip(values) {
            obj.setattr(slot, value)?;
        }
        // SAFETY: PyObject_GC_UnTrack needs an object of a GC type (checked here; a `__slots__` class is one),
        // which PyType_GenericAlloc tracked; untracking is what its dealloc does first anyway.
        unsafe {
            if pyo3::ffi::PyType_IS_GC(cls.as_type_ptr()) != 0 {
                pyo3::ffi::PyObject_GC_UnTrack(obj.as_ptr().cast());
            }
        }
        Ok(obj)
    }
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        if let Some(enable) = self.resume_gc.take() {
            if let Err(e) = enable.call0() {
                e.write_unraisable(self.py, None);
            }
        }
    }
}
