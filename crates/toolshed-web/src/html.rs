//! HTML for a model to read: Markdown (through `htmd`) or plain text, with scripts, styles,
//! forms, embedded media and navigation chrome dropped, and links made absolute so the model
//! can fetch them next.
//!
//! A `<header>` or `<footer>` is page chrome when it stands on its own, but part of the content
//! inside an `<article>` or `<main>` (where it usually holds the title and byline), so it is
//! kept there.
//!
//! Pages are parsed by [`dom::parse`](super::dom::parse), so no element reaches the converters
//! deeper than [`MAX_DEPTH`](super::dom::MAX_DEPTH) and a [`Budget`] can stop the work.

use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use htmd::element_handler::{HandlerResult, Handlers};
use htmd::options::{BulletListMarker, HrStyle, Options};
use htmd::{Element, HtmlToMarkdown, Node};
use markup5ever_rcdom::NodeData;
use reqwest::Url;

use super::dom::{self, Budget, Stop};

/// Elements whose content never reaches the model.
pub(crate) const DROPPED: &[&str] = &[
    "script", "style", "noscript", "template", "iframe", "frame", "frameset", "object", "embed", "canvas", "svg",
    "math", "form", "button", "select", "input", "textarea", "nav", "aside", "dialog", "head", "title", "meta", "link",
];

/// Elements dropped only outside `<article>` and `<main>`.
const CHROME: &[&str] = &["header", "footer"];

/// Container elements checked for `hidden`, `aria-hidden="true"` and `role="navigation"`.
const CONTAINERS: &[&str] = &["div", "section", "ul", "ol", "p", "table"];

/// A converted page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    /// The document's `<title>`, whitespace collapsed.
    pub title: Option<String>,
    /// The readable content.
    pub content: String,
    /// Elements unwrapped because they were nested deeper than
    /// [`MAX_DEPTH`](super::dom::MAX_DEPTH); their text is in `content`.
    pub flattened: usize,
    /// Set when the budget ran out before the conversion finished: `content` is incomplete.
    pub stopped: Option<Stopped>,
}

impl Page {
    /// A page that is just `content`.
    pub fn plain(content: String) -> Self {
        Page { title: None, content, flattened: 0, stopped: None }
    }
}

/// How far a conversion got before its budget ran out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stopped {
    /// Why it stopped.
    pub reason: Stop,
    /// Bytes of the page that were parsed (all of them when it stopped while writing).
    pub parsed: usize,
}

/// Converts an HTML document to Markdown; relative links and images resolve against `base`
/// (or the document's `<base href>`).
pub fn to_markdown(html: &str, base: Option<&Url>) -> Page {
    to_markdown_within(html, base, &Budget::unlimited())
}

/// [`to_markdown`], giving up when `budget` runs out (the page says how far it got).
pub fn to_markdown_within(html: &str, base: Option<&Url>, budget: &Budget) -> Page {
    let parsed = dom::parse(html, budget);
    let cut = Arc::new(AtomicBool::new(false));
    let converter = markdown_converter(budget, &cut);
    let title = title(&parsed.document);
    absolutize(&parsed.document, base);
    merge_inline_runs(&parsed.document);
    let content = tidy(&converter.tree_to_markdown(&parsed.document));
    let stopped = stopped(&parsed, cut.load(Ordering::Relaxed), budget);
    Page { title, content, flattened: parsed.flattened, stopped }
}

/// Converts an HTML document to plain text: one paragraph per block, list items prefixed with
/// `- `, table cells separated by ` | `, no markup.
pub fn to_text(html: &str) -> Page {
    to_text_within(html, &Budget::unlimited())
}

/// [`to_text`], giving up when `budget` runs out (the page says how far it got).
pub fn to_text_within(html: &str, budget: &Budget) -> Page {
    let parsed = dom::parse(html, budget);
    let title = title(&parsed.document);
    let mut text = TextWriter { out: String::new(), budget, visited: 0, cut: false };
    text.children(&parsed.document, false);
    let stopped = stopped(&parsed, text.cut, budget);
    Page { title, content: tidy(&text.out), flattened: parsed.flattened, stopped }
}

/// Whether (and where) the conversion stopped early: while parsing, or while writing (`cut`).
fn stopped(parsed: &dom::Parsed, cut: bool, budget: &Budget) -> Option<Stopped> {
    match (parsed.stopped, cut) {
        (Some(reason), _) => Some(Stopped { reason, parsed: parsed.parsed }),
        (None, true) => Some(Stopped { reason: budget.check().unwrap_or(Stop::OutOfTime), parsed: parsed.parsed }),
        (None, false) => None,
    }
}

