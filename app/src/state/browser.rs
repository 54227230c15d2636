//! The browser's edges (the web build only): files the user picks or drops arrive asynchronously
//! and wait here for the next frame; saves and exports leave as downloads; the page's address
//! carries a shared scenario in its fragment.

use std::cell::RefCell;
use std::path::PathBuf;
use wasm_bindgen::JsCast;

/// The largest file the page reads (512 MiB): the page's memory (wasm32) holds the file and
/// what is read from it; a larger trace is refused before it is read, naming the limit.
pub const MAX_FILE_BYTES: f64 = 512.0 * 1024.0 * 1024.0;

/// A file read: its name and its bytes, or why not (`files::DroppedBytes`; `files` writes
/// through this module, so the type is spelled out here).
type DroppedBytes = (PathBuf, Result<Vec<u8>, String>);

thread_local! {
    /// Batches of files read (one per pick or drop), waiting for the frame loop.
    static ARRIVED: RefCell<Vec<Vec<DroppedBytes>>> = const { RefCell::new(Vec::new()) };
    /// The context to wake when files arrive.
    static CONTEXT: RefCell<Option<egui::Context>> = const { RefCell::new(None) };
    /// The address of the last download, released at the next one.
    static LAST_DOWNLOAD: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Remembers the context to repaint when files arrive, and repaints when the address's fragment
/// changes (a link pasted into the open page): called once, at start.
pub fn set_context(ctx: &egui::Context) {
    CONTEXT.with(|c| *c.borrow_mut() = Some(ctx.clone()));
    let repaint = ctx.clone();
    let on_hash =
        wasm_bindgen::closure::Closure::<dyn Fn()>::new(move || repaint.request_repaint());
    if let Some(window) = web_sys::window() {
        let _ =
            window.add_event_listener_with_callback("hashchange", on_hash.as_ref().unchecked_ref());
    }
    // The listener lives as long as the page.
    on_hash.forget();
}

/// The batches of files read since the last call.
pub fn take_arrived() -> Vec<Vec<DroppedBytes>> {
    ARRIVED.with(|a| std::mem::take(&mut *a.borrow_mut()))
}

fn arrive(batch: Vec<DroppedBytes>) {
    ARRIVED.with(|a| a.borrow_mut().push(batch));
    CONTEXT.with(|c| {
        if let Some(ctx) = c.borrow().as_ref() {
            ctx.request_repaint();
        }
    });
}

/// Reads one browser file, refusing one beyond [`MAX_FILE_BYTES`] before it is read.
async fn read_file(file: web_sys::File) -> DroppedBytes {
    let name = PathBuf::from(file.name());
    if file.size() > MAX_FILE_BYTES {
        let why = format!(
            "{:.0} MiB is more than the browser build reads ({:.0} MiB); open it in the desktop app",
            file.size() / 1048576.0,
            MAX_FILE_BYTES / 1048576.0
        );
        return (name, Err(why));
    }
    let read = wasm_bindgen_futures::JsFuture::from(file.array_buffer())
        .await
        .map(|buffer| js_sys::Uint8Array::new(&buffer).to_vec())
        .map_err(|e| format!("the browser gave no bytes ({e:?})"));
    (name, read)
}

/// Reads dropped files in the background; they arrive as one batch.
pub fn read_dropped(files: &[egui::DroppedFileHandle]) {
    let files: Vec<_> = files
        .iter()
        .map(|f| (f.path().to_path_buf(), f.web_file().cloned()))
        .collect();
    wasm_bindgen_futures::spawn_local(async move {
        let mut batch = Vec::with_capacity(files.len());
        for (path, file) in files {
            batch.push(match file {
                Some(file) => read_file(file).await,
                None => (path, Err("the browser gave no file".to_string())),
            });
        }
        arrive(batch);
    });
}

/// Asks the browser for files (its own file chooser); several when `multiple`. What is chosen
/// arrives as one batch, as dropped files do.
pub fn pick(multiple: bool) -> Result<(), String> {
    let document = web_sys::window()
        .and_then(|w| w.document())
        .ok_or("the page has no document")?;
    let input: web_sys::HtmlInputElement = document
        .create_element("input")
        .map_err(|e| format!("cannot ask for a file ({e:?})"))?
        .dyn_into()
        .map_err(|_| "cannot ask for a file")?;
    input.set_type("file");
    input.set_accept(".json,.gz,.json.gz,application/json,application/gzip");
    input.set_multiple(multiple);
    let chooser = input.clone();
    let on_change = wasm_bindgen::closure::Closure::once_into_js(move || {
        let Some(list) = chooser.files() else {
            return;
        };
        let files: Vec<web_sys::File> = (0..list.length()).filter_map(|i| list.get(i)).collect();
        wasm_bindgen_futures::spawn_local(async move {
            let mut batch = Vec::with_capacity(files.len());
            for file in files {
                batch.push(read_file(file).await);
            }
            arrive(batch);
        });
    });
    input.set_onchange(Some(on_change.unchecked_ref()));
    input.click();
    Ok(())
}

/// Hands `bytes` to the browser as a download named `name`.
pub fn download(name: &str, bytes: &[u8]) -> Result<(), String> {
    let fail = |e: wasm_bindgen::JsValue| format!("the browser refused the download ({e:?})");
    let document = web_sys::window()
        .and_then(|w| w.document())
        .ok_or("the page has no document")?;
    let parts = js_sys::Array::of1(&js_sys::Uint8Array::from(bytes));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type(mime(name));
    let blob =
        web_sys::Blob::new_with_u8_array_sequence_and_options(&parts, &options).map_err(fail)?;
    let url = web_sys::Url::create_object_url_with_blob(&blob).map_err(fail)?;
    let anchor: web_sys::HtmlAnchorElement = document
        .create_element("a")
        .map_err(fail)?
        .dyn_into()
        .map_err(|_| "the browser refused the download (no link element)")?;
    anchor.set_href(&url);
    anchor.set_download(name);
    anchor.click();
    // The previous download has started by now: its address can go.
    if let Some(old) = LAST_DOWNLOAD.with(|l| l.borrow_mut().replace(url)) {
        let _ = web_sys::Url::revoke_object_url(&old);
    }
    Ok(())
}

fn mime(name: &str) -> &'static str {
    match name.rsplit('.').next() {
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        _ => "application/json",
    }
}

