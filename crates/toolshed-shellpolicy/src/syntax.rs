//! The walk over tree-sitter-bash's tree. It accepts an explicit set of node kinds (the grammar
//! written down in `docs/shell.md`) and reports every other kind as a reason to ask; it never
//! recurses with the input's nesting: statements wait on an explicit stack, expansions are
//! scanned with one, and word decoding recurses at most a few levels (string → expansion).

use tree_sitter::Node;

use super::environment;
use super::words::{self, Piece, Word};
use super::{Analyzer, is_integer_literal};

/// Where a statement sits.
#[derive(Clone, Copy, Default)]
pub(super) struct Ctx {
    /// The byte range of the statement as written when it is the body of a redirected statement
    /// (its pattern then includes the redirections).
    written: Option<(usize, usize)>,
    /// The statement runs whenever the line reaches it, in the line's own shell: not in a
    /// branch, a loop, a function, a pipeline or a subshell (its assignments last).
    top: bool,
}

/// One line's walk.
pub(super) struct Walk<'t> {
    src: &'t str,
    depth: usize,
    stack: Vec<(Node<'t>, Ctx)>,
    /// Byte ranges of quoted text, comments and here-document bodies.
    quoted: Vec<(usize, usize)>,
    /// Byte ranges where a backquote is literal text for bash: single-quoted strings outside
    /// double quotes, `$'...'`, comments, here-document bodies.
    literal: Vec<(usize, usize)>,
    /// Byte ranges of backquote substitutions the walk analysed (see `Analyzer::backquote`).
    backquotes: Vec<(usize, usize)>,
    /// Where the `$(`, `<(`, `>(` and `$((` the walk analysed start (see
    /// `Analyzer::stray_substitutions`).
    substitutions: Vec<usize>,
    /// Byte ranges of unquoted here-document bodies, where bash expands `$(`, `${` and `$[`.
    expanded_bodies: Vec<(usize, usize)>,
    /// Whether the statement being walked is `Ctx::top`.
    top: bool,
    /// Redirected statements whose redirections wait for the walk to reach the statement they
    /// apply to (by node id): tree-sitter attaches `a && b > f` and `a | b > f` to the whole list
    /// or pipeline, where bash gives them to `b` alone.
    pending: Vec<(usize, Node<'t>)>,
    /// The directory to return to once the stack is back to a height: after a subshell, a
    /// pipeline (its commands run in subshells) or a function's body, the `cd`s inside do not
    /// hold for what follows.
    restores: Vec<(usize, Option<std::path::PathBuf>)>,
}

impl<'t> Walk<'t> {
    fn text(&self, node: Node<'_>) -> &'t str {
        self.src.get(node.byte_range()).unwrap_or_default()
    }

    /// Queues the named children of `node` as statements, in source order; `top` for those
    /// that run whenever `node` does, in its shell.
    fn push_children(&mut self, node: Node<'t>, top: bool) {
        let mut cursor = node.walk();
        let start = self.stack.len();
        let keeps = matches!(node.kind(), "program" | "compound_statement" | "negated_command");
        // `a && b`, `a || b`: only `a` always runs.
        let first_only = node.kind() == "list";
        for (i, child) in node.named_children(&mut cursor).enumerate() {
            // `cmd &` runs in a subshell in the background.
            let background = child.next_sibling().is_some_and(|n| n.kind() == "&");
            let top = top && !background && (keeps || (first_only && i == 0));
            self.stack.push((child, Ctx { top, ..Ctx::default() }));
        }
        self.stack[start..].reverse();
    }
}

/// Kinds that only hold arithmetic or test expressions.
const EXPRESSIONS: &[&str] = &[
    "binary_expression",
    "unary_expression",
    "ternary_expression",
    "postfix_expression",
    "parenthesized_expression",
    "arithmetic_expansion",
];

/// Test operators whose operands are arithmetic in `[[ ]]`.
const ARITHMETIC_TESTS: &[&str] = &["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];

impl Analyzer<'_> {
    /// Walks the tree of one line.
    pub(super) fn walk(&mut self, root: Node<'_>, src: &str, depth: usize) {
        let mut w = Walk {
            src,
            depth,
            stack: vec![(root, Ctx { top: depth == 0, ..Ctx::default() })],
            quoted: Vec::new(),
            literal: Vec::new(),
            backquotes: Vec::new(),
            substitutions: Vec::new(),
            expanded_bodies: Vec::new(),
            top: false,
            pending: Vec::new(),
            restores: Vec::new(),
        };
        while let Some((node, ctx)) = w.stack.pop() {
            if self.gave_up {
                return;
            }
            if self.budget.out_of_time() {
                self.too_complex("it takes too long to analyse");
                return;
            }
            self.statement(&mut w, node, ctx);
            while let Some((height, _)) = w.restores.last()
                && w.stack.len() <= *height
            {
                let (_, cwd) = w.restores.pop().unwrap_or_default();
                self.cwd = cwd;
            }
        }
        self.word_boundaries(&mut w);
        self.named_descriptors(&w);
        self.stray_backquotes(&w);
        self.stray_substitutions(&w);
    }

    fn statement<'t>(&mut self, w: &mut Walk<'t>, node: Node<'t>, ctx: Ctx) {
        w.top = ctx.top;
        // Nested lines (`bash -c`, `eval`) run where they are reached: a `cd` in one counts as
        // conditional unless the walk of this line says it always runs.
        self.unconditional = ctx.top;
        // The redirections tree-sitter attached to a list or pipeline ending here are opened
        // now, in the directory this command runs in (`cd src && echo x > f` writes `src/f`).
        while let Some(at) = w.pending.iter().position(|(id, _)| *id == node.id()) {
            let (_, redirected) = w.pending.remove(at);
            let mut extra = Vec::new();
            let mut c = redirected.walk();
            let redirects: Vec<Node<'t>> = redirected.children_by_field_name("redirect", &mut c).collect();
            for redirect in redirects {
                self.redirect(w, redirect, &mut extra);
            }
            if !extra.is_empty() {
                self.unclassified(format!("`{}` has words after a redirection", w.text(redirected)));
            }
        }
        match node.kind() {
            // `(( ... ))`: an arithmetic expression where a statement would be.
            "compound_statement" if node.child(0).is_some_and(|c| w.text(c) == "((") => self.scan(w, node, true),
            "subshell" | "pipeline" => {
                w.restores.push((w.stack.len(), self.cwd.clone()));
                w.push_children(node, ctx.top);
            }
            "program" | "list" | "compound_statement" | "do_group" | "if_statement" | "elif_clause" | "else_clause"
            | "while_statement" | "negated_command" => w.push_children(node, ctx.top),
            "command" => self.command(w, node, ctx, Vec::new()),
            "redirected_statement" => self.redirected(w, node),
            "variable_assignment" => self.assignment(w, node, true),
            "variable_assignments" => {
                let mut cursor = node.walk();
                let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
                for child in children {
                    match child.kind() {
                        "variable_assignment" => self.assignment(w, child, true),
                        kind => self.cannot(w, node, kind),
                    }
                }
            }
            "declaration_command" | "unset_command" => self.declaration(w, node),
            "test_command" => self.scan(w, node, false),
            "for_statement" => self.for_loop(w, node),
            "c_style_for_statement" => {
                let mut cursor = node.walk();
                let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
                let start = w.stack.len();
                for child in children {
                    if child.kind() == "do_group" || child.kind() == "compound_statement" {
                        w.stack.push((child, Ctx::default()));
                    } else {
                        self.scan(w, child, true);
                    }
                }
                w.stack[start..].reverse();
            }
            "case_statement" => {
                let mut cursor = node.walk();
                let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
                let start = w.stack.len();
                for child in children {
                    if child.kind() == "case_item" {
                        w.stack.push((child, Ctx::default()));
                    } else {
                        let _ = self.words_of(w, child);
                    }
                }
                w.stack[start..].reverse();
            }
            "case_item" => {
                let mut c = node.walk();
                let mut statements = Vec::new();
                if c.goto_first_child() {
                    loop {
                        let child = c.node();
                        if c.field_name() == Some("value") {
                            let _ = self.words_of(w, child);
                        } else if child.is_named() {
                            statements.push(child);
                        }
                        if !c.goto_next_sibling() {
                            break;
                        }
                    }
                }
                for child in statements.into_iter().rev() {
                    w.stack.push((child, Ctx::default()));
                }
            }
            // The body runs where the function is called, which may be anywhere: its relative
            // paths cannot be checked, and its `cd`s do not hold after the definition; after a
            // call the directory is unknown (see `Analyzer::views`).
            "function_definition" => {
                self.arith.functions = true;
                if let Some(name) = node.child_by_field_name("name") {
                    self.functions.insert(w.text(name).to_string());
                }
                if let Some(body) = node.child_by_field_name("body") {
                    w.restores.push((w.stack.len(), self.cwd.take()));
                    w.stack.push((body, Ctx::default()));
                }
            }
            "comment" => {
                w.quoted.push((node.start_byte(), node.end_byte()));
                w.literal.push((node.start_byte(), node.end_byte()));
            }
            "ERROR" => {}
            kind => self.cannot(w, node, kind),
        }
    }

    /// A node of a kind the analysis does not understand.
    fn cannot(&mut self, w: &Walk<'_>, node: Node<'_>, kind: &str) {
        let text: String = w.text(node).chars().take(60).collect();
        self.unclassified(format!("`{text}` cannot be analysed (`{kind}`)"));
    }

    /// `BODY REDIRECT...`: the body's pattern includes the redirections; words tree-sitter
    /// attaches to a redirection as extra destinations (`echo a >f b`) are arguments.
    fn redirected<'t>(&mut self, w: &mut Walk<'t>, node: Node<'t>) {
        // `a && b > f`, `a | b > f`: tree-sitter makes the list or pipeline the body, but bash
        // gives the redirections to its last command, which runs after `a` (maybe a `cd`). They
        // wait for the walk to reach that command.
        if let Some(body) = node.child_by_field_name("body")
            && matches!(body.kind(), "list" | "pipeline")
        {
            let mut last = body;
            while matches!(last.kind(), "list" | "pipeline") {
                let mut c = last.walk();
                let Some(child) = last.named_children(&mut c).filter(|n| n.kind() != "comment").last() else {
                    break;
                };
                last = child;
            }
            if last.id() != body.id() {
                let mut c = node.walk();
                if c.goto_first_child() {
                    loop {
                        let child = c.node();
                        if child.is_named() && !matches!(c.field_name(), Some("body" | "redirect")) {
                            self.cannot(w, child, child.kind());
                        }
                        if !c.goto_next_sibling() {
                            break;
                        }
                    }
                }
                w.pending.push((last.id(), node));
                w.stack.push((body, Ctx { written: Some((node.start_byte(), node.end_byte())), top: false }));
                return;
            }
        }
        let mut extra = Vec::new();
        let mut body = None;
        let mut c = node.walk();
        if c.goto_first_child() {
            loop {
                let child = c.node();
                match c.field_name() {
                    Some("body") => body = Some(child),
                    Some("redirect") => self.redirect(w, child, &mut extra),
                    _ if child.is_named() => self.cannot(w, child, child.kind()),
                    _ => {}
                }
                if !c.goto_next_sibling() {
                    break;
                }
            }
        }
        let ctx = Ctx { written: Some((node.start_byte(), node.end_byte())), top: false };
        match body {
            Some(body) if body.kind() == "command" => self.command(w, body, ctx, extra),
            Some(body) => {
                if !extra.is_empty() {
                    self.unclassified(format!("`{}` has words after a redirection", w.text(node)));
                }
                w.stack.push((body, ctx));
            }
            None => {}
        }
    }

    /// A simple command: assignments, words and redirections.
    fn command<'t>(&mut self, w: &mut Walk<'t>, node: Node<'t>, ctx: Ctx, extra: Vec<Node<'t>>) {
        let mut words = Vec::new();
        let mut inner_extra = Vec::new();
        let mut previous_word: Option<Node<'t>> = None;
        let mut c = node.walk();
        if c.goto_first_child() {
            loop {
                let child = c.node();
                // A word must be separated from what precedes it (a word, an assignment, a
                // redirection) the way bash separates words; a here-document ends after its body.
                if matches!(c.field_name(), Some("name" | "argument"))
                    && let Some(previous) = previous_word
                {
                    self.check_gap(w, previous, child);
                }
                if child.is_named() && child.kind() != "comment" {
                    previous_word = (child.kind() != "heredoc_redirect").then_some(child);
                }
                if child.is_named() && matches!(c.field_name(), Some("name" | "argument")) {
                    self.check_word_lines(w, child);
                }
                match (c.field_name(), child.kind()) {
                    (_, "variable_assignment") => self.assignment(w, child, false),
                    (Some("redirect"), _) | (_, "file_redirect" | "heredoc_redirect" | "herestring_redirect") => {
                        self.redirect(w, child, &mut inner_extra);
                    }
                    (Some("name"), _) => match child.named_child(0) {
                        Some(inner) => words.extend(self.words_of(w, inner)),
                        None => self.cannot(w, child, child.kind()),
                    },
                    (Some("argument"), _) if child.is_named() => words.extend(self.words_of(w, child)),
                    (Some("argument"), _) => match self.lone_dollar(w, child) {
                        Some(word) => words.push(word),
                        None => words.push(Word::new("$", true)),
                    },
                    (_, "comment") => {
                        w.quoted.push((child.start_byte(), child.end_byte()));
                        w.literal.push((child.start_byte(), child.end_byte()));
                    }
                    _ if !child.is_named() => {}
                    (_, kind) => self.cannot(w, child, kind),
                }
                if !c.goto_next_sibling() {
                    break;
                }
            }
        }
        if !inner_extra.is_empty() {
            self.unclassified(format!("`{}` has words after a redirection", w.text(node)));
        }
        for pair in extra.windows(2) {
            self.check_gap(w, pair[0], pair[1]);
        }
        for node in extra {
            words.extend(self.words_of(w, node));
        }
        if words.is_empty() {
            return;
        }
        let (start, end) = ctx.written.unwrap_or((node.start_byte(), node.end_byte()));
        let written = w.src.get(start..end).unwrap_or_default().trim();
        self.command_words(words, written, w.depth);
        self.input_texts.clear();
    }

    /// An anonymous `$` where a word should be: a literal dollar, unless a quote follows it
    /// (`$"..."`, which tree-sitter splits off as a word of its own).
    fn lone_dollar(&mut self, w: &Walk<'_>, node: Node<'_>) -> Option<Word> {
        if w.src.get(node.end_byte()..).is_some_and(|rest| rest.starts_with(['"', '\''])) {
            self.unclassified(format!("`{}` cannot be analysed (`$` before a quote)", w.text(node)));
            return None;
        }
        Some(Word::literal(w.text(node)))
    }

    /// A redirection: its target is written or read; here-documents and here-strings may hold
    /// substitutions; `extra` receives words tree-sitter took for extra destinations.
    fn redirect<'t>(&mut self, w: &mut Walk<'t>, node: Node<'t>, extra: &mut Vec<Node<'t>>) {
        match node.kind() {
            "file_redirect" => {
                let mut operator = String::new();
                let mut destination = None;
                let mut operator_start = node.start_byte();
                let mut c = node.walk();
                if c.goto_first_child() {
                    loop {
                        let child = c.node();
                        match c.field_name() {
                            Some("destination") if destination.is_none() => destination = Some(child),
                            Some("destination") => extra.push(child),
                            Some("descriptor") => operator_start = child.end_byte(),
                            _ if !child.is_named() => operator.push_str(w.text(child)),
                            _ if child.kind() == "ERROR" => {}
                            _ => self.cannot(w, child, child.kind()),
                        }
                        if !c.goto_next_sibling() {
                            break;
                        }
                    }
                }
                let Some(destination) = destination else { return };
                // The operator as written: tree-sitter leaves `<>` after a descriptor (`3<>f`)
                // as an error node, which is a read and a write all the same.
                if let Some(written) = w.src.get(operator_start..destination.start_byte()) {
                    operator = written.trim().to_string();
                }
                if let Some(first) = extra.first() {
                    self.check_gap(w, destination, *first);
                }
                let target = self.words_of(w, destination);
                let target = match target.as_slice() {
                    [one] => one.clone(),
                    _ => Word::new(w.text(destination), true),
                };
                self.redirection_target(&operator, &target);
            }
            "heredoc_redirect" => {
                // The delimiter as bash reads it (quotes removed), to check where tree-sitter ends
                // the body: `<<E"O"F` ends at a line `EOF` for bash, never for tree-sitter.
                let (word_end, (delimiter, quoted, strip)) =
                    super::bounds::heredoc_start(w.src.as_bytes(), node.start_byte() + 2);
                let is_delimiter = |line: &str| {
                    let line = if strip { line.trim_start_matches('\t') } else { line };
                    line.as_bytes() == delimiter.as_slice()
                };
                let mut c = node.walk();
                let mut statements = Vec::new();
                if c.goto_first_child() {
                    loop {
                        let child = c.node();
                        match child.kind() {
                            "heredoc_start" if child.end_byte() != word_end => {
                                self.unclassified("the delimiter of a here-document cannot be analysed".into());
                            }
                            "heredoc_start" => {}
                            "heredoc_body" if w.text(child).split('\n').any(is_delimiter) => {
                                self.unclassified("a here-document ends where the parser does not see it end".into());
                            }
                            "heredoc_end" if !is_delimiter(w.text(child)) => {
                                self.unclassified("a here-document ends where the parser does not see it end".into());
                            }
                            "heredoc_body" => {
                                self.input_texts.push(w.text(child).to_string());
                                w.quoted.push((child.start_byte(), child.end_byte()));
                                // Backquotes in an unquoted body ask (below); in a quoted one
                                // they are text.
                                w.literal.push((child.start_byte(), child.end_byte()));
                                if !quoted {
                                    w.expanded_bodies.push((child.start_byte(), child.end_byte()));
                                    if heredoc_joins(w.text(child), strip, &is_delimiter) {
                                        self.unclassified(
                                            "a here-document has a backslash-newline that bash removes before reading it"
                                                .into(),
                                        );
                                    }
                                    if w.text(child).contains('`') {
                                        self.unclassified("a here-document with backquotes cannot be analysed".into());
                                    }
                                    self.scan(w, child, false);
                                }
                            }
                            "heredoc_end" => {}
                            "file_redirect" | "herestring_redirect" => self.redirect(w, child, extra),
                            // `cmd <<EOF arg`: words after the delimiter are the command's.
                            _ if c.field_name() == Some("argument") => {
                                if let Some(previous) = child.prev_sibling() {
                                    self.check_gap(w, previous, child);
                                }
                                extra.push(child);
                            }
                            _ if child.is_named() => statements.push(child),
                            _ => {}
                        }
                        if !c.goto_next_sibling() {
                            break;
                        }
                    }
                }
                for child in statements.into_iter().rev() {
                    w.stack.push((child, Ctx::default()));
                }
            }
            "herestring_redirect" => {
                let mut cursor = node.walk();
                let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
                for child in children {
                    for word in self.words_of(w, child) {
                        if word.is_plain() {
                            self.input_texts.push(word.text);
                        }
                    }
                }
            }
            kind => self.cannot(w, node, kind),
        }
    }

    /// The file a redirection with `operator` writes or reads.
    fn redirection_target(&mut self, operator: &str, target: &Word) {
        if operator.contains('&') && target.text.chars().all(|c| c.is_ascii_digit() || c == '-') {
            return;
        }
        if matches!(target.text.as_str(), "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty") && target.is_plain()
        {
            return;
        }
        let writes = operator.contains('>');
        let paths = self.paths(target);
        if writes && paths.is_empty() {
            self.dynamic_writes = true;
        }
        if paths.is_empty() && !self.quiet {
            // A file named at run time (`> "$f"`) may be any: the edit rules about one file
            // are asked about, and what it reads may be any file of the worktree.
            if writes {
                self.out.unknown_edits.push(format!("a redirection writes {}, known only at run time", target.text));
            }
            if operator.contains('<') || !writes {
                let root = self.root.to_path_buf();
                self.tree_read(crate::TreeRead { path: root, hidden: true, ignored: true, glob: None });
            }
        }
        for path in paths {
            // Inside the worktree the pattern is relative, outside absolute: the `read` and
            // `edit` rules apply either way (`read = { "../*" = "deny" }`).
            self.check_outside(&path);
            let pattern = self.relative(&path);
            // `<>` opens the file for reading and writing.
            if operator.contains('<') || !writes {
                self.out.reads.push(pattern.clone());
            }
            if writes {
                self.out.edits.push(pattern);
            }
            if writes {
                self.written.insert(path);
            }
        }
    }

    /// `NAME=value`, `NAME+=value`, `NAME[index]=value`, alone or before a command (`lasting`:
    /// not before a command, so the shell keeps it).
    fn assignment<'t>(&mut self, w: &mut Walk<'t>, node: Node<'t>, lasting: bool) {
        let name = node.child_by_field_name("name");
        let name_text = name.map_or("", |n| w.text(n)).to_string();
        if let Some(why) = environment::check_name(&name_text) {
            self.unclassified(why);
        }
        if let Some(name) = name.filter(|n| n.kind() == "subscript") {
            self.scan(w, name, true);
        }
        let base = name_text.split('[').next().unwrap_or_default().to_string();
        let appends = {
            let mut c = node.walk();
            node.children(&mut c).any(|ch| !ch.is_named() && w.text(ch) == "+=")
        };
        let subscripted = name.is_some_and(|n| n.kind() == "subscript");
        if let Some(value) = node.child_by_field_name("value") {
            let arithmetic = value.kind() == "arithmetic_expansion";
            let values = if value.kind() == "array" {
                let mut cursor = value.walk();
                let elements: Vec<Node<'t>> = value.named_children(&mut cursor).collect();
                let mut values = Vec::new();
                for element in elements {
                    for word in self.words_of(w, element) {
                        // `[SUBSCRIPT]=VALUE`: the subscript of an indexed array is arithmetic.
                        match array_subscript(&word.text) {
                            Some((subscript, value)) => {
                                self.arithmetic_text(subscript);
                                values.push(Word::like(&word, value));
                            }
                            None => values.push(word),
                        }
                    }
                }
                values
            } else {
                self.words_of(w, value)
            };
            // `N=$x` for a variable with the integer attribute evaluates `x`'s value as
            // arithmetic: understood when the line set `x` to a plain integer before.
            let lone = (value.kind() == "simple_expansion" || value.kind() == "expansion")
                && self.arith.integer.contains(&base)
                && !appends;
            let lone = lone
                .then(|| w.text(value).trim_start_matches('$').trim_start_matches('{').trim_end_matches('}'))
                .filter(|name| is_identifier(name))
                .map(str::to_string);
            if let Some(name) = lone {
                self.arith_use(&name);
                self.arith_assign(&base, "0", true, false);
                return;
            }
            if !arithmetic && values.iter().any(|v| v.dynamic || environment::arithmetic_payload(&v.text)) {
                self.run_time_vars.insert(base.clone());
            }
            let integer = arithmetic || values.iter().all(|v| v.is_plain() && super::is_integer_literal(&v.text));
            let text: String = if arithmetic {
                "0".into()
            } else {
                values.iter().map(|v| v.text.as_str()).collect::<Vec<_>>().join(" ")
            };
            self.arith_assign(&base, &text, integer, lasting && w.top && !appends && !subscripted);
        } else {
            self.arith_assign(&base, "", true, lasting && w.top && !appends && !subscripted);
        }
    }

    /// `declare`/`typeset`/`local`/`export`/`readonly` and `unset`: a pattern of their own, and
    /// their names and values checked like assignments.
    fn declaration<'t>(&mut self, w: &mut Walk<'t>, node: Node<'t>) {
        let mut words = Vec::new();
        let mut c = node.walk();
        if c.goto_first_child() {
            loop {
                let child = c.node();
                match child.kind() {
                    "variable_assignment" => {
                        self.assignment(w, child, true);
                        let name = child.child_by_field_name("name").map_or("", |n| w.text(n)).to_string();
                        let values =
                            child.child_by_field_name("value").map(|v| self.words_of(w, v)).unwrap_or_default();
                        let dynamic = values.iter().any(|v| v.dynamic);
                        let value: String = values.iter().map(|v| v.text.as_str()).collect();
                        words.push(Word::new(format!("{name}={value}"), dynamic));
                    }
                    "variable_name" => {
                        // `export GIT_DIR` exports a value the line cannot see (inherited, or set
                        // in a way the analysis missed); `unset` and `-p` change nothing.
                        let keyword = words.first().map(|k: &Word| k.text.clone()).unwrap_or_default();
                        let prints = words.iter().any(|w| w.text.starts_with('-') && w.text.contains('p'));
                        if keyword != "unset"
                            && !prints
                            && let Some(why) = environment::check_name(w.text(child))
                        {
                            self.unclassified(why);
                        }
                        words.push(Word::literal(w.text(child)));
                    }
                    "comment" => {}
                    _ if child.is_named() => words.extend(self.words_of(w, child)),
                    _ => words.push(Word::literal(w.text(child))),
                }
                if !c.goto_next_sibling() {
                    break;
                }
            }
        }
        let flag = |letter: char| {
            words
                .iter()
                .skip(1)
                .any(|w| w.text.starts_with('-') && !w.text.starts_with("--") && w.text.contains(letter))
        };
        // A name reference makes an assignment to one name set another.
        if flag('n') {
            self.arith.namerefs = true;
        }
        // `-i` gives the names the integer attribute: what is assigned to them is arithmetic.
        if flag('i') {
            let mut c = node.walk();
            let names: Vec<String> = node
                .named_children(&mut c)
                .filter_map(|child| match child.kind() {
                    "variable_assignment" => child.child_by_field_name("name").map(|n| w.text(n).to_string()),
                    "variable_name" => Some(w.text(child).to_string()),
                    _ => None,
                })
                .collect();
            for name in names {
                let base = name.split('[').next().unwrap_or_default().to_string();
                self.arith.integer.insert(base);
            }
        }
        let written = w.text(node).trim().to_string();
        self.pattern(&written);
        if let Some((keyword, args)) = words.split_first() {
            let keyword = keyword.text.clone();
            // Assignments were checked above; the builtin's own checks (namerefs, `unset`).
            let args: Vec<Word> = args.to_vec();
            for effect in super::builtins::effects(&keyword, &args) {
                match effect {
                    super::programs::Effect::Unclassified(why) if why.starts_with("setting `") => {}
                    effect => self.effect(effect, &written, w.depth),
                }
            }
        }
    }

    /// `for NAME in WORDS; do ...; done` (and `select`): the loop variable takes the words.
    fn for_loop<'t>(&mut self, w: &mut Walk<'t>, node: Node<'t>) {
        let mut run_time = false;
        let mut integers = true;
        let mut name = None;
        let mut body = None;
        let mut c = node.walk();
        if c.goto_first_child() {
            loop {
                let child = c.node();
                match c.field_name() {
                    Some("variable") => name = Some(w.text(child).to_string()),
                    Some("value") => {
                        let values = self.words_of(w, child);
                        run_time |= values.iter().any(|v| !v.is_plain());
                        integers &= values.iter().all(|v| super::is_integer_literal(&v.text));
                    }
                    Some("body") => body = Some(child),
                    _ if child.is_named() && child.kind() != "comment" => self.cannot(w, child, child.kind()),
                    _ => {}
                }
                if !c.goto_next_sibling() {
                    break;
                }
            }
        }
        if let Some(name) = name {
            if let Some(why) = environment::check_name(&name) {
                self.unclassified(why);
            }
            // `for x; do` loops over the positional parameters.
            if run_time || node.child_by_field_name("value").is_none() {
                self.run_time_vars.insert(name.clone());
            }
            let integers = integers && node.child_by_field_name("value").is_some();
            self.arith_assign(&name, if integers { "0" } else { "?" }, integers, false);
        }
        if let Some(body) = body {
            w.stack.push((body, Ctx::default()));
        }
    }

    /// The words one word node stands for (several after brace expansion); substitutions in it
    /// are queued as statements.
    fn words_of<'t>(&mut self, w: &mut Walk<'t>, node: Node<'t>) -> Vec<Word> {
        let mut pieces = Vec::new();
        self.pieces(w, node, &mut pieces, 0);
        words::assemble(&pieces)
    }

    fn pieces<'t>(&mut self, w: &mut Walk<'t>, node: Node<'t>, out: &mut Vec<Piece>, level: usize) {
        if level > 16 {
            self.too_complex("its words nest too deeply");
            out.push(Piece::dynamic(w.text(node), false));
            return;
        }
        let text = w.text(node);
        match node.kind() {
            "word"
            | "number"
            | "brace_expression"
            | "extglob_pattern"
            | "regex"
            | "variable_name"
            | "special_variable_name" => out.push(Piece::unquoted(text)),
            "raw_string" => {
                w.quoted.push((node.start_byte(), node.end_byte()));
                if !inside_double_quotes(node) {
                    w.literal.push((node.start_byte(), node.end_byte()));
                }
                let inner = text.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')).unwrap_or(text);
                out.push(Piece::quoted(inner.to_string()));
            }
            "ansi_c_string" => {
                w.quoted.push((node.start_byte(), node.end_byte()));
                if !inside_double_quotes(node) {
                    w.literal.push((node.start_byte(), node.end_byte()));
                }
                let inner = text.strip_prefix("$'").and_then(|t| t.strip_suffix('\''));
                match inner.and_then(words::ansi_c) {
                    Some(value) => out.push(Piece::quoted(value)),
                    None => {
                        self.unclassified(format!("the string `{text}` cannot be decoded"));
                        out.push(Piece::dynamic(text, true));
                    }
                }
            }
            "string" => {
                // The text between the quotes, expansions aside, is literal (tree-sitter's
                // `string_content` nodes do not cover all of it: a newline may fall between them).
                w.quoted.push((node.start_byte(), node.end_byte()));
                let inner_end = node.end_byte().saturating_sub(1).max(node.start_byte() + 1);
                let mut at = node.start_byte() + 1;
                let literal = |from: usize, to: usize, out: &mut Vec<Piece>| {
                    if from < to {
                        out.push(Piece::quoted(words::unescape_double(w.src.get(from..to).unwrap_or_default())));
                    }
                };
                let mut cursor = node.walk();
                let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
                for child in children {
                    match child.kind() {
                        "string_content" => continue,
                        "simple_expansion" | "expansion" | "command_substitution" | "arithmetic_expansion" => {
                            literal(at, child.start_byte(), out);
                            self.substitution(w, child);
                            out.push(Piece::dynamic(w.text(child), true));
                        }
                        kind => {
                            literal(at, child.start_byte(), out);
                            self.cannot(w, child, kind);
                            out.push(Piece::dynamic(w.text(child), true));
                        }
                    }
                    at = child.end_byte();
                }
                literal(at, inner_end, out);
            }
            "translated_string" => {
                // `$"..."` may be translated by a message catalogue: its value is not certain.
                let mut inner = Vec::new();
                let mut cursor = node.walk();
                let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
                for child in children {
                    self.pieces(w, child, &mut inner, level + 1);
                }
                out.extend(inner.into_iter().map(|mut p| {
                    p.dynamic = true;
                    p.quoted = true;
                    p
                }));
            }
            "concatenation" => {
                let mut c = node.walk();
                let mut children = Vec::new();
                if c.goto_first_child() {
                    loop {
                        children.push(c.node());
                        if !c.goto_next_sibling() {
                            break;
                        }
                    }
                }
                for pair in children.windows(2) {
                    if pair[0].end_byte() != pair[1].start_byte() {
                        self.unclassified(format!("the word `{text}` cannot be analysed (it has a gap)"));
                    }
                }
                for child in children {
                    if child.is_named() {
                        self.pieces(w, child, out, level + 1);
                    } else {
                        match self.lone_dollar(w, child) {
                            Some(word) => out.push(Piece::unquoted(&word.text)),
                            None => out.push(Piece::dynamic(w.text(child), false)),
                        }
                    }
                }
            }
            "simple_expansion"
            | "expansion"
            | "command_substitution"
            | "process_substitution"
            | "arithmetic_expansion" => {
                self.substitution(w, node);
                out.push(Piece::dynamic(text, false));
            }
            "command_name" => match node.named_child(0) {
                Some(inner) => self.pieces(w, inner, out, level + 1),
                None => out.push(Piece::dynamic(text, false)),
            },
            kind => {
                self.cannot(w, node, kind);
                out.push(Piece::dynamic(text, false));
            }
        }
    }

    /// An expansion or substitution inside a word: commands in it are queued, variables it
    /// evaluates as arithmetic noted.
    fn substitution<'t>(&mut self, w: &mut Walk<'t>, node: Node<'t>) {
        if matches!(node.kind(), "command_substitution" | "process_substitution" | "arithmetic_expansion") {
            w.substitutions.push(node.start_byte());
        }
        match node.kind() {
            "command_substitution" if w.text(node).starts_with('`') => self.backquote(w, node),
            "command_substitution" | "process_substitution" => {
                // Inside `${...}` tree-sitter reads `$((x))` as a command substitution of a
                // subshell; bash evaluates it as arithmetic.
                let text = w.text(node);
                if let Some(inner) = text.strip_prefix("$((").and_then(|t| t.strip_suffix("))")) {
                    self.arithmetic_text(inner);
                }
                let start = w.stack.len();
                let mut cursor = node.walk();
                let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
                for child in children {
                    match child.kind() {
                        // `$(< file)` reads the file.
                        "file_redirect" => {
                            let mut extra = Vec::new();
                            self.redirect(w, child, &mut extra);
                        }
                        _ => w.stack.push((child, Ctx::default())),
                    }
                }
                w.stack[start..].reverse();
            }
            "arithmetic_expansion" => self.scan(w, node, true),
            _ => self.scan(w, node, false),
        }
    }

    /// `` `...` ``: bash ends it at the first backquote no backslash escapes (quotes do not
    /// count), then removes the backslashes before `` ` ``, `\` and `$` (and `"` within double
    /// quotes) and runs the result as a command line: `` `echo \`rm x\`` `` runs `rm x`.
    /// Tree-sitter keeps such escapes as word text, so a body that unescaping changes is parsed
    /// again as bash reads it; one whose end bash sees elsewhere asks.
    fn backquote<'t>(&mut self, w: &mut Walk<'t>, node: Node<'t>) {
        w.backquotes.push((node.start_byte(), node.end_byte()));
        let text = w.text(node);
        let body = text.strip_prefix('`').and_then(|t| t.strip_suffix('`'));
        let Some(body) = body.filter(|b| backquote_end(b).is_none()) else {
            let text: String = text.chars().take(60).collect();
            self.unclassified(format!("the backquote substitution `{text}` may end elsewhere for bash"));
            return;
        };
        let unescaped = unescape_backquote(body, inside_double_quotes(node));
        if unescaped == body {
            let start = w.stack.len();
            let mut cursor = node.walk();
            let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
            for child in children {
                w.stack.push((child, Ctx::default()));
            }
            w.stack[start..].reverse();
            return;
        }
        self.backquote_body(w, &unescaped);
    }

    /// The unescaped body of a backquote substitution, analysed as the command line it is.
    fn backquote_body(&mut self, w: &Walk<'_>, body: &str) {
        if w.depth >= super::MAX_NESTING {
            self.unclassified("backquote substitutions nest too deeply to check".into());
            return;
        }
        let inputs = std::mem::take(&mut self.input_texts);
        self.line(body, w.depth + 1);
        self.input_texts = inputs;
    }

    /// A word holding backquotes that tree-sitter did not parse as a substitution (`${x:-`cmd`}`):
    /// each `` `...` `` in it, as bash pairs them, is analysed as a command line. A word with
    /// quotes or an unpaired backquote asks.
    fn backquotes_in_word<'t>(&mut self, w: &mut Walk<'t>, node: Node<'t>) {
        let text = w.text(node);
        let base = node.start_byte();
        let dq = inside_double_quotes(node);
        let mut at = 0;
        let mut bodies = Vec::new();
        while let Some(open) = backquote_end(&text[at..]).map(|i| at + i) {
            let Some(close) = backquote_end(&text[open + 1..]).map(|i| open + 1 + i) else {
                self.unclassified(format!("the word `{text}` has a backquote bash may pair elsewhere"));
                return;
            };
            bodies.push((open, close));
            at = close + 1;
        }
        if text.contains(['\'', '"']) {
            self.unclassified(format!("the word `{text}` has backquotes and quotes that cannot be analysed"));
            return;
        }
        for (open, close) in bodies {
            w.backquotes.push((base + open, base + close + 1));
            let body = unescape_backquote(&text[open + 1..close], dq);
            self.backquote_body(w, &body);
        }
    }

    /// Every `$(`, `<(` and `>(` of the line must be literal (quoted as bash quotes it, escaped,
    /// in a comment or a quoted here-document) or the start of a substitution the walk
    /// analysed; tree-sitter leaves some as plain text (`${x#$(cmd)}`, `${x//[$(cmd)]/}`), and
    /// bash runs them (fail closed).
    fn stray_substitutions(&mut self, w: &Walk<'_>) {
        let b = w.src.as_bytes();
        let covered = |ranges: &[(usize, usize)], i: usize| ranges.iter().any(|&(s, e)| s <= i && i < e);
        for i in 0..b.len().saturating_sub(1) {
            let (c, next) = (b[i], b[i + 1]);
            // `$[...]` is arithmetic (the old spelling of `$((...))`).
            let old_arithmetic = c == b'$' && next == b'[';
            if !(old_arithmetic || next == b'(' && matches!(c, b'$' | b'<' | b'>')) {
                continue;
            }
            // An unquoted here-document's body is literal for backquotes (which ask there
            // anyway), not for `$(`, `${...$(...)}` or `$[`.
            let literal = covered(&w.literal, i) && !(c == b'$' && covered(&w.expanded_bodies, i));
            if w.substitutions.contains(&i) || literal {
                continue;
            }
            if b[..i].iter().rev().take_while(|&&c| c == b'\\').count() % 2 == 1 {
                continue;
            }
            // In double quotes `<(` is text; `$(` is not.
            if c != b'$' && covered(&w.quoted, i) {
                continue;
            }
            // `$((`'s inner `(` is part of it; a redirection such as `> (` has a space.
            if c != b'$' && i > 0 && b[i - 1] == b'$' {
                continue;
            }
            let text: String = w.src[i..].chars().take(40).collect();
            self.unclassified(format!("`{text}` is a substitution the parser did not read as bash does"));
            return;
        }
    }

    /// `{NAME}>file`, `{NAME}<&-`, ...: bash sets NAME to the file descriptor it opens (or
    /// reads it to close one), which tree-sitter leaves as a word. Setting a variable that makes
    /// programs run programs (`exec {PATH}>/dev/null`) asks wherever the text appears, quoted
    /// or not (fail closed).
    fn named_descriptors(&mut self, w: &Walk<'_>) {
        let b = w.src.as_bytes();
        let mut at = 0;
        while let Some(open) = memchr::memchr(b'{', &b[at..]).map(|i| at + i) {
            at = open + 1;
            let len = b[at..].iter().take_while(|c| c.is_ascii_alphanumeric() || **c == b'_').count();
            if len == 0 || b.get(at + len) != Some(&b'}') || !matches!(b.get(at + len + 1), Some(b'<' | b'>')) {
                continue;
            }
            let name = &w.src[at..at + len];
            if let Some(why) = environment::check_name(name) {
                self.unclassified(why);
            }
            // The variable then holds a number the line does not know.
            self.arith_assign(name, "0", true, false);
        }
    }

    /// Every backquote of the line must be literal (quoted, escaped, in a comment or a
    /// here-document body) or part of a substitution the walk analysed; any other is one the
    /// parser did not read as bash will (fail closed).
    fn stray_backquotes(&mut self, w: &Walk<'_>) {
        let b = w.src.as_bytes();
        if !b.contains(&b'`') {
            return;
        }
        let mut covered = vec![false; b.len()];
        for &(start, end) in w.literal.iter().chain(&w.backquotes) {
            let end = end.min(b.len());
            if start < end && !covered[start..end].iter().all(|&c| c) {
                covered[start..end].iter_mut().for_each(|c| *c = true);
            }
        }
        for (i, &c) in b.iter().enumerate() {
            if c != b'`' || covered[i] {
                continue;
            }
            if b[..i].iter().rev().take_while(|&&c| c == b'\\').count() % 2 == 1 {
                continue;
            }
            self.unclassified("a backquote the parser did not read as bash does cannot be analysed".into());
            return;
        }
    }

    /// Scans an expansion, a test or an arithmetic expression without recursion: substitutions
    /// are queued as statements, the variables evaluated as arithmetic (`$((x))`, `${a[x]}`,
    /// `${!x}`, `[[ x -eq 1 ]]`) noted, and kinds outside the expression grammar reported.
    fn scan<'t>(&mut self, w: &mut Walk<'t>, node: Node<'t>, arithmetic: bool) {
        for_arithmetic_parens(w, node, |text| {
            self.unclassified(format!("`{text}` may be read by bash as a command, not arithmetic"));
        });
        let mut pending = vec![(node, arithmetic)];
        while let Some((n, arith)) = pending.pop() {
            let kind = n.kind();
            // Whatever the context (a `${...}` operand, `[ ]`, `[[ ]]`), the inside of `$((...))`
            // is arithmetic.
            let arith = arith || kind == "arithmetic_expansion";
            if kind == "arithmetic_expansion" {
                w.substitutions.push(n.start_byte());
            }
            if n != node && kind == "arithmetic_expansion" {
                for_arithmetic_parens(w, n, |text| {
                    self.unclassified(format!("`{text}` may be read by bash as a command, not arithmetic"));
                });
            }
            match kind {
                "command_substitution" | "process_substitution" => {
                    let counted = arith && integer_output(w, n);
                    self.arith.counted_output |= counted;
                    if arith && !counted {
                        // Its output is evaluated as arithmetic: `$(( $(cat f) ))` runs a
                        // `$(...)` in a subscript the file holds.
                        let text: String = w.text(n).chars().take(60).collect();
                        self.unclassified(format!(
                            "the output of `{text}` is evaluated as arithmetic, which can run commands"
                        ));
                    }
                    self.substitution(w, n);
                    continue;
                }
                "raw_string" | "string" | "ansi_c_string" | "translated_string" | "heredoc_body" | "comment" => {
                    w.quoted.push((n.start_byte(), n.end_byte()));
                    if matches!(kind, "raw_string" | "ansi_c_string" | "heredoc_body" | "comment")
                        && (matches!(kind, "heredoc_body" | "comment") || !inside_double_quotes(n))
                    {
                        w.literal.push((n.start_byte(), n.end_byte()));
                    }
                    // A quoted operand of arithmetic (`[[ 1 -eq 'a[$(cmd)]' ]]`) is evaluated
                    // as an expression after quote removal.
                    if arith && kind == "raw_string" {
                        let text = w.text(n);
                        self.arithmetic_text(
                            text.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')).unwrap_or(text),
                        );
                    } else if arith && kind != "string" {
                        self.arithmetic_text(w.text(n));
                    }
                }
                "string_content" if arith => self.arithmetic_text(w.text(n)),
                // Tree-sitter leaves a backquote substitution inside `${...}` as word text.
                "word" if w.text(n).contains('`') => self.backquotes_in_word(w, n),
                "variable_name" | "word" if arith => {
                    let t = w.text(n);
                    if is_identifier(t) {
                        self.arithmetic_vars.insert(t.to_string());
                    }
                    for token in t.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '#')) {
                        if token.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
                            let name: String =
                                token.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                            self.arith_use(&name);
                        }
                    }
                    if environment::subscript_runs(t) {
                        self.unclassified(format!("`{t}` is arithmetic that can run commands"));
                    }
                }
                "special_variable_name" if arith => {
                    let t = w.text(n);
                    if t.chars().all(|c| c.is_ascii_digit()) || t == "@" || t == "*" {
                        self.unclassified(format!("the positional parameter `${t}` is evaluated as arithmetic"));
                    }
                }
                "unary_expression" => {
                    let text = w.text(n);
                    let operand = text.strip_prefix("-v").or_else(|| text.strip_prefix("-R")).map(str::trim);
                    if operand.is_some_and(environment::lookup_runs) {
                        self.unclassified(format!("`{text}` evaluates a subscript that can run commands"));
                    }
                }
                // The array of `a[i]` evaluated as arithmetic is evaluated too.
                "subscript" if arith => {
                    if let Some(name) = n.child_by_field_name("name") {
                        let name = w.text(name).to_string();
                        self.arith_use(&name);
                    }
                }
                // `name = value` in arithmetic: the name is set to an integer, not evaluated.
                "variable_assignment" if arith => {
                    let name = n.child_by_field_name("name").map(|v| w.text(v).to_string()).unwrap_or_default();
                    let value = n.child_by_field_name("value");
                    let literal = value.is_some_and(|v| v.kind() == "number" && is_integer_literal(w.text(v)));
                    if let Some(value) = value {
                        pending.push((value, true));
                    }
                    if is_identifier(&name) {
                        self.arith_sets(&name);
                        self.arith_assign(&name, "0", true, literal && w.top);
                    } else {
                        self.unclassified(format!("`{}` cannot be analysed as arithmetic", w.text(n)));
                    }
                    continue;
                }
                "binary_expression"
                    if arith
                        && n.child_by_field_name("operator").is_some_and(|o| w.text(o) == "=")
                        && n.child_by_field_name("left").is_some_and(|l| {
                            matches!(l.kind(), "variable_name" | "word") && is_identifier(w.text(l))
                        }) =>
                {
                    let name = n.child_by_field_name("left").map(|l| w.text(l).to_string()).unwrap_or_default();
                    let right = n.child_by_field_name("right");
                    let literal = right.is_some_and(|r| r.kind() == "number" && is_integer_literal(w.text(r)));
                    if let Some(right) = right {
                        pending.push((right, true));
                    }
                    self.arith_sets(&name);
                    self.arith_assign(&name, "0", true, literal && w.top);
                    continue;
                }
                "expansion" => {
                    let text = w.text(n);
                    if text.contains(":=") || text.contains('=') {
                        // `${x:=value}` assigns.
                        let name: String = text
                            .trim_start_matches("${")
                            .chars()
                            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                            .collect();
                        // `unset PATH; : ${PATH:=dir}` sets PATH.
                        self.arith_sets(&name);
                        self.arith_assign(&name, "?", false, false);
                    }
                    if text.contains("@P") {
                        self.unclassified(format!("`{text}` expands a value as a prompt, which can run commands"));
                    }
                    if let Some(name) = text.strip_prefix("${!") {
                        let name: String =
                            name.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                        self.arithmetic_vars.insert(name);
                    }
                }
                _ => {}
            }
            if !is_expression_kind(kind) {
                self.cannot(w, n, kind);
                continue;
            }
            let mut c = n.walk();
            let start = pending.len();
            // Within `${...}`: the parameter, then an operator; only after `:` (`${v:off:len}`)
            // are the words arithmetic.
            let mut parameter_seen = false;
            let mut operator: Option<&str> = None;
            if c.goto_first_child() {
                loop {
                    let child = c.node();
                    if kind == "expansion" && c.field_name() == Some("operator") && operator.is_none() {
                        operator = Some(w.text(child));
                    }
                    if child.is_named() {
                        let child_arith = match kind {
                            // Only the index of `a[i]` is arithmetic (its array's value is, when
                            // the whole is: see above).
                            "subscript" => c.field_name() == Some("index"),
                            "expansion" if operator.is_none() && !parameter_seen => {
                                parameter_seen =
                                    matches!(child.kind(), "variable_name" | "subscript" | "special_variable_name");
                                arith
                            }
                            "expansion" => operator == Some(":"),
                            "binary_expression" => {
                                arith
                                    || n.child_by_field_name("operator")
                                        .is_some_and(|o| ARITHMETIC_TESTS.contains(&w.text(o)))
                            }
                            _ => arith,
                        };
                        pending.push((child, child_arith));
                    }
                    if !c.goto_next_sibling() {
                        break;
                    }
                }
            }
            pending[start..].reverse();
        }
    }

    /// Two words tree-sitter separates must be separated for bash too: by a blank (space, tab,
    /// newline) that no backslash escapes. Tree-sitter also splits at `\<tab>`, at a vertical tab
    /// and, after a quoted string, at `\<space>`, all of which bash keeps inside one word.
    /// A word node holding a newline that is neither quoted nor escaped: bash ends the command
    /// there, tree-sitter made it part of a word (`x=1 # c⏎\rm y`); that asks.
    fn check_word_lines(&mut self, w: &Walk<'_>, node: Node<'_>) {
        let b = w.src.as_bytes();
        let (start, end) = (node.start_byte(), node.end_byte().min(b.len()));
        for i in start..end {
            if b[i] != b'\n' || b[..i].iter().rev().take_while(|&&c| c == b'\\').count() % 2 == 1 {
                continue;
            }
            let mut c = node.walk();
            let quoted = node.children(&mut c).any(|ch| {
                matches!(ch.kind(), "string" | "raw_string" | "ansi_c_string" | "translated_string")
                    && ch.start_byte() <= i
                    && i < ch.end_byte()
            });
            if !quoted && !matches!(node.kind(), "string" | "raw_string" | "ansi_c_string" | "translated_string") {
                let text: String = w.text(node).chars().take(60).collect();
                self.unclassified(format!("`{text}` holds a line break where bash ends the command"));
                return;
            }
        }
    }

    fn check_gap(&mut self, w: &Walk<'_>, previous: Node<'_>, next: Node<'_>) {
        let b = w.src.as_bytes();
        let (start, end) = (previous.end_byte(), next.start_byte());
        let separated = start <= end
            && (start..end).any(|i| {
                matches!(b[i], b' ' | b'\t' | b'\n')
                    && b[..i].iter().rev().take_while(|&&c| c == b'\\').count() % 2 == 0
            });
        if !separated {
            let text: String =
                w.src.get(previous.start_byte()..next.end_byte()).unwrap_or_default().chars().take(60).collect();
            self.unclassified(format!("the words of `{text}` cannot be told apart"));
        }
        // A newline (not escaped) ends a command for bash; tree-sitter keeps a next line that
        // starts with a backslash in the same command (`python3⏎\r\m x` is `python3`, then `rm x`).
        let line_break = start <= end
            && (start..end).any(|i| b[i] == b'\n' && b[..i].iter().rev().take_while(|&&c| c == b'\\').count() % 2 == 0);
        if line_break {
            let text: String =
                w.src.get(previous.start_byte()..next.end_byte()).unwrap_or_default().chars().take(60).collect();
            self.unclassified(format!("`{text}` continues a command across a line where bash ends it"));
        }
    }

    /// Where tree-sitter and bash split words differently, outside quotes: a backslash-newline
    /// between two non-blank characters joins them into one word for bash, where tree-sitter
    /// sees two (`r\<newline>m x` runs `rm x`); a backslash before a tab, vertical tab, form feed
    /// or carriage return is a literal character for bash and a blank for tree-sitter; a bare
    /// vertical tab, form feed, carriage return or NUL is part of a word for bash.
    fn word_boundaries(&mut self, w: &mut Walk<'_>) {
        let b = w.src.as_bytes();
        w.quoted.sort_unstable();
        let quoted = |i: usize| {
            let inside = w.quoted.partition_point(|r| r.0 <= i);
            w.quoted[..inside].iter().rev().take(64).any(|r| r.1 > i)
        };
        let blank = |c: Option<&u8>| c.is_none_or(|c| matches!(c, b' ' | b'\t' | b'\n'));
        for (i, &c) in b.iter().enumerate() {
            let odd_backslash = || b[..i].iter().rev().take_while(|&&c| c == b'\\').count() % 2 == 1;
            let suspicious = match c {
                b'\n' => odd_backslash() && !blank(i.checked_sub(2).and_then(|p| b.get(p))) && !blank(b.get(i + 1)),
                b'\t' => odd_backslash(),
                b'\x0b' | b'\x0c' | b'\r' | 0 => true,
                _ => false,
            };
            if suspicious && !quoted(i) {
                self.unclassified(
                    "a line continuation or an escaped or unusual blank inside a word cannot be analysed".into(),
                );
                return;
            }
        }
    }
}

