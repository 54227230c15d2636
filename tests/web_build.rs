#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking
//! The web build, as a user meets it: `app/web/build.sh` builds the site, a server on 127.0.0.1
//! serves it, and headless Chromium (driven by `tests/web/check.mjs`) loads it, switches samples
//! through a link, opens a broken scenario through the browser's file chooser, opens a scenario a
//! link carries, and reloads the page. What the page publishes after each step must equal what
//! the same studio computes here, natively; the screenshots must show the chart's colours.
//!
//! Needs: a wasm32 toolchain (rustup's target, or Debian's `rustc-web cargo-web rust-web-src
//! lld-22`), `wasm-bindgen` at Cargo.lock's version, Node.js and Chromium (`apt-get install
//! chromium`); `.ci/run` installs them. A missing one fails the test with the line that installs
//! it.

use mpipe_studio::Studio;
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn require(program: &str, install: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(found, "the web test needs `{program}`: {install}");
}

/// Serves `dir` on 127.0.0.1 (a port the system picks) from a thread; returns the address.
fn serve(dir: PathBuf) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let dir = dir.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(&stream);
                let mut request = String::new();
                if reader.read_line(&mut request).is_err() {
                    return;
                }
                // The rest of the head is not needed.
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let path = request.split_whitespace().nth(1).unwrap_or("/");
                let path = path.split(['?', '#']).next().unwrap_or("/");
                let name = if path == "/" {
                    "index.html"
                } else {
                    &path[1..]
                };
                let file = (!name.contains("..")).then(|| dir.join(name));
                let mut out = &stream;
                match file.and_then(|f| std::fs::read(&f).ok().map(|b| (f, b))) {
                    Some((file, body)) => {
                        let kind = match file.extension().and_then(|e| e.to_str()) {
                            Some("html") => "text/html; charset=utf-8",
                            Some("js") => "text/javascript",
                            Some("wasm") => "application/wasm",
                            _ => "application/octet-stream",
                        };
                        let head = format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                            body.len()
                        );
                        let _ = out.write_all(head.as_bytes());
                        let _ = out.write_all(&body);
                    }
                    None => {
                        let _ = out.write_all(
                            b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                        );
                    }
                }
            });
        }
    });
    address
}

/// The state line of `studio`, parsed.
fn state(studio: &Studio) -> Value {
    serde_json::from_str(&studio.state_line()).unwrap()
}

/// `page` (what the browser published) equals `native`, step times to 1e-9 relative (the two
/// builds' floating-point libraries may round a last digit apart).
fn assert_same(step: &str, page: &Value, native: &Value) {
    for (key, want) in native.as_object().unwrap() {
        let got = &page[key];
        match (got.as_f64(), want.as_f64()) {
            (Some(g), Some(w)) if key == "makespan_s" => assert!(
                (g - w).abs() <= 1e-9 * w.abs(),
                "{step}: {key}: the page shows {g}, the studio computes {w}"
            ),
            _ => assert_eq!(got, want, "{step}: {key}"),
        }
    }
}

