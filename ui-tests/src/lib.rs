//! Compile-fail tests live in `tests/`; this crate only hosts them.
