//! Colours shared by the app and the SVG renderer. A region's colour follows the role of its
//! layers, so the encoder is amber and the backbone blue in every scenario: each role has a family
//! of hues, and the `n`-th region of a role (VPP's chunks, say) takes the `n`-th hue of its family.
//! Forward is the hue, backward a darker shade of it. Plus the marks for warmup windows, spill,
//! idle time and transfers, and one hue per rank for the memory curves.

use crate::vocab::role::Role;

/// An sRGB colour.
pub type Rgb = (u8, u8, u8);

/// The first six ranks' hues (memory curves); ranks beyond take [`hue`]'s generated ones.
pub const RANK_HUES: [Rgb; 6] = [
    (0xE4, 0x8A, 0x2C), // amber
    (0x3D, 0x7E, 0xC9), // blue
    (0x4C, 0xA6, 0x6B), // green
    (0x9B, 0x5D, 0xC4), // violet
    (0xC9, 0x4C, 0x5C), // red
    (0x3A, 0xA8, 0xA8), // teal
];

/// Hues of encoder regions: amber first.
const ENCODER: [Rgb; 3] = [(0xE4, 0x8A, 0x2C), (0xC9, 0xA2, 0x27), (0xB8, 0x6B, 0x3A)];
/// Hues of projector regions.
const PROJECTOR: [Rgb; 2] = [(0xD4, 0x6F, 0xA8), (0xB0, 0x5A, 0x8C)];
/// Hues of backbone regions: blue first, then the other chunks of an interleaved backbone.
const BACKBONE: [Rgb; 5] = [
    (0x3D, 0x7E, 0xC9),
    (0x4C, 0xA6, 0x6B),
    (0x9B, 0x5D, 0xC4),
    (0x3A, 0xA8, 0xA8),
    (0x5C, 0x6B, 0xD6),
];
/// Hues of generator regions.
const GENERATOR: [Rgb; 2] = [(0xC9, 0x4C, 0x5C), (0xD9, 0x74, 0x5A)];
/// Hues of regions whose layers have no role.
const OTHER: [Rgb; 3] = [(0x6F, 0x8F, 0xAF), (0x8A, 0x9A, 0x3A), (0x7A, 0x7A, 0x7A)];

/// Warmup window shading.
pub const WARMUP: Rgb = (0x9F, 0xC5, 0xE8);
/// Encoder spill marking.
pub const SPILL: Rgb = (0xD6, 0x27, 0x28);
/// Collectives.
pub const COMM: Rgb = (0x88, 0x88, 0x88);
/// The frame around an overlapped pair's two halves (one compute slot).
pub const PAIR: Rgb = (0xB0, 0x40, 0xE0);
/// The end of an action its stage's exposed collectives take (tensor-, expert-,
/// context-parallel), drawn hatched over it: a dark red no region and no idle time has.
pub const EXPOSED_COMM: Rgb = (0x6B, 0x2D, 0x33);
/// The end of a box its device spent waiting for its host to launch the work (a host-bound
/// runtime), hatched over a slate grey.
pub const HOST_WAIT: Rgb = (0x4A, 0x55, 0x68);

/// The hue of rank `i` (0-based): [`RANK_HUES`] for the first six, then hues a golden angle
/// (137.5°) apart at three alternating lightnesses, so that no two of a P = 64 run's curves share
/// a colour (they used to repeat every six ranks).
pub fn hue(i: usize) -> Rgb {
    if let Some(&h) = RANK_HUES.get(i) {
        return h;
    }
    let n = i - RANK_HUES.len();
    let degrees = (n as f64 * 137.507_764_050_037_85 + 17.0) % 360.0;
    let (saturation, value) = match n % 3 {
        0 => (0.62, 0.80),
        1 => (0.45, 0.62),
        _ => (0.70, 0.95),
    };
    hsv(degrees, saturation, value)
}

