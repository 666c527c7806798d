//! Parsing a fetched page into a DOM that is safe to walk recursively: nesting is bounded to
//! [`MAX_DEPTH`], the work is linear in the size of the page, and it stops when its [`Budget`]
//! runs out.
//!
//! A page can nest elements as deep as it likes (a million `<div>`s is 5 MB), while both the
//! Markdown converter (htmd) and our text writer recurse once per level, and html5ever's tree
//! builder scans its stack of open elements on most tags, which is quadratic in the depth. So
//! the tokens are filtered before they reach the tree builder: past [`TAG_DEPTH`] open
//! elements, further tags are dropped (their text is kept, a block boundary becomes a line
//! break), and scripts and styles found that deep are skipped whole.
//!
//! The filter keeps its own model of the open elements. It knows the end tags HTML lets a page
//! leave out (`<p>`, `<li>`, table cells, ...), so sloppy but shallow pages are not flattened,
//! and the end tags that do not close (past a scope boundary, or a formatting element's with a
//! block inside it). A page that still misleads the model is bounded by the time budget, and
//! whatever the tree builder made is unwrapped below [`MAX_DEPTH`] by a pass over the DOM.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{BufferQueue, Tag, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts};
use html5ever::tree_builder::{TreeBuilder, TreeBuilderOpts};
use html5ever::{LocalName, TokenizerResult};
use markup5ever_rcdom::{Handle, Node, NodeData, RcDom};

/// The deepest an element may sit in the DOM handed to the converters (the document is depth 0).
pub const MAX_DEPTH: usize = 256;
/// Open elements the token filter lets through; the margin below [`MAX_DEPTH`] leaves room for
/// elements the tree builder adds by itself (`html`, `body`, `tbody`, ...).
pub const TAG_DEPTH: usize = MAX_DEPTH - 16;
/// How much of the page is fed to the tokenizer at a time.
const CHUNK: usize = 16 * 1024;
/// Tokens between two looks at the budget.
const CHECK_EVERY: u32 = 128;
/// How far down the stack of open elements an implied end tag is looked for.
const IMPLIED_SCAN: usize = 16;

/// When a conversion must give up: a deadline and the call's cancellation. Cheap to clone.
#[derive(Clone, Default)]
pub struct Budget {
    deadline: Option<Instant>,
    cancelled: Option<Arc<dyn Fn() -> bool + Send + Sync>>,
}

impl Budget {
    /// No limit: the conversion always finishes.
    pub fn unlimited() -> Self {
        Budget::default()
    }

    /// Gives up at `deadline`.
    pub fn until(deadline: Instant) -> Self {
        Budget { deadline: Some(deadline), cancelled: None }
    }

    /// Gives up as well once `cancelled` returns true (it is asked from the converting thread).
    pub fn with_cancellation(mut self, cancelled: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        self.cancelled = Some(Arc::new(cancelled));
        self
    }

    /// Why the work must stop now, if it must.
    pub fn check(&self) -> Option<Stop> {
        if self.cancelled.as_ref().is_some_and(|c| c()) {
            return Some(Stop::Cancelled);
        }
        match self.deadline {
            Some(deadline) if Instant::now() >= deadline => Some(Stop::OutOfTime),
            _ => None,
        }
    }

    /// The time left, if there is a deadline.
    pub fn remaining(&self) -> Option<Duration> {
        self.deadline.map(|d| d.saturating_duration_since(Instant::now()))
    }
}

/// Why a conversion stopped before the end of the page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The budget's deadline passed.
    OutOfTime,
    /// The call was cancelled (or timed out in the execution chain).
    Cancelled,
}

/// A parsed page.
pub struct Parsed {
    /// The document node; no element in it is deeper than [`MAX_DEPTH`].
    pub document: Handle,
    /// Elements unwrapped because they were nested too deep (their text is kept).
    pub flattened: usize,
    /// Bytes of the page parsed: less than its length when the budget ran out.
    pub parsed: usize,
    /// Why parsing stopped early, if it did.
    pub stopped: Option<Stop>,
}