/// Elements at which the Markdown writer looks at the budget, and skips the element when it
/// has run out: the common ones, so a stopped conversion ends within a few elements.
const BUDGET_CHECKED: &[&str] = &[
    "div",
    "p",
    "span",
    "a",
    "li",
    "ul",
    "ol",
    "table",
    "tr",
    "td",
    "th",
    "section",
    "article",
    "main",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "pre",
    "code",
    "blockquote",
    "dl",
    "dt",
    "dd",
    "em",
    "strong",
    "b",
    "i",
    "header",
    "footer",
    "body",
    "figure",
    "img",
];

fn markdown_converter(budget: &Budget, cut: &Arc<AtomicBool>) -> HtmlToMarkdown {
    let options = Options {
        bullet_list_marker: BulletListMarker::Dash,
        ul_bullet_spacing: 1,
        ol_number_spacing: 1,
        hr_style: HrStyle::Dashes,
        ..Options::default()
    };
    HtmlToMarkdown::builder()
        .options(options)
        .skip_tags(DROPPED.to_vec())
        .add_handler(
            CHROME.to_vec(),
            |handlers: &dyn Handlers, element: Element| {
                if inside_content(element.node) { handlers.fallback(element) } else { None }
            },
        )
        .add_handler(CONTAINERS.to_vec(), |handlers: &dyn Handlers, element: Element| {
            if hidden_or_navigation(element.node) { None } else { handlers.fallback(element) }
        })
        .add_handler(vec!["img"], |handlers: &dyn Handlers, element: Element| {
            // An inline `data:` image would put kilobytes of base64 in front of the model.
            match attr(element.node, "src") {
                Some(src) if src.starts_with("data:") => {
                    attr(element.node, "alt").filter(|a| !a.trim().is_empty()).map(HandlerResult::from)
                }
                _ => handlers.fallback(element),
            }
        })
        // A `<pre>` is a code block whatever it holds: htmd fences only `<pre><code>`, and
        // writes any other `<pre>` (Sphinx's highlighted spans, texinfo's examples) as
        // Markdown, where `>>>` lines become quotes and `#` comments headings.
        .add_handler(vec!["pre"], |_: &dyn Handlers, element: Element| Some(code_block(element.node).into()))
        // Added last, so it runs first for these tags.
        .add_handler(BUDGET_CHECKED.to_vec(), {
            let budget = budget.clone();
            let cut = Arc::clone(cut);
            move |handlers: &dyn Handlers, element: Element| {
                if cut.load(Ordering::Relaxed) || budget.check().is_some() {
                    cut.store(true, Ordering::Relaxed);
                    return None;
                }
                handlers.fallback(element)
            }
        })
        .build()
}

/// A `<pre>` as a fenced code block: its text as written (`<br>` as a line break), in a fence
/// longer than any run of backticks in it, labelled with the language the page states.
fn code_block(pre: &Rc<Node>) -> String {
    let mut text = String::new();
    preformatted_text(pre, &mut text);
    let text = text.trim_end_matches(['\n', '\r', ' ', '\t']);
    let text = text.trim_start_matches(['\n', '\r']);
    if text.trim().is_empty() {
        return String::new();
    }
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(3.max(longest + 1));
    let language = code_language(pre).unwrap_or_default();
    format!("\n\n{fence}{language}\n{text}\n{fence}\n\n")
}

/// The text of a `<pre>`'s descendants, unescaped and unchanged (recursive: the tree's depth is
/// bounded by the parser).
fn preformatted_text(node: &Rc<Node>, out: &mut String) {
    for child in node.children.borrow().iter() {
        match &child.data {
            NodeData::Text { contents } => out.push_str(&contents.borrow()),
            NodeData::Element { .. } if dropped(child) => {}
            NodeData::Element { name, .. } if &*name.local == "br" => out.push('\n'),
            NodeData::Element { .. } => preformatted_text(child, out),
            _ => {}
        }
    }
}

