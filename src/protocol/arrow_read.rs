//! Reads as Arrow record batches, for readers that want columns rather than one object per message (the
//! Spark data source): `Topic.fetch_arrow` (message bodies and delivery counts of given ids) and
//! `Stream.range_arrow` (XRANGE). Replies are decoded straight into Arrow builders, with no Python object per
//! message; values stay binary (the caller casts).

use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use redis::{Cmd, Pipeline, Value};

use crate::errors::{Error, Result};
use crate::pool::Pool;
use crate::protocol::common::{array, int, read_pipe, unexpected};
use crate::protocol::keys::{StreamKeys, TopicKeys};

/// The id column of both batches.
pub const ID_COLUMN: &str = "_id";
/// The delivery-count column of `fetch_arrow`.
pub const DELIVERIES_COLUMN: &str = "_deliveries";

/// The bytes of a string reply (nil: None).
fn bytes(v: Value) -> Result<Option<Vec<u8>>> {
    match v {
        Value::BulkString(b) => Ok(Some(b)),
        Value::SimpleString(s) => Ok(Some(s.into_bytes())),
        Value::VerbatimString { text, .. } => Ok(Some(text.into_bytes())),
        Value::Int(i) => Ok(Some(i.to_string().into_bytes())),
        Value::Nil => Ok(None),
        other => Err(unexpected("a string", &other)),
    }
}

/// The delivery count at the head of a record (`<count>[ ...]` or `<count>\n...`), 0 without a record or
/// when the head is not a number: the reading of `ferroq.spark` and `inspect`.
pub fn record_count(record: Option<&[u8]>) -> i64 {
    let Some(record) = record else { return 0 };
    let line = record.split(|&b| b == b'\n').next().unwrap_or_default();
    let head = line.split(|&b| b == b' ').next().unwrap_or_default();
    if head.is_empty() || !head.iter().all(u8::is_ascii_digit) {
        return 0;
    }
    std::str::from_utf8(head).ok().and_then(|s| s.parse().ok()).unwrap_or(0)
}

/// One binary column per requested field, filled row by row.
struct FieldColumns<'a> {
    names: &'a [String],
    builders: Vec<BinaryBuilder>,
    row: Vec<Option<Vec<u8>>>,
}

impl<'a> FieldColumns<'a> {
    fn new(names: &'a [String], rows: usize) -> Self {
        Self {
            names,
            builders: names
                .iter()
                .map(|_| BinaryBuilder::with_capacity(rows, rows * 8))
                .collect(),
            row: vec![None; names.len()],
        }
    }

    /// Appends one row from a flat `[f1, v1, ...]` list or a RESP3 map (fields not asked for are skipped).
    fn push(&mut self, pairs: Value) -> Result<()> {
        let mut put = |k: Value, v: Value| -> Result<()> {
            let Some(k) = bytes(k)? else { return Ok(()) };
            if let Some(i) = self.names.iter().position(|n| n.as_bytes() == k.as_slice()) {
                self.row[i] = bytes(v)?;
            }
            Ok(())
        };
        match pairs {
            Value::Map(items) => {
                for (k, v) in items {
                    put(k, v)?;
                }
            }
            v => {
                let mut it = array(v)?.into_iter();
                while let Some(k) = it.next() {
                    let v = it
                        .next()
                        .ok_or_else(|| Error::protocol("a reply of name/value pairs has an odd number of elements"))?;
                    put(k, v)?;
                }
            }
        }
        for (b, slot) in self.builders.iter_mut().zip(self.row.iter_mut()) {
            b.append_option(slot.take());
        }
        Ok(())
    }

    /// Appends one row from the values of the fields in order (an HMGET reply).
    fn push_values(&mut self, values: Vec<Value>) -> Result<()> {
        for (b, v) in self.builders.iter_mut().zip(values) {
            b.append_option(bytes(v)?);
        }
        Ok(())
    }

    fn finish(self, fields: &mut Vec<Field>, arrays: &mut Vec<ArrayRef>) {
        for (name, mut b) in self.names.iter().zip(self.builders) {
            fields.push(Field::new(name, DataType::Binary, true));
            arrays.push(Arc::new(b.finish()));
        }
    }
}

fn batch(fields: Vec<Field>, arrays: Vec<ArrayRef>) -> Result<RecordBatch> {
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
        .map_err(|e| Error::protocol(format!("cannot build a record batch: {e}")))
}

