//! Output layers: what users read and parse.
//!
//! General pieces that every tool can use live at this level; each tool's own text format is a
//! small module of its own, so the formats people already parse (fs_mark's table, fio's
//! reports) stay byte-exact while the shared machinery evolves.
//!
//! - [`progress`]: a progress bar on stderr that appears only on a terminal and only for long
//!   phases, so pipes and tests never see it.
//! - [`json`]: writing a JSON document to a file atomically (rewritten as a run goes, so a
//!   crash loses little).
//! - [`output`]: output files named on the command line, created before the run starts.
//! - [`latency`]: percentiles of an `hdrhistogram` and a comfy-table rendering of them.
//! - [`fsmark`]: fs_mark 3.3's header, table rows, summary and log file, plus fsmark's JSON.
//! - [`csum`]: csumhist's size tables, comparisons, engine tables, JSON and SVG plot.

pub mod csum;
pub mod fsmark;
pub mod json;
pub mod latency;
pub mod output;
pub mod progress;
