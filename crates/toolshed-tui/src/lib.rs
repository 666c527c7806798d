//! toolshed's terminal UI. This first part is what the screen shows, built from the agent's
//! events and independent of any terminal: the transcript's cells ([`cell`]), Markdown turned
//! into styled lines ([`markdown`]), and each cell drawn at a given width ([`render`]).

pub mod cell;
pub mod composer;
pub mod markdown;
pub mod render;
pub mod views;
pub mod wrap;