/// The language a code block's markup states: `language-X` / `lang-X` on the `<pre>` or its
/// `<code>`, or Sphinx's `highlight-X` on one of the two `<div>`s around the `<pre>`
/// (`highlight-default`, `-none` and `-text` state none).
fn code_language(pre: &Rc<Node>) -> Option<String> {
    let from_class = |node: &Node| -> Option<String> {
        let class = attr(node, "class")?;
        class.split_whitespace().find_map(|c| {
            let name = c
                .strip_prefix("language-")
                .or_else(|| c.strip_prefix("lang-"))
                .or_else(|| c.strip_prefix("highlight-"))?;
            match name {
                "" | "default" | "none" | "text" | "plain" | "plaintext" => None,
                "python3" | "py3" => Some("python".to_string()),
                name if name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '_' | '#' | '.')) => {
                    Some(name.to_string())
                }
                _ => None,
            }
        })
    };
    if let Some(language) = from_class(pre) {
        return Some(language);
    }
    let code = pre.children.borrow().iter().find(|c| tag(c) == Some("code")).cloned();
    if let Some(language) = code.as_deref().and_then(from_class) {
        return Some(language);
    }
    let mut current = parent(pre);
    for _ in 0..2 {
        let node = current?;
        if let Some(language) = from_class(&node) {
            return Some(language);
        }
        current = parent(&node);
    }
    None
}

fn tag(node: &Node) -> Option<&str> {
    match &node.data {
        NodeData::Element { name, .. } => Some(&name.local),
        _ => None,
    }
}

fn attr(node: &Node, name: &str) -> Option<String> {
    match &node.data {
        NodeData::Element { attrs, .. } => {
            attrs.borrow().iter().find(|a| &*a.name.local == name).map(|a| a.value.to_string())
        }
        _ => None,
    }
}

fn parent(node: &Node) -> Option<Rc<Node>> {
    let weak = node.parent.take();
    let parent = weak.as_ref().and_then(std::rc::Weak::upgrade);
    node.parent.set(weak);
    parent
}

fn inside_content(node: &Node) -> bool {
    let mut current = parent(node);
    while let Some(n) = current {
        if matches!(tag(&n), Some("article" | "main")) {
            return true;
        }
        current = parent(&n);
    }
    false
}

fn hidden_or_navigation(node: &Node) -> bool {
    attr(node, "hidden").is_some()
        || attr(node, "aria-hidden").is_some_and(|v| v.eq_ignore_ascii_case("true"))
        || attr(node, "role").is_some_and(|v| v.eq_ignore_ascii_case("navigation"))
}

fn dropped(node: &Node) -> bool {
    match tag(node) {
        Some(t) if DROPPED.contains(&t) => true,
        Some(t) if CHROME.contains(&t) => !inside_content(node),
        Some(t) if CONTAINERS.contains(&t) => hidden_or_navigation(node),
        _ => false,
    }
}

/// htmd's block elements (`dom_walker::BLOCK_ELEMENTS`, from the CommonMark spec): it does not
/// merge runs of these.
const HTMD_BLOCKS: &[&str] = &[
    "address",
    "article",
    "aside",
    "base",
    "basefont",
    "blockquote",
    "body",
    "caption",
    "center",
    "col",
    "colgroup",
    "dd",
    "details",
    "dialog",
    "dir",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "frame",
    "frameset",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "head",
    "header",
    "hr",
    "html",
    "iframe",
    "legend",
    "li",
    "link",
    "main",
    "menu",
    "menuitem",
    "nav",
    "noframes",
    "ol",
    "optgroup",
    "option",
    "p",
    "param",
    "pre",
    "script",
    "search",
    "section",
    "style",
    "summary",
    "table",
    "tbody",
    "td",
    "textarea",
    "tfoot",
    "th",
    "thead",
    "title",
    "tr",
    "track",
    "ul",
];

/// Merges runs of adjacent inline elements that hold one text node each and are alike
/// (`<b>x</b><b>y</b>` → `<b>xy</b>`), exactly as htmd does before writing a node's children,
/// but in one pass: htmd removes each merged sibling from a `Vec`, which is quadratic in the
/// length of the run (200,000 `<b>x</b>` took 4 s, 5 MiB of them over 35 s). Left for htmd,
/// nothing is left to merge.
fn merge_inline_runs(root: &Rc<Node>) {
    let mut stack = vec![root.clone()];
    while let Some(node) = stack.pop() {
        let merged = {
            let children = node.children.borrow();
            if children.len() < 2 || !children.windows(2).any(|w| mergeable(&w[0], &w[1])) {
                None
            } else {
                let mut kept: Vec<Rc<Node>> = Vec::with_capacity(children.len());
                for child in children.iter() {
                    if let Some(last) = kept.last()
                        && mergeable(last, child)
                    {
                        append_only_text(last, child);
                        continue;
                    }
                    kept.push(child.clone());
                }
                Some(kept)
            }
        };
        if let Some(kept) = merged {
            *node.children.borrow_mut() = kept;
        }
        stack.extend(node.children.borrow().iter().filter(|c| !c.children.borrow().is_empty()).cloned());
    }
}