/// Parses `html` with nesting bounded and within `budget`; what was parsed when the budget ran
/// out is returned as a complete document.
pub fn parse(html: &str, budget: &Budget) -> Parsed {
    let opts = TreeBuilderOpts { scripting_enabled: true, ..TreeBuilderOpts::default() };
    let filter = Filter::new(TreeBuilder::new(RcDom::default(), opts), budget);
    let tokenizer = Tokenizer::new(filter, TokenizerOpts::default());
    let queue = BufferQueue::default();
    let mut parsed = 0;
    for chunk in chunks(html, CHUNK) {
        queue.push_back(StrTendril::from_slice(chunk));
        // A script end tag or a `<meta charset>` pauses the tokenizer; neither needs anything here.
        while !matches!(tokenizer.feed(&queue), TokenizerResult::Done) {}
        if tokenizer.sink.stopped.get().is_some() {
            break;
        }
        parsed += chunk.len();
    }
    tokenizer.end();
    let document = tokenizer.sink.inner.sink.document.clone();
    let mut flattened = tokenizer.sink.flattened.get();
    let stopped = tokenizer.sink.stopped.get();
    drop(tokenizer);
    flattened += limit_depth(&document, MAX_DEPTH);
    Parsed { document, flattened, parsed, stopped }
}

/// `text` in pieces of about `size` bytes, cut on character boundaries.
fn chunks(text: &str, size: usize) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut end = size.min(rest.len());
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        Some(piece)
    })
}

/// Elements without content or end tag: they never change the depth.
fn is_void(name: &str) -> bool {
    matches!(
        name,
        "area"
            | "base"
            | "basefont"
            | "bgsound"
            | "br"
            | "col"
            | "embed"
            | "frame"
            | "hr"
            | "img"
            | "image"
            | "input"
            | "keygen"
            | "link"
            | "meta"
            | "param"
            | "source"
            | "track"
            | "wbr"
    )
}

/// Start tags the tree builder merges into the existing element instead of opening one.
fn is_singleton(name: &str) -> bool {
    matches!(name, "html" | "head" | "body" | "frameset")
}

/// Elements whose content is not markup (or, for `template`, never shown): found past the depth
/// limit, they are skipped with all they contain, as the converters would drop them.
fn is_skipped(name: &str) -> bool {
    raw_kind(name).is_some() || name == "template"
}

/// The tokenizer state an element's content is read in, when it is not markup.
fn raw_kind(name: &str) -> Option<RawKind> {
    match name {
        "script" => Some(RawKind::ScriptData),
        "title" | "textarea" => Some(RawKind::Rcdata),
        "style" | "xmp" | "iframe" | "noembed" | "noframes" | "noscript" => Some(RawKind::Rawtext),
        _ => None,
    }
}

/// Elements whose start and end separate lines of text, so unwrapping one leaves a line break.
fn is_block(name: &str) -> bool {
    super::html::BLOCKS.contains(&name) || matches!(name, "td" | "th" | "li" | "tbody" | "thead" | "tfoot")
}

/// Start tags that close an open `<p>` (HTML's "close a p element" list).
fn closes_p(name: &str) -> bool {
    matches!(
        name,
        "address"
            | "article"
            | "aside"
            | "blockquote"
            | "center"
            | "details"
            | "dialog"
            | "dir"
            | "div"
            | "dl"
            | "fieldset"
            | "figcaption"
            | "figure"
            | "footer"
            | "header"
            | "hgroup"
            | "main"
            | "menu"
            | "nav"
            | "ol"
            | "p"
            | "search"
            | "section"
            | "summary"
            | "ul"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "pre"
            | "listing"
            | "form"
            | "table"
            | "xmp"
            | "li"
            | "dd"
            | "dt"
    )
}

fn is_heading(name: &str) -> bool {
    matches!(name, "h1" | "h2" | "h3" | "h4" | "h5" | "h6")
}

/// Elements an implied end tag is not looked for past (HTML's scope boundaries).
const SCOPE: &[&str] = &["html", "table", "td", "th", "caption", "template", "applet", "object", "marquee"];
const BUTTON_SCOPE: &[&str] =
    &["html", "table", "td", "th", "caption", "template", "applet", "object", "marquee", "button"];
const LIST_SCOPE: &[&str] =
    &["html", "table", "td", "th", "caption", "template", "applet", "object", "marquee", "ul", "ol", "dl"];
const TABLE_SCOPE: &[&str] = &["html", "table", "template"];

