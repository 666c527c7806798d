//! Diagnostics asked of typescript-language-server rather than waited for.
//!
//! typescript-language-server publishes a file's diagnostics only when they differ from what it
//! published last, so after a change that leaves a file as it was (clean before, clean after)
//! nothing comes, and waiting for a publication runs into the timeout. It also publishes the
//! kinds of diagnostics (syntax, then types) as each arrives, so a first publication can lack the
//! type errors. Its `typescript.tsserverRequest` command reaches the TypeScript server directly:
//! `syntacticDiagnosticsSync` and `semanticDiagnosticsSync` answer for the text the server has
//! now, after the project has loaded, every time.

use std::path::Path;

use lsp_types::{Diagnostic, DiagnosticSeverity, NumberOrString, Position, Range};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::rpc::{Connection, RpcError};

/// The command that passes a request through to the TypeScript server.
pub const COMMAND: &str = "typescript.tsserverRequest";

/// Why the diagnostics could not be asked for.
#[derive(Debug)]
pub enum PullError {
    /// The connection failed or the deadline passed.
    Rpc(RpcError),
    /// The server answered something else than diagnostics (a version that works otherwise):
    /// wait for its publications instead.
    Unusable,
}

/// The syntax and type errors, warnings and notes of `file`, as the TypeScript server has it now.
pub async fn diagnostics(conn: &Connection, file: &Path, deadline: Instant) -> Result<Vec<Diagnostic>, PullError> {
    let mut all = Vec::new();
    for kind in ["syntacticDiagnosticsSync", "semanticDiagnosticsSync"] {
        let params = json!({"command": COMMAND, "arguments": [kind, {"file": file}]});
        let answer = conn.request("workspace/executeCommand", params, deadline).await.map_err(PullError::Rpc)?;
        if answer.get("success").and_then(Value::as_bool) != Some(true) {
            return Err(PullError::Unusable);
        }
        let Some(body) = answer.get("body").and_then(Value::as_array) else { return Err(PullError::Unusable) };
        for item in body {
            all.push(convert(item).ok_or(PullError::Unusable)?);
        }
    }
    Ok(all)
}

/// A TypeScript server diagnostic (1-based line and UTF-16 offset) as an LSP one.
fn convert(item: &Value) -> Option<Diagnostic> {
    let at = |key: &str| -> Option<Position> {
        let place = item.get(key)?;
        let line = place.get("line")?.as_u64()?.checked_sub(1)?;
        let offset = place.get("offset")?.as_u64()?.checked_sub(1)?;
        Some(Position::new(u32::try_from(line).ok()?, u32::try_from(offset).ok()?))
    };
    let severity = match item.get("category").and_then(Value::as_str) {
        Some("error") => DiagnosticSeverity::ERROR,
        Some("warning") => DiagnosticSeverity::WARNING,
        Some("suggestion") => DiagnosticSeverity::HINT,
        _ => DiagnosticSeverity::INFORMATION,
    };
    Some(Diagnostic {
        range: Range::new(at("start")?, at("end")?),
        severity: Some(severity),
        code: item.get("code").and_then(Value::as_i64).and_then(|c| i32::try_from(c).ok()).map(NumberOrString::Number),
        source: Some("typescript".into()),
        message: item.get("text")?.as_str()?.to_string(),
        ..Diagnostic::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_type_error_becomes_a_zero_based_lsp_diagnostic() {
        let item = json!({"start": {"line": 2, "offset": 7}, "end": {"line": 2, "offset": 12},
            "text": "Type 'number' is not assignable to type 'string'.", "code": 2322, "category": "error"});
        let d = convert(&item).unwrap();
        assert_eq!(d.range, Range::new(Position::new(1, 6), Position::new(1, 11)));
        assert_eq!(d.severity, Some(DiagnosticSeverity::ERROR));
        assert_eq!(d.code, Some(NumberOrString::Number(2322)));
        assert_eq!(d.message, "Type 'number' is not assignable to type 'string'.");
    }

    #[test]
    fn an_item_without_a_place_or_text_is_not_taken_for_a_clean_file() {
        assert!(convert(&json!({"text": "x", "category": "error"})).is_none());
        assert!(
            convert(&json!({"start": {"line": 0, "offset": 1}, "end": {"line": 1, "offset": 1}, "text": "x"}))
                .is_none()
        );
        assert!(convert(&json!({"start": {"line": 1, "offset": 1}, "end": {"line": 1, "offset": 1}})).is_none());
    }
}