/// htmd's `can_combine`: two inline elements alike (`b`/`strong` and `i`/`em` count as alike),
/// not links, each holding a single text node.
fn mergeable(first: &Node, second: &Node) -> bool {
    let (
        NodeData::Element { name: n1, attrs: a1, template_contents: t1, mathml_annotation_xml_integration_point: m1 },
        NodeData::Element { name: n2, attrs: a2, template_contents: t2, mathml_annotation_xml_integration_point: m2 },
    ) = (&first.data, &second.data)
    else {
        return false;
    };
    if HTMD_BLOCKS.contains(&&*n1.local) || &*n1.local == "a" {
        return false;
    }
    let alike =
        n1 == n2 || matches!((&*n1.local, &*n2.local), ("i", "em") | ("em", "i") | ("b", "strong") | ("strong", "b"));
    alike
        && only_text(first)
        && only_text(second)
        && t1.borrow().is_none()
        && t2.borrow().is_none()
        && *a1.borrow() == *a2.borrow()
        && m1 == m2
}

fn only_text(node: &Node) -> bool {
    let children = node.children.borrow();
    children.len() == 1 && matches!(children[0].data, NodeData::Text { .. })
}

/// Appends the text of `second`'s only child to `first`'s only child.
fn append_only_text(first: &Node, second: &Node) {
    let (a, b) = (first.children.borrow(), second.children.borrow());
    if let (Some(NodeData::Text { contents: into }), Some(NodeData::Text { contents: from })) =
        (a.first().map(|n| &n.data), b.first().map(|n| &n.data))
    {
        into.borrow_mut().push_tendril(&from.borrow());
    }
}

/// The text of the first `<title>`, whitespace collapsed.
fn title(node: &Rc<Node>) -> Option<String> {
    if tag(node) == Some("title") {
        let mut text = String::new();
        for child in node.children.borrow().iter() {
            if let NodeData::Text { contents } = &child.data {
                text.push_str(&contents.borrow());
            }
        }
        let text = collapse_whitespace(&text);
        return (!text.is_empty()).then_some(text);
    }
    if matches!(tag(node), Some("body" | "svg")) {
        return None;
    }
    node.children.borrow().iter().find_map(title)
}

/// Rewrites `a[href]` and `img[src]` to absolute URLs against the document's `<base href>`
/// (itself resolved against `base`) or `base`.
fn absolutize(tree: &Rc<Node>, base: Option<&Url>) {
    let declared = find(tree, "base").and_then(|b| attr(&b, "href"));
    let base = match (declared, base) {
        (Some(href), Some(base)) => base.join(&href).ok(),
        (Some(href), None) => Url::parse(&href).ok(),
        (None, base) => base.cloned(),
    };
    let Some(base) = base else { return };
    let mut stack = vec![tree.clone()];
    while let Some(node) = stack.pop() {
        if let NodeData::Element { name, attrs, .. } = &node.data {
            let key = match &*name.local {
                "a" => Some("href"),
                "img" => Some("src"),
                _ => None,
            };
            if let Some(key) = key {
                for a in attrs.borrow_mut().iter_mut().filter(|a| &*a.name.local == key) {
                    let value = a.value.trim();
                    if value.starts_with('#') || value.starts_with("data:") || value.is_empty() {
                        continue;
                    }
                    if let Ok(url) = base.join(value) {
                        a.value = url.as_str().into();
                    }
                }
            }
        }
        stack.extend(node.children.borrow().iter().cloned());
    }
}

fn find(node: &Rc<Node>, name: &str) -> Option<Rc<Node>> {
    if tag(node) == Some(name) {
        return Some(node.clone());
    }
    node.children.borrow().iter().find_map(|c| find(c, name))
}

