//! Arrow rows as messages (`publish_arrow` / `send_arrow`): the string form of every Arrow value, and the
//! cutting of a stream of record batches into chunks of encoded messages. No Python here: the bindings
//! import the data through the Arrow C Data Interface and hand over the batches.
//!
//! The string forms are normative (docs/protocol.md, "Arrow rows"): the pure client
//! (`ferroq/pure/_arrow.py`) produces the same bytes, checked by the parity tests.

use std::io::Write;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, Decimal128Type, Decimal256Type, Decimal32Type, Decimal64Type, DurationMicrosecondType,
    DurationMillisecondType, DurationNanosecondType, DurationSecondType, Float32Type, Float64Type, Int16Type,
    Int32Type, Int64Type, Int8Type, Time32MillisecondType, Time32SecondType, Time64MicrosecondType,
    Time64NanosecondType, TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, RecordBatch};
use arrow_schema::{ArrowError, DataType, Schema, TimeUnit};

use crate::errors::{Error, ErrorKind, Result};
use crate::limits::MAX_FIELDS;
use crate::protocol::validate;
use crate::pyrepr::py_repr;

// ---- numbers --------------------------------------------------------------------------------------

/// Python's `repr()` layout of a finite number given by its shortest digits (`digits`, no sign, no leading
/// zero unless the number is 0) and decimal exponent `exp` (the number is `d.ddd × 10^exp`).
fn py_layout(out: &mut Vec<u8>, negative: bool, digits: &[u8], exp: i32) {
    if negative {
        out.push(b'-');
    }
    let decpt = exp + 1;
    let n = digits.len() as i32;
    if !(-4 < decpt && decpt <= 16) {
        out.push(digits[0]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        let e = decpt - 1;
        let _ = write!(out, "e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    } else if decpt <= 0 {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', (-decpt) as usize));
        out.extend_from_slice(digits);
    } else if decpt >= n {
        out.extend_from_slice(digits);
        out.extend(std::iter::repeat_n(b'0', (decpt - n) as usize));
        out.extend_from_slice(b".0");
    } else {
        out.extend_from_slice(&digits[..decpt as usize]);
        out.push(b'.');
        out.extend_from_slice(&digits[decpt as usize..]);
    }
}

/// `s` is Rust's `{:e}` of a finite float: shortest round-trip digits, like `-1.2345e-7`.
fn py_from_exp(out: &mut Vec<u8>, s: &str) {
    let (negative, s) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let (mantissa, exp) = s.split_once('e').unwrap_or((s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: Vec<u8> = mantissa.bytes().filter(|b| *b != b'.').collect();
    py_layout(out, negative, &digits, exp);
}

/// A float type whose value can be written as Python writes a float.
pub trait PyFloat: Copy + std::fmt::LowerExp + std::str::FromStr + PartialEq {
    fn class(self) -> Option<&'static [u8]>;
}

macro_rules! py_float {
    ($t:ty) => {
        impl PyFloat for $t {
            /// `nan`, `inf` or `-inf`; None for a finite value.
            fn class(self) -> Option<&'static [u8]> {
                if self.is_nan() {
                    Some(b"nan")
                } else if self.is_infinite() {
                    Some(if self > 0.0 { b"inf" } else { b"-inf" })
                } else {
                    None
                }
            }
        }
    };
}
py_float!(f64);
py_float!(f32);

/// Python's `repr(float)` for a float64 (`0.1`, `1e+20`, `1e-05`, `100.0`, `-0.0`, `nan`, `inf`, `-inf`);
/// for a float32, the shortest decimal that reads back as the same float32, in the same layout.
pub fn write_float<F: PyFloat>(out: &mut Vec<u8>, v: F) {
    match v.class() {
        Some(word) => out.extend_from_slice(word),
        None => py_from_exp(
            out,
            &nearest_shortest(
                format!("{v:e}"),
                |p| format!("{v:.p$e}"),
                |s| s.parse::<F>().ok() == Some(v),
            ),
        ),
    }
}

pub fn write_f64(out: &mut Vec<u8>, v: f64) {
    write_float(out, v);
}

pub fn write_f32(out: &mut Vec<u8>, v: f32) {
    write_float(out, v);
}

/// Among the shortest decimals that read back as the float, the nearest to it, ties to even (as Python's
/// repr): `shortest` is Rust's shortest form (which may take the other one of a tie); `exact(p)` formats
/// the exact value rounded to p digits after the first, half to even.
fn nearest_shortest(shortest: String, exact: impl Fn(usize) -> String, round_trips: impl Fn(&str) -> bool) -> String {
    let mantissa = shortest.split('e').next().unwrap_or_default();
    let digits = mantissa.bytes().filter(u8::is_ascii_digit).count();
    let rounded = exact(digits.saturating_sub(1));
    if rounded != shortest && round_trips(&rounded) {
        rounded
    } else {
        shortest
    }
}

/// A float as JSON the way Python's json.dumps writes it: `NaN`, `Infinity`, `-Infinity`, else the repr.
fn json_float(out: &mut Vec<u8>, v: f64, f32_value: Option<f32>) {
    if v.is_nan() {
        out.extend_from_slice(b"NaN");
    } else if v.is_infinite() {
        out.extend_from_slice(if v > 0.0 { b"Infinity" } else { b"-Infinity" });
    } else if let Some(f) = f32_value {
        write_f32(out, f);
    } else {
        write_f64(out, v);
    }
}

/// A decimal exactly, with `scale` digits after the point and never an exponent: `unscaled` is the integer's
/// decimal text (with its sign). A negative scale appends zeros.
pub fn write_decimal(out: &mut Vec<u8>, unscaled: &str, scale: i8) {
    let (negative, mag) = match unscaled.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, unscaled),
    };
    if negative {
        out.push(b'-');
    }
    if scale <= 0 {
        out.extend_from_slice(mag.as_bytes());
        if mag != "0" {
            out.extend(std::iter::repeat_n(b'0', (-(scale as i32)) as usize));
        }
        return;
    }
    let scale = scale as usize;
    if mag.len() <= scale {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', scale - mag.len()));
        out.extend_from_slice(mag.as_bytes());
    } else {
        let (int, frac) = mag.split_at(mag.len() - scale);
        out.extend_from_slice(int.as_bytes());
        out.push(b'.');
        out.extend_from_slice(frac.as_bytes());
    }
}

// ---- times --------------------------------------------------------------------------------------------

/// (year, month, day) of a day count since 1970-01-01 (proleptic Gregorian; H. Hinnant's civil_from_days).
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn write_date(out: &mut Vec<u8>, days: i64) {
    let (y, m, d) = civil_from_days(days);
    let _ = write!(out, "{y:04}-{m:02}-{d:02}");
}

/// Units per second and fraction digits of a time unit.
fn unit(u: &TimeUnit) -> (i64, usize) {
    match u {
        TimeUnit::Second => (1, 0),
        TimeUnit::Millisecond => (1_000, 3),
        TimeUnit::Microsecond => (1_000_000, 6),
        TimeUnit::Nanosecond => (1_000_000_000, 9),
    }
}

/// `HH:MM:SS[.fff…]` of `v` units of `u` (hours may pass 23 for values beyond a day).
fn write_clock(out: &mut Vec<u8>, secs_of_day: i64, frac: i64, digits: usize) {
    let (h, m, s) = (secs_of_day / 3600, secs_of_day / 60 % 60, secs_of_day % 60);
    let _ = write!(out, "{h:02}:{m:02}:{s:02}");
    if digits > 0 {
        let _ = write!(out, ".{frac:0digits$}");
    }
}

/// ISO-8601 `YYYY-MM-DDTHH:MM:SS[.fff…]`, `Z` when `utc` (the column has a time zone).
pub fn write_timestamp(out: &mut Vec<u8>, v: i64, u: &TimeUnit, utc: bool) {
    let (per, digits) = unit(u);
    let (secs, frac) = (v.div_euclid(per), v.rem_euclid(per));
    write_date(out, secs.div_euclid(86_400));
    out.push(b'T');
    write_clock(out, secs.rem_euclid(86_400), frac, digits);
    if utc {
        out.push(b'Z');
    }
}

/// `HH:MM:SS[.fff…]` of a time of day.
pub fn write_time(out: &mut Vec<u8>, v: i64, u: &TimeUnit) {
    let (per, digits) = unit(u);
    write_clock(out, v.div_euclid(per), v.rem_euclid(per), digits);
}

// ---- bytes ----------------------------------------------------------------------------------------------

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding.
pub fn write_base64(out: &mut Vec<u8>, data: &[u8]) {
    for c in data.chunks(3) {
        let b = [c[0], *c.get(1).unwrap_or(&0), *c.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        out.push(B64[(n >> 18) as usize & 63]);
        out.push(B64[(n >> 12) as usize & 63]);
        out.push(if c.len() > 1 { B64[(n >> 6) as usize & 63] } else { b'=' });
        out.push(if c.len() > 2 { B64[n as usize & 63] } else { b'=' });
    }
}

/// A JSON string as Python's `json.dumps(s, ensure_ascii=False)` writes it.
pub fn write_json_str(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    for &b in s {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            b if b < 0x20 => {
                let _ = write!(out, "\\u{b:04x}");
            }
            b => out.push(b),
        }
    }
    out.push(b'"');
}

// ---- types ------------------------------------------------------------------------------------------

/// The kind of a column type that cannot be published (for nested types: of the first such child), or None
/// when it can. Kinds, as the pure client names them: `float16`, `interval`, `union`, `list_view`,
/// `run_end_encoded`, else the type itself.
pub fn unsupported(dt: &DataType) -> Option<String> {
    use DataType::*;
    match dt {
        Null | Boolean | Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | UInt64 | Float32 | Float64
        | Decimal32(..) | Decimal64(..) | Decimal128(..) | Decimal256(..) | Utf8 | LargeUtf8 | Utf8View | Binary
        | LargeBinary | BinaryView | FixedSizeBinary(_) | Timestamp(..) | Date32 | Date64 | Duration(_) => None,
        Time32(TimeUnit::Second | TimeUnit::Millisecond) | Time64(TimeUnit::Microsecond | TimeUnit::Nanosecond) => None,
        List(f) | LargeList(f) | FixedSizeList(f, _) => unsupported(f.data_type()),
        Struct(fields) => fields.iter().find_map(|f| unsupported(f.data_type())),
        Map(entries, _) => unsupported(entries.data_type()),
        Dictionary(k, v) if k.is_dictionary_key_type() => unsupported(v),
        Float16 => Some("float16".into()),
        Interval(_) => Some("interval".into()),
        Union(..) => Some("union".into()),
        ListView(_) | LargeListView(_) => Some("list_view".into()),
        RunEndEncoded(..) => Some("run_end_encoded".into()),
        other => Some(other.to_string()),
    }
}

fn is_text(dt: &DataType) -> bool {
    matches!(dt, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

fn is_bytes(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView | DataType::FixedSizeBinary(_)
    )
}

// ---- values -----------------------------------------------------------------------------------------

/// The index into a dictionary's values of row `i` (its key).
fn dict_key(keys: &dyn Array, i: usize) -> usize {
    match keys.data_type() {
        DataType::Int8 => keys.as_primitive::<Int8Type>().value(i) as usize,
        DataType::Int16 => keys.as_primitive::<Int16Type>().value(i) as usize,
        DataType::Int32 => keys.as_primitive::<Int32Type>().value(i) as usize,
        DataType::Int64 => keys.as_primitive::<Int64Type>().value(i) as usize,
        DataType::UInt8 => keys.as_primitive::<UInt8Type>().value(i) as usize,
        DataType::UInt16 => keys.as_primitive::<UInt16Type>().value(i) as usize,
        DataType::UInt32 => keys.as_primitive::<UInt32Type>().value(i) as usize,
        _ => keys.as_primitive::<UInt64Type>().value(i) as usize,
    }
}

/// Writes the value of row `i` (not null) of `a`: its string form, or (`json`) its JSON form inside a
/// nested value. Types were checked by [`unsupported`].
fn write_value(out: &mut Vec<u8>, a: &dyn Array, i: usize, json: bool) {
    use DataType::*;
    macro_rules! int {
        ($t:ty) => {{
            let _ = write!(out, "{}", a.as_primitive::<$t>().value(i));
        }};
    }
    macro_rules! quoted {
        ($body:expr) => {{
            if json {
                out.push(b'"');
            }
            $body;
            if json {
                out.push(b'"');
            }
        }};
    }
    match a.data_type() {
        Null => out.extend_from_slice(b"null"),
        Boolean => out.extend_from_slice(if a.as_boolean().value(i) { b"true" } else { b"false" }),
        Int8 => int!(Int8Type),
        Int16 => int!(Int16Type),
        Int32 => int!(Int32Type),
        Int64 => int!(Int64Type),
        UInt8 => int!(UInt8Type),
        UInt16 => int!(UInt16Type),
        UInt32 => int!(UInt32Type),
        UInt64 => int!(UInt64Type),
        Float64 => {
            let v = a.as_primitive::<Float64Type>().value(i);
            if json {
                json_float(out, v, None)
            } else {
                write_f64(out, v)
            }
        }
        Float32 => {
            let v = a.as_primitive::<Float32Type>().value(i);
            if json {
                json_float(out, f64::from(v), Some(v))
            } else {
                write_f32(out, v)
            }
        }
        Decimal32(_, s) => quoted!(write_decimal(
            out,
            &a.as_primitive::<Decimal32Type>().value(i).to_string(),
            *s
        )),
        Decimal64(_, s) => quoted!(write_decimal(
            out,
            &a.as_primitive::<Decimal64Type>().value(i).to_string(),
            *s
        )),
        Decimal128(_, s) => quoted!(write_decimal(
            out,
            &a.as_primitive::<Decimal128Type>().value(i).to_string(),
            *s
        )),
        Decimal256(_, s) => quoted!(write_decimal(
            out,
            &a.as_primitive::<Decimal256Type>().value(i).to_string(),
            *s
        )),
        Utf8 | LargeUtf8 | Utf8View => {
            let s: &str = match a.data_type() {
                Utf8 => a.as_string::<i32>().value(i),
                LargeUtf8 => a.as_string::<i64>().value(i),
                _ => a.as_string_view().value(i),
            };
            if json {
                write_json_str(out, s.as_bytes())
            } else {
                out.extend_from_slice(s.as_bytes())
            }
        }
        Binary | LargeBinary | BinaryView | FixedSizeBinary(_) => {
            let b: &[u8] = match a.data_type() {
                Binary => a.as_binary::<i32>().value(i),
                LargeBinary => a.as_binary::<i64>().value(i),
                BinaryView => a.as_binary_view().value(i),
                _ => a.as_fixed_size_binary().value(i),
            };
            quoted!(write_base64(out, b))
        }
        Timestamp(u, tz) => {
            let v = match u {
                TimeUnit::Second => a.as_primitive::<TimestampSecondType>().value(i),
                TimeUnit::Millisecond => a.as_primitive::<TimestampMillisecondType>().value(i),
                TimeUnit::Microsecond => a.as_primitive::<TimestampMicrosecondType>().value(i),
                TimeUnit::Nanosecond => a.as_primitive::<TimestampNanosecondType>().value(i),
            };
            quoted!(write_timestamp(out, v, u, tz.is_some()))
        }
        Date32 => quoted!(write_date(out, i64::from(a.as_primitive::<Date32Type>().value(i)))),
        Date64 => quoted!(write_date(
            out,
            a.as_primitive::<Date64Type>().value(i).div_euclid(86_400_000)
        )),
        Time32(u) => {
            let v = match u {
                TimeUnit::Second => a.as_primitive::<Time32SecondType>().value(i),
                _ => a.as_primitive::<Time32MillisecondType>().value(i),
            };
            quoted!(write_time(out, i64::from(v), u))
        }
        Time64(u) => {
            let v = match u {
                TimeUnit::Microsecond => a.as_primitive::<Time64MicrosecondType>().value(i),
                _ => a.as_primitive::<Time64NanosecondType>().value(i),
            };
            quoted!(write_time(out, v, u))
        }
        Duration(u) => match u {
            TimeUnit::Second => int!(DurationSecondType),
            TimeUnit::Millisecond => int!(DurationMillisecondType),
            TimeUnit::Microsecond => int!(DurationMicrosecondType),
            TimeUnit::Nanosecond => int!(DurationNanosecondType),
        },
        List(_) => {
            let l = a.as_list::<i32>();
            let o = l.value_offsets();
            write_json_list(out, l.values().as_ref(), o[i] as usize, o[i + 1] as usize);
        }
        LargeList(_) => {
            let l = a.as_list::<i64>();
            let o = l.value_offsets();
            write_json_list(out, l.values().as_ref(), o[i] as usize, o[i + 1] as usize);
        }
        FixedSizeList(_, n) => {
            let l = a.as_fixed_size_list();
            let start = l.value_offset(i) as usize;
            write_json_list(out, l.values().as_ref(), start, start + *n as usize);
        }
        Struct(fields) => {
            let s = a.as_struct();
            out.push(b'{');
            for (j, f) in fields.iter().enumerate() {
                if j > 0 {
                    out.push(b',');
                }
                write_json_str(out, f.name().as_bytes());
                out.push(b':');
                write_json(out, s.column(j).as_ref(), i);
            }
            out.push(b'}');
        }
        Map(_, _) => {
            let m = a.as_map();
            let o = m.value_offsets();
            let (keys, values) = (m.keys().as_ref(), m.values().as_ref());
            out.push(b'{');
            let mut key = Vec::new();
            for (n, j) in (o[i] as usize..o[i + 1] as usize).enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                key.clear();
                if keys.is_null(j) {
                    key.extend_from_slice(b"null");
                } else {
                    write_value(&mut key, keys, j, false);
                }
                write_json_str(out, &key);
                out.push(b':');
                write_json(out, values, j);
            }
            out.push(b'}');
        }
        Dictionary(_, _) => {
            let d = a.as_any_dictionary();
            let k = dict_key(d.keys(), i);
            let values = d.values().as_ref();
            if values.is_null(k) {
                out.extend_from_slice(if json { b"null" } else { b"" });
            } else {
                write_value(out, values, k, json);
            }
        }
        // Refused by `unsupported` before anything is read.
        _ => {}
    }
}

fn write_json_list(out: &mut Vec<u8>, values: &dyn Array, start: usize, end: usize) {
    out.push(b'[');
    for j in start..end {
        if j > start {
            out.push(b',');
        }
        write_json(out, values, j);
    }
    out.push(b']');
}

/// The JSON form of row `i` of `a` (`null` for a null).
fn write_json(out: &mut Vec<u8>, a: &dyn Array, i: usize) {
    if is_null(a, i) {
        out.extend_from_slice(b"null");
    } else {
        write_value(out, a, i, true);
    }
}

/// Whether row `i` is null: a null slot, a null-type column, or a dictionary key pointing at a null value.
fn is_null(a: &dyn Array, i: usize) -> bool {
    if a.is_null(i) || a.data_type() == &DataType::Null {
        return true;
    }
    if let DataType::Dictionary(..) = a.data_type() {
        let d = a.as_any_dictionary();
        return d.values().is_null(dict_key(d.keys(), i));
    }
    false
}

/// The string form of row `i` of `a` (its top-level value), or None for a null.
pub fn text(out: &mut Vec<u8>, a: &dyn Array, i: usize) -> bool {
    if is_null(a, i) {
        return false;
    }
    write_value(out, a, i, false);
    true
}

/// The bytes of row `i` of a binary column as they are, or false for a null.
fn raw_bytes(out: &mut Vec<u8>, a: &dyn Array, i: usize) -> bool {
    if a.is_null(i) {
        return false;
    }
    out.extend_from_slice(match a.data_type() {
        DataType::Binary => a.as_binary::<i32>().value(i),
        DataType::LargeBinary => a.as_binary::<i64>().value(i),
        DataType::BinaryView => a.as_binary_view().value(i),
        _ => a.as_fixed_size_binary().value(i),
    });
    true
}

// ---- rows into messages -------------------------------------------------------------------------------

/// Where the messages go: what a row becomes depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Topic,
    Rsmq,
    Stream,
}

