//! The tour's pictures: PNG files under `target/posenc-tour/` (or `$CARGO_TARGET_DIR/…`).
//!
//! Drawn with `plotters` (a dev-dependency of the examples only) on its bitmap backend. Text
//! uses the DejaVu Sans font embedded below and `plotters`' `ab_glyph` renderer, so nothing
//! looks for system fonts: it runs the same on a bare CI machine (no fontconfig).

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};
use posenc::{Layout, Rope, RopeConfig, Scaling, Sinusoidal, SinusoidalLayout, Yarn};
use std::error::Error;
use std::path::{Path, PathBuf};

type Res<T> = Result<T, Box<dyn Error>>;
type Area<'a> = DrawingArea<BitMapBackend<'a>, Shift>;

/// DejaVu Sans 2.37; license in benches/examples/assets/DejaVuSans-LICENSE.txt.
const FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
const SANS: &str = "sans-serif";

const TITLE: u32 = 34;
const CAPTION: u32 = 26;
const AXIS: u32 = 24;
const TICKS: u32 = 20;
const LEGEND: u32 = 21;

/// Colour-blind-safe line colours (Okabe–Ito).
const COLORS: [RGBColor; 6] = [
    RGBColor(0, 114, 178),   // blue
    RGBColor(213, 94, 0),    // vermillion
    RGBColor(0, 158, 115),   // bluish green
    RGBColor(204, 121, 167), // reddish purple
    RGBColor(230, 159, 0),   // orange
    RGBColor(86, 180, 233),  // sky blue
];
const GRAY: RGBColor = RGBColor(90, 90, 90);

/// Writes every picture and returns `(path, what it shows)` for each.
pub fn write_all(rope: &Rope) -> Res<Vec<(PathBuf, &'static str)>> {
    register_font(SANS, FontStyle::Normal, FONT).map_err(|_| "the embedded font is invalid")?;
    let dir = out_dir();
    std::fs::create_dir_all(&dir)?;
    let mut written = Vec::new();
    let mut out = |name: &str, what: &'static str, draw: fn(&Path, &Rope) -> Res<()>| -> Res<()> {
        let path = dir.join(name);
        draw(&path, rope)?;
        written.push((path, what));
        Ok(())
    };
    out(
        "sinusoidal.png",
        "sinusoidal table (256 positions × d_model 128) and 5 of its dims",
        sinusoidal,
    )?;
    out(
        "rope_decay.png",
        "RoPE long-distance decay bound vs distance, 5 frequency sets",
        rope_decay,
    )?;
    out(
        "angle_error.png",
        "cos/sin error vs position: posenc vs the f32 product",
        angle_error,
    )?;
    Ok(written)
}

/// `$CARGO_TARGET_DIR/posenc-tour` when that is set, else `target/posenc-tour` in the
/// workspace (this package is `benches/` inside it).
fn out_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
        .join("posenc-tour")
}

fn font(size: u32) -> TextStyle<'static> {
    (SANS, size).into_font().into()
}

// ----------------------------------------------------------------------------------------
// 1. The sinusoidal table.

const SIN_POSITIONS: usize = 256;
const SIN_D: usize = 128;
/// The dims drawn as waveforms: the sin/cos pair of the fastest frequency (ω = 1), then ever
/// slower sin dims, over the first positions (the box drawn on the heatmap).
const SIN_DIMS: [usize; 5] = [0, 1, 16, 32, 48];
const SIN_ZOOM: usize = 64;

