//! The workspace every command opens: built by `toolshed-runtime`, the one builder of rules,
//! registry and executor that every front-end uses.

pub use toolshed_runtime::Workspace;

use crate::CliError;

impl From<toolshed_runtime::Error> for CliError {
    fn from(e: toolshed_runtime::Error) -> Self {
        match e {
            toolshed_runtime::Error::Usage(m) => CliError::usage(m),
            toolshed_runtime::Error::Failure(m) => CliError::failure(m),
        }
    }
}
