//! Python's `repr` of a str and of a float, for error messages worded as the pure client words them.

/// A repr as error messages show it: at most [`MAX_SHOWN_CHARS`](crate::limits::MAX_SHOWN_CHARS)
/// characters (code points, as Python counts them), a longer one cut to that many ending in `...`.
pub fn shown(repr: String) -> String {
    let max = crate::limits::MAX_SHOWN_CHARS;
    match repr.char_indices().nth(max) {
        None => repr,
        Some(_) => {
            let cut = repr.char_indices().nth(max - 3).map_or(repr.len(), |(i, _)| i);
            format!("{}...", &repr[..cut])
        }
    }
}

/// A value's `Debug` form as error messages show it ([`shown`]). Formatting stops once the cut is known,
/// so an error about a reply of a whole batch (hundreds of kilobytes of bodies) costs what one about a
/// short reply does.
pub fn shown_debug(value: &impl std::fmt::Debug) -> String {
    use std::fmt::Write;
    /// Keeps the first `room` characters written to it, then fails the formatting.
    struct Capped {
        out: String,
        room: usize,
    }
    impl Write for Capped {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            for c in s.chars() {
                if self.room == 0 {
                    return Err(std::fmt::Error);
                }
                self.out.push(c);
                self.room -= 1;
            }
            Ok(())
        }
    }
    // One character past the limit tells `shown` to cut.
    let mut capped = Capped {
        out: String::new(),
        room: crate::limits::MAX_SHOWN_CHARS + 1,
    };
    let _ = write!(capped, "{value:?}"); // an error only means the form was longer than that
    shown(capped.out)
}

/// A str as Python's `repr` shows it (quotes and escapes), as error messages show it ([`shown`]).
pub fn py_repr(s: &str) -> String {
    shown(full_repr(s))
}

fn full_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() => {
                let n = c as u32;
                if n <= 0xff {
                    out.push_str(&format!("\\x{n:02x}"));
                } else if n <= 0xffff {
                    out.push_str(&format!("\\u{n:04x}"));
                } else {
                    out.push_str(&format!("\\U{n:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// A float as Python's `repr` shows it (`1.0`, `nan`, `inf`, `0.5`).
pub fn py_float(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    } else if v == v.trunc() && v.abs() < 1e16 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reprs_like_python() {
        assert_eq!(py_repr("abc"), "'abc'");
        let long = "é".repeat(300);
        let cut = py_repr(&long);
        assert_eq!(cut.chars().count(), crate::limits::MAX_SHOWN_CHARS);
        assert!(cut.starts_with("'éé") && cut.ends_with("é..."));
        let fits = "x".repeat(crate::limits::MAX_SHOWN_CHARS - 2);
        assert_eq!(py_repr(&fits), format!("'{fits}'"));
        assert_eq!(py_repr("it's"), "\"it's\"");
        assert_eq!(py_repr("a\nb"), "'a\\nb'");
        assert_eq!(py_repr("'\""), "'\\'\"'");
        assert_eq!(py_repr("\u{1}"), "'\\x01'");
    }

    #[test]
    fn debug_forms_are_cut_like_reprs() {
        let max = crate::limits::MAX_SHOWN_CHARS;
        // A batch's reply: a million characters of Debug form, shown as its first ones.
        let huge = vec!["x".repeat(1000); 1000];
        let cut = shown_debug(&huge);
        assert_eq!(cut.chars().count(), max);
        assert!(cut.starts_with("[\"xxx") && cut.ends_with("x..."), "{cut}");
        assert_eq!(cut, shown(format!("{huge:?}")));
        let fits = "é".repeat(max - 2);
        assert_eq!(shown_debug(&fits), format!("{fits:?}"));
        assert_eq!(shown_debug(&(1, "a")), "(1, \"a\")");
    }

    #[test]
    fn floats_like_python() {
        assert_eq!(py_float(1.0), "1.0");
        assert_eq!(py_float(0.5), "0.5");
        assert_eq!(py_float(f64::NAN), "nan");
    }
}
