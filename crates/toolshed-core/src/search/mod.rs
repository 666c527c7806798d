//! Tool search: what lets a model work with hundreds of tools without sending them all.
//!
//! - [`SearchIndex`]: BM25F over each tool's name (split into words), server, parameter names,
//!   description and its first sentence, with stemming, a small table of developer-tool
//!   synonyms, other languages' words and spelling correction; scores raised by how much of the
//!   query and of the tool's own name match and by the query naming the tool's server, and
//!   closeness in meaning by word vectors (GloVe, shipped in the binary) added on top; a query
//!   over 10,000 tools takes well under a millisecond.
//! - [`ToolSearch`]: the `tool_search` tool. It searches the tools that are deferred for the
//!   caller's view and returns their full specs; each one found becomes direct for the rest of
//!   the session. The registry shows it only while something is deferred.
//! - [`AutoDefer`]: the exposure hook that defers MCP servers' tools when the direct tools'
//!   definitions would take more than a configured share of the model's context.

mod defer;
mod embed;
mod index;
mod lexicon;
pub mod text;
mod tool;

pub use defer::{AutoDefer, BYTES_PER_TOKEN, DEFAULT_CONTEXT_TOKENS};
pub use index::{Hit, MAX_QUERY_CHARS, SearchDoc, SearchIndex};
pub use tool::{DEFAULT_LIMIT, TOOL_SEARCH, ToolSearch, search_doc};