/// An HSV colour (hue in degrees, saturation and value in 0..=1) in sRGB.
fn hsv(degrees: f64, saturation: f64, value: f64) -> Rgb {
    let c = value * saturation;
    let sector = degrees / 60.0;
    let x = c * (1.0 - (sector % 2.0 - 1.0).abs());
    let (r, g, b) = match sector as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = value - c;
    let byte = |v: f64| ((v + m) * 255.0).round().clamp(0.0, 255.0) as u8;
    (byte(r), byte(g), byte(b))
}

/// The forward colour of the `nth` region (0-based) whose layers are mostly `role`.
pub fn region_hue(role: Role, nth: usize) -> Rgb {
    let family: &[Rgb] = match role {
        Role::Encoder => &ENCODER,
        Role::Projector => &PROJECTOR,
        Role::Backbone => &BACKBONE,
        Role::Generator => &GENERATOR,
        Role::Other => &OTHER,
    };
    family
        .get(nth % family.len().max(1))
        .copied()
        .unwrap_or((0x80, 0x80, 0x80))
}

/// The backward shade of a forward colour.
pub fn backward_shade((r, g, b): Rgb) -> Rgb {
    (r / 2 + 10, g / 2 + 10, b / 2 + 10)
}

/// The shade of a split backward's weight half `W`: between the forward and the backward (the
/// input half `I` takes the backward shade), so the two halves read apart.
pub fn weight_shade(forward: Rgb) -> Rgb {
    let b = backward_shade(forward);
    let mid = |f: u8, b: u8| ((u16::from(f) + u16::from(b)) / 2) as u8;
    (
        mid(forward.0, b.0),
        mid(forward.1, b.1),
        mid(forward.2, b.2),
    )
}

/// The shade of a second-order force forward `FF`: the forward colour lightened halfway to
/// white, so a rank's four phases read FE (forward), FF (light), BF (mid), BE (dark).
pub fn light_shade((r, g, b): Rgb) -> Rgb {
    let up = |c: u8| ((u16::from(c) + 255) / 2) as u8;
    (up(r), up(g), up(b))
}

/// `#rrggbb`.
pub fn hex((r, g, b): Rgb) -> String {
    format!("#{r:02x}{g:02x}{b:02x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_keep_their_colour_and_chunks_differ() {
        assert_eq!(region_hue(Role::Encoder, 0), (0xE4, 0x8A, 0x2C));
        assert_eq!(region_hue(Role::Backbone, 0), (0x3D, 0x7E, 0xC9));
        assert_ne!(region_hue(Role::Backbone, 1), region_hue(Role::Backbone, 0));
        assert_eq!(region_hue(Role::Backbone, 5), region_hue(Role::Backbone, 0));
        assert_eq!(backward_shade((0xE4, 0x8A, 0x2C)), (0x7C, 0x4F, 0x20));
    }

    /// Rank colours repeated after six ranks (issue 25, item 4): rank 6 drew as rank 0.
    #[test]
    fn sixty_four_ranks_have_sixty_four_colours() {
        let hues: Vec<Rgb> = (0..64).map(hue).collect();
        assert_eq!(hues[0], RANK_HUES[0]);
        assert_eq!(hues[5], RANK_HUES[5]);
        let distance = |a: Rgb, b: Rgb| {
            a.0.abs_diff(b.0) as u32 + a.1.abs_diff(b.1) as u32 + a.2.abs_diff(b.2) as u32
        };
        for i in 0..64 {
            for j in 0..i {
                // Every pair differs; neighbouring ranks (the curves drawn next to each other) and
                // the first sixteen clearly.
                let d = distance(hues[i], hues[j]);
                assert!(d > 0, "ranks {j} and {i} share {:?}", hues[i]);
                if i < 16 || i - j == 1 {
                    assert!(d >= 40, "ranks {j} and {i}: {:?} {:?}", hues[j], hues[i]);
                }
            }
        }
        assert_eq!(hsv(0.0, 1.0, 1.0), (255, 0, 0));
        assert_eq!(hsv(120.0, 1.0, 1.0), (0, 255, 0));
        assert_eq!(hsv(240.0, 0.5, 1.0), (128, 128, 255));
    }
}