/// `Topic.fetch_arrow`: `_id`, `_deliveries`, then one binary column per name in `fields`, for the ids
/// whose message still exists, in the order given. Rounds of `chunk` ids, one pipeline each: an HMGET of
/// the fields per message (EXISTS when no field is asked for), one HMGET of the delivery records (the
/// claims that ended) and, unless the caller's claim holds every id (`held`: it counts as one delivery), one
/// SMISMEMBER of the in-flight set (a claim holding it now counts too). Only the fields asked for cross the
/// wire; a message none of whose fields is there is checked with EXISTS (a rare second round trip).
pub async fn fetch(
    pool: &Pool,
    topic: &TopicKeys,
    ids: &[String],
    fields: &[String],
    chunk: usize,
    held: bool,
) -> Result<RecordBatch> {
    let mut id_col = StringBuilder::with_capacity(ids.len(), ids.len() * 32);
    let mut deliveries = Int64Builder::with_capacity(ids.len());
    let mut cols = FieldColumns::new(fields, ids.len());
    for round in ids.chunks(chunk.max(1)) {
        let mut pipe = Pipeline::with_capacity(round.len() + 2);
        for id in round {
            let mut c = Cmd::new();
            if fields.is_empty() {
                c.arg("EXISTS").arg(topic.message_arg(id));
            } else {
                c.arg("HMGET").arg(topic.message_arg(id)).arg(fields);
            }
            pipe.add_command(c);
        }
        let mut c = Cmd::new();
        c.arg("HMGET").arg(&topic.deliveries).arg(round);
        pipe.add_command(c);
        if !held {
            let mut c = Cmd::new();
            c.arg("SMISMEMBER").arg(&topic.inflight).arg(round);
            pipe.add_command(c);
        }
        let mut replies = read_pipe(pool, &pipe).await?;
        let in_flight = if held {
            None
        } else {
            Some(array(replies.pop().unwrap_or(Value::Nil))?)
        };
        let records = array(replies.pop().unwrap_or(Value::Nil))?;
        if records.len() != round.len() || in_flight.as_ref().is_some_and(|f| f.len() != round.len()) {
            return Err(Error::protocol(
                "HMGET / SMISMEMBER of the delivery records: wrong number of values",
            ));
        }
        // Each message's field values (None: it is gone), and those with no field at all to check.
        let mut bodies: Vec<Option<Vec<Value>>> = Vec::with_capacity(round.len());
        let mut unsure: Vec<usize> = Vec::new();
        for (i, reply) in replies.into_iter().enumerate() {
            if fields.is_empty() {
                bodies.push((int(reply)? == 1).then(Vec::new));
                continue;
            }
            let values = array(reply)?;
            if values.len() != fields.len() {
                return Err(Error::protocol("HMGET of a message: wrong number of values"));
            }
            if values.iter().all(|v| matches!(v, Value::Nil)) {
                unsure.push(i);
            }
            bodies.push(Some(values));
        }
        if !unsure.is_empty() {
            let mut pipe = Pipeline::with_capacity(unsure.len());
            for &i in &unsure {
                let mut c = Cmd::new();
                c.arg("EXISTS").arg(topic.message_arg(&round[i]));
                pipe.add_command(c);
            }
            for (&i, exists) in unsure.iter().zip(read_pipe(pool, &pipe).await?) {
                if int(exists)? != 1 {
                    bodies[i] = None;
                }
            }
        }
        let in_flight = in_flight.map(|f| {
            f.into_iter()
                .map(|v| int(v).map(|n| n == 1))
                .collect::<Result<Vec<_>>>()
        });
        let in_flight = in_flight.transpose()?;
        for (i, ((id, body), record)) in round.iter().zip(bodies).zip(records).enumerate() {
            let Some(values) = body else {
                continue; // committed (or never published): left out
            };
            cols.push_values(values)?;
            id_col.append_value(id);
            let counted = in_flight.as_ref().is_none_or(|f| f[i]);
            deliveries.append_value(record_count(bytes(record)?.as_deref()) + i64::from(counted));
        }
    }
    let mut schema = vec![
        Field::new(ID_COLUMN, DataType::Utf8, true),
        Field::new(DELIVERIES_COLUMN, DataType::Int64, true),
    ];
    let mut arrays: Vec<ArrayRef> = vec![Arc::new(id_col.finish()), Arc::new(deliveries.finish())];
    cols.finish(&mut schema, &mut arrays);
    batch(schema, arrays)
}

/// `Stream.range_arrow`: XRANGE key start end COUNT count as `_id` and one binary column per name in
/// `fields`.
pub async fn range(
    pool: &Pool,
    s: &StreamKeys,
    start: &str,
    end: &str,
    count: usize,
    fields: &[String],
) -> Result<RecordBatch> {
    let mut c = Cmd::new();
    c.arg("XRANGE").arg(&s.key).arg(start).arg(end).arg("COUNT").arg(count);
    let mut pipe = Pipeline::with_capacity(1);
    pipe.add_command(c);
    let reply = read_pipe(pool, &pipe).await?.pop().unwrap_or(Value::Nil);
    let entries = array(reply)?;
    let mut id_col = StringBuilder::with_capacity(entries.len(), entries.len() * 16);
    let mut cols = FieldColumns::new(fields, entries.len());
    for entry in entries {
        let mut parts = array(entry)?.into_iter();
        let (Some(id), Some(body)) = (parts.next(), parts.next()) else {
            return Err(Error::protocol("XRANGE: an entry is not [id, fields]"));
        };
        if matches!(body, Value::Nil) {
            continue; // deleted since: left out, as by `range`
        }
        let id = bytes(id)?.ok_or_else(|| Error::protocol("XRANGE: an entry without an id"))?;
        let id = String::from_utf8(id).map_err(|_| Error::protocol("XRANGE: an entry id is not text"))?;
        id_col.append_value(&id);
        cols.push(body)?;
    }
    let mut schema = vec![Field::new(ID_COLUMN, DataType::Utf8, true)];
    let mut arrays: Vec<ArrayRef> = vec![Arc::new(id_col.finish())];
    cols.finish(&mut schema, &mut arrays);
    batch(schema, arrays)
}

#[cfg(test)]
mod tests {
    use super::record_count;

    #[test]
    fn counts_at_the_head_of_a_record() {
        assert_eq!(record_count(None), 0);
        assert_eq!(record_count(Some(b"")), 0);
        assert_eq!(record_count(Some(b"3")), 3);
        assert_eq!(record_count(Some(b"12 1700000000000 worker")), 12);
        assert_eq!(record_count(Some(b"4\nerror text")), 4);
        assert_eq!(record_count(Some(b"x 1")), 0);
        assert_eq!(record_count(Some(b"-1")), 0);
    }
}
