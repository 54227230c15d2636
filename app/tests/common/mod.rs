//! What the app's UI tests share: harnesses, a drag, edits as the editors make them, waiting for
//! background work, and where things are on the timeline.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests fail by panicking

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use mpipe::scenario::edit::Edit;
use mpipe_studio::Studio;
use mpipe_studio::command::Command;

/// The window at 1500 × 1000 on `studio`, frames 0.25 s apart.
pub fn harness_on(studio: Studio) -> Harness<'static, Studio> {
    sized(studio, egui::vec2(1500.0, 1000.0), 0.25)
}

/// The window on the embedded sample `file`.
pub fn on_sample(file: &str) -> Harness<'static, Studio> {
    let mut studio = Studio::empty();
    let sample = mpipe_studio::samples::SAMPLES
        .iter()
        .find(|s| s.file == file)
        .unwrap();
    studio.open_sample(sample);
    harness_on(studio)
}

/// The window on the default sample.
pub fn harness() -> Harness<'static, Studio> {
    harness_on(Studio::default())
}

/// A window of `size` whose frames are `dt` seconds apart (double clicks need frames under
/// 0.3 s apart).
pub fn sized(studio: Studio, size: egui::Vec2, dt: f32) -> Harness<'static, Studio> {
    let mut harness = Harness::builder()
        .with_size(size)
        .with_step_dt(dt)
        .with_context_setup(mpipe_studio::fonts::install)
        .build_ui_state(|ui, studio: &mut Studio| studio.show(ui), studio);
    harness.run();
    harness
}

/// Applies a scenario edit as the editors would (one undo step).
pub fn edit(harness: &mut Harness<'static, Studio>, edit: Edit) {
    harness.state_mut().apply(Command::Edit {
        edit,
        gesture: None,
    });
}

/// Presses at `from`, moves through the midpoint to `to`, and releases, a frame per step.
pub fn drag(harness: &mut Harness<'static, Studio>, from: egui::Pos2, to: egui::Pos2) {
    harness.hover_at(from);
    harness.run();
    harness.drag_at(from);
    harness.run();
    harness.hover_at(from + (to - from) / 2.0);
    harness.run();
    harness.hover_at(to);
    harness.run();
    harness.drop_at(to);
    harness.run();
}

/// Runs frames until `done`: background work must finish within a minute of wall time (a
/// hang guard; on a 2-core machine running the other tests beside it, a few seconds of work can
/// take many times its own).
pub fn wait(harness: &mut Harness<'static, Studio>, done: impl Fn(&Studio) -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        harness.step();
        if done(harness.state()) {
            // Settle the frames (other work may still animate a spinner: under the full suite
            // on 2 cores, `run` exceeded its steps here).
            harness.run_ok();
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("the background work did not finish");
}

/// Opens `path` as File ▸ Open does (read on a worker) and waits until it is read.
pub fn open(harness: &mut Harness<'static, Studio>, path: &std::path::Path) {
    harness.state_mut().open_path(path);
    wait(harness, |s| s.io.opening.is_none());
}

/// Where time `t` of rank `rank`'s lane is on the current timeline (the last chart drawn), at
/// the lane's vertical middle (lanes of 24 px, 38 px apart, 4 px below the chart's top).
pub fn timeline_point(harness: &Harness<'static, Studio>, rank: usize, t: f64) -> egui::Pos2 {
    let state = harness.state();
    let (x0, x1) = state.view.timeline_x.expect("a timeline was drawn");
    let rect = *state.view.chart_rects.last().expect("a timeline was drawn");
    let (t0, t1) = state.view.visible(state.span());
    let x = x0 + ((t - t0) / (t1 - t0)) as f32 * (x1 - x0);
    let pitch = state.view.lane_height + 6.0 + 8.0;
    egui::pos2(
        x,
        rect.top() + 4.0 + rank as f32 * pitch + state.view.lane_height / 2.0,
    )
}

/// Opens the combo box labelled `combo` and picks `option`.
pub fn choose(harness: &mut Harness<'static, Studio>, combo: &str, option: &str) {
    harness.get_by_label(combo).click();
    harness.run();
    harness.get_by_label(option).click();
    harness.run();
}

/// Types `text` into the text field labelled `label`, replacing what is there.
pub fn type_into(harness: &mut Harness<'static, Studio>, label: &str, text: &str) {
    harness.get_by_label(label).click();
    harness.run();
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
    harness.get_by_label(label).type_text(text);
    harness.run();
}

/// Hovers `at` and lets the tooltip appear.
pub fn hover(harness: &mut Harness<'static, Studio>, at: egui::Pos2) {
    harness.hover_at(at);
    for _ in 0..6 {
        harness.step();
    }
}

/// Clicks the primary button at `at`, a frame for the press and one for the release.
pub fn click_at(harness: &mut Harness<'static, Studio>, at: egui::Pos2) {
    harness.hover_at(at);
    harness.step();
    pointer_click(harness, at, egui::PointerButton::Primary);
    harness.run_steps(2);
}

/// Presses and releases `button` at `at`, a frame each.
pub fn pointer_click(
    harness: &mut Harness<'static, Studio>,
    at: egui::Pos2,
    button: egui::PointerButton,
) {
    for pressed in [true, false] {
        harness.event(egui::Event::PointerButton {
            pos: at,
            button,
            pressed,
            modifiers: egui::Modifiers::NONE,
        });
        harness.step();
    }
}

/// A fresh folder for one test's files (named after the test and the process).
pub fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mpipe-ui-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Opens the collapsed section `header`, clicks `button`, waits until the analysis `pick`
/// selects is over and returns its result for the document on screen.
pub fn run_analysis<T: Clone + Send + 'static>(
    harness: &mut Harness<'static, Studio>,
    header: &str,
    button: &str,
    pick: fn(&Studio) -> &mpipe_studio::state::analysis::Analysis<T>,
) -> T {
    harness.get_by_label(header).click();
    harness.run();
    harness.get_by_label(button).click();
    // The analysis now runs on a worker and may repaint its progress past `run`'s steps (under
    // the full suite on 2 cores the wave sweep did): `wait` steps until it is over.
    harness.run_ok();
    wait(harness, |s| pick(s).running.is_none());
    harness.run();
    let generation = harness.state().doc.generation();
    pick(harness.state()).current(generation).cloned().unwrap()
}

