//! Python values <-> core values: argument checks that need Python types, and the result objects
//! (`ferroq.types.Message`, `InspectEntry`, `TopicStats`).

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyIterator, PyList, PyMapping, PyString, PyTuple, PyType,
};

use crate::errors::{Error, ErrorKind, Result};
use crate::protocol::common::Fields;
use crate::protocol::keys::{TopicKeys, TopicList};
use crate::protocol::rfq::{self, Held};
use crate::protocol::rsmq;
use crate::protocol::streams;
use crate::protocol::validate;
use crate::pyrepr::py_repr;

static MESSAGE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static INSPECT_ENTRY: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static TOPIC_STATS: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static FROMTIMESTAMP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static UTC: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn message_class(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    MESSAGE.import(py, "ferroq.types", "Message")
}

/// Python's `repr(obj)`, for error messages.
pub fn repr(obj: &Bound<'_, PyAny>) -> String {
    obj.repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "<unprintable>".into())
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

pub fn lease_ms(obj: &Bound<'_, PyAny>) -> Result<u64> {
    validate::lease_ms(seconds_value(obj), &repr(obj))
}

pub fn delay_ms(obj: &Bound<'_, PyAny>) -> Result<u64> {
    validate::delay_ms(seconds_value(obj), &repr(obj))
}