fn sinusoidal(path: &Path, _: &Rope) -> Res<()> {
    let pe = Sinusoidal::new(SIN_D, 10_000.0, SinusoidalLayout::Interleaved)?;
    let mut table = vec![0f32; SIN_POSITIONS * SIN_D];
    pe.fill(&mut table, 0)?;
    let at = |p: usize, d: usize| table[p * SIN_D + d];

    let root = canvas(
        path,
        (1700, 1150),
        "Sinusoidal positional encoding: d_model 128, base 10000, interleaved (sin, cos, sin, …)",
    )?;
    let (top, bottom) = root.split_vertically(680);
    // Both panels: plot on the left, a 320 px side strip (colour bar / legend) on the right,
    // the same label areas, so their position axes line up.
    let (heat, bar) = top.split_horizontally(1700 - 320);
    let (waves, key) = bottom.split_horizontally(1700 - 320);

    // Heatmap: x = position, y = dim.
    let mut chart = ChartBuilder::on(&heat)
        .caption(
            "PE[p, d] = sin(p·ωᵢ) at d = 2i, cos(p·ωᵢ) at d = 2i+1, ωᵢ = 10000^(−2i/128)",
            font(CAPTION),
        )
        .margin(16)
        .x_label_area_size(60)
        .y_label_area_size(90)
        .build_cartesian_2d(0i32..SIN_POSITIONS as i32, 0i32..SIN_D as i32)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc("position p")
        .y_desc("dimension d")
        .axis_desc_style(font(AXIS))
        .label_style(font(TICKS))
        .x_labels(9)
        .y_labels(9)
        .draw()?;
    chart.draw_series((0..SIN_POSITIONS).flat_map(|p| {
        let at = &at;
        (0..SIN_D).map(move |d| {
            let (x, y) = (p as i32, d as i32);
            Rectangle::new([(x, y), (x + 1, y + 1)], diverging(at(p, d)).filled())
        })
    }))?;
    // The positions the lower panel zooms into.
    chart.draw_series(std::iter::once(Rectangle::new(
        [(0, 0), (SIN_ZOOM as i32, SIN_D as i32)],
        BLACK.stroke_width(3),
    )))?;

    colour_bar(&bar)?;

    // Waveforms of a few dims over the same positions.
    let mut chart = ChartBuilder::on(&waves)
        .caption(
            format!("Some dims of the table, positions 0..{SIN_ZOOM} (the box above); dots = table entries"),
            font(CAPTION),
        )
        .margin(16)
        .x_label_area_size(60)
        .y_label_area_size(90)
        .build_cartesian_2d(-0.5f64..SIN_ZOOM as f64 + 0.5, -1.1f64..1.1)?;
    chart
        .configure_mesh()
        .x_desc("position p")
        .y_desc("PE[p, d]")
        .axis_desc_style(font(AXIS))
        .label_style(font(TICKS))
        .x_labels(9)
        .y_labels(5)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| signed(*v))
        .light_line_style(WHITE)
        .draw()?;
    let mut entries = Vec::new();
    for (k, &d) in SIN_DIMS.iter().enumerate() {
        let color = COLORS[k];
        let w = 10_000f64.powf(-((d / 2 * 2) as f64) / SIN_D as f64);
        let points = (0..=SIN_ZOOM).map(|p| (p as f64, at(p, d) as f64));
        chart.draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?;
        chart.draw_series(points.map(|xy| Circle::new(xy, 4, color.filled())))?;
        let f = if d % 2 == 0 { "sin" } else { "cos" };
        entries.push((format!("d = {d}: {f}({} p)", short(w)), color));
    }
    side_legend(&key, "dims shown", &entries)?;

    root.present()?;
    Ok(())
}

/// Blue (−1) → white (0) → red (+1), ColorBrewer RdBu end points.
fn diverging(v: f32) -> RGBColor {
    let v = v.clamp(-1.0, 1.0) as f64;
    let (end, t) = if v < 0.0 {
        ((33.0, 102.0, 172.0), -v)
    } else {
        ((178.0, 24.0, 43.0), v)
    };
    let mid = (247.0, 247.0, 247.0);
    let mix = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    RGBColor(mix(mid.0, end.0), mix(mid.1, end.1), mix(mid.2, end.2))
}

fn colour_bar(area: &Area) -> Res<()> {
    // Same top/bottom margins as the heatmap, so the bar spans its height.
    let mut chart = ChartBuilder::on(area)
        .margin_top(16 + CAPTION + 16)
        .margin_bottom(16)
        .margin_left(20)
        .margin_right(200)
        .x_label_area_size(60)
        .right_y_label_area_size(60)
        .build_cartesian_2d(0f64..1.0, -1f64..1.0)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .y_labels(5)
        .label_style(font(TICKS))
        .y_label_formatter(&|v| signed(*v))
        .draw()?;
    const STEPS: usize = 200;
    chart.draw_series((0..STEPS).map(|i| {
        let lo = -1.0 + 2.0 * i as f64 / STEPS as f64;
        let hi = lo + 2.0 / STEPS as f64;
        let c = diverging(((lo + hi) / 2.0) as f32);
        Rectangle::new([(0.0, lo), (1.0, hi)], c.filled())
    }))?;
    Ok(())
}

