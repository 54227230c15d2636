//! A scenario as the fragment of a link (`…#scenario=…`), so that a teacher or a researcher sends
//! a schedule as a URL: the scenario's JSON, deflated (raw DEFLATE, RFC 1951) and written in
//! URL-safe base64 without padding (RFC 4648 §5). A fragment never reaches the server that serves
//! the page, so the scenario stays between the people who share the link.
//!
//! Reading a link is reading a file from a stranger: every failure names the link and says what
//! is wrong, the inflated text is bounded by [`MAX_FILE_BYTES`](super::MAX_FILE_BYTES) before it
//! is held, and the text must then parse as any scenario file does.

use super::{ScenarioError, read_bounded, text_from_bytes};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use std::io::Write;

/// The key of the fragment's scenario part.
pub const KEY: &str = "scenario";

/// The name errors give a link.
pub const LINK: &str = "the link";

/// The fragment (without `#`) that carries `json`: `scenario=` and the deflated text in base64url.
pub fn to_fragment(json: &str) -> String {
    let mut deflate = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
    // Writing into a Vec cannot fail.
    let packed = match deflate.write_all(json.as_bytes()) {
        Ok(()) => deflate.finish().unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    format!("{KEY}={}", URL_SAFE_NO_PAD.encode(packed))
}

/// The scenario text a link's fragment carries: `None` when the fragment (with or without its
/// `#`) has no `scenario=` part, an error naming the link when that part is not a deflated
/// UTF-8 text in base64url. Other `&`-separated parts are ignored.
pub fn from_fragment(fragment: &str) -> Option<Result<String, ScenarioError>> {
    part(fragment, KEY).map(decode)
}

/// The value of the fragment's `key=…` part (the fragment with or without its `#`; parts are
/// `&`-separated): `None` when it has none.
pub fn part<'a>(fragment: &'a str, key: &str) -> Option<&'a str> {
    let fragment = fragment.strip_prefix('#').unwrap_or(fragment);
    fragment
        .split('&')
        .find_map(|p| p.strip_prefix(key)?.strip_prefix('='))
}

fn decode(value: &str) -> Result<String, ScenarioError> {
    let read = |message: String| ScenarioError::Read {
        file: LINK.to_string(),
        message,
    };
    if let Some((at, c)) = value
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        return Err(read(format!(
            "the part after `{KEY}=` is not URL-safe base64: `{c}` at character {} of it (was the link cut or changed?)",
            value[..at].chars().count() + 1
        )));
    }
    let packed = URL_SAFE_NO_PAD.decode(value).map_err(|e| {
        read(format!(
            "the part after `{KEY}=` is not URL-safe base64: {e} (was the link cut?)"
        ))
    })?;
    let inflate = flate2::read::DeflateDecoder::new(&packed[..]);
    let bytes = read_bounded(inflate, LINK).map_err(|e| match e {
        ScenarioError::Read { message, .. } if !message.starts_with("larger") => read(format!(
            "the scenario in it does not unpack ({message}; was the link cut?)"
        )),
        other => other,
    })?;
    text_from_bytes(bytes, LINK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scenario_goes_through_a_link_unchanged() {
        let json = "{\n  \"ranks\": 4,\n  \"microbatches\": 8\n}\n";
        let fragment = to_fragment(json);
        assert!(fragment.starts_with("scenario="), "{fragment}");
        assert_eq!(from_fragment(&fragment).unwrap().unwrap(), json);
        assert_eq!(
            from_fragment(&format!("#view=1&{fragment}"))
                .unwrap()
                .unwrap(),
            json
        );
        assert!(from_fragment("#view=1").is_none());
        assert!(from_fragment("").is_none());
    }

    #[test]
    fn a_cut_or_changed_link_says_what_is_wrong() {
        let err = from_fragment("#scenario=ab%20cd").unwrap().unwrap_err();
        assert_eq!(
            err.to_string(),
            "the link: cannot read: the part after `scenario=` is not URL-safe base64: `%` at character 3 of it (was the link cut or changed?)"
        );
        let fragment = to_fragment(&"x".repeat(1000));
        let cut = &fragment[..fragment.len() - 3];
        let err = from_fragment(cut).unwrap().unwrap_err().to_string();
        assert!(
            err.starts_with("the link: cannot read: the scenario in it does not unpack ("),
            "{err}"
        );
        let err = from_fragment("scenario=A")
            .unwrap()
            .unwrap_err()
            .to_string();
        assert!(err.contains("not URL-safe base64"), "{err}");
    }

    #[test]
    fn a_link_that_unpacks_beyond_a_scenario_file_is_refused_before_it_is_held() {
        // 65 MiB of spaces deflate to about 65 KB: the reading stops at the file limit.
        let mut deflate =
            flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
        let chunk = vec![b' '; 1 << 20];
        for _ in 0..65 {
            deflate.write_all(&chunk).unwrap();
        }
        let packed = deflate.finish().unwrap();
        let fragment = format!("scenario={}", URL_SAFE_NO_PAD.encode(packed));
        let err = from_fragment(&fragment).unwrap().unwrap_err().to_string();
        assert!(
            err.starts_with("the link: cannot read: larger than a scenario file may be (64 MiB)"),
            "{err}"
        );
    }
}