/// A worker name (owner of a processing list); None when not given.
pub fn owner(obj: Option<&Bound<'_, PyAny>>) -> Result<String> {
    match obj {
        None => Ok(String::new()),
        Some(o) if o.is_none() => Ok(String::new()),
        Some(o) => {
            let name = o
                .cast::<PyString>()
                .ok()
                .and_then(|s| s.to_cow().ok().map(|c| c.into_owned()))
                .ok_or_else(|| {
                    Error::invalid(format!(
                        "owner must be a non-empty str of at most {} characters without whitespace, got {}",
                        crate::limits::MAX_ID_LENGTH,
                        repr(o)
                    ))
                })?;
            validate::owner(&name)?;
            Ok(name)
        }
    }
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

pub fn start(obj: &Bound<'_, PyAny>) -> Result<usize> {
    validate::start(int_value(obj), &repr(obj))
}

pub fn queue(obj: &Bound<'_, PyAny>) -> Result<TopicList> {
    match obj.cast::<PyString>() {
        Ok(s) => validate::queue(&s.to_string_lossy()),
        Err(_) => Err(Error::invalid(format!(
            "queue must be 'backlog' or 'nextlog', got {}",
            repr(obj)
        ))),
    }
}

pub fn topic_name(obj: &Bound<'_, PyAny>) -> Result<String> {
    let invalid = || {
        Error::new(
            ErrorKind::InvalidName,
            format!(
                "invalid topic name {}: use 1-128 characters from A-Z a-z 0-9 _ . -",
                repr(obj)
            ),
        )
    };
    let name: String = obj
        .cast::<PyString>()
        .map_err(|_| invalid())?
        .to_cow()
        .map_err(|_| invalid())?
        .into_owned();
    validate::topic_name(&name)?;
    Ok(name)
}

/// `topics` of Client.claim: a non-empty list or tuple of names.
pub fn topic_names(obj: &Bound<'_, PyAny>) -> Result<Vec<String>> {
    let items: Vec<Bound<'_, PyAny>> = if let Ok(l) = obj.cast::<PyList>() {
        l.iter().collect()
    } else if let Ok(t) = obj.cast::<PyTuple>() {
        t.iter().collect()
    } else {
        Vec::new()
    };
    if items.is_empty() {
        return Err(Error::invalid(format!(
            "topics must be a non-empty list of topic names, got {}",
            repr(obj)
        )));
    }
    items.iter().map(topic_name).collect()
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
    let pairs: Vec<(Bound<'_, PyAny>, Bound<'_, PyAny>)> = if let Ok(d) = obj.cast::<PyDict>() {
        d.iter().collect()
    } else {
        let m = obj.cast::<PyMapping>().map_err(|_| not_mapping())?;
        let items = m.items().map_err(|_| not_mapping())?;
        let mut out = Vec::with_capacity(items.len());
        for item in items.iter() {
            out.push(item.extract().map_err(|_| not_mapping())?);
        }
        out
    };
    if pairs.is_empty() {
        return Err(Error::new(
            ErrorKind::InvalidMessage,
            "a message must have at least one field",
        ));
    }
    if let Some(most) = max_fields {
        validate::field_count(pairs.len(), most)?;
    }
    let mut out = Vec::with_capacity(pairs.len());
    for (k, v) in &pairs {
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
        out.push((key, value));
    }
    validate::fields(&out, max_bytes)?;
    Ok(out)
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

/// Every message of an rfq batch.
pub fn messages(obj: &Bound<'_, PyAny>, max_bytes: usize) -> Result<Vec<Fields>> {
    batch(obj, |item| fields(item, max_bytes))
}

/// A bad chunk of a stream (the pure client words it the same).
fn chunk_error(errors: Vec<(usize, Error)>, total: usize, start: usize) -> Error {
    let message = format!(
        "{} of {total} messages in the chunk from index {start} are invalid; nothing of that chunk was written",
        errors.len()
    );
    Error::new(ErrorKind::Batch(errors), message)
}

/// The next chunk of a stream: up to `n` messages pulled from `iter` (fewer only at its end), checked as
/// a batch. `start` is the stream index of the first, so a BatchError names stream indexes. The outer
/// error is the iterator's own exception, passed on unchanged.
pub fn messages_chunk(
    iter: &Bound<'_, PyIterator>,
    n: usize,
    max_bytes: usize,
    start: usize,
) -> PyResult<Result<Vec<Fields>>> {
    let mut iter = iter.clone();
    let mut items = Vec::with_capacity(n);
    while items.len() < n {
        match iter.next() {
            Some(item) => items.push(item?),
            None => break,
        }
    }
    Ok(
        checked(&items, start, |item| fields(item, max_bytes))
            .map_err(|errors| chunk_error(errors, items.len(), start)),
    )
}

pub fn message_id(obj: &Bound<'_, PyAny>) -> Result<String> {
    let invalid = || {
        Error::invalid(format!(
            "a message id must be a non-empty str of at most {} characters without whitespace, got {}",
            crate::limits::MAX_ID_LENGTH,
            repr(obj)
        ))
    };
    let id = obj
        .cast::<PyString>()
        .map_err(|_| invalid())?
        .to_cow()
        .map_err(|_| invalid())?
        .into_owned();
    validate::message_id(&id)?;
    Ok(id)
}

/// (id, topic, fence) of a `ferroq.types.Message`, or None if `obj` is not one. The fence is its claim's
/// token, or for a Message without one (made by hand) its delivery count.
fn message_parts<'py>(obj: &Bound<'py, PyAny>) -> Result<Option<(String, Bound<'py, PyAny>, String)>> {
    let py = obj.py();
    let cls = message_class(py).map_err(|e| Error::invalid(format!("cannot import ferroq.types: {e}")))?;
    if !obj.is_instance(cls).unwrap_or(false) {
        return Ok(None);
    }
    // Interned names: a commit of 1000 messages makes no new attribute strings.
    let get = |name: &Bound<'py, PyString>| {
        obj.getattr(name)
            .map_err(|e| Error::invalid(format!("bad Message: {e}")))
    };
    let id = message_id(&get(pyo3::intern!(py, "id"))?)?;
    let claim = get(pyo3::intern!(py, "claim"))?;
    if let Ok(claim) = claim.cast::<PyString>() {
        let claim = claim
            .to_cow()
            .map_err(|e| Error::invalid(format!("bad Message: {e}")))?;
        if !claim.is_empty() {
            return Ok(Some((id, get(pyo3::intern!(py, "topic"))?, claim.into_owned())));
        }
    }
    let deliveries = get(pyo3::intern!(py, "deliveries"))?;
    // The token is the delivery count's decimal text: an int formats in Rust, anything else through str().
    let token = match deliveries.extract::<u64>() {
        Ok(n) => n.to_string(),
        Err(_) => deliveries
            .str()
            .map(|s| s.to_string())
            .map_err(|e| Error::invalid(format!("bad Message: {e}")))?,
    };
    Ok(Some((id, get(pyo3::intern!(py, "topic"))?, token)))
}