/// `+0.5`, `0`, `−0.5` (a real minus sign).
fn signed(v: f64) -> String {
    let s = format!("{:.1}", v.abs());
    let s = s.trim_end_matches(".0");
    match v {
        v if v.abs() < 1e-9 => "0".to_string(),
        v if v < 0.0 => format!("−{s}"),
        _ => format!("+{s}"),
    }
}

/// A legend in its own area beside a plot: a heading, then a line sample and text per entry.
fn side_legend(area: &Area, heading: &str, entries: &[(String, RGBColor)]) -> Res<()> {
    let (x0, mut y) = (20, 90);
    area.draw(&Text::new(heading.to_string(), (x0, y), font(LEGEND)))?;
    y += 44;
    for (text, color) in entries {
        let mid = y + LEGEND as i32 / 2;
        area.draw(&PathElement::new(
            vec![(x0, mid), (x0 + 40, mid)],
            color.stroke_width(4),
        ))?;
        area.draw(&Text::new(text.clone(), (x0 + 52, y), font(LEGEND)))?;
        y += 38;
    }
    Ok(())
}

/// Three significant digits without an exponent (the frequencies shown are 1 .. 0.01).
fn short(w: f64) -> String {
    let decimals = (2 - w.log10().floor() as i32).max(0) as usize;
    let s = format!("{w:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A note of one or more lines in a chart's plotting area, its top-left at data point `at`.
fn note<X: Ranged, Y: Ranged>(
    chart: &ChartContext<BitMapBackend, Cartesian2d<X, Y>>,
    at: (X::ValueType, Y::ValueType),
    lines: &[&str],
) -> Res<()> {
    let area = chart.plotting_area();
    let (x, y) = area.map_coordinate(&at);
    let (x0, y0) = area.get_base_pixel();
    let area = area.strip_coord_spec();
    for (i, line) in lines.iter().enumerate() {
        let at = (x - x0, y - y0 + i as i32 * (LEGEND as i32 + 8));
        area.draw(&Text::new(line.to_string(), at, font(LEGEND).color(&GRAY)))?;
    }
    Ok(())
}

/// A white canvas of `size` at `path`, with `title` on top.
fn canvas<'a>(path: &'a Path, size: (u32, u32), title: &str) -> Res<Area<'a>> {
    let root = BitMapBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE)?;
    Ok(root.margin(12, 0, 0, 0).titled(title, font(TITLE))?)
}

// ----------------------------------------------------------------------------------------
// 2. RoPE's long-distance decay.

const DECAY_DIM: usize = 128;
const DECAY_MAX: f64 = 1e6;
const DECAY_POINTS: usize = 6000;
/// The thick lines: a running mean over ±0.05 decade of distance (the faint lines are the
/// bound itself, which oscillates fast once the fast pairs decorrelate).
const DECAY_SMOOTH: usize = DECAY_POINTS / 120;

