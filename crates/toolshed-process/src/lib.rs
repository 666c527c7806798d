//! The process helpers that the shell tools, the language-server client, custom tools and MCP
//! servers share.
//!
//! - [`ProcessGroup`]: the process group of a child started as a group leader
//!   (`process_group(0)` or `setsid`), signalled with everything in it when the guard is dropped
//!   or on demand, and optionally listed in a [`GroupList`] whose groups are also signalled when
//!   this process exits (`atexit`, which `std::process::exit` runs too) or when its owner asks.
//!   [`signal_group`] signals a group by id, never one whose id now belongs to a process that is
//!   not our child.
//! - [`find_program`]: a command's program, looked up on `PATH` (with the `which` crate) or,
//!   for a path, relative to a base directory, executable either way.
//!
//! This crate never starts a process and depends on no other toolshed crate. Like the rest of
//! toolshed, it is written for Unix (Linux: the group check reads `/proc`).

mod group;
mod program;

pub use group::{GroupList, ProcessGroup, SIGKILL, SIGTERM, Signal, signal_group};

/// What stops the processes a confined child left running once it has ended (see
/// `toolshed_shell::confine_tool_tracked`): called with the child's process id (its group's),
/// it returns how many it stopped.
pub struct Leftovers(pub Box<dyn FnOnce(u32) -> usize + Send>);

impl Leftovers {
    /// Stops what the child `pid` left running; how many.
    pub fn stop(self, pid: u32) -> usize {
        (self.0)(pid)
    }
}

impl std::fmt::Debug for Leftovers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Leftovers")
    }
}
pub use program::{ProgramError, find_program, find_trusted_program, untrusted_dirs};
