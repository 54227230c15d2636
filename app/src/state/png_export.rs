//! PNG export of the timeline: crop a screenshot of the window to the charts and encode it.

use egui::{ColorImage, Rect};

/// Crops `image` (physical pixels) to `rect` (points at `pixels_per_point`) and encodes a PNG.
pub fn crop_to_png(
    image: &ColorImage,
    rect: Rect,
    pixels_per_point: f32,
) -> Result<Vec<u8>, String> {
    let [w, h] = image.size;
    let to_px = |v: f32, max: usize| ((v * pixels_per_point).round().max(0.0) as usize).min(max);
    let (x0, x1) = (to_px(rect.left(), w), to_px(rect.right(), w));
    let (y0, y1) = (to_px(rect.top(), h), to_px(rect.bottom(), h));
    if x1 <= x0 || y1 <= y0 {
        return Err("nothing to export: the timeline is not on screen".into());
    }
    let mut rgba = Vec::with_capacity((x1 - x0) * (y1 - y0) * 4);
    for y in y0..y1 {
        let row = image
            .pixels
            .get(y * w + x0..y * w + x1)
            .ok_or("screenshot smaller than the window")?;
        for p in row {
            rgba.extend_from_slice(&p.to_srgba_unmultiplied());
        }
    }
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, (x1 - x0) as u32, (y1 - y0) as u32);
    encoder.set_color(png::ColorType::Rgba);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(|e| e.to_string())?;
    writer.write_image_data(&rgba).map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| e.to_string())?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use egui::{Color32, pos2};

    #[test]
    fn crops_in_physical_pixels_and_encodes() {
        // A 4×4 image at 2 pixels per point; the red quarter is the top-left 2×2 pixels.
        let mut image = ColorImage::filled([4, 4], Color32::BLUE);
        for (x, y) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
            image.pixels[y * 4 + x] = Color32::RED;
        }
        let png = crop_to_png(
            &image,
            Rect::from_min_max(pos2(0.0, 0.0), pos2(1.0, 1.0)),
            2.0,
        )
        .unwrap();
        let decoder = png::Decoder::new(std::io::Cursor::new(png));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), (2, 2));
        assert_eq!(&buf[..4], &[255, 0, 0, 255]);
        assert!(
            crop_to_png(
                &image,
                Rect::from_min_max(pos2(3.0, 3.0), pos2(4.0, 4.0)),
                2.0
            )
            .is_err()
        );
    }
}