/// Collapses runs of whitespace to one space and trims the ends.
pub fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Trims trailing spaces on each line and squeezes three or more newlines to two, except inside
/// fenced code blocks, whose blank lines are the code's.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank_run = 0;
    let mut fence: Option<&str> = None;
    for line in text.lines() {
        let line = line.trim_end();
        let marker = line.trim_start();
        match fence {
            Some(open) if marker == open => fence = None,
            Some(_) => {}
            None if marker.starts_with("```") => {
                fence = Some(&marker[..marker.len() - marker.trim_start_matches('`').len()]);
            }
            None => {}
        }
        if line.is_empty() && fence.is_none() {
            blank_run += 1;
            if blank_run > 1 || out.is_empty() {
                continue;
            }
        } else {
            blank_run = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim_end().to_string()
}

pub(crate) const BLOCKS: &[&str] = &[
    "p",
    "div",
    "section",
    "article",
    "main",
    "header",
    "footer",
    "blockquote",
    "pre",
    "ul",
    "ol",
    "dl",
    "dt",
    "dd",
    "table",
    "tr",
    "figure",
    "figcaption",
    "address",
    "details",
    "summary",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "li",
    "hr",
    "body",
    "caption",
    "fieldset",
    "legend",
    "center",
];

/// The 1-based position of a list item among its parent's `<li>` children.
fn list_position(node: &Rc<Node>) -> usize {
    let Some(list) = parent(node) else { return 1 };
    let items = list.children.borrow();
    let before = items.iter().take_while(|c| !Rc::ptr_eq(c, node)).filter(|c| tag(c) == Some("li")).count();
    before + 1
}

/// Plain-text rendering of a DOM tree (recursive: the tree's depth is bounded by the parser).
struct TextWriter<'a> {
    out: String,
    budget: &'a Budget,
    /// Nodes written so far, to look at the budget every so often.
    visited: u32,
    /// Set when the budget ran out: the rest of the tree is skipped.
    cut: bool,
}

