//! Streams topics: names, ids (str or aware datetime), retention and entries; `StreamEntry`, `PendingEntry`,
//! `GroupInfo` and `StreamInfo` results.

use super::*;
use crate::protocol::streams::{Entry, GroupInfo, Info, Pending};
use crate::protocol::validate::streams::IdUse;

static DATETIME: PyOnceLock<Py<PyType>> = PyOnceLock::new();

static EPOCH: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

static ONE_MS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

static PENDING_ENTRY: PyOnceLock<Py<PyType>> = PyOnceLock::new();

static GROUP_INFO: PyOnceLock<Py<PyType>> = PyOnceLock::new();

static STREAM_INFO: PyOnceLock<Py<PyType>> = PyOnceLock::new();

pub fn stream_name(obj: &Bound<'_, PyAny>) -> Result<String> {
    checked_str(obj, validate::is_topic_name, validate::streams::stream_name_error)
}

pub fn group_name(obj: &Bound<'_, PyAny>) -> Result<String> {
    checked_str(
        obj,
        validate::streams::is_group_name,
        validate::streams::group_name_error,
    )
}

pub fn consumer_name(obj: &Bound<'_, PyAny>) -> Result<String> {
    checked_str(
        obj,
        validate::streams::is_group_name,
        validate::streams::consumer_name_error,
    )
}

/// One stream message: an rfq message of at most 1000 fields.
pub fn stream_fields(obj: &Bound<'_, PyAny>, max_bytes: usize) -> Result<Fields> {
    fields_within(obj, max_bytes, Some(crate::limits::MAX_FIELDS))
}

/// Every message of a stream batch.
pub fn stream_messages(obj: &Bound<'_, PyAny>, max_bytes: usize) -> Result<Vec<Fields>> {
    batch(obj, |item| stream_fields(item, max_bytes))
}

pub fn maxlen(obj: &Bound<'_, PyAny>) -> Result<u64> {
    validate::streams::maxlen(int_value(obj), &repr(obj))
}

pub fn max_age_ms(obj: &Bound<'_, PyAny>) -> Result<u64> {
    validate::streams::max_age_ms(seconds_value(obj), &repr(obj))
}

pub fn min_idle_ms(obj: &Bound<'_, PyAny>) -> Result<u64> {
    validate::streams::min_idle_ms(seconds_value(obj), &repr(obj))
}

pub fn max_deliveries(obj: &Bound<'_, PyAny>) -> Result<i64> {
    validate::streams::max_deliveries(int_value(obj), &repr(obj))
}

/// `<ms since the epoch>-0` of an aware datetime given as argument `what`, None if `obj` is not a datetime.
fn datetime_id(obj: &Bound<'_, PyAny>, what: &str) -> Result<Option<String>> {
    let py = obj.py();
    let failed = |e: PyErr| Error::invalid(format!("cannot read the datetime {what}: {e}"));
    let cls = DATETIME.import(py, "datetime", "datetime").map_err(failed)?;
    if !obj.is_instance(cls).unwrap_or(false) {
        return Ok(None);
    }
    if obj.call_method0("utcoffset").map_err(failed)?.is_none() {
        return Err(Error::invalid(format!(
            "{what} is a naive datetime: use an aware datetime (with a tzinfo)"
        )));
    }
    let epoch = EPOCH
        .get_or_try_init(py, || {
            let utc = py.import("datetime")?.getattr("timezone")?.getattr("utc")?;
            Ok::<_, PyErr>(cls.call((1970, 1, 1, 0, 0, 0, 0, utc), None)?.unbind())
        })
        .map_err(failed)?;
    let one_ms = ONE_MS
        .get_or_try_init(py, || {
            let kwargs = PyDict::new(py);
            kwargs.set_item("milliseconds", 1)?;
            Ok::<_, PyErr>(
                py.import("datetime")?
                    .getattr("timedelta")?
                    .call((), Some(&kwargs))?
                    .unbind(),
            )
        })
        .map_err(failed)?;
    // Whole milliseconds, floored, in exact integer arithmetic: (dt - epoch) // timedelta(milliseconds=1).
    let ms: i64 = obj
        .sub(epoch.bind(py))
        .and_then(|d| d.floor_div(one_ms.bind(py)))
        .and_then(|n| n.extract())
        .map_err(failed)?;
    if ms < 0 {
        return Err(Error::invalid(format!(
            "{what} is before 1970: stream ids start at the epoch, got {}",
            repr(obj)
        )));
    }
    Ok(Some(format!("{ms}-0")))
}

