//! What the SVG plots (csumhist's throughput curve, syncbench's sweep and rate plots) share:
//! the one error a plot returns.

use plotters::drawing::DrawingAreaErrorKind;
use thiserror::Error;

/// The plot could not be drawn or written.
#[derive(Debug, Error)]
pub enum PlotError {
    /// The report has nothing to draw.
    #[error("--plot: no measurements to plot")]
    Empty,
    /// plotters failed (drawing or writing the file).
    #[error("--plot {path}: {source}")]
    Draw {
        /// The SVG file.
        path: String,
        /// What plotters said.
        #[source]
        source: DrawingAreaErrorKind<std::io::Error>,
    },
}

impl PlotError {
    /// A plotters failure while drawing into `path`, for `map_err`.
    pub fn draw(
        path: &std::path::Path,
    ) -> impl Fn(DrawingAreaErrorKind<std::io::Error>) -> PlotError + Copy + '_ {
        move |source| PlotError::Draw {
            path: path.display().to_string(),
            source,
        }
    }
}