fn rope_decay(path: &Path, _: &Rope) -> Res<()> {
    let plain = |base| RopeConfig::new(DECAY_DIM, base, Layout::RotateHalf);
    let llama3 = Scaling::Llama3 {
        factor: 8.0,
        low_freq_factor: 1.0,
        high_freq_factor: 4.0,
        original_max_positions: 8192,
    };
    let yarn = Scaling::Yarn(Yarn::new(4.0, 32_768));
    let configs = [
        ("base 1e4 (RoFormer, Llama 2)", plain(1e4)),
        ("base 5e5 (Llama 3)", plain(5e5)),
        (
            "base 5e5 + llama3 scaling 8× from 8192 (Llama 3.1)",
            plain(5e5).scaling(llama3),
        ),
        ("base 1e6 (Qwen2.5)", plain(1e6)),
        (
            "base 1e6 + YaRN 4× from 32768 (Qwen2.5 long)",
            plain(1e6).scaling(yarn),
        ),
    ];
    // Log-spaced relative distances 1 .. 1e6.
    let distances: Vec<f64> = (0..DECAY_POINTS)
        .map(|i| DECAY_MAX.powf(i as f64 / (DECAY_POINTS - 1) as f64))
        .collect();
    let mut curves = Vec::new();
    for (label, cfg) in &configs {
        let rope = Rope::new(cfg)?;
        let w = rope.inv_freq();
        let raw: Vec<f64> = distances.iter().map(|&m| decay_bound(w, m)).collect();
        let mean: Vec<f64> = (0..raw.len())
            .map(|i| {
                let window =
                    &raw[i.saturating_sub(DECAY_SMOOTH)..(i + DECAY_SMOOTH + 1).min(raw.len())];
                window.iter().sum::<f64>() / window.len() as f64
            })
            .collect();
        curves.push((*label, raw, mean));
    }
    let top = curves
        .iter()
        .flat_map(|(_, raw, _)| raw.iter().copied())
        .fold(0.0f64, f64::max);

    let root = canvas(
        path,
        (1600, 950),
        "RoPE long-distance decay (RoFormer §3.4.3), head_dim 128",
    )?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "upper bound (1/(d/2))·Σⱼ |Sⱼ|, Sⱼ = Σ over k < j of exp(i·m·θₖ), θ = Rope::inv_freq() of each config",
            font(CAPTION),
        )
        .margin(24)
        .x_label_area_size(75)
        .y_label_area_size(95)
        .build_cartesian_2d(
            (1f64..DECAY_MAX).log_scale(),
            0f64..(top * 1.05).ceil(),
        )?;
    chart
        .configure_mesh()
        .x_desc("relative distance m (tokens, log scale)")
        .y_desc("(1/(d/2))·Σⱼ |Sⱼ|   (relative upper bound)")
        .axis_desc_style(font(AXIS))
        .label_style(font(TICKS))
        .x_labels(7)
        .x_label_formatter(&|v| pow10(*v))
        .y_labels(8)
        .y_label_formatter(&|v| format!("{v:.0}"))
        .light_line_style(WHITE)
        .draw()?;
    // Faint raw curves first, so every thick mean is drawn over all of them. Width 1: plotters
    // draws wide polylines with mitred joins, which spike at the raw curve's sharp turns.
    for (k, (_, raw, _)) in curves.iter().enumerate() {
        let points = distances.iter().copied().zip(raw.iter().copied());
        chart.draw_series(LineSeries::new(points, COLORS[k].mix(0.3).stroke_width(1)))?;
    }
    for (k, (label, _, mean)) in curves.iter().enumerate() {
        let color = COLORS[k];
        let points = distances.iter().copied().zip(mean.iter().copied());
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(3)))?
            .label(*label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 36, y)], color.stroke_width(4))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .margin(16)
        .legend_area_size(50)
        .label_font(font(LEGEND))
        .background_style(WHITE.mix(0.9))
        .border_style(GRAY)
        .draw()?;
    // The empty lower left of the plot (short distances, small values).
    note(
        &chart,
        (1.15, 3.8),
        &[
            "thick: running mean over ±0.05 decade of m;  faint: the bound at each m",
            "(YaRN's attention factor 1.139 scales every score alike: not part of the bound)",
        ],
    )?;
    root.present()?;
    Ok(())
}

/// RoFormer §3.4.3: with h_j = q_j·k̄_j (complex pairs) and S_j = Σ_{k<j} e^{i m θ_k},
/// |Σ_j h_j e^{i m θ_j}| ≤ max_j |h_{j+1} − h_j| · Σ_{j=1}^{d/2} |S_j|; this is that sum
/// divided by d/2, for the f32 frequencies `w` (widened; angles in f64).
fn decay_bound(w: &[f32], m: f64) -> f64 {
    let (mut re, mut im, mut sum) = (0.0f64, 0.0f64, 0.0f64);
    for &wk in w {
        let (s, c) = (m * wk as f64).sin_cos();
        re += c;
        im += s;
        sum += re.hypot(im);
    }
    sum / w.len() as f64
}

/// "10ⁿ" at powers of ten, nothing elsewhere (the light grid lines of a log axis).
fn pow10(v: f64) -> String {
    let e = v.log10().round();
    if (v / 10f64.powf(e) - 1.0).abs() > 1e-9 {
        return String::new();
    }
    const SUP: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    let digits: String = (e.abs() as u32)
        .to_string()
        .chars()
        .map(|c| SUP[c.to_digit(10).unwrap() as usize])
        .collect();
    format!("10{}{digits}", if e < 0.0 { "⁻" } else { "" })
}

// ----------------------------------------------------------------------------------------
// 3. cos/sin error vs position.

const ERR_MAX_POS: f64 = 16_777_216.0; // 2^24
const ERR_POINTS: usize = 4000;
/// Errors below this are drawn at it (a log axis has no 0).
const ERR_FLOOR: f64 = 1e-9;

