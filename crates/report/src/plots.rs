//! Drawing figures with plotters, as PNG and SVG.
//!
//! PNG text is rasterised with ab_glyph from a TrueType font read at run time (`SLEUTH_FONT`, else
//! DejaVu Sans or Liberation Sans where Debian, Fedora, Arch or macOS put them): no system font
//! library is linked and no font ships in the repository. Without a font the PNGs are skipped with a
//! message and the SVGs are still written, because an SVG names its font and lets the viewer draw the
//! text: [`FontlessSvg`] measures labels with a fixed per-character width instead of a font, which
//! also makes the SVG the same on every machine.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind,
};

use super::figures::{Figure, Style, XAxis};
use super::ReportError;

/// Where fonts are looked for, in order, after `SLEUTH_FONT`.
const FONT_PATHS: [&str; 6] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/System/Library/Fonts/Supplemental/Arial.ttf",
];

/// The family every text in the plots uses; the loaded font is registered under it.
const FAMILY: &str = "sans-serif";

/// Finds and registers a font once per process: `Ok(path)` of the font in use, or why there is none.
pub fn font() -> Result<&'static Path, &'static str> {
    static FONT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    FONT.get_or_init(load_font)
        .as_ref()
        .map(PathBuf::as_path)
        .map_err(String::as_str)
}

fn load_font() -> Result<PathBuf, String> {
    let configured = std::env::var_os("SLEUTH_FONT").map(PathBuf::from);
    let candidates: Vec<PathBuf> = configured
        .iter()
        .cloned()
        .chain(FONT_PATHS.iter().map(PathBuf::from))
        .collect();
    first_font(&candidates).ok_or_else(|| match configured {
        Some(p) => format!(
            "SLEUTH_FONT={} is not a readable TrueType font, and no system font was found",
            p.display()
        ),
        None => format!(
            "no TrueType font found (looked for {}; install Debian's fonts-dejavu-core, e.g. with \
             scripts/ensure-fonts.sh, or set SLEUTH_FONT to a .ttf file)",
            FONT_PATHS[0]
        ),
    })
}

/// Registers the first of `candidates` that reads and parses as a font; its path.
fn first_font(candidates: &[PathBuf]) -> Option<PathBuf> {
    candidates.iter().find_map(|path| {
        let bytes = std::fs::read(path).ok()?;
        // plotters keeps fonts for the life of the process; this runs once per candidate at most, so
        // the leak is bounded.
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        plotters::style::register_font(FAMILY, FontStyle::Normal, bytes).ok()?;
        Some(path.clone())
    })
}

/// What drawing one figure produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub svg_path: PathBuf,
    /// The SVG document, for inlining in the HTML report.
    pub svg: String,
    /// `None` when PNGs cannot be drawn here (no font).
    pub png_path: Option<PathBuf>,
}

/// Draws `fig` into `dir` as `<id>.svg` and, when a font is available, `<id>.png`.
pub fn render(fig: &Figure, dir: &Path) -> Result<Rendered, ReportError> {
    let size = canvas_size(fig);
    let svg_path = dir.join(format!("{}.svg", fig.id));
    let mut svg = String::new();
    {
        let root = FontlessSvg(SVGBackend::with_string(&mut svg, size)).into_drawing_area();
        draw_all(&root, fig).map_err(|message| ReportError::Plot {
            path: svg_path.clone(),
            message,
        })?;
    }
    std::fs::write(&svg_path, &svg).map_err(|source| ReportError::Write {
        path: svg_path.clone(),
        source,
    })?;
    let png_path = if font().is_ok() {
        let path = dir.join(format!("{}.png", fig.id));
        // Drawn into memory and encoded with `png`: plotters' own file output would bring the whole
        // `image` crate into the build for one encoder (docs/benchmarks.md, *Build*).
        let mut rgb = vec![0u8; size.0 as usize * size.1 as usize * 3];
        {
            let root = BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area();
            draw_all(&root, fig).map_err(|message| ReportError::Plot {
                path: path.clone(),
                message,
            })?;
        }
        write_png(&path, size, &rgb)?;
        Some(path)
    } else {
        None
    };
    Ok(Rendered {
        svg_path,
        svg,
        png_path,
    })
}