/// The token sink between the tokenizer and the tree builder that bounds nesting.
struct Filter<'a> {
    inner: TreeBuilder<Handle, RcDom>,
    budget: &'a Budget,
    /// The open elements as the filter models them (at most about [`TAG_DEPTH`]).
    open: RefCell<Vec<LocalName>>,
    /// How many of each name are in `open`.
    counts: RefCell<HashMap<LocalName, usize>>,
    /// Elements dropped past the depth limit and not closed yet, per name.
    dropped: RefCell<HashMap<LocalName, usize>>,
    /// A dropped element being skipped with its content, and how deep in itself we are.
    skipping: RefCell<Option<(LocalName, usize)>>,
    /// Open `svg` / `math` elements, where `<x/>` closes itself.
    foreign: Cell<usize>,
    flattened: Cell<usize>,
    tokens: Cell<u32>,
    stopped: Cell<Option<Stop>>,
}

impl<'a> Filter<'a> {
    fn new(inner: TreeBuilder<Handle, RcDom>, budget: &'a Budget) -> Self {
        Filter {
            inner,
            budget,
            open: RefCell::default(),
            counts: RefCell::default(),
            dropped: RefCell::default(),
            skipping: RefCell::default(),
            foreign: Cell::new(0),
            flattened: Cell::new(0),
            tokens: Cell::new(0),
            stopped: Cell::new(None),
        }
    }

    /// Whether the budget has run out (asked every [`CHECK_EVERY`] tokens).
    fn out_of_budget(&self) -> bool {
        if self.stopped.get().is_some() {
            return true;
        }
        let n = self.tokens.get().wrapping_add(1);
        self.tokens.set(n);
        if n.is_multiple_of(CHECK_EVERY)
            && let Some(stop) = self.budget.check()
        {
            self.stopped.set(Some(stop));
            return true;
        }
        false
    }

    fn forward(&self, token: Token, line: u64) -> TokenSinkResult<Handle> {
        self.inner.process_token(token, line)
    }

    fn line_break(&self, line: u64) -> TokenSinkResult<Handle> {
        self.forward(Token::CharacterTokens(StrTendril::from_slice("\n")), line)
    }

    fn push(&self, name: LocalName) {
        if matches!(&*name, "svg" | "math") {
            self.foreign.set(self.foreign.get() + 1);
        }
        *self.counts.borrow_mut().entry(name.clone()).or_default() += 1;
        self.open.borrow_mut().push(name);
    }

    /// Pops the model's stack down to `len` entries.
    fn truncate(&self, len: usize) {
        let mut open = self.open.borrow_mut();
        let mut counts = self.counts.borrow_mut();
        while open.len() > len {
            let Some(name) = open.pop() else { break };
            if matches!(&*name, "svg" | "math") {
                self.foreign.set(self.foreign.get().saturating_sub(1));
            }
            if let Some(n) = counts.get_mut(&name) {
                *n = n.saturating_sub(1);
            }
        }
    }

    /// Closes the nearest open element named in `targets` (and everything above it), unless a
    /// `boundary` element comes first or it is further down than [`IMPLIED_SCAN`].
    fn close_nearest(&self, targets: &[&str], boundary: &[&str]) {
        let at = {
            let open = self.open.borrow();
            let mut found = None;
            for (i, name) in open.iter().enumerate().rev().take(IMPLIED_SCAN) {
                if targets.contains(&&**name) {
                    found = Some(i);
                    break;
                }
                if boundary.contains(&&**name) {
                    break;
                }
            }
            found
        };
        if let Some(i) = at {
            self.truncate(i);
        }
    }

    /// The end tags a start tag implies (HTML lets pages leave them out).
    fn close_implied(&self, name: &str) {
        if closes_p(name) {
            self.close_nearest(&["p"], BUTTON_SCOPE);
        }
        match name {
            "li" => self.close_nearest(&["li"], LIST_SCOPE),
            "dd" | "dt" => self.close_nearest(&["dd", "dt"], LIST_SCOPE),
            "td" | "th" => self.close_nearest(&["td", "th"], TABLE_SCOPE),
            "tr" => self.close_nearest(&["tr"], TABLE_SCOPE),
            "tbody" | "thead" | "tfoot" => self.close_nearest(&["tbody", "thead", "tfoot"], TABLE_SCOPE),
            "option" => self.close_nearest(&["option"], &["select", "datalist", "optgroup"]),
            "optgroup" => self.close_nearest(&["option", "optgroup"], &["select", "datalist"]),
            "a" => self.close_nearest(&["a"], SCOPE),
            "nobr" => self.close_nearest(&["nobr"], SCOPE),
            _ if is_heading(name) => {
                let top_is_heading = self.open.borrow().last().is_some_and(|t| is_heading(t));
                if top_is_heading {
                    let len = self.open.borrow().len();
                    self.truncate(len - 1);
                }
            }
            _ => {}
        }
    }