/// Calls `mismatch` when `node` is `$((...))` or `((...))` whose parentheses bash could pair
/// differently: bash reads `$((` as arithmetic only when the parentheses stay open to the final
/// `))` (counted naively, as its first pass does); otherwise it is a command substitution of a
/// subshell (`$(( $(case x in x) ...) ... ))` runs a command). Quotes and backslashes in an
/// arithmetic text with a substitution make the count uncertain.
fn for_arithmetic_parens(w: &Walk<'_>, node: Node<'_>, mut mismatch: impl FnMut(&str)) {
    let text = w.text(node);
    let body = match node.kind() {
        "arithmetic_expansion" => text.strip_prefix("$(("),
        "compound_statement" => text.strip_prefix("(("),
        _ => None,
    };
    let Some(body) = body else { return };
    let Some(inner) = body.strip_suffix("))") else {
        mismatch(text);
        return;
    };
    let mut depth = 0i64;
    for c in inner.bytes() {
        match c {
            b'(' => depth += 1,
            b')' => depth -= 1,
            _ => {}
        }
        if depth < 0 {
            mismatch(text);
            return;
        }
    }
    if depth != 0 || ((inner.contains("$(") || inner.contains('`')) && inner.contains(['\'', '"', '\\'])) {
        mismatch(text);
    }
}