/// Messages or bare ids of one topic (Topic.commit / extend / release).
pub fn held_in_topic(obj: &Bound<'_, PyAny>, topic: &Arc<TopicKeys>) -> Result<Vec<Held>> {
    items(obj, "messages")?
        .iter()
        .map(|item| match message_parts(item)? {
            Some((id, msg_topic, fence)) => {
                let same = msg_topic
                    .cast::<PyString>()
                    .is_ok_and(|s| s.to_cow().is_ok_and(|s| s == topic.name));
                if !same {
                    return Err(Error::invalid(format!(
                        "message {} was claimed from topic {}, not {}",
                        py_repr(&id),
                        repr(&msg_topic),
                        py_repr(&topic.name)
                    )));
                }
                Ok(Held {
                    topic: topic.clone(),
                    id,
                    fence,
                })
            }
            None => Ok(Held {
                topic: topic.clone(),
                id: message_id(item)?,
                fence: String::new(),
            }),
        })
        .collect()
}

/// Messages of any topics (Client.commit / extend / release); bare ids have no topic, so they are refused.
pub fn held_messages(obj: &Bound<'_, PyAny>) -> Result<Vec<Held>> {
    let mut topics: Vec<Arc<TopicKeys>> = Vec::new();
    items(obj, "messages")?
        .iter()
        .map(|item| match message_parts(item)? {
            Some((id, msg_topic, fence)) => {
                let name = topic_name(&msg_topic)?;
                let topic = match topics.iter().find(|t| t.name == name) {
                    Some(t) => t.clone(),
                    None => {
                        let t = Arc::new(TopicKeys::new(&name));
                        topics.push(t.clone());
                        t
                    }
                };
                Ok(Held { topic, id, fence })
            }
            None => Err(Error::invalid(format!(
                "expected a Message, got {} (use Topic methods for bare ids)",
                type_name(item)
            ))),
        })
        .collect()
}

// ---- results -----------------------------------------------------------------------------------------

pub fn fields_dict<'py>(py: Python<'py>, fields: &Fields) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in fields {
        d.set_item(k, v)?;
    }
    Ok(d)
}

/// `Message` objects for claimed messages; `names[i]` is the topic of index i.
pub fn messages_py(py: Python<'_>, names: &[String], claimed: Vec<rfq::Claimed>) -> PyResult<Py<PyAny>> {
    let cls = message_class(py)?;
    // One str object per topic, shared by its messages.
    let topics: Vec<Bound<'_, PyString>> = names.iter().map(|n| PyString::new(py, n)).collect();
    let out = PyList::empty(py);
    for c in claimed {
        let fields = fields_dict(py, &c.fields)?;
        out.append(cls.call1((c.id, &topics[c.topic], fields, c.deliveries, c.claim))?)?;
    }
    Ok(out.into_any().unbind())
}

fn datetime_ms(py: Python<'_>, ms: Option<f64>) -> PyResult<Py<PyAny>> {
    let Some(ms) = ms else { return Ok(py.None()) };
    let fromtimestamp = FROMTIMESTAMP.get_or_try_init(py, || {
        Ok::<_, PyErr>(
            py.import("datetime")?
                .getattr("datetime")?
                .getattr("fromtimestamp")?
                .unbind(),
        )
    })?;
    let utc = UTC.get_or_try_init(py, || {
        Ok::<_, PyErr>(py.import("datetime")?.getattr("timezone")?.getattr("utc")?.unbind())
    })?;
    Ok(fromtimestamp.bind(py).call1((ms / 1000.0, utc.bind(py)))?.unbind())
}

pub fn inspect_py(py: Python<'_>, entries: Vec<rfq::InspectEntry>) -> PyResult<Py<PyAny>> {
    let cls = INSPECT_ENTRY.import(py, "ferroq.types", "InspectEntry")?;
    let out = PyList::empty(py);
    for e in entries {
        let fields: Py<PyAny> = match &e.fields {
            Some(f) => fields_dict(py, f)?.into_any().unbind(),
            None => py.None(),
        };
        let claimed_at = datetime_ms(py, e.claimed_at_ms)?;
        let deadline = datetime_ms(py, e.lease_deadline_ms)?;
        out.append(cls.call1((e.id, fields, e.deliveries, claimed_at, deadline, e.owner, e.error))?)?;
    }
    Ok(out.into_any().unbind())
}

