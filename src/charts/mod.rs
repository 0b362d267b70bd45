//! Charts for the dashboards, drawn on the server by plotters as SVG text that the page
//! inlines (no script, so they work under the admin CSP and in any browser).
//!
//! Every chart is drawn from the same numbers the page also shows as a table.

pub mod map;

use crate::stats::report::DayRow;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

const WIDTH: u32 = 760;
const PV: RGBColor = RGBColor(37, 99, 235);
const UV: RGBColor = RGBColor(22, 163, 74);
const IP: RGBColor = RGBColor(217, 119, 6);
const GOOD: RGBColor = RGBColor(22, 163, 74);
const BAD: RGBColor = RGBColor(220, 38, 38);
const BAR: RGBColor = RGBColor(37, 99, 235);
const FONT: &str = "sans-serif";
/// Labels' size as plotters takes it (it writes 0.81 of it as the SVG's font size: 12.1 px),
/// so that a chart kept at 11/12 of its width on a phone still shows text of 11 px.
const LABEL_SIZE: u32 = 15;

/// Tick labels on the day axis: about eight, whatever the range (one day or a year).
fn day_label(days: &[DayRow], index: f64) -> String {
    let i = index.round();
    if (index - i).abs() > 0.01 || i < 0.0 {
        return String::new();
    }
    days.get(i as usize)
        .map(|row| row.day.format("%m-%d").to_string())
        .unwrap_or_default()
}

fn y_top(max: i64) -> f64 {
    (max.max(1) as f64 * 1.25).ceil()
}

fn render(
    width: u32,
    height: u32,
    draw: impl FnOnce(DrawingArea<SVGBackend, plotters::coord::Shift>) -> Result<(), String>,
) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        if let Err(err) = root
            .fill(&WHITE)
            .map_err(|e| e.to_string())
            .and_then(|()| draw(root.clone()))
            .and_then(|()| root.present().map_err(|e| e.to_string()))
        {
            tracing::error!(error = %err, "cannot draw a chart");
        }
    }
    // Shrunk to fit a phone, the 12 px text would fall below 11 px: the chart keeps at least
    // 11/12 of its width (admin.css, by this class: the pages allow no inline style) and its
    // figure scrolls sideways instead.
    svg.replacen("<svg ", &format!("<svg class=\"chart-{width}\" "), 1)
}

type DayChart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// A chart with one slot per day along x (labelled about eight times, whatever the range)
/// and counts from 0 to a little above `max` along y.
fn day_chart<'a, 'b: 'a>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    days: &[DayRow],
    max: i64,
    y_labels: usize,
) -> Result<DayChart<'a, 'b>, String> {
    let n = days.len().max(1) as f64;
    let mut chart = ChartBuilder::on(root)
        .margin(12)
        .x_label_area_size(28)
        .y_label_area_size(48)
        .build_cartesian_2d(-0.5..n - 0.5, 0.0..y_top(max))
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(WHITE)
        .x_labels(days.len().clamp(1, 8))
        .x_label_formatter(&|x| day_label(days, *x))
        .y_labels(y_labels)
        .y_label_formatter(&|y| format!("{y:.0}"))
        .label_style((FONT, LABEL_SIZE))
        .draw()
        .map_err(|e| e.to_string())?;
    Ok(chart)
}

