//! The throughput curve as SVG: GB/s against buffer size (log scale) for each engine, with
//! the breakeven size marked, drawn with `plotters`' SVG backend.

use std::path::Path;

use plotters::prelude::*;

pub use crate::report::svg::PlotError;

use crate::fs::cksum::CrcEngine;
use crate::workload::csum::bench::BenchReport;

/// A colour per engine, stable across runs.
fn colour(e: CrcEngine) -> RGBColor {
    match e {
        CrcEngine::Crc32c => RGBColor(31, 119, 180),
        CrcEngine::Fast => RGBColor(214, 39, 40),
        CrcEngine::Soft => RGBColor(44, 160, 44),
    }
}

/// Draw `r` into an SVG file at `path` (`width` × `height` pixels).
pub fn write_svg(r: &BenchReport, path: &Path, width: u32, height: u32) -> Result<(), PlotError> {
    let fail = PlotError::draw(path);
    let sizes: Vec<f64> = r.rows.iter().map(|row| row.size.bytes as f64).collect();
    let (Some(&lo), Some(&hi)) = (sizes.first(), sizes.last()) else {
        return Err(PlotError::Empty);
    };
    let top = r
        .rows
        .iter()
        .flat_map(|row| row.results.iter().map(|res| res.gbps))
        .fold(0.0f64, f64::max)
        * 1.1;
    let root = SVGBackend::new(path, (width, height)).into_drawing_area();
    root.fill(&WHITE).map_err(fail)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("CRC-32C throughput by size ({})", r.cpu.summary()),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(
            (lo..hi.max(lo * 2.0)).log_scale().base(2.0),
            0.0..top.max(0.1),
        )
        .map_err(fail)?;
    chart
        .configure_mesh()
        .x_desc("bytes per call (log scale)")
        .y_desc("GB/s")
        .x_label_formatter(&|v| crate::units::format_size_spec(v.round() as u64))
        .draw()
        .map_err(fail)?;
    for p in &r.paths {
        let e = p.engine;
        let points: Vec<(f64, f64)> = r
            .rows
            .iter()
            .filter_map(|row| row.gbps(e).map(|g| (row.size.bytes as f64, g)))
            .collect();
        let c = colour(e);
        chart
            .draw_series(LineSeries::new(points.clone(), c.stroke_width(2)))
            .map_err(fail)?
            .label(e.name())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2)));
        chart
            .draw_series(points.iter().map(|&pt| Circle::new(pt, 2, c.filled())))
            .map_err(fail)?;
    }
    let engines: Vec<CrcEngine> = r.paths.iter().map(|p| p.engine).collect();
    if let (Some(&a), Some(&b)) = (engines.first(), engines.get(1))
        && let Some(at) = r.breakeven(a, b)
    {
        let x = at as f64;
        chart
            .draw_series(DashedLineSeries::new(
                vec![(x, 0.0), (x, top)],
                6,
                4,
                BLACK.stroke_width(1),
            ))
            .map_err(fail)?
            .label(format!("breakeven {b} vs {a}: {at} B"))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLACK));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(fail)?;
    root.present().map_err(fail)?;
    Ok(())
}
