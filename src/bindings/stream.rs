//! `Stream` / `ConsumerGroup` (sync) and `AsyncStream` / `AsyncConsumerGroup` (asyncio): the same methods,
//! generated once by `stream_methods!` / `group_methods!` over [`StreamCore`] and [`GroupCore`], which
//! validate under the GIL and prepare each operation as an [`Op`].

use std::sync::Arc;

use pyo3::prelude::*;

use crate::bindings::arrow;
use crate::bindings::arrow_read::{self, batch_py, field_names};
use crate::bindings::asyncio::run_async;
use crate::bindings::convert;
use crate::bindings::core::{op, prepare, prepare_plain, sync_call, to_py, Arg, Core, Op};
use crate::errors::{Error, Result};
use crate::protocol::arrow_read::ID_COLUMN;
use crate::protocol::common::Fields;
use crate::protocol::keys::StreamKeys;
use crate::protocol::streams::{self, Group, Limit, Retention};
use crate::protocol::validate;
use crate::protocol::validate::streams::IdUse;
use crate::pyrepr::py_repr;

const DEFAULT_RANGE_COUNT: usize = 100;
const DEFAULT_READ_COUNT: usize = 1;

/// The value of an argument that defaults to None: None when not given or None.
fn given<'a, 'py>(obj: Option<&'a Bound<'py, PyAny>>) -> Option<&'a Bound<'py, PyAny>> {
    obj.filter(|o| !o.is_none())
}

/// A `count` argument: `default` when not given.
fn count_arg(count: &Arg<'_>, default: usize) -> Result<usize> {
    count.0.as_ref().map_or(Ok(default), convert::count)
}

/// A bool option: `default` when not given; anything but a bool is refused.
fn flag_arg(value: &Arg<'_>, name: &str, default: bool) -> Result<bool> {
    value.0.as_ref().map_or(Ok(default), |v| convert::flag(v, name))
}

/// The error text of autoclaim / dead_letter: '' when not given; None or anything but a str is refused.
fn error_arg(error: &Arg<'_>) -> Result<String> {
    error
        .0
        .as_ref()
        .map_or(Ok(String::new()), |e| convert::error_text(Some(e)))
}

/// A stream id argument `what` for `place`: `default` when not given.
fn id_arg(value: &Arg<'_>, place: IdUse, what: &str, default: &str) -> Result<String> {
    value.0.as_ref().map_or_else(
        || Ok(default.to_string()),
        |v| convert::streams::stream_id(v, place, what),
    )
}

/// The retention of publish / trim: maxlen or max_age (not both), `~` unless `approximate=False`.
fn retention(
    maxlen: Option<&Bound<'_, PyAny>>,
    max_age: Option<&Bound<'_, PyAny>>,
    approximate: &Arg<'_>,
) -> Result<Retention> {
    let maxlen = given(maxlen).map(convert::streams::maxlen).transpose()?;
    let max_age = given(max_age).map(convert::streams::max_age_ms).transpose()?;
    let limit = match (maxlen, max_age) {
        (Some(_), Some(_)) => return Err(Error::invalid("give maxlen or max_age, not both")),
        (Some(n), None) => Some(Limit::MaxLen(n)),
        (None, Some(age)) => Some(Retention::min_id(streams::now_ms(), age)),
        (None, None) => None,
    };
    Ok(Retention {
        limit,
        approximate: flag_arg(approximate, "approximate", true)?,
    })
}

/// `Client.streams` / `AsyncClient.streams`.
pub fn streams_op(core: &Core) -> Result<Op> {
    let pool = core.pool()?;
    Ok(op(async move { streams::streams(&pool).await }, to_py))
}

/// A stream bound to a [`Core`].
#[derive(Clone)]
pub struct StreamCore {
    pub core: Arc<Core>,
    pub keys: Arc<StreamKeys>,
}

