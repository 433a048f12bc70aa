//! syncbench's SVG plots, drawn with `plotters`' SVG backend: the sweep's median sync time
//! against cached inodes for both ways (log-log, so a walk that grows linearly is a straight
//! line of slope one and the writeback list a flat one), and the fsmark mode's files/sec
//! against files created for both `sync_wait` modes.

use std::path::Path;

use plotters::prelude::*;

pub use crate::report::svg::PlotError;

use crate::workload::syncbench::sweep::SweepReport;

/// The two series' colours: the fast way, the slow way.
const COLOURS: [RGBColor; 2] = [RGBColor(31, 119, 180), RGBColor(214, 39, 40)];

/// One named line of points.
pub struct Series<'a> {
    /// Legend text.
    pub label: &'a str,
    /// (x, y) points, in x order.
    pub points: Vec<(f64, f64)>,
}

/// What a chart's axes say.
struct Axes<'a> {
    caption: &'a str,
    x_desc: &'a str,
    y_desc: &'a str,
}

/// Draw the sweep: median sync time (with min..max whiskers) against cached inodes.
pub fn sweep_svg(r: &SweepReport, path: &Path) -> Result<(), PlotError> {
    let Some(first) = r.rows.first() else {
        return Err(PlotError::Empty);
    };
    let x = |row: &crate::workload::syncbench::sweep::SweepRow| {
        row.cached.unwrap_or(row.inodes).max(1) as f64
    };
    let series: Vec<Series<'_>> = (0..2)
        .map(|k| Series {
            label: first.ways[k].way.name(),
            points: r
                .rows
                .iter()
                .map(|row| (x(row), row.ways[k].spread.median_s.max(1e-9)))
                .collect(),
        })
        .collect();
    let caption = format!("sync() time against cached inodes ({})", r.backend);
    draw(
        path,
        &Axes {
            caption: &caption,
            x_desc: "cached inodes (log scale)",
            y_desc: "median sync time, seconds (log scale)",
        },
        &series,
        true,
    )
}

/// Draw files/sec against files created, one line per mode.
pub fn rate_svg(series: &[Series<'_>], path: &Path) -> Result<(), PlotError> {
    draw(
        path,
        &Axes {
            caption: "fs_mark -S4: files/sec as the inode cache grows",
            x_desc: "files created (Count)",
            y_desc: "files/sec",
        },
        series,
        false,
    )
}

fn draw(path: &Path, axes: &Axes<'_>, series: &[Series<'_>], log: bool) -> Result<(), PlotError> {
    let fail = PlotError::draw(path);
    let all = || series.iter().flat_map(|s| s.points.iter().copied());
    if all().next().is_none() {
        return Err(PlotError::Empty);
    }
    let (x_lo, x_hi) = all().fold((f64::MAX, f64::MIN), |(lo, hi), (x, _)| {
        (lo.min(x), hi.max(x))
    });
    let (y_lo, y_hi) = all().fold((f64::MAX, f64::MIN), |(lo, hi), (_, y)| {
        (lo.min(y), hi.max(y))
    });
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(fail)?;
    let mut builder = ChartBuilder::on(&root);
    builder
        .caption(axes.caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70);
    macro_rules! finish {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc(axes.x_desc)
                .y_desc(axes.y_desc)
                .draw()
                .map_err(fail)?;
            for (s, &c) in series.iter().zip(COLOURS.iter().cycle()) {
                chart
                    .draw_series(LineSeries::new(s.points.clone(), c.stroke_width(2)))
                    .map_err(fail)?
                    .label(s.label)
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2))
                    });
                chart
                    .draw_series(s.points.iter().map(|&p| Circle::new(p, 3, c.filled())))
                    .map_err(fail)?;
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .position(SeriesLabelPosition::UpperLeft)
                .draw()
                .map_err(fail)?;
        }};
    }
    if log {
        finish!(
            builder
                .build_cartesian_2d(
                    (x_lo..(x_hi.max(x_lo * 2.0))).log_scale(),
                    (y_lo / 2.0..y_hi * 2.0).log_scale(),
                )
                .map_err(fail)?
        );
    } else {
        finish!(
            builder
                .build_cartesian_2d(0.0..x_hi * 1.05, 0.0..(y_hi * 1.15).max(1.0))
                .map_err(fail)?
        );
    }
    root.present().map_err(fail)?;
    Ok(())
}