/// Writes an 8-bit RGB image as a PNG file.
fn write_png(path: &Path, (w, h): (u32, u32), rgb: &[u8]) -> Result<(), ReportError> {
    let plot_err = |e: png::EncodingError| ReportError::Plot {
        path: path.to_path_buf(),
        message: format!("encoding the PNG: {e}"),
    };
    let mut bytes = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut bytes, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut writer = enc.write_header().map_err(plot_err)?;
        writer.write_image_data(rgb).map_err(plot_err)?;
    }
    std::fs::write(path, &bytes).map_err(|source| ReportError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// Pixels per character of label text at the sizes used here, for laying out before drawing.
const CHAR_PX: u32 = 8;
/// Longest category or legend label drawn; longer ones are cut with "…".
const MAX_LABEL: usize = 44;

fn legend_width(fig: &Figure) -> u32 {
    let longest = fig
        .series
        .iter()
        .map(|s| s.name.chars().count().min(MAX_LABEL))
        .max()
        .unwrap_or(0) as u32;
    (longest * CHAR_PX + 56).clamp(140, 420)
}

fn canvas_size(fig: &Figure) -> (u32, u32) {
    let plot = match &fig.x {
        XAxis::Categories(names) => {
            let longest = names
                .iter()
                .map(|n| n.chars().count().min(MAX_LABEL))
                .max()
                .unwrap_or(0) as u32;
            let per = (longest * CHAR_PX + 24).max(120);
            (per * names.len() as u32 + 100).max(640)
        }
        XAxis::Numeric => 760,
    };
    (plot + legend_width(fig), 520)
}

fn shorten(s: &str) -> String {
    if s.chars().count() <= MAX_LABEL {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(MAX_LABEL - 1).collect();
        t.push('…');
        t
    }
}

/// Colour of the i-th series (matplotlib's default cycle, which most readers know).
fn colour(i: usize) -> RGBColor {
    const PALETTE: [RGBColor; 10] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
        RGBColor(188, 189, 34),
        RGBColor(23, 190, 207),
    ];
    PALETTE[i % PALETTE.len()]
}

fn draw_all<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, fig: &Figure) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(e)?;
    let (w, _) = root.dim_in_pixel();
    let (plot, legend) = root.split_horizontally(w - legend_width(fig));
    draw_chart(&plot, fig).map_err(e)?;
    draw_legend(&legend, fig).map_err(e)?;
    root.present().map_err(e)
}

/// The legend, drawn by hand: plotters' own legend measures text with the font even for SVG.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    fig: &Figure,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let style = TextStyle::from((FAMILY, 15).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    for (i, s) in fig.series.iter().enumerate() {
        let y = 60 + 26 * i as i32;
        area.draw(&Rectangle::new(
            [(8, y - 7), (22, y + 7)],
            colour(i).filled(),
        ))?;
        area.draw(&Text::new(shorten(&s.name), (30, y), style.clone()))?;
    }
    Ok(())
}