impl StreamCore {
    /// Validates the name (no I/O).
    pub fn new(core: &Arc<Core>, name: &Bound<'_, PyAny>) -> Result<Self> {
        Ok(Self {
            core: core.clone(),
            keys: Arc::new(StreamKeys::new(&convert::streams::stream_name(name)?)),
        })
    }

    fn repr(&self, class: &str) -> String {
        format!("{class}(name={})", py_repr(&self.keys.name))
    }

    /// A consumer group of this stream (no I/O); validated in argument order.
    fn group(
        &self,
        name: &Bound<'_, PyAny>,
        consumer: Option<&Bound<'_, PyAny>>,
        max_deliveries: Option<&Bound<'_, PyAny>>,
        dead_letter: Option<&Bound<'_, PyAny>>,
    ) -> Result<GroupCore> {
        let name = convert::streams::group_name(name)?;
        let consumer = match given(consumer) {
            Some(c) => convert::streams::consumer_name(c)?,
            None => streams::default_consumer(),
        };
        let max_deliveries = given(max_deliveries)
            .map(convert::streams::max_deliveries)
            .transpose()?;
        let dead_letter = given(dead_letter).map(convert::streams::stream_name).transpose()?;
        let dead = validate::streams::dead_stream(&self.keys.name, dead_letter.as_deref())?;
        Ok(GroupCore {
            core: self.core.clone(),
            group: Arc::new(Group {
                stream: (*self.keys).clone(),
                name,
                consumer,
                max_deliveries,
                dead: StreamKeys::new(&dead),
            }),
        })
    }

