//! QR codes of short URLs, as SVG (shown inline) and PNG (for print and chat apps).

use qrcode::{Color, EcLevel, QrCode};

pub fn svg(text: &str) -> Option<String> {
    let code = QrCode::with_error_correction_level(text, EcLevel::M).ok()?;
    Some(
        code.render::<qrcode::render::svg::Color>()
            .min_dimensions(200, 200)
            .quiet_zone(true)
            .build(),
    )
}

/// The side of the PNG when no scale is asked for: sharp in print and on any screen.
pub const MIN_PNG_SIDE: u32 = 1024;

/// A black-on-white PNG, `scale` pixels per module (`None`: the smallest scale giving at
/// least [`MIN_PNG_SIDE`] pixels a side), with the standard 4-module quiet zone.
pub fn png(text: &str, scale: Option<u32>) -> Option<Vec<u8>> {
    let code = QrCode::with_error_correction_level(text, EcLevel::M).ok()?;
    let modules = code.width() as u32;
    let colors = code.to_colors();
    let quiet = 4;
    let scale = scale.unwrap_or_else(|| MIN_PNG_SIDE.div_ceil(modules + 2 * quiet));
    let side = (modules + 2 * quiet) * scale;
    let mut pixels = vec![255u8; (side * side) as usize];
    for (index, color) in colors.iter().enumerate() {
        if *color != Color::Dark {
            continue;
        }
        let (mx, my) = (index as u32 % modules, index as u32 / modules);
        for dy in 0..scale {
            let y = (my + quiet) * scale + dy;
            let start = (y * side + (mx + quiet) * scale) as usize;
            pixels[start..start + scale as usize].fill(0);
        }
    }
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, side, side);
    encoder.set_color(png::ColorType::Grayscale);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().ok()?;
    writer.write_image_data(&pixels).ok()?;
    writer.finish().ok()?;
    Some(out)
}
