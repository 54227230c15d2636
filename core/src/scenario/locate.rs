//! Finds where a field sits in JSON text, so that errors found after parsing (a cut that is not
//! increasing, a skeleton list of the wrong length) can still name a line and column.
//!
//! This is a small tolerant scanner, not a parser: it walks the text once, following the path,
//! and gives up (returns `None`) on anything it does not understand.

/// A serde_json message without its " at line L column C" suffix (the caller says where).
pub fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message.get(..i).unwrap_or(message).to_string(),
        None => message.to_string(),
    }
}

/// One step of a field path: an object key or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSeg {
    Key(String),
    Index(usize),
}

/// Renders a path the way error messages show it: `model.layers[2].fwd_s`.
pub fn path_to_string(path: &[PathSeg]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            PathSeg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            PathSeg::Index(i) => {
                out.push('[');
                out.push_str(&i.to_string());
                out.push(']');
            }
        }
    }
    out
}

/// Parses a path written as `model.layers[2].fwd_s` back into segments.
pub fn parse_path(text: &str) -> Vec<PathSeg> {
    let mut segs = Vec::new();
    for part in text.split('.') {
        let (key, rest) = match part.find('[') {
            Some(i) => part.split_at(i),
            None => (part, ""),
        };
        if !key.is_empty() {
            segs.push(PathSeg::Key(key.to_string()));
        }
        for idx in rest.split('[').filter(|s| !s.is_empty()) {
            if let Ok(i) = idx.trim_end_matches(']').parse() {
                segs.push(PathSeg::Index(i));
            }
        }
    }
    segs
}

/// 1-based line and column of the value at `path` in `text`, or `None` when it cannot be found.
pub fn locate(text: &str, path: &[PathSeg]) -> Option<(usize, usize)> {
    // Positions count from after a byte-order mark, as the parser's do.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let bytes = text.as_bytes();
    let mut scanner = Scanner { bytes, pos: 0 };
    scanner.skip_ws();
    for seg in path {
        match seg {
            PathSeg::Key(key) => scanner.enter_key(key)?,
            PathSeg::Index(index) => scanner.enter_index(*index)?,
        }
        scanner.skip_ws();
    }
    Some(line_col(text, scanner.pos))
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

struct Scanner<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            self.pos += 1;
        }
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        self.skip_ws();
        (self.peek()? == byte).then(|| self.pos += 1)
    }

    /// Reads a string starting at the current quote and returns its raw contents.
    fn string(&mut self) -> Option<&[u8]> {
        self.expect(b'"')?;
        let start = self.pos;
        loop {
            match self.peek()? {
                b'\\' => self.pos += 2,
                b'"' => {
                    let s = self.bytes.get(start..self.pos)?;
                    self.pos += 1;
                    return Some(s);
                }
                _ => self.pos += 1,
            }
        }
    }

    /// Skips one whole value of any kind.
    fn skip_value(&mut self) -> Option<()> {
        self.skip_ws();
        match self.peek()? {
            b'"' => self.string().map(|_| ()),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.pos += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.pos += 1;
                }
            }
            _ => {
                while !matches!(self.peek(), None | Some(b',' | b'}' | b']')) {
                    self.pos += 1;
                }
                Some(())
            }
        }
    }

    fn enter_key(&mut self, key: &str) -> Option<()> {
        self.expect(b'{')?;
        loop {
            self.skip_ws();
            if self.peek()? == b'}' {
                return None;
            }
            let name = self.string()?;
            let found = name == key.as_bytes();
            self.expect(b':')?;
            self.skip_ws();
            if found {
                return Some(());
            }
            self.skip_value()?;
            self.skip_ws();
            if self.peek()? == b',' {
                self.pos += 1;
            }
        }
    }

    fn enter_index(&mut self, index: usize) -> Option<()> {
        self.expect(b'[')?;
        for _ in 0..index {
            self.skip_value()?;
            self.expect(b',')?;
        }
        self.skip_ws();
        (self.peek()? != b']').then_some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "{\n  \"a\": {\"b\": [1, {\"c\": \"x,]\"}, 3]},\n  \"cut\": [4, 2]\n}";

    #[test]
    fn finds_nested_values() {
        assert_eq!(locate(TEXT, &parse_path("cut")), Some((3, 10)));
        assert_eq!(locate(TEXT, &parse_path("cut[1]")), Some((3, 14)));
        assert_eq!(locate(TEXT, &parse_path("a.b[2]")), Some((2, 32)));
        assert_eq!(locate(TEXT, &parse_path("a.b[1].c")), Some((2, 24)));
    }

    #[test]
    fn missing_paths_give_none() {
        assert_eq!(locate(TEXT, &parse_path("nope")), None);
        assert_eq!(locate(TEXT, &parse_path("cut[7]")), None);
        assert_eq!(locate("{\"a\": [1,", &parse_path("a[3]")), None);
    }

    #[test]
    fn paths_round_trip() {
        let p = parse_path("model.layers[2].fwd_s");
        assert_eq!(
            p,
            vec![
                PathSeg::Key("model".into()),
                PathSeg::Key("layers".into()),
                PathSeg::Index(2),
                PathSeg::Key("fwd_s".into())
            ]
        );
        assert_eq!(path_to_string(&p), "model.layers[2].fwd_s");
    }
}