/// The page's fragment (after `#`), percent-decoded as the browser hands it.
pub fn fragment() -> String {
    web_sys::window()
        .and_then(|w| w.location().hash().ok())
        .map(|h| h.trim_start_matches('#').to_string())
        .unwrap_or_default()
}

/// The page's address without its fragment.
pub fn page_address() -> Result<String, String> {
    let href = web_sys::window()
        .ok_or("the page has no window")?
        .location()
        .href()
        .map_err(|e| format!("the page has no address ({e:?})"))?;
    Ok(href.split('#').next().unwrap_or_default().to_string())
}

/// Sets the page's fragment (empty: none), without a new history entry.
pub fn set_fragment(fragment: &str) -> Result<(), String> {
    let base = page_address()?;
    let url = if fragment.is_empty() {
        base
    } else {
        format!("{base}#{fragment}")
    };
    web_sys::window()
        .ok_or("the page has no window")?
        .history()
        .and_then(|h| h.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&url)))
        .map_err(|e| format!("the browser refused to change the address ({e:?})"))
}

/// Publishes `state` (the studio's state line, JSON) on the canvas's `data-state` attribute, for
/// scripts that drive the page (the browser test); only when it changed.
pub fn publish_state(state: &str) {
    thread_local! {
        static LAST: RefCell<String> = const { RefCell::new(String::new()) };
    }
    if LAST.with(|l| *l.borrow() == state) {
        return;
    }
    let canvas = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id("mpipe_canvas"));
    if let Some(canvas) = canvas
        && canvas.set_attribute("data-state", state).is_ok()
    {
        LAST.with(|l| *l.borrow_mut() = state.to_string());
    }
}