pub fn stats_py(py: Python<'_>, topic: &str, s: rfq::Stats) -> PyResult<Py<PyAny>> {
    let cls = TOPIC_STATS.import(py, "ferroq.types", "TopicStats")?;
    Ok(cls
        .call1((
            topic,
            s.backlog,
            s.nextlog,
            s.leased,
            s.expired,
            s.oldest_age,
            s.delayed,
        ))?
        .unbind())
}

// ---- RSMQ ----------------------------------------------------------------------------------------------

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

pub fn rsmq_qname(obj: &Bound<'_, PyAny>) -> Result<String> {
    checked_str(obj, validate::is_rsmq_qname, validate::rsmq_qname_error)
}

pub fn rsmq_ns(obj: &Bound<'_, PyAny>) -> Result<String> {
    checked_str(obj, validate::is_rsmq_ns, validate::rsmq_ns_error)
}

pub fn rsmq_id(obj: &Bound<'_, PyAny>) -> Result<String> {
    checked_str(obj, validate::is_rsmq_id, validate::rsmq_id_error)
}

/// Ids of `delete_batch`: the first bad one raises.
pub fn rsmq_ids(obj: &Bound<'_, PyAny>) -> Result<Vec<String>> {
    items(obj, "ids")?.iter().map(rsmq_id).collect()
}

/// A stored vt or delay: an int of seconds.
pub fn rsmq_stored_seconds(obj: &Bound<'_, PyAny>, name: &str) -> Result<i64> {
    validate::rsmq_stored_seconds(name, int_value(obj), &repr(obj))
}

/// A per-call vt or delay in seconds -> ms.
pub fn rsmq_call_ms(obj: &Bound<'_, PyAny>, name: &str) -> Result<u64> {
    validate::rsmq_call_ms(name, seconds_value(obj), &repr(obj))
}

pub fn rsmq_maxsize(obj: &Bound<'_, PyAny>) -> Result<i64> {
    validate::rsmq_maxsize(int_value(obj), &repr(obj))
}

pub fn rsmq_max_receives(obj: &Bound<'_, PyAny>, zero_clears: bool) -> Result<i64> {
    validate::rsmq_max_receives(int_value(obj), &repr(obj), zero_clears)
}

/// One RSMQ message: a str of valid Unicode within `max_bytes` (UTF-8).
pub fn rsmq_message(obj: &Bound<'_, PyAny>, max_bytes: usize) -> Result<String> {
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
    validate::rsmq_message_bytes(&s, max_bytes)?;
    Ok(s.into_owned())
}

/// Every message of an RSMQ batch.
pub fn rsmq_messages(obj: &Bound<'_, PyAny>, max_bytes: usize) -> Result<Vec<String>> {
    batch(obj, |item| rsmq_message(item, max_bytes))
}

static RSMQ_MESSAGE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static RSMQ_ATTRIBUTES: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// `RsmqMessage` objects.
pub fn rsmq_messages_py(py: Python<'_>, received: Vec<rsmq::Received>) -> PyResult<Py<PyAny>> {
    let cls = RSMQ_MESSAGE.import(py, "ferroq.types", "RsmqMessage")?;
    let out = PyList::empty(py);
    for m in received {
        out.append(cls.call1((m.id, m.message, m.rc, m.fr, m.sent))?)?;
    }
    Ok(out.into_any().unbind())
}

/// The first message as an `RsmqMessage`, or None.
pub fn rsmq_message_py(py: Python<'_>, received: Vec<rsmq::Received>) -> PyResult<Py<PyAny>> {
    match received.into_iter().next() {
        None => Ok(py.None()),
        Some(m) => {
            let cls = RSMQ_MESSAGE.import(py, "ferroq.types", "RsmqMessage")?;
            Ok(cls.call1((m.id, m.message, m.rc, m.fr, m.sent))?.unbind())
        }
    }
}

