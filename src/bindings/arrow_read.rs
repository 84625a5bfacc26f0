//! `Topic.fetch_arrow` / `Stream.range_arrow` (and their asyncio twins): arguments checked under the GIL,
//! the batch fetched and built without it ([`crate::protocol::arrow_read`]), then handed to pyarrow through
//! the Arrow C Data Interface (the PyCapsule protocol, `__arrow_c_array__`): no copy, no object per row.

use std::sync::Mutex;

use arrow_array::ffi::to_ffi;
use arrow_array::{Array, RecordBatch, StructArray};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyString};

use crate::bindings::convert::{self, repr};
use crate::errors::{Error, Result};
use crate::pyrepr::py_repr;

/// The ids of `fetch_arrow`: an iterable (not a single str) of message ids; the first bad one raises.
pub fn message_ids(obj: &Bound<'_, PyAny>) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for item in convert::iterator(obj, "ids")? {
        let item = item.map_err(|e| Error::invalid(format!("iterating ids failed: {e}")))?;
        out.push(convert::rfq::message_id(&item)?);
    }
    Ok(out)
}

/// The field names of a batch: an iterable (not a single str) of distinct str, none of them one of the
/// batch's own columns (`reserved`).
pub fn field_names(obj: &Bound<'_, PyAny>, reserved: &[&str]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for item in convert::iterator(obj, "fields")? {
        let item = item.map_err(|e| Error::invalid(format!("iterating fields failed: {e}")))?;
        let name = item
            .cast::<PyString>()
            .ok()
            .and_then(|s| s.to_cow().ok().map(|c| c.into_owned()))
            .ok_or_else(|| Error::invalid(format!("a field name must be a str, got {}", repr(&item))))?;
        if reserved.contains(&name.as_str()) || out.contains(&name) {
            return Err(Error::invalid(format!(
                "field name {} is repeated or is a column of the batch already ({})",
                py_repr(&name),
                reserved.join(", ")
            )));
        }
        out.push(name);
    }
    Ok(out)
}

/// A record batch on its way to pyarrow: `__arrow_c_array__` exports it (once).
#[pyclass(module = "ferroq._ferroq", name = "_ArrowBatch", frozen)]
pub struct ArrowBatch {
    batch: Mutex<Option<RecordBatch>>,
}

#[pymethods]
impl ArrowBatch {
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
        let _ = requested_schema; // the batch has one layout: the consumer casts
        let batch = self
            .batch
            .lock()
            .map_err(|_| PyRuntimeError::new_err("the record batch is poisoned"))?
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("the record batch was exported already"))?;
        let data = StructArray::from(batch).into_data();
        let (array, schema) = to_ffi(&data).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        // The consumer moves the structs out of the capsules (leaving them released); the destructors
        // release whatever was not taken.
        let schema = PyCapsule::new_with_value(py, schema, c"arrow_schema")?;
        let array = PyCapsule::new_with_value(py, array, c"arrow_array")?;
        Ok((schema, array))
    }
}

/// pyarrow is imported before anything is sent: without it the call fails at once (ModuleNotFoundError).
pub fn need_pyarrow(py: Python<'_>) -> PyResult<()> {
    py.import("pyarrow").map(drop)
}

/// `batch` as a `pyarrow.RecordBatch`.
pub fn batch_py(py: Python<'_>, batch: RecordBatch) -> PyResult<Py<PyAny>> {
    let export = Bound::new(
        py,
        ArrowBatch {
            batch: Mutex::new(Some(batch)),
        },
    )?;
    Ok(py
        .import("pyarrow")?
        .getattr("record_batch")?
        .call1((export,))?
        .unbind())
}