/// What a row becomes, decided from the schema before anything is read.
#[derive(Debug, Clone)]
pub struct Layout {
    target: Target,
    /// The columns that become fields (with `value_column`, only it), by index, with their names.
    fields: Vec<(usize, String)>,
    /// The id column (topics).
    id: Option<(usize, String)>,
    /// RSMQ: the body is the JSON object of the fields (no value column).
    json_body: bool,
    /// A binary value column: its bytes go as they are (not base64).
    raw: bool,
}

fn column(schema: &Schema, name: &str, what: &str) -> Result<usize> {
    schema.index_of(name).map_err(|_| {
        let names: Vec<String> = schema.fields().iter().map(|f| py_repr(f.name())).collect();
        Error::invalid(format!(
            "{what} {} is not a column of the data (columns: {})",
            py_repr(name),
            names.join(", ")
        ))
    })
}

fn refuse(name: &str, why: &str) -> Error {
    Error::invalid(format!(
        "column {} holds {why} values, which cannot be published (see the string forms in docs/protocol.md)",
        py_repr(name)
    ))
}

impl Layout {
    /// Checks the schema against the options: every error here is raised before anything is written.
    pub fn new(schema: &Schema, target: Target, id_column: Option<&str>, value_column: Option<&str>) -> Result<Self> {
        let name = |i: usize| schema.field(i).name().clone();
        let id = match id_column {
            None => None,
            Some(c) => {
                let i = column(schema, c, "id_column")?;
                let dt = schema.field(i).data_type();
                if let Some(why) = unsupported(dt) {
                    return Err(refuse(c, &why));
                }
                if matches!(
                    dt,
                    DataType::List(_)
                        | DataType::LargeList(_)
                        | DataType::FixedSizeList(..)
                        | DataType::Struct(_)
                        | DataType::Map(..)
                        | DataType::Null
                ) {
                    return Err(Error::invalid(format!(
                        "id_column {} must hold scalar values (not nested, not null-typed)",
                        py_repr(c)
                    )));
                }
                Some((i, name(i)))
            }
        };
        let fields: Vec<(usize, String)> = match value_column {
            Some(c) => {
                let i = column(schema, c, "value_column")?;
                let dt = schema.field(i).data_type();
                let ok = match target {
                    Target::Rsmq => is_text(dt),
                    _ => is_text(dt) || is_bytes(dt),
                };
                if !ok {
                    let kinds = if target == Target::Rsmq {
                        "a string column (RSMQ messages are text)"
                    } else {
                        "a string or binary column"
                    };
                    return Err(Error::invalid(format!("value_column {} must be {kinds}", py_repr(c))));
                }
                vec![(i, name(i))]
            }
            None => {
                let mut out = Vec::new();
                for (i, f) in schema.fields().iter().enumerate() {
                    if id.as_ref().is_some_and(|(j, _)| *j == i) || f.data_type() == &DataType::Null {
                        continue;
                    }
                    if let Some(why) = unsupported(f.data_type()) {
                        return Err(refuse(f.name(), &why));
                    }
                    if f.name().is_empty() && target != Target::Rsmq {
                        return Err(Error::invalid(
                            "a column name is empty: message field names must be non-empty",
                        ));
                    }
                    if out.iter().any(|(_, n)| n == f.name()) {
                        return Err(Error::invalid(format!(
                            "column name {} appears twice: message field names must be unique",
                            py_repr(f.name())
                        )));
                    }
                    out.push((i, f.name().clone()));
                }
                out
            }
        };
        if target == Target::Stream && fields.len() > MAX_FIELDS {
            return Err(Error::invalid(format!(
                "a stream message may have at most {MAX_FIELDS} fields, the data has {} columns",
                fields.len()
            )));
        }
        let raw = value_column.is_some() && is_bytes(schema.field(fields[0].0).data_type());
        Ok(Self {
            target,
            json_body: target == Target::Rsmq && value_column.is_none(),
            fields,
            id,
            raw,
        })
    }
}

