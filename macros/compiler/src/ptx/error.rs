//! Why the writer stops: [`WriteError`]. A verified kernel has everything the writer looks up,
//! so an inconsistency found while writing is a compiler bug, reported with what the writer
//! expected and what it found; formatting into a `String` does not fail, but its error is
//! carried too.

use std::fmt;

/// An error of the PTX writer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteError {
    /// The kernel, or the writer's own state, is not what the code being written needs.
    Inconsistent {
        /// What the writer needed.
        expected: String,
        /// What it found instead.
        found: String,
    },
    /// Formatting the output failed.
    Format(fmt::Error),
}

impl WriteError {
    /// An inconsistency: `expected`, but `found`.
    pub(super) fn inconsistent(expected: impl Into<String>, found: impl Into<String>) -> Self {
        WriteError::Inconsistent {
            expected: expected.into(),
            found: found.into(),
        }
    }

    /// Role code was being written, but the code is outside every role (the prologue).
    pub(super) fn outside_role() -> Self {
        WriteError::inconsistent("role code", "code outside every role")
    }
}

impl From<fmt::Error> for WriteError {
    fn from(e: fmt::Error) -> Self {
        WriteError::Format(e)
    }
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteError::Inconsistent { expected, found } => {
                write!(f, "the PTX writer expected {expected}, but found {found}")
            }
            WriteError::Format(_) => f.write_str("formatting the PTX failed"),
        }
    }
}

impl std::error::Error for WriteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WriteError::Inconsistent { .. } => None,
            WriteError::Format(e) => Some(e),
        }
    }
}

/// What the writer's steps return.
pub(super) type WriteResult<T = ()> = Result<T, WriteError>;