    fn start_tag(&self, tag: Tag, line: u64) -> TokenSinkResult<Handle> {
        let name = tag.name.clone();
        if let Some((skipped, depth)) = &mut *self.skipping.borrow_mut() {
            if *skipped == name && !tag.self_closing {
                *depth += 1;
            }
            // A script inside what is skipped is still read as a script, so its text cannot
            // open or close elements.
            return raw_kind(&name).map_or(TokenSinkResult::Continue, TokenSinkResult::RawData);
        }
        if is_void(&name) || is_singleton(&name) || (tag.self_closing && self.foreign.get() > 0) {
            return self.forward(Token::TagToken(tag), line);
        }
        if self.open.borrow().len() >= TAG_DEPTH {
            self.flattened.set(self.flattened.get() + 1);
            if is_skipped(&name) {
                *self.skipping.borrow_mut() = Some((name.clone(), 1));
                return raw_kind(&name).map_or(TokenSinkResult::Continue, TokenSinkResult::RawData);
            }
            if &*name == "plaintext" {
                // The rest of the page is text.
                return TokenSinkResult::Plaintext;
            }
            *self.dropped.borrow_mut().entry(name.clone()).or_default() += 1;
            return if is_block(&name) { self.line_break(line) } else { TokenSinkResult::Continue };
        }
        self.close_implied(&name);
        self.push(name);
        self.forward(Token::TagToken(tag), line)
    }

    fn end_tag(&self, tag: Tag, line: u64) -> TokenSinkResult<Handle> {
        let name = &tag.name;
        {
            let mut skipping = self.skipping.borrow_mut();
            if let Some((skipped, depth)) = &mut *skipping {
                if skipped == name {
                    *depth -= 1;
                    if *depth == 0 {
                        *skipping = None;
                    }
                }
                return TokenSinkResult::Continue;
            }
        }
        let was_dropped = match self.dropped.borrow_mut().get_mut(name) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        };
        if was_dropped {
            return if is_block(name) { self.line_break(line) } else { TokenSinkResult::Continue };
        }
        if self.counts.borrow().get(name).is_some_and(|&n| n > 0) {
            let at = {
                let open = self.open.borrow();
                open.iter().rposition(|open| open == name).filter(|&i| closes(name, &open[i + 1..]))
            };
            if let Some(i) = at {
                self.truncate(i);
            }
        }
        self.forward(Token::TagToken(tag), line)
    }
}

/// Whether the end tag `name` closes its element when `above` are open inside it. Not when a
/// scope boundary comes first (the tree builder ignores the end tag), nor for a formatting
/// element with a block inside it: the adoption agency algorithm then keeps the block open and
/// puts a copy of the formatting element back on the stack, so the depth does not go down.
fn closes(name: &str, above: &[LocalName]) -> bool {
    let boundary = match name {
        "p" => BUTTON_SCOPE,
        "li" | "dd" | "dt" => LIST_SCOPE,
        "table" | "tbody" | "thead" | "tfoot" | "tr" | "td" | "th" | "caption" => TABLE_SCOPE,
        _ => SCOPE,
    };
    if above.iter().any(|o| boundary.contains(&&**o)) {
        return false;
    }
    !(is_formatting(name) && above.iter().any(|o| is_special(o)))
}

/// Elements the adoption agency algorithm handles.
fn is_formatting(name: &str) -> bool {
    matches!(
        name,
        "a" | "b" | "big" | "code" | "em" | "font" | "i" | "nobr" | "s" | "small" | "strike" | "strong" | "tt" | "u"
    )
}

/// HTML's "special" elements (those a misnested formatting end tag cannot close).
fn is_special(name: &str) -> bool {
    is_void(name)
        || is_heading(name)
        || matches!(
            name,
            "address"
                | "applet"
                | "article"
                | "aside"
                | "blockquote"
                | "body"
                | "button"
                | "caption"
                | "center"
                | "colgroup"
                | "dd"
                | "details"
                | "dir"
                | "div"
                | "dl"
                | "dt"
                | "fieldset"
                | "figcaption"
                | "figure"
                | "footer"
                | "form"
                | "frameset"
                | "head"
                | "header"
                | "hgroup"
                | "html"
                | "iframe"
                | "li"
                | "listing"
                | "main"
                | "marquee"
                | "menu"
                | "nav"
                | "noembed"
                | "noframes"
                | "noscript"
                | "object"
                | "ol"
                | "p"
                | "plaintext"
                | "pre"
                | "script"
                | "search"
                | "section"
                | "select"
                | "style"
                | "summary"
                | "table"
                | "tbody"
                | "td"
                | "template"
                | "textarea"
                | "tfoot"
                | "th"
                | "thead"
                | "title"
                | "tr"
                | "ul"
                | "xmp"
        )
}