/// One message of a chunk: its id (a range of the chunk's buffer) and its fields (a range of `spans`).
#[derive(Debug, Clone)]
pub struct Message {
    pub id: Option<(usize, usize)>,
    pub fields: (usize, usize),
    /// The longest body in UTF-16 units (RSMQ).
    pub utf16: usize,
}

/// Encoded messages of one chunk: values back to back in `buf`.
#[derive(Debug, Default)]
pub struct Chunk {
    /// k: the chunk holds rows [k × chunk_size, (k + 1) × chunk_size) of the whole data.
    pub index: usize,
    pub buf: Vec<u8>,
    /// (field name index into the layout's fields, start, end) per field value.
    pub spans: Vec<(usize, usize, usize)>,
    pub messages: Vec<Message>,
}

impl Chunk {
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    pub fn bytes(&self, range: (usize, usize)) -> &[u8] {
        &self.buf[range.0..range.1]
    }

    /// The (name, value) pairs of message `m`.
    pub fn fields<'a>(&'a self, layout: &'a Layout, m: &Message) -> impl Iterator<Item = (&'a str, &'a [u8])> + Clone {
        self.spans[m.fields.0..m.fields.1]
            .iter()
            .map(move |&(f, s, e)| (layout.fields[f].1.as_str(), &self.buf[s..e]))
    }

    /// The id of message `m` (id column), as text.
    pub fn id(&self, m: &Message) -> Option<&str> {
        m.id.map(|r| std::str::from_utf8(self.bytes(r)).unwrap_or_default())
    }
}

