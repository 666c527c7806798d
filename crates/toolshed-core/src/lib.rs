//! toolshed's core: the tool model, the registry and what a model sees, permissions,
//! the config file, and the execution chain that turns one tool call into a result.
//!
//! Its only I/O is reading config files, writing spill files for long outputs, and looking up
//! which protected paths exist; [`env`](mod@env) decides what child processes inherit of this process's
//! environment.
//!
//! ```
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use toolshed_core::{exec::{Executor, Session, ToolCall}, registry::Registry, tool::{tool_fn, ToolOutput}};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct GreetArgs {
//!     /// Who to greet.
//!     name: String,
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let mut registry = Registry::new();
//! registry.register_builtin(tool_fn("greet", "Greet someone by name.", |args: GreetArgs, _ctx| async move {
//!     Ok(ToolOutput::text(format!("Hello, {}!", args.name)))
//! }));
//! let executor = Executor::builder(registry, std::env::temp_dir()).build();
//! let session = Session::new("s1", "build");
//! let result = executor.call(&session, ToolCall::json("c1", "greet", serde_json::json!({"name": "Ada"}))).await;
//! assert_eq!(result.output, "Hello, Ada!");
//! # });
//! ```

pub mod agents;
pub mod config;
pub mod context;
pub mod env;
pub mod exec;
pub mod file_access;
pub mod hooks;
pub mod lines;
pub mod locks;
pub mod output;
pub mod paths;
pub mod permission;
pub mod protected;
pub mod registry;
pub mod render;
pub mod schema;
pub mod search;
pub mod terminal;
pub mod todo;
pub mod tool;
pub mod trust;
pub mod wildcard;

pub use exec::{Executor, Session, ToolCall, ToolResult};
pub use registry::Registry;
pub use tool::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// The README's examples, compiled and run as doctests. Its fences name the file a block
/// belongs in (```` ```toml .toolshed/tools/x.toml ````), which rustdoc need not understand.
#[cfg(doctest)]
#[allow(rustdoc::invalid_codeblock_attributes)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