fn draw_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    fig: &Figure,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let (x0, x1, keys) = x_range(fig);
    let categories = match &fig.x {
        XAxis::Categories(names) => names.clone(),
        XAxis::Numeric => Vec::new(),
    };
    let x_fmt = |x: &f64| -> String {
        if categories.is_empty() {
            if (x - x.round()).abs() < 1e-9 {
                format!("{x:.0}")
            } else {
                format!("{x:.2}")
            }
        } else {
            let i = x.round();
            if i >= 0.0 && (x - i).abs() < 1e-9 {
                categories
                    .get(i as usize)
                    .map(|s| shorten(s))
                    .unwrap_or_default()
            } else {
                String::new()
            }
        }
    };
    // Lines zoom in on their data (a CIC curve near 5% would hug the axis on 0-100); bars keep the
    // full scale so rates compare at a glance.
    let y_top = if fig.style == Style::Bars {
        fig.y_max * 1.08
    } else {
        let highest = fig
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.value.high.max(p.value.estimate)))
            .fold(0.0, f64::max);
        nice_ceiling(highest * 1.1).clamp(fig.y_max * 0.1, fig.y_max)
    };
    // As many decimals as a tenth of the axis needs: 0-20 → "8", 0-1 → "0.8", 0-0.25 → "0.05".
    let decimals = (-(y_top / 10.0).log10().floor()).max(0.0) as usize;
    let y_fmt = |y: &f64| -> String { format!("{y:.decimals$}") };
    let mut chart = ChartBuilder::on(area)
        .caption(&fig.title, (FAMILY, 20))
        .margin(14)
        .x_label_area_size(48)
        .y_label_area_size(60)
        .build_cartesian_2d(
            Ticked {
                lo: x0,
                hi: x1,
                keys,
            },
            0f64..y_top,
        )?;
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(fig.x_label.as_str())
        .y_desc(fig.y_label.as_str())
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .label_style((FAMILY, 14))
        .axis_desc_style((FAMILY, 15))
        .bold_line_style(RGBColor(225, 225, 225))
        .max_light_lines(0);
    if fig.style == Style::Bars {
        mesh.disable_x_mesh();
    }
    mesh.draw()?;
    let cap = (x1 - x0) * 0.008;
    let value_style =
        TextStyle::from((FAMILY, 13).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
    let groups = fig.series.len().max(1) as f64;
    for (i, s) in fig.series.iter().enumerate() {
        let c = colour(i);
        match fig.style {
            Style::Lines => {
                // Series side by side by a hair, so whiskers at the same x do not hide each other.
                let dodge = (i as f64 - (groups - 1.0) / 2.0) * (x1 - x0) * 0.006;
                let points: Vec<(f64, f64, f64, f64)> = s
                    .points
                    .iter()
                    .map(|p| (p.x + dodge, p.value.estimate, p.value.low, p.value.high))
                    .collect();
                chart.draw_series(LineSeries::new(
                    points.iter().map(|&(x, y, _, _)| (x, y)),
                    Color::stroke_width(&c, 2),
                ))?;
                chart.draw_series(
                    points
                        .iter()
                        .map(|&(x, y, _, _)| Circle::new((x, y), 4, c.filled())),
                )?;
                for &(x, _, low, high) in &points {
                    whisker(&mut chart, x, low, high, cap, c)?;
                }
            }
            Style::Bars => {
                let width = 0.8 / groups;
                for p in &s.points {
                    let left = p.x - 0.4 + width * i as f64;
                    chart.draw_series(std::iter::once(Rectangle::new(
                        [(left, 0.0), (left + width * 0.92, p.value.estimate)],
                        c.filled(),
                    )))?;
                    let mid = left + width * 0.46;
                    whisker(&mut chart, mid, p.value.low, p.value.high, cap, BLACK)?;
                    // The value over the bar: a zero-height bar is otherwise invisible.
                    let top = p.value.high.max(p.value.estimate) + fig.y_max * 0.01;
                    chart.draw_series(std::iter::once(Text::new(
                        format!("{:.2}", p.value.estimate),
                        (mid, top),
                        value_style.clone(),
                    )))?;
                }
            }
        }
    }
    Ok(())
}

type Chart<'a, DB> =
    ChartContext<'a, DB, Cartesian2d<Ticked, plotters::coord::types::RangedCoordf64>>;

