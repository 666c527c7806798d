//! toolshed's terminal UI. What the screen shows is built from the agent's events and drawn
//! without a terminal (snapshot-tested): the transcript's cells ([`cell`]), Markdown turned
//! into styled lines ([`markdown`]), each cell at a width ([`render`]), the approval dialog,
//! status line and slash popup ([`views`]), the composer ([`composer`]), the whole transcript
//! on the alternate screen ([`pager`]). [`app`] runs them in
//! an inline viewport of the terminal.

pub mod app;
pub mod cell;
pub mod composer;
pub mod highlight;
pub mod markdown;
pub mod mentions;
pub mod pager;
pub mod people;
pub mod render;
pub mod screen;
pub mod views;
pub mod wrap;