/// A stream id given as argument `what` for `place`: a str, or an aware datetime; as sent to Redis.
pub fn stream_id(obj: &Bound<'_, PyAny>, place: IdUse, what: &str) -> Result<String> {
    let bad = || validate::streams::stream_id_error(place, what, &repr(obj));
    if let Ok(s) = obj.cast::<PyString>() {
        return validate::streams::stream_id(&s.to_cow().map_err(|_| bad())?, place, what);
    }
    datetime_id(obj, what)?.ok_or_else(bad)
}

/// The ids of `ack` / `dead_letter`: StreamEntry objects of stream `stream` or `<ms>-<seq>` strings, mixed;
/// the first bad one raises.
pub fn stream_entry_ids(obj: &Bound<'_, PyAny>, stream: &str) -> Result<Vec<String>> {
    let py = obj.py();
    let cls = stream_entry_class(py).map_err(|e| Error::invalid(format!("cannot import ferroq.types: {e}")))?;
    let bad_entry = |e: PyErr| Error::invalid(format!("bad StreamEntry: {e}"));
    items(obj, "entries")?
        .into_iter()
        .map(|item| {
            let item = if item.is_instance(cls).unwrap_or(false) {
                let id = item.getattr(pyo3::intern!(py, "id")).map_err(bad_entry)?;
                let from = item.getattr(pyo3::intern!(py, "stream")).map_err(bad_entry)?;
                if !from
                    .cast::<PyString>()
                    .is_ok_and(|s| s.to_cow().is_ok_and(|s| s == stream))
                {
                    return Err(Error::invalid(format!(
                        "entry {} was read from stream {}, not {}",
                        repr(&id),
                        repr(&from),
                        py_repr(stream)
                    )));
                }
                id
            } else {
                item
            };
            match item.cast::<PyString>().ok().and_then(|s| s.to_cow().ok()) {
                Some(id) if validate::streams::is_stream_id(&id, true) => Ok(id.into_owned()),
                _ => Err(validate::streams::entry_id_error(&repr(&item))),
            }
        })
        .collect()
}

/// `StreamEntry` objects of stream `stream`.
pub fn stream_entries_py(py: Python<'_>, stream: &str, entries: Vec<Entry>) -> PyResult<Py<PyAny>> {
    let cls = stream_entry_class(py)?;
    let slots = [
        pyo3::intern!(py, "id"),
        pyo3::intern!(py, "stream"),
        pyo3::intern!(py, "fields"),
        pyo3::intern!(py, "deliveries"),
    ];
    let mut batch = Batch::new(py, entries.len())?;
    let name = PyString::new(py, stream);
    let mut out = Vec::with_capacity(entries.len());
    for e in entries {
        let values = [
            PyString::new(py, &e.id).into_any(),
            name.clone().into_any(),
            batch.fields(&e.fields)?.into_any(),
            e.deliveries.into_pyobject(py)?.into_any(),
        ];
        out.push(batch.object(cls, slots, values)?);
    }
    Ok(PyList::new(py, out)?.into_any().unbind())
}

pub fn pending_py(py: Python<'_>, rows: Vec<Pending>) -> PyResult<Py<PyAny>> {
    let cls = PENDING_ENTRY.import(py, "ferroq.types", "PendingEntry")?;
    let out = PyList::empty(py);
    for p in rows {
        out.append(cls.call1((p.id, p.consumer, p.idle_ms as f64 / 1000.0, p.deliveries))?)?;
    }
    Ok(out.into_any().unbind())
}

fn group_info_obj<'py>(py: Python<'py>, g: GroupInfo) -> PyResult<Bound<'py, PyAny>> {
    let cls = GROUP_INFO.import(py, "ferroq.types", "GroupInfo")?;
    cls.call1((
        g.name,
        g.consumers,
        g.pending,
        g.last_delivered_id,
        g.entries_read,
        g.lag,
    ))
}

pub fn group_info_py(py: Python<'_>, g: GroupInfo) -> PyResult<Py<PyAny>> {
    Ok(group_info_obj(py, g)?.unbind())
}

pub fn groups_py(py: Python<'_>, groups: Vec<GroupInfo>) -> PyResult<Py<PyAny>> {
    let out = PyList::empty(py);
    for g in groups {
        out.append(group_info_obj(py, g)?)?;
    }
    Ok(out.into_any().unbind())
}

pub fn stream_info_py(py: Python<'_>, name: &str, i: Info) -> PyResult<Py<PyAny>> {
    let cls = STREAM_INFO.import(py, "ferroq.types", "StreamInfo")?;
    Ok(cls.call1((name, i.length, i.first_id, i.last_id, i.groups))?.unbind())
}