/// Every text the last frame painted, with where: axis ticks, hover labels and other painted
/// words that are not widgets (and so not in the accessibility tree).
pub fn painted_texts(harness: &Harness<'static, Studio>) -> Vec<(String, egui::Rect)> {
    fn walk(shape: &egui::Shape, out: &mut Vec<(String, egui::Rect)>) {
        match shape {
            egui::Shape::Text(t) => out.push((
                t.galley.text().to_string(),
                t.galley.rect.translate(t.pos.to_vec2()),
            )),
            egui::Shape::Vec(shapes) => shapes.iter().for_each(|s| walk(s, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for clipped in &harness.output().shapes {
        walk(&clipped.shape, &mut out);
    }
    out
}

/// The opacity the last frame painted the text `text` with (its glyphs' alpha; 1: opaque).
pub fn painted_opacity(harness: &Harness<'static, Studio>, text: &str) -> f32 {
    fn walk(shape: &egui::Shape, text: &str) -> Option<f32> {
        match shape {
            egui::Shape::Text(t) if t.galley.text() == text => t
                .galley
                .rows
                .iter()
                .flat_map(|r| r.row.visuals.mesh.vertices.iter())
                .next()
                .map(|v| f32::from(v.color.a()) / 255.0),
            egui::Shape::Vec(shapes) => shapes.iter().find_map(|s| walk(s, text)),
            _ => None,
        }
    }
    harness
        .output()
        .shapes
        .iter()
        .find_map(|c| walk(&c.shape, text))
        .unwrap_or_else(|| panic!("{text:?} was not painted"))
}

/// The numbers painted beside plot `id`'s frame: its y axis's tick labels (left of the frame)
/// and its x axis's (under it).
pub fn axis_numbers(harness: &Harness<'static, Studio>, id: &str) -> (Vec<f64>, Vec<f64>) {
    let frame = *mpipe_studio::panels::plots::transform_of(&harness.ctx, id)
        .unwrap()
        .frame();
    let texts = painted_texts(harness);
    let numbers = |keep: &dyn Fn(egui::Rect) -> bool| -> Vec<f64> {
        texts
            .iter()
            .filter(|(_, r)| keep(*r))
            .filter_map(|(t, _)| t.parse::<f64>().ok())
            .collect()
    };
    let y = numbers(&|r| {
        r.right() <= frame.left() + 2.0
            && r.right() >= frame.left() - 80.0
            && frame.y_range().contains(r.center().y)
    });
    let x = numbers(&|r| {
        r.top() >= frame.bottom() - 2.0
            && r.top() <= frame.bottom() + 30.0
            && frame.x_range().contains(r.center().x)
    });
    (y, x)
}