/// How many pixels of `png` are `colour` (each channel within 2).
fn pixels_of(png: &Path, colour: (u8, u8, u8)) -> usize {
    let decoder = png::Decoder::new(BufReader::new(std::fs::File::open(png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let near = |a: u8, b: u8| a.abs_diff(b) <= 2;
    buf[..info.buffer_size()]
        .chunks(channels)
        .filter(|p| near(p[0], colour.0) && near(p[1], colour.1) && near(p[2], colour.2))
        .count()
}

#[test]
fn the_web_build_loads_in_chromium_and_behaves_as_the_desktop_app() {
    let root = root();
    require(
        "wasm-bindgen",
        "cargo install wasm-bindgen-cli --version (the wasm-bindgen version in Cargo.lock)",
    );
    require("node", "apt-get install nodejs");
    require("chromium", "apt-get install chromium");
    let site = root.join("target/web-test-site");
    let built = Command::new("bash")
        .arg(root.join("app/web/build.sh"))
        .arg(&site)
        .status()
        .unwrap();
    assert!(
        built.success(),
        "app/web/build.sh failed (its message is above)"
    );
    for file in ["index.html", "mpipe-studio.js", "mpipe-studio_bg.wasm"] {
        assert!(site.join(file).is_file(), "the site has no {file}");
    }

    let driver = root.join("tests/web");
    if !driver.join("node_modules/playwright-core").is_dir() {
        let installed = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&driver)
            .status()
            .unwrap();
        assert!(installed.success(), "npm ci in tests/web failed");
    }

    // What the steps open, and what the same studio shows for each, here.
    let bad_name = "broken.json";
    let bad_text = "{\n  \"ranks\": 4,\n  \"microbatches\": oops\n}\n";
    let shared = mpipe_studio::samples::SAMPLES
        .iter()
        .find(|s| s.file == "1f1b.json")
        .unwrap();
    let fragment = mpipe::scenario::share::to_fragment(shared.json);
    // A pipeline large enough that its simulation takes many of the page's 10 ms slices.
    let large_title = "A long pipeline: interleaved 1F1B, P = 16, M = 512";
    let large_json = format!(
        r#"{{"format": "mpipe-scenario/1", "name": "{large_title}",
  "model": {{"layers": [{{"name": "llm", "role": "backbone", "count": 32, "fwd_s": 0.01, "bwd_s": 0.02}}]}},
  "cut": [16], "schedule": ["1f1b", "1f1b"], "ranks": 16, "microbatches": 512}}"#
    );
    let large_fragment = mpipe::scenario::share::to_fragment(&large_json);

    let mut studio = Studio::default();
    let default = state(&studio);
    assert!(studio.open_link("sample=gpipe.json"));
    let sample = state(&studio);
    studio.open_dropped_bytes(vec![(
        PathBuf::from(bad_name),
        Ok(bad_text.as_bytes().to_vec()),
    )]);
    let bad_file = state(&studio);
    assert!(studio.open_link(&fragment));
    let link = state(&studio);
    let mut large_studio = Studio::default();
    assert!(large_studio.open_link(&large_fragment));
    // Simulated on a worker here: polled until it is shown (a minute at most).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while large_studio.poll() {
        assert!(
            std::time::Instant::now() < deadline,
            "the simulation did not finish"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let large = state(&large_studio);

    let out = tempdir();
    let url = serve(site);
    let run = Command::new("node")
        .arg(driver.join("check.mjs"))
        .args([
            url.as_str(),
            out.to_str().unwrap(),
            bad_name,
            bad_text,
            &fragment,
            &large_fragment,
            large_title,
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "check.mjs failed: {}\n{stdout}",
        String::from_utf8_lossy(&run.stderr)
    );
    // Kept beside the screenshots for a look when the test fails.
    std::fs::write(out.join("report.json"), stdout.as_bytes()).unwrap();
    let report: Value = serde_json::from_str(&stdout).expect("check.mjs prints JSON");
    assert_eq!(report["errors"], serde_json::json!([]), "the page's errors");
    let steps = report["steps"].as_array().unwrap();
    let names: Vec<_> = steps.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "default",
            "save",
            "export-png",
            "sample",
            "bad-file",
            "link",
            "large-link",
            "reload"
        ]
    );
    // The save and the PNG export were the first steps after the default sample: checked
    // here, and left out of the steps below.
    let (saved, exported) = (&steps[1], &steps[2]);
    let steps: Vec<Value> = std::iter::once(steps[0].clone())
        .chain(steps[3..].iter().cloned())
        .collect();
    let page = |i: usize| &steps[i]["state"];

    // The default sample, drawn as the desktop app draws it.
    assert_eq!(default["source"], "mpipe-vit-llm.json");
    assert_same("default", page(0), &default);
    // Saved, it is a download named after the sample, holding the same scenario; the chart
    // exported as PNG is another, drawn in the sample's colours.
    let kept = |step: &Value| PathBuf::from(step["download"]["path"].as_str().unwrap());
    assert_eq!(saved["download"]["name"], "mpipe-vit-llm.json");
    assert_eq!(saved["state"]["notice"], "saved mpipe-vit-llm.json");
    let text = std::fs::read_to_string(kept(saved)).unwrap();
    let sample_json = mpipe_studio::samples::SAMPLES
        .iter()
        .find(|s| s.file == "mpipe-vit-llm.json")
        .unwrap()
        .json;
    assert_eq!(
        mpipe::Scenario::from_json_str(&text, "saved").unwrap(),
        mpipe::Scenario::from_json_str(sample_json, "sample").unwrap()
    );
    assert_eq!(exported["download"]["name"], "mpipe-vit-llm.png");
    assert_eq!(exported["state"]["notice"], "exported mpipe-vit-llm.png");
    // A sample switch by link redraws: another schedule, another chart.
    assert_same("sample", page(1), &sample);
    assert_ne!(page(1)["title"], page(0)["title"]);
    // A broken file says where it is broken, and the schedule on screen stays.
    assert_eq!(
        bad_file["notice"], "broken.json:3:19: expected value",
        "the studio's own error"
    );
    assert_same("bad-file", page(2), &bad_file);
    assert_eq!(page(2)["source"], "gpipe.json");
    // A link carries a scenario; once open, it leaves the address.
    assert_same("link", page(3), &link);
    assert_eq!(steps[3]["address"].as_str(), Some(url.as_str()));
    // A second link opens while the first one's scenario is on screen; the large pipeline's
    // simulation runs in slices (the page says it is simulating meanwhile) to the same chart.
    assert!(large["events"].as_u64().unwrap() > 60_000, "{large}");
    assert_same("large-link", page(4), &large);
    assert_eq!(steps[4]["seen_simulating"], true);
    // A reload brings the session back from the browser's storage.
    assert_eq!(page(5)["source"], "last session");
    assert_eq!(page(5)["title"], large["title"]);

    // The charts are drawn in the schedule's colours: the default sample's encoder backwards
    // (dark orange) and LLM forwards (blue); GPipe's chart has the blue and no encoder (the
    // encoder's forward orange is also rank 0's memory curve, so its backward shade tells).
    use mpipe::view::palette::{backward_shade, region_hue};
    use mpipe::vocab::role::Role;
    let shot = |i: usize| PathBuf::from(steps[i]["screenshot"].as_str().unwrap());
    let encoder = backward_shade(region_hue(Role::Encoder, 0));
    let backbone = region_hue(Role::Backbone, 0);
    let counts = [
        pixels_of(&shot(0), encoder),
        pixels_of(&shot(0), backbone),
        pixels_of(&shot(1), encoder),
        pixels_of(&shot(1), backbone),
    ];
    assert!(
        counts[0] > 2000 && counts[1] > 2000,
        "the default sample's encoder and LLM drawn: {counts:?}"
    );
    let png = kept(exported);
    let in_png = [pixels_of(&png, encoder), pixels_of(&png, backbone)];
    assert!(
        in_png[0] > 2000 && in_png[1] > 2000,
        "the exported PNG has the default sample's encoder and LLM: {in_png:?}"
    );
    assert!(
        counts[2] == 0 && counts[3] > 5000,
        "GPipe's chart drawn, no encoder: {counts:?}"
    );
    // The screenshots stay for a look when the test fails.
    let _ = std::fs::remove_dir_all(&out);
}

/// A fresh folder for the screenshots.
fn tempdir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mpipe-web-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