/// Whether the substitution `node` prints only an integer whatever its input: its last command
/// is `wc` with one count option and no file (`$(wc -l < f)`, `$(grep x f | wc -l)`) or a bare
/// `nproc`, with input redirections only.
fn integer_output(w: &Walk<'_>, node: Node<'_>) -> bool {
    let mut cursor = node.walk();
    let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
    let [statement] = children.as_slice() else { return false };
    let mut last = *statement;
    if last.kind() == "pipeline" {
        let mut c = last.walk();
        let Some(end) = last.named_children(&mut c).last() else { return false };
        last = end;
    }
    if last.kind() == "redirected_statement" {
        let mut c = last.walk();
        let only_input = last.children_by_field_name("redirect", &mut c).all(|r| {
            r.kind() == "file_redirect" && {
                let mut rc = r.walk();
                r.children(&mut rc).filter(|ch| !ch.is_named()).all(|ch| w.text(ch) == "<")
            }
        });
        match last.child_by_field_name("body") {
            Some(body) if only_input => last = body,
            _ => return false,
        }
    }
    if last.kind() != "command" {
        return false;
    }
    let mut c = last.walk();
    let parts: Vec<&str> = last.named_children(&mut c).map(|ch| w.text(ch)).collect();
    matches!(
        parts.as_slice(),
        ["wc", "-l" | "-c" | "-w" | "-m" | "--lines" | "--bytes" | "--words" | "--chars"] | ["nproc"]
    )
}