    /// publish_arrow: the arguments, then the data's schema, are checked before anything is sent.
    fn publish_arrow_op(
        &self,
        data: &Bound<'_, PyAny>,
        dedup_key: Option<&Bound<'_, PyAny>>,
        dedup_ttl: &Arg<'_>,
        value_column: Option<&Bound<'_, PyAny>>,
        limits: (Option<&Bound<'_, PyAny>>, Option<&Bound<'_, PyAny>>, &Arg<'_>),
    ) -> Result<Op> {
        arrow::prepare(&self.core, data, || {
            let args = arrow::args(dedup_key, dedup_ttl, None, value_column)?;
            let retention = retention(limits.0, limits.1, limits.2)?;
            Ok((arrow::Sink::Stream(self.keys.clone(), retention), args))
        })
    }

    /// publish / publish_batch: `messages` checked, then the retention, then one publish-2 call per chunk.
    fn publish_with<C>(
        &self,
        messages: impl FnOnce() -> Result<Vec<Fields>>,
        maxlen: Option<&Bound<'_, PyAny>>,
        max_age: Option<&Bound<'_, PyAny>>,
        approximate: &Arg<'_>,
        convert: C,
    ) -> Result<Op>
    where
        C: FnOnce(Python<'_>, Vec<String>) -> PyResult<Py<PyAny>> + Send + 'static,
    {
        prepare(
            &self.core,
            &self.keys,
            || Ok((messages()?, retention(maxlen, max_age, approximate)?)),
            |pool, s, (msgs, retention)| async move { streams::publish_batch(&pool, &s, msgs, &retention).await },
            convert,
        )
    }

    fn publish_op(
        &self,
        fields: &Bound<'_, PyAny>,
        maxlen: Option<&Bound<'_, PyAny>>,
        max_age: Option<&Bound<'_, PyAny>>,
        approximate: &Arg<'_>,
    ) -> Result<Op> {
        let max = self.core.opts.max_message_bytes;
        let one = || Ok(vec![convert::streams::stream_fields(fields, max)?]);
        // publish_batch returns exactly one id per message.
        self.publish_with(one, maxlen, max_age, approximate, |py, ids| {
            to_py(py, ids.into_iter().next())
        })
    }

    fn publish_batch_op(
        &self,
        messages: &Bound<'_, PyAny>,
        maxlen: Option<&Bound<'_, PyAny>>,
        max_age: Option<&Bound<'_, PyAny>>,
        approximate: &Arg<'_>,
    ) -> Result<Op> {
        let max = self.core.opts.max_message_bytes;
        let all = || convert::streams::stream_messages(messages, max);
        self.publish_with(all, maxlen, max_age, approximate, to_py)
    }

    fn length_op(&self) -> Result<Op> {
        prepare_plain(
            &self.core,
            &self.keys,
            |pool, s| async move { streams::length(&pool, &s).await },
            to_py,
        )
    }

    fn range_op(&self, start: &Arg<'_>, end: &Arg<'_>, count: &Arg<'_>) -> Result<Op> {
        let name = self.keys.name.clone();
        prepare(
            &self.core,
            &self.keys,
            || {
                Ok((
                    id_arg(start, IdUse::Range, "start", "-")?,
                    id_arg(end, IdUse::Range, "end", "+")?,
                    count_arg(count, DEFAULT_RANGE_COUNT)?,
                ))
            },
            |pool, s, (start, end, count)| async move { streams::range(&pool, &s, &start, &end, count).await },
            move |py, entries| convert::streams::stream_entries_py(py, &name, entries),
        )
    }

    fn trim_op(
        &self,
        maxlen: Option<&Bound<'_, PyAny>>,
        max_age: Option<&Bound<'_, PyAny>>,
        approximate: &Arg<'_>,
    ) -> Result<Op> {
        prepare(
            &self.core,
            &self.keys,
            || {
                let r = retention(maxlen, max_age, approximate)?;
                if r.limit.is_none() {
                    return Err(Error::invalid("trim needs maxlen or max_age"));
                }
                Ok(r)
            },
            |pool, s, retention| async move { streams::trim(&pool, &s, &retention).await },
            to_py,
        )
    }

    fn info_op(&self) -> Result<Op> {
        let name = self.keys.name.clone();
        prepare_plain(
            &self.core,
            &self.keys,
            |pool, s| async move { streams::info(&pool, &s).await },
            move |py, info| convert::streams::stream_info_py(py, &name, info),
        )
    }

    fn groups_op(&self) -> Result<Op> {
        prepare_plain(
            &self.core,
            &self.keys,
            |pool, s| async move { streams::groups(&pool, &s).await },
            convert::streams::groups_py,
        )
    }

    fn delete_op(&self) -> Result<Op> {
        prepare_plain(
            &self.core,
            &self.keys,
            |pool, s| async move { streams::delete(&pool, &s).await },
            to_py,
        )
    }
}

impl StreamCore {
    pub fn range_arrow_op(
        &self,
        start: &Bound<'_, PyAny>,
        end: &Bound<'_, PyAny>,
        count: &Bound<'_, PyAny>,
        fields: &Bound<'_, PyAny>,
    ) -> Result<Op> {
        let (pool, (start, end, count, fields)) = self.core.pool_after(|| {
            let start = convert::streams::stream_id(start, IdUse::Range, "start")?;
            let end = convert::streams::stream_id(end, IdUse::Range, "end")?;
            let count = convert::count(count)?;
            Ok((start, end, count, field_names(fields, &[ID_COLUMN])?))
        })?;
        let keys = self.keys.clone();
        Ok(op(
            async move { crate::protocol::arrow_read::range(&pool, &keys, &start, &end, count, &fields).await },
            batch_py,
        ))
    }
}

/// A consumer group bound to a [`Core`].
#[derive(Clone)]
pub struct GroupCore {
    pub core: Arc<Core>,
    pub group: Arc<Group>,
}

impl GroupCore {
    fn repr(&self, class: &str) -> String {
        format!(
            "{class}(stream={}, name={}, consumer={})",
            py_repr(&self.group.stream.name),
            py_repr(&self.group.name),
            py_repr(&self.group.consumer)
        )
    }

    /// StreamEntry objects of this group's stream.
    fn entries(&self) -> impl FnOnce(Python<'_>, Vec<streams::Entry>) -> PyResult<Py<PyAny>> + Send + 'static {
        let name = self.group.stream.name.clone();
        move |py, entries| convert::streams::stream_entries_py(py, &name, entries)
    }

    fn create_op(&self, start: &Arg<'_>, exist_ok: &Arg<'_>) -> Result<Op> {
        prepare(
            &self.core,
            &self.group,
            || {
                Ok((
                    id_arg(start, IdUse::Position, "start", "$")?,
                    flag_arg(exist_ok, "exist_ok", true)?,
                ))
            },
            |pool, g, (start, exist_ok)| async move { streams::create(&pool, &g, &start, exist_ok).await },
            to_py,
        )
    }

    fn read_op(&self, count: &Arg<'_>, block: Option<&Bound<'_, PyAny>>) -> Result<Op> {
        prepare(
            &self.core,
            &self.group,
            || Ok((count_arg(count, DEFAULT_READ_COUNT)?, convert::block(block)?)),
            |pool, g, (count, block)| async move { streams::read(&pool, &g, count, block).await },
            self.entries(),
        )
    }

    fn ack_op(&self, entries: &Bound<'_, PyAny>) -> Result<Op> {
        prepare(
            &self.core,
            &self.group,
            || convert::streams::stream_entry_ids(entries, &self.group.stream.name),
            |pool, g, ids| async move { streams::ack(&pool, &g, &ids).await },
            to_py,
        )
    }

    fn pending_op(
        &self,
        count: &Arg<'_>,
        consumer: Option<&Bound<'_, PyAny>>,
        min_idle: Option<&Bound<'_, PyAny>>,
    ) -> Result<Op> {
        prepare(
            &self.core,
            &self.group,
            || {
                Ok((
                    count_arg(count, DEFAULT_RANGE_COUNT)?,
                    given(consumer).map(convert::streams::consumer_name).transpose()?,
                    given(min_idle).map(convert::streams::min_idle_ms).transpose()?,
                ))
            },
            |pool, g, (count, consumer, min_idle)| async move {
                streams::pending(&pool, &g, count, consumer.as_deref(), min_idle).await
            },
            convert::streams::pending_py,
        )
    }

    fn autoclaim_op(&self, min_idle: &Bound<'_, PyAny>, count: &Arg<'_>, error: &Arg<'_>) -> Result<Op> {
        prepare(
            &self.core,
            &self.group,
            || {
                Ok((
                    convert::streams::min_idle_ms(min_idle)?,
                    count_arg(count, DEFAULT_RANGE_COUNT)?,
                    error_arg(error)?,
                ))
            },
            |pool, g, (min_idle, count, error)| async move { streams::autoclaim(&pool, &g, min_idle, count, &error).await },
            self.entries(),
        )
    }

    fn dead_letter_op(&self, entries: &Bound<'_, PyAny>, error: &Arg<'_>) -> Result<Op> {
        prepare(
            &self.core,
            &self.group,
            || {
                Ok((
                    convert::streams::stream_entry_ids(entries, &self.group.stream.name)?,
                    error_arg(error)?,
                ))
            },
            |pool, g, (ids, error)| async move { streams::dead_letter(&pool, &g, &ids, &error).await },
            to_py,
        )
    }

    fn seek_op(&self, position: &Bound<'_, PyAny>) -> Result<Op> {
        prepare(
            &self.core,
            &self.group,
            || convert::streams::stream_id(position, IdUse::Position, "position"),
            |pool, g, position| async move { streams::seek(&pool, &g, &position).await },
            |py, ()| Ok(py.None()),
        )
    }

    fn info_op(&self) -> Result<Op> {
        prepare_plain(
            &self.core,
            &self.group,
            |pool, g| async move { streams::group_info(&pool, &g).await },
            convert::streams::group_info_py,
        )
    }

    fn delete_op(&self) -> Result<Op> {
        prepare_plain(
            &self.core,
            &self.group,
            |pool, g| async move { streams::destroy(&pool, &g).await },
            to_py,
        )
    }
}

/// The methods of `Stream` / `AsyncStream`: `$run` turns an operation into the Python result, and
/// `group()` makes a `$group`.
macro_rules! stream_methods {
    ($class:ident, $label:literal, $run:path, $group:ident) => {
        py_methods! {
            $class, $run, inner,
            {
                #[getter]
                fn name(&self) -> String {
                    self.inner.keys.name.clone()
                }

                fn __repr__(&self) -> String {
                    self.inner.repr($label)
                }

                #[pyo3(signature = (name, consumer=None, *, max_deliveries=None, dead_letter=None))]
                fn group(
                    &self,
                    name: &Bound<'_, PyAny>,
                    consumer: Option<&Bound<'_, PyAny>>,
                    max_deliveries: Option<&Bound<'_, PyAny>>,
                    dead_letter: Option<&Bound<'_, PyAny>>,
                ) -> PyResult<$group> {
                    Ok($group {
                        inner: self
                            .inner
                            .group(name, consumer, max_deliveries, dead_letter)
                            ?,
                    })
                }

                fn range_arrow<'py>(
                    &self,
                    py: Python<'py>,
                    start: &Bound<'py, PyAny>,
                    end: &Bound<'py, PyAny>,
                    count: &Bound<'py, PyAny>,
                    fields: &Bound<'py, PyAny>,
                ) -> PyResult<Bound<'py, PyAny>> {
                    arrow_read::need_pyarrow(py)?;
                    $run(py, self.inner.range_arrow_op(start, end, count, fields))
                }
            }

            #[pyo3(signature = (fields, *, maxlen=None, max_age=None, approximate=Arg::missing()), text_signature = "(self, /, fields, *, maxlen=None, max_age=None, approximate=True)")]
            fn publish(
                fields: &Bound<'py, PyAny>,
                maxlen: Option<&Bound<'py, PyAny>>,
                max_age: Option<&Bound<'py, PyAny>>,
                approximate: Arg<'py>,
            ) => publish_op(fields, maxlen, max_age, &approximate);

            #[pyo3(signature = (messages, *, maxlen=None, max_age=None, approximate=Arg::missing()), text_signature = "(self, /, messages, *, maxlen=None, max_age=None, approximate=True)")]
            fn publish_batch(
                messages: &Bound<'py, PyAny>,
                maxlen: Option<&Bound<'py, PyAny>>,
                max_age: Option<&Bound<'py, PyAny>>,
                approximate: Arg<'py>,
            ) => publish_batch_op(messages, maxlen, max_age, &approximate);

            #[pyo3(signature = (data, *, dedup_key=None, dedup_ttl=Arg::missing(), value_column=None, maxlen=None, max_age=None, approximate=Arg::missing()), text_signature = "(self, /, data, *, dedup_key=None, dedup_ttl=86400.0, value_column=None, maxlen=None, max_age=None, approximate=True)")]
            #[allow(clippy::too_many_arguments)]
            fn publish_arrow(
                data: &Bound<'py, PyAny>,
                dedup_key: Option<&Bound<'py, PyAny>>,
                dedup_ttl: Arg<'py>,
                value_column: Option<&Bound<'py, PyAny>>,
                maxlen: Option<&Bound<'py, PyAny>>,
                max_age: Option<&Bound<'py, PyAny>>,
                approximate: Arg<'py>,
            ) => publish_arrow_op(data, dedup_key, &dedup_ttl, value_column, (maxlen, max_age, &approximate));

            fn length() => length_op();

            #[pyo3(signature = (start=Arg::missing(), end=Arg::missing(), count=Arg::missing()), text_signature = "(self, /, start='-', end='+', count=100)")]
            fn range(start: Arg<'py>, end: Arg<'py>, count: Arg<'py>) => range_op(&start, &end, &count);

            #[pyo3(signature = (*, maxlen=None, max_age=None, approximate=Arg::missing()), text_signature = "(self, /, *, maxlen=None, max_age=None, approximate=True)")]
            fn trim(
                maxlen: Option<&Bound<'py, PyAny>>,
                max_age: Option<&Bound<'py, PyAny>>,
                approximate: Arg<'py>,
            ) => trim_op(maxlen, max_age, &approximate);

            fn info() => info_op();

            fn groups() => groups_op();

            fn delete() => delete_op();
        }
    };
}

/// The methods of `ConsumerGroup` / `AsyncConsumerGroup`.
macro_rules! group_methods {
    ($class:ident, $label:literal, $run:path) => {
        py_methods! {
            $class, $run, inner,
            {
                #[getter]
                fn name(&self) -> String {
                    self.inner.group.name.clone()
                }

                #[getter]
                fn consumer(&self) -> String {
                    self.inner.group.consumer.clone()
                }

                #[getter]
                fn stream(&self) -> String {
                    self.inner.group.stream.name.clone()
                }

                #[getter]
                fn max_deliveries(&self) -> Option<i64> {
                    self.inner.group.max_deliveries
                }

                /// The dead-letter stream's name (a property named `dead_letter` would hide the method).
                #[getter]
                fn dead_letter_stream(&self) -> String {
                    self.inner.group.dead.name.clone()
                }

                fn __repr__(&self) -> String {
                    self.inner.repr($label)
                }
            }

            #[pyo3(signature = (start=Arg::missing(), *, exist_ok=Arg::missing()), text_signature = "(self, /, start='$', *, exist_ok=True)")]
            fn create(start: Arg<'py>, exist_ok: Arg<'py>) => create_op(&start, &exist_ok);

            #[pyo3(signature = (count=Arg::missing(), block=None), text_signature = "(self, /, count=1, block=None)")]
            fn read(count: Arg<'py>, block: Option<&Bound<'py, PyAny>>) => read_op(&count, block);

            fn ack(entries: &Bound<'py, PyAny>) => ack_op(entries);

            #[pyo3(signature = (count=Arg::missing(), *, consumer=None, min_idle=None), text_signature = "(self, /, count=100, *, consumer=None, min_idle=None)")]
            fn pending(
                count: Arg<'py>,
                consumer: Option<&Bound<'py, PyAny>>,
                min_idle: Option<&Bound<'py, PyAny>>,
            ) => pending_op(&count, consumer, min_idle);

            #[pyo3(signature = (min_idle, count=Arg::missing(), *, error=Arg::missing()), text_signature = "(self, /, min_idle, count=100, *, error='')")]
            fn autoclaim(
                min_idle: &Bound<'py, PyAny>,
                count: Arg<'py>,
                error: Arg<'py>,
            ) => autoclaim_op(min_idle, &count, &error);

            #[pyo3(signature = (entries, error=Arg::missing()), text_signature = "(self, /, entries, error='')")]
            fn dead_letter(entries: &Bound<'py, PyAny>, error: Arg<'py>) => dead_letter_op(entries, &error);

            fn seek(position: &Bound<'py, PyAny>) => seek_op(position);

            fn info() => info_op();

            fn delete() => delete_op();
        }
    };
}

/// A stream of a `Client`.
#[pyclass(module = "ferroq._ferroq", frozen)]
pub struct Stream {
    pub inner: StreamCore,
}

/// A stream of an `AsyncClient`.
#[pyclass(module = "ferroq._ferroq", frozen)]
pub struct AsyncStream {
    pub inner: StreamCore,
}

/// A consumer group of a `Stream`.
#[pyclass(module = "ferroq._ferroq", frozen)]
pub struct ConsumerGroup {
    pub inner: GroupCore,
}

/// A consumer group of an `AsyncStream`.
#[pyclass(module = "ferroq._ferroq", frozen)]
pub struct AsyncConsumerGroup {
    pub inner: GroupCore,
}

stream_methods!(Stream, "Stream", sync_call, ConsumerGroup);
stream_methods!(AsyncStream, "AsyncStream", run_async, AsyncConsumerGroup);
group_methods!(ConsumerGroup, "ConsumerGroup", sync_call);
group_methods!(AsyncConsumerGroup, "AsyncConsumerGroup", run_async);