impl TextWriter<'_> {
    fn children(&mut self, node: &Rc<Node>, pre: bool) {
        for child in node.children.borrow().iter() {
            self.node(child, pre);
        }
    }

    fn node(&mut self, node: &Rc<Node>, pre: bool) {
        self.visited = self.visited.wrapping_add(1);
        if self.cut || (self.visited.is_multiple_of(256) && self.budget.check().is_some()) {
            self.cut = true;
            return;
        }
        match &node.data {
            NodeData::Text { contents } => {
                let contents = contents.borrow();
                if pre {
                    self.out.push_str(&contents);
                } else {
                    self.inline(&contents);
                }
            }
            NodeData::Element { name, .. } => {
                if dropped(node) {
                    return;
                }
                let t = &*name.local;
                match t {
                    "br" => self.out.push('\n'),
                    "li" => {
                        self.newlines(1);
                        let marker = match parent(node).as_deref().and_then(tag) {
                            Some("ol") => format!("{}. ", list_position(node)),
                            _ => "- ".to_string(),
                        };
                        self.out.push_str(&marker);
                        self.children(node, pre);
                        self.newlines(1);
                    }
                    "td" | "th" => {
                        if !self.out.ends_with('\n') && !self.out.is_empty() {
                            self.out.push_str(" | ");
                        }
                        self.children(node, pre);
                    }
                    "tr" | "dt" | "dd" => {
                        self.newlines(1);
                        self.children(node, pre);
                        self.newlines(1);
                    }
                    "pre" => {
                        self.newlines(2);
                        self.children(node, true);
                        self.newlines(2);
                    }
                    "img" => {}
                    _ if BLOCKS.contains(&t) => {
                        self.newlines(2);
                        self.children(node, pre);
                        self.newlines(2);
                    }
                    _ => self.children(node, pre),
                }
            }
            NodeData::Document => self.children(node, pre),
            _ => {}
        }
    }

    /// Appends inline text with whitespace collapsed, keeping one space between words that
    /// came from different nodes.
    fn inline(&mut self, text: &str) {
        let starts_with_space = text.starts_with(char::is_whitespace);
        let ends_with_space = text.ends_with(char::is_whitespace);
        let words = collapse_whitespace(text);
        if words.is_empty() {
            if starts_with_space && !self.out.is_empty() && !self.out.ends_with([' ', '\n']) {
                self.out.push(' ');
            }
            return;
        }
        if starts_with_space && !self.out.is_empty() && !self.out.ends_with([' ', '\n']) {
            self.out.push(' ');
        }
        self.out.push_str(&words);
        if ends_with_space {
            self.out.push(' ');
        }
    }

    /// Ends the current line and makes sure `n` line breaks separate it from what follows.
    fn newlines(&mut self, n: usize) {
        if self.out.is_empty() {
            return;
        }
        let trimmed = self.out.trim_end_matches(' ').len();
        self.out.truncate(trimmed);
        let have = self.out.len() - self.out.trim_end_matches('\n').len();
        for _ in have..n {
            self.out.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = r#"<!doctype html>
<html><head><title> An   Article </title><style>body{color:red}</style>
<script>var tracking = 1;</script></head>
<body>
<header><a href="/">Home</a> <a href="/blog">Blog</a></header>
<nav><ul><li><a href="/a">A</a></li></ul></nav>
<div role="navigation">Breadcrumbs</div>
<main><article>
<header><h1>Real Title</h1><p>By Ada</p></header>
<p>First <em>paragraph</em> with a <a href="posts/next.html">relative link</a>.</p>
<ul><li>one</li><li>two</li></ul>
<pre><code>let x = 1;
let y = 2;</code></pre>
<img src="data:image/png;base64,AAAA" alt="inline chart">
<img src="/img/photo.png" alt="photo">
<table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table>
</article></main>
<aside>Related posts</aside>
<form><input name="q"><button>Search</button></form>
<footer>Copyright</footer>
<noscript>Enable JS</noscript>
</body></html>"#;

    #[test]
    fn markdown_drops_chrome_and_keeps_the_article() {
        let base = Url::parse("https://example.com/blog/post.html").unwrap();
        let page = to_markdown(PAGE, Some(&base));
        assert_eq!(page.title.as_deref(), Some("An Article"));
        insta::assert_snapshot!(page.content, @r"
        # Real Title

        By Ada

        First *paragraph* with a [relative link](https://example.com/blog/posts/next.html).

        - one
        - two

        ```
        let x = 1;
        let y = 2;
        ```

        inline chart ![photo](https://example.com/img/photo.png)

        | k | v |
        | - | - |
        | a | 1 |
        ");
    }

    #[test]
    fn text_has_no_markup_and_separates_blocks() {
        let page = to_text(PAGE);
        insta::assert_snapshot!(page.content, @r"
        Real Title

        By Ada

        First paragraph with a relative link.

        - one
        - two

        let x = 1;
        let y = 2;

        k | v
        a | 1
        ");
    }

    #[test]
    fn runs_of_alike_inline_elements_merge_as_htmd_would_in_linear_time() {
        let html = "<p><b>a</b><strong>b</strong><i>c</i><em>d</em><a href=x>e</a><a href=x>f</a></p>";
        assert_eq!(to_markdown(html, None).content, "**ab***cd*[e](x)[f](x)");
        let run = format!("<p>{}</p>", "<b>x</b>".repeat(100_000));
        let started = std::time::Instant::now();
        let page = to_markdown(&run, None);
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "{:?}", started.elapsed());
        assert_eq!(page.content, format!("**{}**", "x".repeat(100_000)));
    }

    #[test]
    fn pre_blocks_keep_their_text_and_blank_lines_and_state_their_language() {
        let html = "<p>x</p><div class=\"highlight-python3 notranslate\"><div class=\"highlight\"><pre><span></span>\
                    <span class=\"k\">def</span> f():\n    pass\n\n\n<span class=\"c1\"># two blank lines above</span>\n\
                    x = `a`\n</pre></div></div><pre class=\"example\">&gt; not a quote\n# not a heading</pre>";
        assert_eq!(
            to_markdown(html, None).content,
            "x\n\n```python\ndef f():\n    pass\n\n\n# two blank lines above\nx = `a`\n```\n\n```\n> not a quote\n# not a heading\n```"
        );
        let fenced = "<pre><code class=\"language-rust\">let a = \"```\";</code></pre>";
        assert_eq!(to_markdown(fenced, None).content, "````rust\nlet a = \"```\";\n````");
    }

    #[test]
    fn base_href_overrides_the_page_url() {
        let html =
            r#"<html><head><base href="https://cdn.example.org/docs/"></head><body><a href="x">x</a></body></html>"#;
        let page = to_markdown(html, Url::parse("https://example.com/").ok().as_ref());
        assert_eq!(page.content, "[x](https://cdn.example.org/docs/x)");
    }

    #[test]
    fn header_outside_article_is_dropped_but_kept_inside() {
        let html = "<body><header>Site</header><article><header><h2>T</h2></header>Body</article></body>";
        assert_eq!(to_markdown(html, None).content, "## T\n\nBody");
    }
}