/// Where the first backquote that no backslash escapes is in `text` (where bash ends a
/// backquote substitution whose body starts `text`).
fn backquote_end(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'`' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// The command line bash runs for the body of `` `...` ``: a backslash before `` ` ``, `\` or
/// `$` (and `"` when the substitution is within double quotes) is removed.
fn unescape_backquote(body: &str, double_quoted: bool) -> String {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&next) = chars.peek()
            && (matches!(next, '`' | '\\' | '$') || (double_quoted && next == '"'))
        {
            out.push(next);
            chars.next();
            continue;
        }
        out.push(c);
    }
    out
}

/// Whether an unquoted here-document's `body` reads otherwise once bash removes its
/// backslash-newlines (which it does before looking for the delimiter and for expansions): a
/// line that becomes the delimiter (`EO\⏎F`), or a `$(`, `${`, `$[` or backquote that appears
/// (`$\⏎(cmd)`).
fn heredoc_joins(body: &str, strip: bool, is_delimiter: &dyn Fn(&str) -> bool) -> bool {
    if !body.contains("\\\n") {
        return false;
    }
    let join = |text: &str| {
        let mut out = String::with_capacity(text.len());
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\\' {
                match chars.next() {
                    Some('\n') => {}
                    Some(next) => {
                        out.push(c);
                        out.push(next);
                    }
                    None => out.push(c),
                }
                continue;
            }
            out.push(c);
        }
        out
    };
    let expansions = |text: &str| {
        let b = text.as_bytes();
        b.windows(2).filter(|p| p[0] == b'$' && matches!(p[1], b'(' | b'{' | b'[')).count()
            + b.iter().filter(|&&c| c == b'`').count()
    };
    let mut variants = vec![join(body)];
    if strip {
        let stripped: Vec<&str> = body.split('\n').map(|l| l.trim_start_matches('\t')).collect();
        variants.push(join(&stripped.join("\n")));
    }
    variants.iter().any(|joined| joined.split('\n').any(is_delimiter) || expansions(joined) != expansions(body))
}

