//! `py_methods!`: the `#[pymethods]` of a handle class, each method that only runs an operation written as
//! one row (its Python signature and the operation), so the sync class and its asyncio twin, and the
//! handles that share an operation, do not spell out the same wrapper again.

/// `#[pymethods] impl $class`: the methods written out in `{ ... }`, then one method per row
/// `fn name(arg: Type, ...) => op(expr, ...);`, which builds the operation `self.$core.op(expr, ...)` and
/// hands it to `$run` (`sync_call` for a sync class, `run_async` for its asyncio twin). The attributes
/// before a row (`#[pyo3(signature = ...)]`) go on its method.
macro_rules! py_methods {
    (
        $class:ident, $run:path, $core:ident,
        { $($own:tt)* }
        $(
            $(#[$($attr:tt)*])*
            fn $name:ident($($arg:ident: $ty:ty),* $(,)?) => $op:ident($($call:expr),* $(,)?);
        )*
    ) => {
        #[pymethods]
        impl $class {
            $($own)*

            $(
                $(#[$($attr)*])*
                fn $name<'py>(&self, py: Python<'py>, $($arg: $ty),*) -> PyResult<Bound<'py, PyAny>> {
                    $run(py, self.$core.$op($($call),*))
                }
            )*
        }
    };
}
