//! How LSP answers read to a model: `path:line:col: text of that line`, with 1-based lines and
//! columns counted in characters, paths relative to the worktree.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use lsp_types::{Diagnostic, DiagnosticSeverity, NumberOrString, Position, SymbolKind, Uri};

use super::position::{char_index, line_at, uri_path};
use toolshed_path::pattern_for;

/// Longest line text shown after a location, in characters.
const MAX_LINE_TEXT: usize = 200;
/// Largest file read to show the text of a line.
const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// Resolves locations to display paths, 1-based character columns and line texts, reading each
/// file at most once.
pub struct Files {
    root: PathBuf,
    texts: HashMap<PathBuf, Option<String>>,
    /// The call whose rules decide which files' lines may be shown (a file whose `read`, or
    /// `external_directory` outside the worktree, would ask or is denied shows none); `None`
    /// shows every file's.
    reader: Option<toolshed_core::ToolContext>,
}

impl Files {
    /// Paths are shown relative to `root`.
    pub fn new(root: &Path) -> Self {
        Files { root: root.to_path_buf(), texts: HashMap::new(), reader: None }
    }

    /// Shows the lines of a file (other than those given with [`Files::with_text`]) only when the
    /// `read` rules of `ctx`'s call allow reading it without asking: a language server answers
    /// about files the model may not read (a definition in `secrets/keys.py`).
    pub fn reading_as(mut self, ctx: &toolshed_core::ToolContext) -> Self {
        self.reader = Some(ctx.clone());
        self
    }

    /// Uses `text` as the content of `path` (what the server was sent) instead of reading it.
    pub fn with_text(mut self, path: &Path, text: &str) -> Self {
        self.texts.insert(path.to_path_buf(), Some(text.to_string()));
        self
    }

    /// How `path` is shown: relative to the worktree, absolute outside it.
    pub fn display(&self, path: &Path) -> String {
        pattern_for(&self.root, path)
    }

    /// The text of line `line` (0-based) of `path`, if it can be read.
    pub fn line(&mut self, path: &Path, line: u32) -> Option<String> {
        let reader = &self.reader;
        let text = self.texts.entry(path.to_path_buf()).or_insert_with(|| {
            // As `read` would be asked: a file outside the worktree needs `external_directory`
            // too (a server points anywhere: `#include "/home/me/.git-credentials"`).
            let readable = reader.as_ref().is_none_or(|ctx| {
                path.to_str()
                    .and_then(|p| toolshed_path::resolve(ctx, p).ok())
                    .is_some_and(|resolved| resolved.requests("read").iter().all(|r| ctx.allows(r)))
            });
            if readable { read_small(path) } else { None }
        });
        text.as_deref().and_then(|t| line_at(t, line)).map(str::to_string)
    }

    /// `path:line:col` for an LSP position in `path`.
    pub fn position(&mut self, path: &Path, position: Position) -> String {
        let line_text = self.line(path, position.line);
        let col = line_text.as_deref().map_or(position.character as usize, |l| char_index(l, position.character)) + 1;
        format!("{}:{}:{col}", self.display(path), position.line + 1)
    }

    /// `path:line:col: text of the line` for a position in the file `uri` names.
    pub fn location(&mut self, uri: &Uri, position: Position) -> String {
        let Some(path) = uri_path(uri) else {
            return format!("{}:{}:{}", uri.as_str(), position.line + 1, position.character + 1);
        };
        let at = self.position(&path, position);
        match self.line(&path, position.line).map(|l| shorten(l.trim())) {
            Some(text) if !text.is_empty() => format!("{at}: {text}"),
            _ => at,
        }
    }

    /// One diagnostic of `path`: `path:line:col: severity: message [code]`, further message
    /// lines indented, then the line's text after `| `.
    pub fn diagnostic(&mut self, path: &Path, d: &Diagnostic) -> String {
        let at = self.position(path, d.range.start);
        let message = d.message.replace('\u{a0}', " ");
        let mut lines = message.lines().map(str::trim_end).filter(|l| !l.trim().is_empty());
        let first = lines.next().unwrap_or("").trim();
        let code = match &d.code {
            Some(NumberOrString::String(code)) => format!(" [{code}]"),
            Some(NumberOrString::Number(code)) => format!(" [{code}]"),
            None => String::new(),
        };
        let mut out = format!("{at}: {}: {first}{code}", severity_name(d.severity));
        for more in lines {
            out.push_str("\n  ");
            out.push_str(more.trim());
        }
        if let Some(text) = self.line(path, d.range.start.line).map(|l| shorten(l.trim())).filter(|t| !t.is_empty()) {
            out.push_str("\n  | ");
            out.push_str(&text);
        }
        out
    }
}

