//! Fonts: egui's defaults plus DejaVu Sans / Sans Mono (assets/fonts, Bitstream Vera licence) as
//! fallbacks, so the algebra's notation (⟨ ⟩ → · ⌊ ⌋ –) draws instead of showing tofu.

use std::sync::Arc;

const SANS: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");
const MONO: &[u8] = include_bytes!("../../assets/fonts/DejaVuSansMono.ttf");

/// Installs the fonts into a context; call once at start-up (and in UI tests).
pub fn install(ctx: &egui::Context) {
    let mut fonts = egui::FontDefinitions::default();
    fonts.font_data.insert(
        "dejavu-sans".into(),
        Arc::new(egui::FontData::from_static(SANS)),
    );
    fonts.font_data.insert(
        "dejavu-mono".into(),
        Arc::new(egui::FontData::from_static(MONO)),
    );
    if let Some(list) = fonts.families.get_mut(&egui::FontFamily::Proportional) {
        list.push("dejavu-sans".into());
    }
    if let Some(list) = fonts.families.get_mut(&egui::FontFamily::Monospace) {
        list.push("dejavu-mono".into());
        list.push("dejavu-sans".into());
    }
    ctx.set_fonts(fonts);
}