impl TokenSink for Filter<'_> {
    type Handle = Handle;

    fn process_token(&self, token: Token, line: u64) -> TokenSinkResult<Handle> {
        if self.out_of_budget() {
            return TokenSinkResult::Continue;
        }
        match token {
            Token::TagToken(tag) => match tag.kind {
                TagKind::StartTag => self.start_tag(tag, line),
                TagKind::EndTag => self.end_tag(tag, line),
            },
            // The tree builder keeps every parse error it is told about; nobody reads them.
            Token::ParseError(_) => TokenSinkResult::Continue,
            Token::EOFToken => self.forward(Token::EOFToken, line),
            other if self.skipping.borrow().is_some() => {
                drop(other);
                TokenSinkResult::Continue
            }
            other => self.forward(other, line),
        }
    }

    fn end(&self) {
        self.inner.end();
    }

    fn adjusted_current_node_present_but_not_in_html_namespace(&self) -> bool {
        self.inner.adjusted_current_node_present_but_not_in_html_namespace()
    }
}

fn is_element(node: &Node) -> bool {
    matches!(node.data, NodeData::Element { .. })
}

fn element_name(node: &Node) -> Option<&str> {
    match &node.data {
        NodeData::Element { name, .. } => Some(&name.local),
        _ => None,
    }
}

/// Unwraps every element deeper than `max` (keeping its text, in order), so no element is
/// deeper than `max`; returns how many were unwrapped. Iterative: the input may be any depth.
pub fn limit_depth(root: &Handle, max: usize) -> usize {
    let mut flattened = 0;
    let mut stack = vec![(root.clone(), 0usize)];
    while let Some((node, depth)) = stack.pop() {
        if depth + 1 >= max {
            flattened += flatten_children(&node);
            continue;
        }
        for child in node.children.borrow().iter().filter(|c| is_element(c)) {
            stack.push((child.clone(), depth + 1));
        }
    }
    flattened
}

/// Replaces the children of `node` by the text (and empty elements such as `<br>`, `<img>`)
/// found under them, in document order; returns how many elements were unwrapped.
fn flatten_children(node: &Handle) -> usize {
    let mut unwrapped = 0;
    let children = std::mem::take(&mut *node.children.borrow_mut());
    if children.iter().all(|c| c.children.borrow().is_empty()) {
        *node.children.borrow_mut() = children;
        return 0;
    }
    let mut kept: Vec<Handle> = Vec::new();
    let mut work: Vec<Handle> = children.into_iter().rev().collect();
    while let Some(current) = work.pop() {
        match &current.data {
            NodeData::Text { .. } => kept.push(current),
            NodeData::Element { .. } => {
                let grandchildren = std::mem::take(&mut *current.children.borrow_mut());
                if grandchildren.is_empty() {
                    kept.push(current);
                    continue;
                }
                unwrapped += 1;
                let name = element_name(&current).unwrap_or("");
                if super::html::DROPPED.contains(&name) {
                    continue;
                }
                if is_block(name) {
                    kept.push(text_node("\n"));
                    work.push(text_node("\n"));
                }
                work.extend(grandchildren.into_iter().rev());
            }
            _ => {}
        }
    }
    for child in &kept {
        child.parent.set(Some(Rc::downgrade(node)));
    }
    *node.children.borrow_mut() = kept;
    unwrapped
}

fn text_node(text: &str) -> Handle {
    Node::new(NodeData::Text { contents: RefCell::new(StrTendril::from_slice(text)) })
}