/// PV, UV and unique IPs per day, as lines told apart by colour and by marker (circle,
/// triangle, cross), each day's three values shown on hover. The legend is the page's, below
/// the chart, so that it never covers data.
pub fn daily_lines(days: &[DayRow]) -> String {
    let svg = render(WIDTH, HEIGHT, |root| {
        let max = days
            .iter()
            .map(|d| d.visits.pv.max(d.visits.uv).max(d.visits.ip))
            .max()
            .unwrap_or(0);
        let mut chart = day_chart(&root, days, max, 6)?;
        let points = |pick: fn(&DayRow) -> i64| -> Vec<(f64, f64)> {
            days.iter()
                .enumerate()
                .map(|(i, d)| (i as f64, pick(d) as f64))
                .collect()
        };
        let markers = days.len() <= 62;
        let pv = points(|d| d.visits.pv);
        chart
            .draw_series(LineSeries::new(pv.clone(), PV.stroke_width(2)))
            .map_err(|e| e.to_string())?;
        let uv = points(|d| d.visits.uv);
        chart
            .draw_series(LineSeries::new(uv.clone(), UV.stroke_width(2)))
            .map_err(|e| e.to_string())?;
        let ip = points(|d| d.visits.ip);
        chart
            .draw_series(LineSeries::new(ip.clone(), IP.stroke_width(2)))
            .map_err(|e| e.to_string())?;
        if markers {
            chart
                .draw_series(pv.into_iter().map(|p| Circle::new(p, 3, PV.filled())))
                .map_err(|e| e.to_string())?;
            chart
                .draw_series(
                    uv.into_iter()
                        .map(|p| TriangleMarker::new(p, 4, UV.filled())),
                )
                .map_err(|e| e.to_string())?;
            chart
                .draw_series(ip.into_iter().map(|p| Cross::new(p, 3, IP.stroke_width(2))))
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    });
    with_hover(svg, HEIGHT, days, |d| {
        format!(
            "{}: PV {}, UV {}, IP {}",
            d.day, d.visits.pv, d.visits.uv, d.visits.ip
        )
    })
}

const HEIGHT: u32 = 280;
const BARS_HEIGHT: u32 = 220;
/// Where [`day_chart`] puts the plot: its margin and label areas, in pixels.
const PLOT_LEFT: f64 = 12.0 + 48.0;
const PLOT_RIGHT: f64 = WIDTH as f64 - 12.0;
const PLOT_TOP: f64 = 12.0;

/// `text` as SVG text or an attribute's value.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Transparent bands over each day's slot, each with a `<title>`: the browser shows the day's
/// values when the pointer rests on it.
fn with_hover(
    svg: String,
    height: u32,
    days: &[DayRow],
    text: impl Fn(&DayRow) -> String,
) -> String {
    let plot_bottom = height as f64 - 12.0 - 28.0;
    let Some(end) = svg.rfind("</svg>") else {
        return svg;
    };
    let slot = (PLOT_RIGHT - PLOT_LEFT) / days.len().max(1) as f64;
    let mut bands = String::from("<g class=\"hover\">");
    for (i, day) in days.iter().enumerate() {
        let escaped = escape(&text(day));
        bands.push_str(&format!(
            "<rect x=\"{:.1}\" y=\"{PLOT_TOP}\" width=\"{slot:.1}\" height=\"{:.1}\" fill=\"#000\" fill-opacity=\"0\" pointer-events=\"all\"><title>{escaped}</title></rect>",
            PLOT_LEFT + i as f64 * slot,
            plot_bottom - PLOT_TOP,
        ));
    }
    bands.push_str("</g>");
    let mut out = svg;
    out.insert_str(end, &bands);
    out
}

/// Effective and ineffective redirects per day, stacked bars.
pub fn outcome_bars(days: &[DayRow], lang: crate::i18n::Lang) -> String {
    let svg = render(WIDTH, BARS_HEIGHT, |root| {
        let max = days.iter().map(|d| d.visits.requests()).max().unwrap_or(0);
        let mut chart = day_chart(&root, days, max, 5)?;
        let half = 0.4;
        chart
            .draw_series(days.iter().enumerate().map(|(i, d)| {
                let x = i as f64;
                Rectangle::new(
                    [(x - half, 0.0), (x + half, d.visits.effective as f64)],
                    GOOD.filled(),
                )
            }))
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(days.iter().enumerate().map(|(i, d)| {
                let x = i as f64;
                let base = d.visits.effective as f64;
                Rectangle::new(
                    [
                        (x - half, base),
                        (x + half, base + d.visits.ineffective as f64),
                    ],
                    BAD.filled(),
                )
            }))
            .map_err(|e| e.to_string())?;
        Ok(())
    });
    with_hover(svg, BARS_HEIGHT, days, |d| {
        lang.t(t!(
            "{day}: effective {effective}, ineffective {ineffective}"
        ))
        .replace("{day}", &d.day.to_string())
        .replace("{effective}", &d.visits.effective.to_string())
        .replace("{ineffective}", &d.visits.ineffective.to_string())
    })
}

/// Longest label drawn beside a bar; the table below the chart has the full value.
const LABEL_CHARS: usize = 22;

fn short(label: &str) -> String {
    if label.chars().count() <= LABEL_CHARS {
        return label.to_owned();
    }
    let mut cut: String = label.chars().take(LABEL_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// One horizontal bar per item, largest first, with its value at the end of the bar.
pub fn horizontal_bars(items: &[(String, i64)]) -> String {
    const MARGIN: u32 = 8;
    const AXIS: u32 = 20;
    const LABELS: u32 = 150;
    let rows = items.len().max(1);
    let height = 24 * rows as u32 + 2 * MARGIN + AXIS;
    render(WIDTH / 2, height, |root| {
        let (names, bars) = root.split_horizontally(LABELS);
        let plot_height = f64::from(height - 2 * MARGIN - AXIS);
        for (i, (label, _)) in items.iter().enumerate() {
            let y = f64::from(MARGIN) + (i as f64 + 0.5) * plot_height / rows as f64;
            let style = TextStyle::from((FONT, LABEL_SIZE).into_font())
                .pos(Pos::new(HPos::Right, VPos::Center));
            names
                .draw(&Text::new(
                    short(label),
                    (LABELS as i32 - 6, y as i32),
                    style,
                ))
                .map_err(|e| e.to_string())?;
        }
        let max = items.iter().map(|(_, v)| *v).max().unwrap_or(0);
        let mut chart = ChartBuilder::on(&bars)
            .margin(MARGIN)
            .x_label_area_size(AXIS)
            .build_cartesian_2d(0.0..y_top(max), rows as f64..0.0)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .disable_y_axis()
            .light_line_style(WHITE)
            .x_labels(4)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .label_style((FONT, LABEL_SIZE))
            .draw()
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(items.iter().enumerate().map(|(i, (_, v))| {
                let y = i as f64;
                Rectangle::new([(0.0, y + 0.15), (*v as f64, y + 0.85)], BAR.filled())
            }))
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(items.iter().enumerate().map(|(i, (_, v))| {
                let style = TextStyle::from((FONT, LABEL_SIZE).into_font())
                    .pos(Pos::new(HPos::Left, VPos::Center));
                Text::new(format!(" {v}"), (*v as f64, i as f64 + 0.5), style)
            }))
            .map_err(|e| e.to_string())?;
        Ok(())
    })
}

/// A 14-day sparkline: a small line of daily values, with each day's value on hover.
pub fn sparkline(values: &[i64], label: &str, lang: crate::i18n::Lang) -> String {
    const WIDTH: f64 = 84.0;
    const HEIGHT: f64 = 20.0;
    let max = values.iter().copied().max().unwrap_or(0).max(1) as f64;
    let step = WIDTH / (values.len().max(2) - 1) as f64;
    let points: Vec<String> = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            format!(
                "{:.1},{:.1}",
                i as f64 * step,
                HEIGHT - 1.0 - (*v as f64 / max) * (HEIGHT - 2.0)
            )
        })
        .collect();
    let total: i64 = values.iter().sum();
    let escaped = escape(label);
    format!(
        "<svg class=\"spark\" width=\"{WIDTH}\" height=\"{HEIGHT}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" role=\"img\" aria-label=\"{escaped}: {}\"><title>{escaped}: {}</title><polyline fill=\"none\" stroke=\"currentColor\" stroke-width=\"1.5\" points=\"{}\"/></svg>",
        lang.f(t!("{} views in 14 days"), total),
        values
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        points.join(" ")
    )
}

/// Page views by hour of the day, 24 bars, each hour's numbers on hover.
pub fn hour_bars(hours: &[crate::stats::report::Share]) -> String {
    const HEIGHT: u32 = 200;
    let max = hours.iter().map(|h| h.pv).max().unwrap_or(0);
    let svg = render(WIDTH, HEIGHT, |root| {
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(28)
            .y_label_area_size(48)
            .build_cartesian_2d(-0.5..23.5, 0.0..y_top(max))
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(WHITE)
            .x_labels(12)
            .x_label_formatter(&|x: &f64| format!("{:02}", x.round() as i64))
            .y_labels(5)
            .y_label_formatter(&|y: &f64| format!("{y:.0}"))
            .label_style((FONT, LABEL_SIZE))
            .draw()
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(hours.iter().enumerate().map(|(i, h)| {
                let x = i as f64;
                Rectangle::new([(x - 0.4, 0.0), (x + 0.4, h.pv as f64)], BAR.filled())
            }))
            .map_err(|e| e.to_string())?;
        Ok(())
    });
    let Some(end) = svg.rfind("</svg>") else {
        return svg;
    };
    let slot = (PLOT_RIGHT - PLOT_LEFT) / 24.0;
    let bottom = HEIGHT as f64 - 12.0 - 28.0;
    let mut bands = String::from("<g class=\"hover\">");
    for (i, h) in hours.iter().enumerate() {
        bands.push_str(&format!(
            "<rect x=\"{:.1}\" y=\"{PLOT_TOP}\" width=\"{slot:.1}\" height=\"{:.1}\" fill=\"#000\" fill-opacity=\"0\" pointer-events=\"all\"><title>{}:00: PV {}, UV {}</title></rect>",
            PLOT_LEFT + i as f64 * slot,
            bottom - PLOT_TOP,
            h.value,
            h.pv,
            h.uv
        ));
    }
    bands.push_str("</g>");
    let mut out = svg;
    out.insert_str(end, &bands);
    out
}