fn row_error(kind: ErrorKind, row: usize, what: String) -> Error {
    Error::new(kind, format!("row {row}: {what}"))
}

/// Rows of record batches cut into chunks by their index in the whole data, whatever the batch boundaries.
pub struct Rows<I> {
    batches: I,
    layout: Layout,
    batch: Option<RecordBatch>,
    pos: usize,
    row: usize,
    chunk: usize,
    done: bool,
    scratch: Vec<u8>,
}

impl<I: Iterator<Item = std::result::Result<RecordBatch, ArrowError>>> Rows<I> {
    pub fn new(batches: I, layout: Layout) -> Self {
        Self {
            batches,
            layout,
            batch: None,
            pos: 0,
            row: 0,
            chunk: 0,
            done: false,
            scratch: Vec::new(),
        }
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Rows read so far.
    pub fn rows(&self) -> usize {
        self.row
    }

    /// The next chunk of at most `n` rows, each checked (an error names the row); None at the end.
    pub fn next_chunk(&mut self, n: usize, max_bytes: usize) -> Result<Option<Chunk>> {
        let mut chunk = Chunk {
            index: self.chunk,
            ..Chunk::default()
        };
        while chunk.len() < n {
            if self.batch.as_ref().is_none_or(|b| self.pos >= b.num_rows()) {
                if self.done {
                    break;
                }
                match self.batches.next() {
                    None => {
                        self.done = true;
                        self.batch = None;
                        break;
                    }
                    Some(Err(e)) => return Err(Error::invalid(format!("reading the Arrow data failed: {e}"))),
                    Some(Ok(b)) => {
                        self.batch = Some(b);
                        self.pos = 0;
                        continue;
                    }
                }
            }
            let Some(batch) = self.batch.take() else { break };
            let end = batch.num_rows().min(self.pos + n - chunk.len());
            let result = (self.pos..end).try_for_each(|i| self.encode(&batch, i, &mut chunk, max_bytes));
            self.batch = Some(batch);
            result?;
        }
        if chunk.is_empty() {
            return Ok(None);
        }
        self.chunk += 1;
        Ok(Some(chunk))
    }

    fn encode(&mut self, batch: &RecordBatch, i: usize, chunk: &mut Chunk, max_bytes: usize) -> Result<()> {
        let row = self.row;
        let layout = &self.layout;
        let id = match &layout.id {
            None => None,
            Some((c, name)) => {
                let start = chunk.buf.len();
                if !text(&mut chunk.buf, batch.column(*c).as_ref(), i) {
                    return Err(row_error(
                        ErrorKind::InvalidMessage,
                        row,
                        format!("the id column {} is null", py_repr(name)),
                    ));
                }
                let id = std::str::from_utf8(&chunk.buf[start..]).unwrap_or_default();
                validate::rfq::message_id(id).map_err(|e| row_error(ErrorKind::InvalidMessage, row, e.message))?;
                Some((start, chunk.buf.len()))
            }
        };
        let first = chunk.spans.len();
        let mut size = 0;
        let mut utf16 = 0;
        if layout.json_body {
            let start = chunk.buf.len();
            chunk.buf.push(b'{');
            let mut any = false;
            for (f, (c, name)) in layout.fields.iter().enumerate() {
                self.scratch.clear();
                if !text(&mut self.scratch, batch.column(*c).as_ref(), i) {
                    continue;
                }
                if any {
                    chunk.buf.push(b',');
                }
                any = true;
                let _ = f;
                write_json_str(&mut chunk.buf, name.as_bytes());
                chunk.buf.push(b':');
                write_json_str(&mut chunk.buf, &self.scratch);
            }
            chunk.buf.push(b'}');
            if !any {
                chunk.buf.truncate(start);
            } else {
                chunk.spans.push((0, start, chunk.buf.len()));
                size = chunk.buf.len() - start;
            }
        } else {
            for (f, (c, name)) in layout.fields.iter().enumerate() {
                let start = chunk.buf.len();
                let a = batch.column(*c).as_ref();
                let written = if layout.raw {
                    raw_bytes(&mut chunk.buf, a, i)
                } else {
                    text(&mut chunk.buf, a, i)
                };
                if written {
                    chunk.spans.push((f, start, chunk.buf.len()));
                    size += if layout.target == Target::Rsmq { 0 } else { name.len() } + chunk.buf.len() - start;
                }
            }
        }
        if chunk.spans.len() == first {
            return Err(row_error(
                ErrorKind::InvalidMessage,
                row,
                "the message has no field: every value is null".into(),
            ));
        }
        if size > max_bytes {
            return Err(row_error(
                ErrorKind::MessageTooLarge,
                row,
                format!("message is {size} bytes, more than max_message_bytes={max_bytes}"),
            ));
        }
        if layout.target == Target::Rsmq {
            let (_, s, e) = chunk.spans[first];
            utf16 = validate::rsmq::utf16_len(std::str::from_utf8(&chunk.buf[s..e]).unwrap_or_default());
        }
        chunk.messages.push(Message {
            id,
            fields: (first, chunk.spans.len()),
            utf16,
        });
        self.pos = i + 1;
        self.row += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f64s(v: f64) -> String {
        let mut out = Vec::new();
        write_f64(&mut out, v);
        String::from_utf8(out).unwrap()
    }

    fn f32s(v: f32) -> String {
        let mut out = Vec::new();
        write_f32(&mut out, v);
        String::from_utf8(out).unwrap()
    }

    fn dec(unscaled: &str, scale: i8) -> String {
        let mut out = Vec::new();
        write_decimal(&mut out, unscaled, scale);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn floats_read_like_python_repr() {
        // Python: [repr(x) for x in (...)]
        let cases: &[(f64, &str)] = &[
            (0.1, "0.1"),
            (1e20, "1e+20"),
            (1e-5, "1e-05"),
            (100.0, "100.0"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (f64::NAN, "nan"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (123456789012345680.0, "1.2345678901234568e+17"),
            (0.0001, "0.0001"),
            (0.00012345, "0.00012345"),
            (1.5e-7, "1.5e-07"),
            (1e100, "1e+100"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (-2.5, "-2.5"),
            (1.0 / 3.0, "0.3333333333333333"),
            (12345.678, "12345.678"),
        ];
        for (v, want) in cases {
            assert_eq!(f64s(*v), *want, "{v:e}");
        }
        // A tie between two shortest forms (the value is exactly ...254.25): Python takes the even digit.
        assert_eq!(f64s("-670048525966254.25".parse().unwrap()), "-670048525966254.2");
    }

    #[test]
    fn float32_is_the_shortest_that_round_trips() {
        let cases: &[(f32, &str)] = &[
            (0.1, "0.1"),
            (1e20, "1e+20"),
            (1e-5, "1e-05"),
            (100.0, "100.0"),
            (-0.0, "-0.0"),
            (f32::MAX, "3.4028235e+38"),
            (f32::MIN_POSITIVE, "1.1754944e-38"),
            (1e-45, "1e-45"),
            (16777216.0, "16777216.0"),
            (1.2345678, "1.2345678"),
        ];
        for (v, want) in cases {
            assert_eq!(f32s(*v), *want, "{v:e}");
        }
    }

    #[test]
    fn decimals_are_exact_with_their_scale() {
        assert_eq!(dec("150", 2), "1.50");
        assert_eq!(dec("-1", 10), "-0.0000000001");
        assert_eq!(dec("0", 0), "0");
        assert_eq!(dec("0", 3), "0.000");
        assert_eq!(dec("-12345", 2), "-123.45");
        assert_eq!(dec("12", -3), "12000");
        assert_eq!(dec("0", -3), "0");
        assert_eq!(dec("5", 1), "0.5");
    }

    #[test]
    fn timestamps_dates_and_times() {
        let ts = |v: i64, u: TimeUnit, utc: bool| {
            let mut out = Vec::new();
            write_timestamp(&mut out, v, &u, utc);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(ts(0, TimeUnit::Second, false), "1970-01-01T00:00:00");
        assert_eq!(
            ts(1_700_000_000_123, TimeUnit::Millisecond, true),
            "2023-11-14T22:13:20.123Z"
        );
        assert_eq!(ts(-1, TimeUnit::Microsecond, false), "1969-12-31T23:59:59.999999");
        assert_eq!(
            ts(951_782_400_000_000_001, TimeUnit::Nanosecond, false),
            "2000-02-29T00:00:00.000000001"
        );
        assert_eq!(ts(253_402_300_799, TimeUnit::Second, true), "9999-12-31T23:59:59Z");
        assert_eq!(ts(-62_135_596_800, TimeUnit::Second, false), "0001-01-01T00:00:00");
        let mut out = Vec::new();
        write_date(&mut out, -719_162);
        assert_eq!(out, b"0001-01-01");
        out.clear();
        write_time(&mut out, 45_296_789, &TimeUnit::Millisecond);
        assert_eq!(out, b"12:34:56.789");
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
    }

    #[test]
    fn base64_and_json_strings() {
        let b = |d: &[u8]| {
            let mut out = Vec::new();
            write_base64(&mut out, d);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(b(b""), "");
        assert_eq!(b(b"f"), "Zg==");
        assert_eq!(b(b"fo"), "Zm8=");
        assert_eq!(b(b"foo"), "Zm9v");
        assert_eq!(b(&[0xff, 0xfe, 0x00, 0x01]), "//4AAQ==");
        let mut out = Vec::new();
        write_json_str(&mut out, "a\"b\\c\n\t\u{1}\u{7f}é😀\u{8}\u{c}\r".as_bytes());
        // Python: json.dumps('a"b\\c\n\t\x01\x7fé😀\b\f\r', ensure_ascii=False)
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\"a\\\"b\\\\c\\n\\t\\u0001\u{7f}é😀\\b\\f\\r\""
        );
    }
}