/// The depth of the deepest element under `root` (iterative).
pub fn depth(root: &Handle) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(root.clone(), 0usize)];
    while let Some((node, d)) = stack.pop() {
        deepest = deepest.max(d);
        for child in node.children.borrow().iter().filter(|c| is_element(c)) {
            stack.push((child.clone(), d + 1));
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(levels: usize, open: &str, close: &str, inner: &str) -> String {
        format!("<!doctype html><html><body>{}{inner}{}</body></html>", open.repeat(levels), close.repeat(levels))
    }

    fn text_of(root: &Handle) -> String {
        let mut out = String::new();
        let mut stack = vec![root.clone()];
        while let Some(node) = stack.pop() {
            if let NodeData::Text { contents } = &node.data {
                out.push_str(&contents.borrow());
            }
            stack.extend(node.children.borrow().iter().rev().cloned());
        }
        out
    }

    #[test]
    fn shallow_pages_are_not_flattened() {
        let parsed = parse(&nested(100, "<div>", "</div>", "deep text"), &Budget::unlimited());
        assert_eq!(parsed.flattened, 0);
        assert!(depth(&parsed.document) > 100);
        assert!(text_of(&parsed.document).contains("deep text"));
    }

    #[test]
    fn deep_nesting_is_bounded_and_keeps_the_text() {
        let page = nested(100_000, "<div><span>", "</span></div>", "<p>deep text</p>");
        let parsed = parse(&page, &Budget::unlimited());
        assert!(parsed.flattened > 100_000, "{}", parsed.flattened);
        assert!(depth(&parsed.document) <= MAX_DEPTH);
        assert!(text_of(&parsed.document).contains("deep text"));
        assert_eq!(parsed.parsed, page.len());
    }

    #[test]
    fn unclosed_paragraphs_and_list_items_do_not_count_as_nesting() {
        let mut page = String::from("<body><ul>");
        for i in 0..2_000 {
            page.push_str(&format!("<li><a href=x>item {i}<p>para {i}<p>more"));
        }
        page.push_str("</ul><table>");
        for i in 0..2_000 {
            page.push_str(&format!("<tr><td>cell {i}<td>other"));
        }
        page.push_str("</table>");
        let parsed = parse(&page, &Budget::unlimited());
        assert_eq!(parsed.flattened, 0);
        assert!(text_of(&parsed.document).contains("item 1999"));
    }

    #[test]
    fn scripts_past_the_limit_are_skipped_not_shown() {
        let page =
            nested(1_000, "<div>", "</div>", "<script>if (a < b) { x('</div>') }</script><style>p{}</style>visible");
        let parsed = parse(&page, &Budget::unlimited());
        let text = text_of(&parsed.document);
        assert!(text.contains("visible"), "{text}");
        assert!(!text.contains("if (a") && !text.contains("p{}"), "{text}");
    }

    #[test]
    fn misnested_formatting_is_flattened_in_linear_time() {
        // Each `</b>` leaves the `<div>` open (adoption agency), so this nests 50,000 deep.
        let page = format!("<body>{}end", "<b><div></b>x".repeat(50_000));
        let started = Instant::now();
        let parsed = parse(&page, &Budget::unlimited());
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
        assert!(parsed.flattened > 40_000, "{}", parsed.flattened);
        assert!(depth(&parsed.document) <= MAX_DEPTH);
        let text = text_of(&parsed.document);
        assert!(text.trim_end().ends_with("end"), "{}", &text[text.len() - 50..]);
        assert_eq!(text.matches('x').count(), 50_000);
    }

    #[test]
    fn end_tags_past_a_scope_boundary_do_not_close() {
        // `</div>` cannot close a div outside the table: the divs stay open and nest.
        let page = format!("<body>{}end", "<div><table><td></div>".repeat(2_000));
        let parsed = parse(&page, &Budget::unlimited());
        assert!(parsed.flattened > 0);
        assert!(depth(&parsed.document) <= MAX_DEPTH);
    }

    #[test]
    fn parsing_stops_when_the_budget_runs_out() {
        let page = nested(50_000, "<div>", "</div>", "x");
        let parsed = parse(&page, &Budget::unlimited().with_cancellation(|| true));
        assert_eq!(parsed.stopped, Some(Stop::Cancelled));
        assert!(parsed.parsed < page.len());
        let parsed = parse(&page, &Budget::until(Instant::now()));
        assert_eq!(parsed.stopped, Some(Stop::OutOfTime));
    }

    #[test]
    fn a_meta_charset_does_not_end_the_parse() {
        let page = "<html><head><meta charset=\"utf-8\"><title>T</title></head><body><p>after</p></body></html>";
        let parsed = parse(page, &Budget::unlimited());
        assert_eq!(text_of(&parsed.document), "Tafter");
    }

    #[test]
    fn chunks_cut_on_character_boundaries() {
        let text = "aé".repeat(10);
        let pieces: Vec<&str> = chunks(&text, 4).collect();
        assert_eq!(pieces.concat(), text);
        assert!(pieces.iter().all(|p| p.len() <= 5));
    }
}