/// A linear f64 axis with ticks exactly where we say: at every category, or at every x that has data
/// (rounds, iterations), never at 2.5 rounds.
struct Ticked {
    lo: f64,
    hi: f64,
    keys: Vec<f64>,
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let t = (value - self.lo) / (self.hi - self.lo);
        limit.0 + (f64::from(limit.1 - limit.0) * t).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, _hint: H) -> Vec<f64> {
        self.keys.clone()
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

/// A vertical interval bar with caps; nothing for a degenerate interval.
fn whisker<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    x: f64,
    low: f64,
    high: f64,
    cap: f64,
    c: RGBColor,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    if high - low <= 0.0 {
        return Ok(());
    }
    let style = Color::stroke_width(&c, 1);
    chart.draw_series([
        PathElement::new(vec![(x, low), (x, high)], style),
        PathElement::new(vec![(x - cap, low), (x + cap, low)], style),
        PathElement::new(vec![(x - cap, high), (x + cap, high)], style),
    ])?;
    Ok(())
}

/// The smallest 1, 2, 2.5 or 5 × 10^k at or above `v` (for an axis top).
fn nice_ceiling(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 0.0;
    }
    let magnitude = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|&c| c >= v - 1e-12)
        .unwrap_or(10.0 * magnitude)
}

/// The x range with half a step of room at each end, and the ticks: every category, or every distinct
/// x (thinned to at most 20).
fn x_range(fig: &Figure) -> (f64, f64, Vec<f64>) {
    if let XAxis::Categories(names) = &fig.x {
        let n = names.len().max(1);
        return (-0.5, n as f64 - 0.5, (0..n).map(|i| i as f64).collect());
    }
    let mut xs: Vec<f64> = fig
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.x))
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let (lo, hi) = match (xs.first(), xs.last()) {
        (Some(&lo), Some(&hi)) => (lo, hi),
        _ => (0.0, 1.0),
    };
    let pad = if hi > lo { 0.5 } else { 1.0 };
    let step = xs.len().div_ceil(20).max(1);
    let keys = xs.iter().step_by(step).copied().collect();
    (lo - pad, hi + pad, keys)
}

/// The SVG backend with text measured from its length rather than a font (see the module docs).
struct FontlessSvg<'a>(SVGBackend<'a>);

impl DrawingBackend for FontlessSvg<'_> {
    type ErrorType = <SVGBackend<'static> as DrawingBackend>::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.0.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.present()
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.fill_polygon(vert, style)
    }

    fn draw_text<T: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &T,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_text(text, style, pos)
    }

    fn estimate_text_size<T: BackendTextStyle>(
        &self,
        text: &str,
        style: &T,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        // The SVG backend writes font-size = size / 1.24; a sans-serif character averages about
        // 0.55 em wide.
        let em = style.size() / 1.24;
        let width = em * 0.55 * text.chars().count() as f64;
        Ok((width.ceil() as u32, em.ceil() as u32))
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.blit_bitmap(pos, size, src)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fonts_that_are_missing_or_not_fonts_are_passed_over() {
        let dir = tempfile::tempdir().unwrap();
        let not_a_font = dir.path().join("notes.ttf");
        std::fs::write(&not_a_font, "not a font").unwrap();
        let missing = dir.path().join("missing.ttf");
        assert_eq!(first_font(&[missing.clone(), not_a_font.clone()]), None);
        let dejavu = PathBuf::from(FONT_PATHS[0]);
        if dejavu.is_file() {
            assert_eq!(
                first_font(&[missing, not_a_font, dejavu.clone()]),
                Some(dejavu)
            );
        }
    }

    #[test]
    fn axis_tops_are_round_numbers() {
        assert_eq!(nice_ceiling(0.0), 0.0);
        assert_eq!(nice_ceiling(0.33), 0.5);
        assert_eq!(nice_ceiling(0.21), 0.25);
        assert_eq!(nice_ceiling(1.0), 1.0);
        assert_eq!(nice_ceiling(10.5), 20.0);
        assert_eq!(nice_ceiling(66.0), 100.0);
    }
}