/// Whether `node` is within double quotes at its own level of command substitution.
fn inside_double_quotes(node: Node<'_>) -> bool {
    let mut parent = node.parent();
    while let Some(p) = parent {
        match p.kind() {
            "string" | "translated_string" => return true,
            "command_substitution" | "process_substitution" | "program" => return false,
            _ => {}
        }
        parent = p.parent();
    }
    false
}

/// `[SUBSCRIPT]=VALUE` (or `+=`) in a compound array assignment: the subscript (to the `]`
/// that closes the first `[`) and the value.
fn array_subscript(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix('[')?;
    let mut depth = 1usize;
    for (i, c) in rest.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    let after = &rest[i + 1..];
                    let value = after.strip_prefix('=').or_else(|| after.strip_prefix("+="))?;
                    return Some((&rest[..i], value));
                }
            }
            _ => {}
        }
    }
    None
}

fn is_identifier(text: &str) -> bool {
    text.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Kinds an expansion, a test or an arithmetic expression may contain.
fn is_expression_kind(kind: &str) -> bool {
    EXPRESSIONS.contains(&kind)
        || matches!(
            kind,
            "test_command"
                | "compound_statement"
                | "word"
                | "number"
                | "string"
                | "string_content"
                | "raw_string"
                | "ansi_c_string"
                | "translated_string"
                | "concatenation"
                | "simple_expansion"
                | "expansion"
                | "variable_name"
                | "special_variable_name"
                | "subscript"
                | "test_operator"
                | "regex"
                | "extglob_pattern"
                | "brace_expression"
                | "variable_assignment"
                | "heredoc_body"
                | "heredoc_content"
                | "comment"
                | "array"
        )
}
