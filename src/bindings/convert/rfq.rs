//! rfq topics: names, leases, delays, owners, held messages and the batches of `publish_stream`; `Message`,
//! `InspectEntry` and `TopicStats` results.

use super::*;
use crate::protocol::rfq::{Claimed, Held, InspectEntry, Stats};

static INSPECT_ENTRY: PyOnceLock<Py<PyType>> = PyOnceLock::new();

static TOPIC_STATS: PyOnceLock<Py<PyType>> = PyOnceLock::new();

static FROMTIMESTAMP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

static UTC: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

pub fn lease_ms(obj: &Bound<'_, PyAny>) -> Result<u64> {
    validate::rfq::lease_ms(seconds_value(obj), &repr(obj))
}

pub fn delay_ms(obj: &Bound<'_, PyAny>) -> Result<u64> {
    validate::rfq::delay_ms(seconds_value(obj), &repr(obj))
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
            validate::rfq::owner(&name)?;
            Ok(name)
        }
    }
}

pub fn start(obj: &Bound<'_, PyAny>) -> Result<usize> {
    validate::rfq::start(int_value(obj), &repr(obj))
}

pub fn queue(obj: &Bound<'_, PyAny>) -> Result<TopicList> {
    match obj.cast::<PyString>() {
        Ok(s) => validate::rfq::queue(&s.to_string_lossy()),
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
    validate::rfq::topic_name(&name)?;
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
    validate::rfq::message_id(&id)?;
    Ok(id)
}

/// What the previous Message of a call held, by identity: the messages of one claim share their claim
/// token's and their topic's str objects (see [`messages_py`]), so most messages reuse what the one before
/// converted instead of converting the same text again.
#[derive(Default)]
struct Previous<'py> {
    claim: Option<(Bound<'py, PyAny>, String)>,
    topic: Option<(Bound<'py, PyAny>, Arc<TopicKeys>)>,
}

/// (id, topic, fence) of a `ferroq.types.Message`, or None if `obj` is not one. The fence is its claim's
/// token, or for a Message without one (made by hand) its delivery count.
fn message_parts<'py>(
    obj: &Bound<'py, PyAny>,
    previous: &mut Previous<'py>,
) -> Result<Option<(String, Bound<'py, PyAny>, String)>> {
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
    if let Some((seen, token)) = &previous.claim {
        if seen.is(&claim) {
            return Ok(Some((id, get(pyo3::intern!(py, "topic"))?, token.clone())));
        }
    }
    if let Ok(text) = claim.cast::<PyString>() {
        let token = text
            .to_cow()
            .map_err(|e| Error::invalid(format!("bad Message: {e}")))?
            .into_owned();
        if !token.is_empty() {
            previous.claim = Some((claim, token.clone()));
            return Ok(Some((id, get(pyo3::intern!(py, "topic"))?, token)));
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
    let mut previous = Previous::default();
    items(obj, "messages")?
        .iter()
        .map(|item| match message_parts(item, &mut previous)? {
            Some((id, msg_topic, fence)) => {
                let seen = previous.topic.as_ref().is_some_and(|(t, _)| t.is(&msg_topic));
                if !seen {
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
                    previous.topic = Some((msg_topic, topic.clone()));
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
    let mut previous = Previous::default();
    items(obj, "messages")?
        .iter()
        .map(|item| match message_parts(item, &mut previous)? {
            Some((id, msg_topic, fence)) => {
                if let Some((seen, topic)) = &previous.topic {
                    if seen.is(&msg_topic) {
                        return Ok(Held {
                            topic: topic.clone(),
                            id,
                            fence,
                        });
                    }
                }
                let name = topic_name(&msg_topic)?;
                let topic = match topics.iter().find(|t| t.name == name) {
                    Some(t) => t.clone(),
                    None => {
                        let t = Arc::new(TopicKeys::new(&name));
                        topics.push(t.clone());
                        t
                    }
                };
                previous.topic = Some((msg_topic, topic.clone()));
                Ok(Held { topic, id, fence })
            }
            None => Err(Error::invalid(format!(
                "expected a Message, got {} (use Topic methods for bare ids)",
                type_name(item)
            ))),
        })
        .collect()
}

/// `Message` objects for claimed messages; `names[i]` is the topic of index i.
pub fn messages_py(py: Python<'_>, names: &[String], claimed: Vec<Claimed>) -> PyResult<Py<PyAny>> {
    let cls = message_class(py)?;
    let slots = [
        pyo3::intern!(py, "id"),
        pyo3::intern!(py, "topic"),
        pyo3::intern!(py, "fields"),
        pyo3::intern!(py, "deliveries"),
        pyo3::intern!(py, "claim"),
    ];
    let mut batch = Batch::new(py, claimed.len())?;
    // One str object per topic, shared by its messages.
    let topics: Vec<Bound<'_, PyString>> = names.iter().map(|n| PyString::new(py, n)).collect();
    // One str per claim token, shared by the claim's messages.
    let mut token: Option<(std::sync::Arc<str>, Bound<'_, PyString>)> = None;
    let mut out = Vec::with_capacity(claimed.len());
    for c in claimed {
        let claim = match &token {
            Some((t, s)) if std::sync::Arc::ptr_eq(t, &c.claim) => s.clone(),
            _ => {
                let s = PyString::new(py, &c.claim);
                token = Some((c.claim.clone(), s.clone()));
                s
            }
        };
        let values = [
            PyString::new(py, &c.id).into_any(),
            topics[c.topic].clone().into_any(),
            batch.fields(&c.fields)?.into_any(),
            c.deliveries.into_pyobject(py)?.into_any(),
            claim.into_any(),
        ];
        out.push(batch.object(cls, slots, values)?);
    }
    Ok(PyList::new(py, out)?.into_any().unbind())
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

pub fn inspect_py(py: Python<'_>, entries: Vec<InspectEntry>) -> PyResult<Py<PyAny>> {
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

pub fn stats_py(py: Python<'_>, topic: &str, s: Stats) -> PyResult<Py<PyAny>> {
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