fn read_small(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_FILE_BYTES {
        return None;
    }
    toolshed_path::read_regular(path).ok()?.ok().map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// `text`, cut to [`MAX_LINE_TEXT`] characters.
pub fn shorten(text: &str) -> String {
    if text.chars().count() <= MAX_LINE_TEXT {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(MAX_LINE_TEXT).collect();
    cut.push('…');
    cut
}

/// `error`, `warning`, `info` or `hint` (an unset severity counts as an error, as LSP says
/// clients may assume).
pub fn severity_name(severity: Option<DiagnosticSeverity>) -> &'static str {
    match severity {
        Some(DiagnosticSeverity::WARNING) => "warning",
        Some(DiagnosticSeverity::INFORMATION) => "info",
        Some(DiagnosticSeverity::HINT) => "hint",
        _ => "error",
    }
}

/// Whether a diagnostic is an error.
pub fn is_error(d: &Diagnostic) -> bool {
    matches!(d.severity, None | Some(DiagnosticSeverity::ERROR))
}

/// The lowercase name of a symbol kind (`class`, `function`, `enum member`).
pub fn symbol_kind_name(kind: SymbolKind) -> &'static str {
    const NAMES: &[(SymbolKind, &str)] = &[
        (SymbolKind::FILE, "file"),
        (SymbolKind::MODULE, "module"),
        (SymbolKind::NAMESPACE, "namespace"),
        (SymbolKind::PACKAGE, "package"),
        (SymbolKind::CLASS, "class"),
        (SymbolKind::METHOD, "method"),
        (SymbolKind::PROPERTY, "property"),
        (SymbolKind::FIELD, "field"),
        (SymbolKind::CONSTRUCTOR, "constructor"),
        (SymbolKind::ENUM, "enum"),
        (SymbolKind::INTERFACE, "interface"),
        (SymbolKind::FUNCTION, "function"),
        (SymbolKind::VARIABLE, "variable"),
        (SymbolKind::CONSTANT, "constant"),
        (SymbolKind::STRING, "string"),
        (SymbolKind::NUMBER, "number"),
        (SymbolKind::BOOLEAN, "boolean"),
        (SymbolKind::ARRAY, "array"),
        (SymbolKind::OBJECT, "object"),
        (SymbolKind::KEY, "key"),
        (SymbolKind::NULL, "null"),
        (SymbolKind::ENUM_MEMBER, "enum member"),
        (SymbolKind::STRUCT, "struct"),
        (SymbolKind::EVENT, "event"),
        (SymbolKind::OPERATOR, "operator"),
        (SymbolKind::TYPE_PARAMETER, "type parameter"),
    ];
    NAMES.iter().find(|(k, _)| *k == kind).map_or("symbol", |(_, name)| name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lsp_types::Range;

    #[test]
    fn diagnostics_show_character_columns_code_extra_lines_and_the_source_line() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let file = root.join("b.py");
        let text = "import a\n\ns = \"héllo 🎉\"; y: int = a.greet(s)\n";
        let d = Diagnostic {
            range: Range::new(Position::new(2, 25), Position::new(2, 35)),
            severity: Some(DiagnosticSeverity::ERROR),
            code: Some(NumberOrString::String("reportAssignmentType".into())),
            message: "Type \"str\" is not assignable to declared type \"int\"\n\u{a0}\u{a0}\"str\" is not assignable to \"int\""
                .into(),
            ..Diagnostic::default()
        };
        let mut files = Files::new(root).with_text(&file, text);
        insta::assert_snapshot!(files.diagnostic(&file, &d), @r#"
        b.py:3:25: error: Type "str" is not assignable to declared type "int" [reportAssignmentType]
          "str" is not assignable to "int"
          | s = "héllo 🎉"; y: int = a.greet(s)
        "#);
    }

    #[test]
    fn locations_outside_the_worktree_are_absolute_and_unreadable_files_show_no_text() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("w");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(tmp.path().join("lib.py"), "def f():\n    pass\n").unwrap();
        let mut files = Files::new(&root);
        let uri = super::super::position::file_uri(&tmp.path().join("lib.py")).unwrap();
        let shown = files.location(&uri, Position::new(0, 4));
        assert_eq!(shown, format!("{}:1:5: def f():", tmp.path().join("lib.py").display()));
        let gone = super::super::position::file_uri(&root.join("gone.py")).unwrap();
        assert_eq!(files.location(&gone, Position::new(3, 0)), "gone.py:4:1");
    }

    /// Allows everything without asking but `external_directory`.
    struct NoExternal;

    impl toolshed_core::permission::Asker for NoExternal {
        fn ask<'a>(
            &'a self,
            _call: &'a toolshed_core::context::CallInfo,
            _request: toolshed_core::permission::PermissionRequest,
        ) -> toolshed_core::tool::BoxFuture<'a, Result<(), toolshed_core::ToolError>> {
            Box::pin(async { Err(toolshed_core::ToolError::model("no")) })
        }

        fn allows(
            &self,
            _call: &toolshed_core::context::CallInfo,
            request: &toolshed_core::permission::PermissionRequest,
        ) -> bool {
            request.permission != "external_directory"
        }
    }

    #[test]
    fn a_file_outside_the_worktree_shows_its_lines_only_where_external_directory_allows() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let root = base.join("w");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(base.join("secret.txt"), "SECRET-LINE\n").unwrap();
        std::fs::write(root.join("inside.py"), "def f():\n").unwrap();
        let ctx = toolshed_core::ToolContext::standalone(&root, base.join("data"));
        let mut allowed = Files::new(&root).reading_as(&ctx);
        let outside = super::super::position::file_uri(&base.join("secret.txt")).unwrap();
        assert!(allowed.location(&outside, Position::new(0, 0)).ends_with("SECRET-LINE"));
        let ctx = ctx.with_asker(std::sync::Arc::new(NoExternal));
        let mut files = Files::new(&root).reading_as(&ctx);
        let shown = files.location(&outside, Position::new(0, 0));
        assert_eq!(shown, format!("{}:1:1", base.join("secret.txt").display()));
        let inside = super::super::position::file_uri(&root.join("inside.py")).unwrap();
        assert_eq!(files.location(&inside, Position::new(0, 4)), "inside.py:1:5: def f():");
    }

    #[test]
    fn long_lines_are_cut_and_kinds_have_names() {
        assert_eq!(shorten(&"x".repeat(250)).chars().count(), MAX_LINE_TEXT + 1);
        assert_eq!(symbol_kind_name(SymbolKind::ENUM_MEMBER), "enum member");
        assert_eq!(severity_name(None), "error");
    }
}