fn angle_error(path: &Path, rope: &Rope) -> Res<()> {
    // Log-spaced integer positions 1 ..= 2^24, without repeats.
    let mut positions: Vec<i32> = (0..ERR_POINTS)
        .map(|i| ERR_MAX_POS.powf(i as f64 / (ERR_POINTS - 1) as f64).round() as i32)
        .collect();
    positions.dedup();
    let w = rope.inv_freq();
    let n = positions.len() * w.len();
    let (mut cos, mut sin) = (vec![0f32; n], vec![0f32; n]);
    rope.fill_cos_sin(&positions, &mut cos, &mut sin)?;
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for (t, &p) in positions.iter().enumerate() {
        let (mut o, mut f) = (0.0f64, 0.0f64);
        for (i, &wi) in w.iter().enumerate() {
            let exact = p as f64 * wi as f64; // exact in f64 for |p| < 2^29
            let (s64, c64) = exact.sin_cos();
            let at = t * w.len() + i;
            o = o
                .max((cos[at] as f64 - c64).abs())
                .max((sin[at] as f64 - s64).abs());
            let a32 = p as f32 * wi;
            f = f
                .max((a32.cos() as f64 - c64).abs())
                .max((a32.sin() as f64 - s64).abs());
        }
        let x = p as f64;
        ours.push((x, o.max(ERR_FLOOR)));
        theirs.push((x, f.max(ERR_FLOOR)));
    }

    let root = canvas(
        path,
        (1600, 950),
        "cos/sin error vs position: Llama-3 inv_freq (64 pairs, rope_theta 500000)",
    )?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "{} log-spaced positions 1 … 2²⁴; reference: sin/cos(p·ω) in f64 with the f32 ω widened",
                positions.len()
            ),
            font(CAPTION),
        )
        .margin(24)
        .x_label_area_size(75)
        .y_label_area_size(95)
        .build_cartesian_2d(
            (1f64..ERR_MAX_POS).log_scale(),
            // A hair below the floor, so its tick label is drawn.
            (0.99 * ERR_FLOOR..10.0).log_scale(),
        )?;
    chart
        .configure_mesh()
        .x_desc("position p (log scale)")
        .y_desc("max over the 64 frequencies of |error| vs f64")
        .axis_desc_style(font(AXIS))
        .label_style(font(TICKS))
        .x_labels(8)
        .x_label_formatter(&|v| pow10(*v))
        .y_labels(12)
        .y_label_formatter(&|v| pow10(*v))
        .light_line_style(WHITE)
        .draw()?;
    let bound = 2.4e-7;
    chart
        .draw_series(DashedLineSeries::new(
            [(1.0, bound), (ERR_MAX_POS, bound)],
            10,
            6,
            GRAY.stroke_width(2),
        ))?
        .label("contract: ≤ 2.4e-7 (2 ulp of 1) for |p| < 2²⁴")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 36, y)], GRAY.stroke_width(3)));
    let series = [
        (
            &theirs,
            COLORS[1],
            "f32 product cos/sin(f32(p)·ω) in f32, as most runtimes (≈ its angle error)",
        ),
        (
            &ours,
            COLORS[0],
            "posenc fill_cos_sin: exact angle p·ω, reduced in f64",
        ),
    ];
    for (data, color, label) in series {
        // Width 1: plotters draws wide polylines with mitred joins, which spike at sharp turns.
        chart
            .draw_series(LineSeries::new(data.iter().copied(), color.stroke_width(1)))?
            .label(label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 36, y)], color.stroke_width(4))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .margin(16)
        .legend_area_size(50)
        .label_font(font(LEGEND))
        .background_style(WHITE.mix(0.9))
        .border_style(GRAY)
        .draw()?;
    // The empty upper left (the f32 product is still accurate at small positions).
    note(
        &chart,
        (1.3, 3.0),
        &[
            "f32 product: rounding p·ω to f32 costs up to 2⁻²⁴·p·ω ≈ 6e-8·p·ω rad;",
            "its dips are positions p = 2ᵏ, where f32(p)·ω is exact.",
            "posenc: within 2.4e-7 for every |p| < 2²⁴ (its contract; p·ω formed and reduced in f64).",
        ],
    )?;
    root.present()?;
    Ok(())
}