pub fn rsmq_attributes_py(py: Python<'_>, a: rsmq::Attributes) -> PyResult<Py<PyAny>> {
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

// ---- Streams topics -----------------------------------------------------------------------------------

static DATETIME: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static EPOCH: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static ONE_MS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static STREAM_ENTRY: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static PENDING_ENTRY: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static GROUP_INFO: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static STREAM_INFO: PyOnceLock<Py<PyType>> = PyOnceLock::new();

pub fn stream_name(obj: &Bound<'_, PyAny>) -> Result<String> {
    checked_str(obj, validate::is_topic_name, validate::stream_name_error)
}

pub fn group_name(obj: &Bound<'_, PyAny>) -> Result<String> {
    checked_str(obj, validate::is_group_name, validate::group_name_error)
}

pub fn consumer_name(obj: &Bound<'_, PyAny>) -> Result<String> {
    checked_str(obj, validate::is_group_name, validate::consumer_name_error)
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
    validate::maxlen(int_value(obj), &repr(obj))
}

pub fn max_age_ms(obj: &Bound<'_, PyAny>) -> Result<u64> {
    validate::max_age_ms(seconds_value(obj), &repr(obj))
}

pub fn min_idle_ms(obj: &Bound<'_, PyAny>) -> Result<u64> {
    validate::min_idle_ms(seconds_value(obj), &repr(obj))
}

pub fn max_deliveries(obj: &Bound<'_, PyAny>) -> Result<i64> {
    validate::max_deliveries(int_value(obj), &repr(obj))
}

fn stream_entry_class(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    STREAM_ENTRY.import(py, "ferroq.types", "StreamEntry")
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
pub fn stream_id(obj: &Bound<'_, PyAny>, place: validate::IdUse, what: &str) -> Result<String> {
    let bad = || validate::stream_id_error(place, what, &repr(obj));
    if let Ok(s) = obj.cast::<PyString>() {
        return validate::stream_id(&s.to_cow().map_err(|_| bad())?, place, what);
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
                Some(id) if validate::is_stream_id(&id, true) => Ok(id.into_owned()),
                _ => Err(validate::entry_id_error(&repr(&item))),
            }
        })
        .collect()
}

/// `StreamEntry` objects of stream `stream`.
pub fn stream_entries_py(py: Python<'_>, stream: &str, entries: Vec<streams::Entry>) -> PyResult<Py<PyAny>> {
    let cls = stream_entry_class(py)?;
    let name = PyString::new(py, stream);
    let out = PyList::empty(py);
    for e in entries {
        out.append(cls.call1((e.id, &name, fields_dict(py, &e.fields)?, e.deliveries))?)?;
    }
    Ok(out.into_any().unbind())
}

pub fn pending_py(py: Python<'_>, rows: Vec<streams::Pending>) -> PyResult<Py<PyAny>> {
    let cls = PENDING_ENTRY.import(py, "ferroq.types", "PendingEntry")?;
    let out = PyList::empty(py);
    for p in rows {
        out.append(cls.call1((p.id, p.consumer, p.idle_ms as f64 / 1000.0, p.deliveries))?)?;
    }
    Ok(out.into_any().unbind())
}

fn group_info_obj<'py>(py: Python<'py>, g: streams::GroupInfo) -> PyResult<Bound<'py, PyAny>> {
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

pub fn group_info_py(py: Python<'_>, g: streams::GroupInfo) -> PyResult<Py<PyAny>> {
    Ok(group_info_obj(py, g)?.unbind())
}

pub fn groups_py(py: Python<'_>, groups: Vec<streams::GroupInfo>) -> PyResult<Py<PyAny>> {
    let out = PyList::empty(py);
    for g in groups {
        out.append(group_info_obj(py, g)?)?;
    }
    Ok(out.into_any().unbind())
}

pub fn stream_info_py(py: Python<'_>, name: &str, i: streams::Info) -> PyResult<Py<PyAny>> {
    let cls = STREAM_INFO.import(py, "ferroq.types", "StreamInfo")?;
    Ok(cls.call1((name, i.length, i.first_id, i.last_id, i.groups))?.unbind())
}
