//! The architecture test (in the spirit of rust-analyzer's tidy tests): it reads every `crate::`,
//! `super::` and `self::` path of the non-test code of `core/src` and `app/src` — in `use`
//! trees, in expressions and types, and inside macro calls — and fails, naming file and line, on
//!
//! - an import between top-level modules that does not go strictly down the floor table
//!   ([`CORE_FLOORS`], [`APP_FLOORS`]; the README's architecture section shows the same tables,
//!   and a test compares them);
//! - a circle between the sibling modules of any folder (`graph/build.rs` ↔ `graph/compose/`),
//!   a path through a folder's `pub use` counted as the module that defines the item;
//! - a glob import of the crate's own modules (`use super::*`), which hides what it takes;
//! - a top-level module missing from its table, a table entry with no module, or an item taken
//!   from the crate root's re-exports (name the module it lives in);
//! - a schedule that needs more than its own file and one registry line: outside its file, no
//!   non-test code names its constant or its module, except that one line of
//!   `schedules/mod.rs`, and none spells its name as a string (not even `schedules/mod.rs`).
//!
//! Test code (`#[cfg(test)]` items) is free to reach anywhere.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

use proc_macro2::{Span, TokenStream, TokenTree};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// `core/src`'s floors, bottom first: a module imports only from strictly lower floors.
const CORE_FLOORS: &[(&str, u32)] = &[
    ("vocab", 0),
    ("workload", 1),
    ("schedules", 1),
    ("scenario", 2),
    ("algebra", 3),
    ("graph", 4),
    ("sim", 5),
    ("tune", 6),
    ("trace", 7),
    ("view", 7),
    ("report", 8),
    ("files", 9),
];

/// `app/src`'s floors, bottom first.
const APP_FLOORS: &[(&str, u32)] = &[
    ("fonts", 0),
    ("geometry", 0),
    ("samples", 0),
    ("state", 1),
    ("command", 2),
    ("timeline", 3),
    ("panels", 4),
    ("apply", 5),
    ("frame", 6),
];

/// One source file: its path (for messages), its module path and its text.
struct Source {
    file: String,
    module: Vec<String>,
    text: String,
}

/// A path that leaves its module: where it is written and the module path it names.
#[derive(Debug, Clone)]
struct Reference {
    line: usize,
    target: Vec<String>,
}

/// The module path of `relative` (`graph/compose/nested.rs` → `graph::compose::nested`,
/// `sim/mod.rs` → `sim`, `lib.rs` → the root).
fn module_of(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs").to_string();
        if !matches!(stem.as_str(), "mod" | "lib") {
            parts.push(stem);
        }
    }
    parts
}

/// Every `.rs` file under `src`, but the binaries' (`main.rs`, `bin/`): they are other crates.
/// Files are named as `shown`/… (`core/src/graph/build.rs`).
fn sources(src: &Path, shown: &str) -> Vec<Source> {
    read_tree(src, shown, false)
}

/// The binaries' files (`main.rs`, `bin/`), which [`sources`] leaves out; their module paths are
/// not the library's.
fn sources_with_binaries(src: &Path, shown: &str) -> Vec<Source> {
    read_tree(src, shown, true)
}

/// The `.rs` files under `src`: the binaries' (`binaries`), or the library's.
fn read_tree(src: &Path, shown: &str, binaries: bool) -> Vec<Source> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|x| x == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(src, &mut files);
    files
        .into_iter()
        .filter_map(|path| {
            let relative = path.strip_prefix(src).unwrap().to_path_buf();
            let binary = relative.starts_with("bin") || relative == Path::new("main.rs");
            (binary == binaries).then(|| Source {
                file: Path::new(shown).join(&relative).display().to_string(),
                module: if binary {
                    Vec::new()
                } else {
                    module_of(&relative)
                },
                text: std::fs::read_to_string(&path).unwrap(),
            })
        })
        .collect()
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<TokenStream>()
                .is_ok_and(|t| t.to_string() == "test")
    })
}

/// A path written in `module` as segments (`crate`, `graph`, `event`, `Phase`): its absolute
/// module path, when it starts at `crate`, `self` or `super`.
fn resolve(module: &[String], segments: &[String]) -> Option<Vec<String>> {
    let (first, rest) = segments.split_first()?;
    let base: Vec<String> = match first.as_str() {
        "crate" => Vec::new(),
        "self" => module.to_vec(),
        "super" => {
            let mut base = module.to_vec();
            base.pop();
            let mut rest = rest;
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
            return Some(base.into_iter().chain(rest.iter().cloned()).collect());
        }
        _ => return None,
    };
    Some(base.into_iter().chain(rest.iter().cloned()).collect())
}

/// Collects the references of one file's non-test code, and what else the schedule check reads:
/// identifiers and string literals, with their lines.
struct Reader<'a> {
    module: &'a [String],
    references: Vec<Reference>,
    words: Vec<(usize, String)>,
    /// Every path written (`mpipe::schedules::wavek::wave_size`), with its line.
    paths: Vec<(usize, Vec<String>)>,
    /// String literals compared with something (`==`, `!=`, a match pattern), with their lines.
    compared: Vec<(usize, String)>,
    /// Every string literal, in code and in macro calls, with its line.
    literals: Vec<(usize, String)>,
    /// Glob imports (`use super::*`): the line and the path as written.
    globs: Vec<(usize, Vec<String>)>,
    /// What a `use` names: the name it gives and the path it takes, as written (a child module
    /// reaches its folder's private imports through `super::`, so every `use` counts).
    reexports: Vec<(String, Vec<String>)>,
}

impl Reader<'_> {
    fn resolve(&self, segments: &[String]) -> Option<Vec<String>> {
        resolve(self.module, segments)
    }

    fn add(&mut self, span: Span, segments: &[String]) {
        self.paths.push((span.start().line, segments.to_vec()));
        if let Some(target) = self.resolve(segments) {
            self.references.push(Reference {
                line: span.start().line,
                target,
            });
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                prefix.push(n.ident.to_string());
                self.add(n.ident.span(), prefix);
                prefix.pop();
            }
            syn::UseTree::Rename(r) => {
                prefix.push(r.ident.to_string());
                self.add(r.ident.span(), prefix);
                prefix.pop();
            }
            syn::UseTree::Glob(g) => {
                let span = g.star_token.spans[0];
                self.globs.push((span.start().line, prefix.clone()));
                self.add(span, prefix);
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }

    /// Paths and words inside a macro call's tokens (`format!`, `matches!`, `assert!`).
    fn tokens(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < trees.len() {
            match &trees[i] {
                TokenTree::Group(g) => self.tokens(g.stream()),
                TokenTree::Literal(l) => {
                    if let Ok(s) = syn::parse_str::<syn::LitStr>(&l.to_string()) {
                        self.words.push((l.span().start().line, s.value()));
                        self.literals.push((l.span().start().line, s.value()));
                    }
                }
                TokenTree::Ident(id) => {
                    self.words.push((id.span().start().line, id.to_string()));
                    let word = id.to_string();
                    if matches!(word.as_str(), "crate" | "super" | "self") {
                        // `crate :: a :: b`: the joint colons are two punct tokens.
                        let mut segments = vec![word];
                        let mut j = i + 1;
                        while let (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b))) =
                            (trees.get(j), trees.get(j + 1))
                            && a.as_char() == ':'
                            && b.as_char() == ':'
                        {
                            match trees.get(j + 2) {
                                Some(TokenTree::Ident(next)) => {
                                    segments.push(next.to_string());
                                    j += 3;
                                }
                                _ => break,
                            }
                        }
                        if segments.len() > 1 {
                            self.add(id.span(), &segments);
                        }
                        let line = id.span().start().line;
                        self.words
                            .extend(segments.into_iter().skip(1).map(|s| (line, s)));
                        i = j;
                        continue;
                    }
                }
                TokenTree::Punct(_) => {}
            }
            i += 1;
        }
    }
}

/// Skips test items; reads paths, identifiers and string literals everywhere else.
impl<'ast> Visit<'ast> for Reader<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Const(i) => &i.attrs,
            syn::Item::Enum(i) => &i.attrs,
            syn::Item::Fn(i) => &i.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Macro(i) => &i.attrs,
            syn::Item::Mod(i) => &i.attrs,
            syn::Item::Static(i) => &i.attrs,
            syn::Item::Struct(i) => &i.attrs,
            syn::Item::Trait(i) => &i.attrs,
            syn::Item::Type(i) => &i.attrs,
            syn::Item::Use(i) => &i.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if is_cfg_test(attrs) {
            return;
        }
        if let syn::Item::Use(u) = item {
            self.use_tree(&mut Vec::new(), &u.tree);
            reexports(&mut Vec::new(), &u.tree, &mut self.reexports);
        }
        syn::visit::visit_item(self, item);
    }

    /// An attribute's arguments (`#[serde(rename = "…")]`, `#[error("…")]`), but a doc
    /// comment's.
    fn visit_attribute(&mut self, attr: &'ast syn::Attribute) {
        if let syn::Meta::List(list) = &attr.meta {
            self.tokens(list.tokens.clone());
        }
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_cfg_test(&f.attrs) {
            syn::visit::visit_impl_item_fn(self, f);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if let Some(first) = path.segments.first() {
            self.add(first.ident.span(), &segments);
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_ident(&mut self, ident: &'ast proc_macro2::Ident) {
        self.words
            .push((ident.span().start().line, ident.to_string()));
    }

    fn visit_lit_str(&mut self, lit: &'ast syn::LitStr) {
        self.words.push((lit.span().start().line, lit.value()));
        self.literals.push((lit.span().start().line, lit.value()));
    }

    fn visit_expr_binary(&mut self, e: &'ast syn::ExprBinary) {
        if matches!(e.op, syn::BinOp::Eq(_) | syn::BinOp::Ne(_)) {
            for side in [&*e.left, &*e.right] {
                if let syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) = side
                {
                    self.compared.push((s.span().start().line, s.value()));
                }
            }
        }
        syn::visit::visit_expr_binary(self, e);
    }

    fn visit_pat(&mut self, p: &'ast syn::Pat) {
        if let syn::Pat::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) = p
        {
            self.compared.push((s.span().start().line, s.value()));
        }
        syn::visit::visit_pat(self, p);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        syn::visit::visit_macro(self, mac);
        self.tokens(mac.tokens.clone());
    }
}

/// The names a `use` tree gives, each with the path it takes (as written).
fn reexports(prefix: &mut Vec<String>, tree: &syn::UseTree, out: &mut Vec<(String, Vec<String>)>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            reexports(prefix, &p.tree, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let mut path = prefix.clone();
            path.push(n.ident.to_string());
            out.push((n.ident.to_string(), path));
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.clone();
            path.push(r.ident.to_string());
            out.push((r.rename.to_string(), path));
        }
        syn::UseTree::Group(g) => {
            for t in &g.items {
                reexports(prefix, t, out);
            }
        }
        // A glob is refused on its own (it hides what it takes).
        syn::UseTree::Glob(_) => {}
    }
}

/// What one file's non-test code refers to, and its words.
fn read(source: &Source) -> Reader<'_> {
    let ast = syn::parse_file(&source.text).unwrap_or_else(|e| panic!("{}: {e}", source.file));
    let mut reader = Reader {
        module: &source.module,
        references: Vec::new(),
        words: Vec::new(),
        paths: Vec::new(),
        compared: Vec::new(),
        literals: Vec::new(),
        globs: Vec::new(),
        reexports: Vec::new(),
    };
    reader.visit_file(&ast);
    reader
}

/// The imports between the child modules of one folder: `(from, to)` → where each is written.
type Edges = BTreeMap<(String, String), BTreeSet<String>>;

/// Every violation of the floors in `sources`, as `file:line: message`, sorted.
fn floor_violations(sources: &[Source], floors: &[(&str, u32)]) -> Vec<String> {
    let modules: BTreeSet<Vec<String>> = sources
        .iter()
        .flat_map(|s| (1..=s.module.len()).map(|n| s.module[..n].to_vec()))
        .collect();
    let floor = |name: &str| floors.iter().find(|(m, _)| *m == name).map(|(_, f)| *f);
    let mut out = Vec::new();
    for top in modules.iter().filter(|m| m.len() == 1) {
        if floor(&top[0]).is_none() {
            out.push(format!(
                "module `{}` has no floor: add it to the floor table",
                top[0]
            ));
        }
    }
    for (name, _) in floors {
        if !modules.contains(&vec![name.to_string()]) {
            out.push(format!(
                "the floor table places `{name}`, which is no module: remove it or add the module"
            ));
        }
    }
    let read: Vec<Reader> = sources.iter().map(read).collect();
    let reexported = reexport_table(sources, &read, &modules);
    // Per folder: the edges between its child modules, with where each is written.
    let mut sibling: BTreeMap<Vec<String>, Edges> = BTreeMap::new();
    for (source, reader) in sources.iter().zip(&read) {
        for (line, path) in &reader.globs {
            if absolute(&source.module, path, &modules).is_some_and(|m| modules.contains(&m)) {
                out.push(format!(
                    "{}:{line}: a glob import of the crate's own modules hides what it takes: name the items",
                    source.file
                ));
            }
        }
        // Each path as written, and (an item of the crate root aside, refused below) as followed
        // through the `use`s that pass it on to the module that defines it: both must hold.
        let followed = reader.references.iter().filter_map(|r| {
            let defined = defined_at(&r.target, &reexported, &modules);
            (r.target.len() > 1 && modules.contains(&r.target[..1]) && defined != r.target)
                .then_some(Reference {
                    line: r.line,
                    target: defined,
                })
        });
        let references: Vec<Reference> =
            reader.references.iter().cloned().chain(followed).collect();
        for r in &references {
            let at = format!("{}:{}", source.file, r.line);
            let shared = source
                .module
                .iter()
                .zip(&r.target)
                .take_while(|(a, b)| a == b)
                .count();
            // Into the module itself or one of its own children, or up to an item of a folder
            // that holds it: no edge between siblings.
            let (Some(from), Some(to)) = (source.module.get(shared), r.target.get(shared)) else {
                continue;
            };
            let child = r.target[..=shared].to_vec();
            if !modules.contains(&child) {
                if shared == 0 {
                    out.push(format!(
                        "{at}: `crate::{}` is an item of the crate root, the top floor: import it from the module it lives in",
                        r.target.join("::")
                    ));
                }
                continue;
            }
            if shared == 0 {
                if let (Some(a), Some(b)) = (floor(from), floor(to))
                    && b >= a
                {
                    // The module imported: the longest prefix of the path that is one.
                    let depth = (1..=r.target.len())
                        .rev()
                        .find(|&n| modules.contains(&r.target[..n]))
                        .unwrap_or(1);
                    let how = if a == b { "a sideways" } else { "an upward" };
                    out.push(format!(
                        "{at}: `{from}` (floor {a}) imports `crate::{}` (floor {b}): {how} import; a module imports only from floors below its own",
                        r.target[..depth].join("::")
                    ));
                }
                continue;
            }
            sibling
                .entry(source.module[..shared].to_vec())
                .or_default()
                .entry((from.clone(), to.clone()))
                .or_default()
                .insert(at);
        }
    }
    for (folder, edges) in &sibling {
        for cycle in cycles(edges.keys()) {
            let mut lines = vec![format!(
                "folder `{}`: its modules {} import each other in a circle:",
                folder.join("/"),
                cycle.join(" → ")
            )];
            for pair in cycle.windows(2) {
                if let Some(at) = edges.get(&(pair[0].clone(), pair[1].clone())) {
                    let at: Vec<&str> = at.iter().map(String::as_str).collect();
                    lines.push(format!("  {} → {}: {}", pair[0], pair[1], at.join(", ")));
                }
            }
            out.push(lines.join("\n"));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Every `pub use` of `sources`: the path it makes (`graph::Builder`) → the path it takes
/// (`graph::build::Builder`), both absolute.
fn reexport_table(
    sources: &[Source],
    read: &[Reader],
    modules: &BTreeSet<Vec<String>>,
) -> BTreeMap<Vec<String>, Vec<String>> {
    let mut table = BTreeMap::new();
    for (source, reader) in sources.iter().zip(read) {
        for (name, path) in &reader.reexports {
            if let Some(target) = absolute(&source.module, path, modules) {
                let mut made = source.module.clone();
                made.push(name.clone());
                table.insert(made, target);
            }
        }
    }
    table
}

/// The absolute path of `path` written in `module`: from `crate::`, `self::`, `super::`, or a
/// child module's name (`pub use build::X`); `None` for another crate's.
fn absolute(
    module: &[String],
    path: &[String],
    modules: &BTreeSet<Vec<String>>,
) -> Option<Vec<String>> {
    resolve(module, path).or_else(|| {
        let mut child = module.to_vec();
        child.push(path.first()?.clone());
        modules.contains(&child).then(|| [module, path].concat())
    })
}

/// Where the item a path names is defined: `path` followed through the re-exports it passes
/// (a bounded number of them: a circle of `pub use`s does not compile anyway).
fn defined_at(
    path: &[String],
    reexported: &BTreeMap<Vec<String>, Vec<String>>,
    modules: &BTreeSet<Vec<String>>,
) -> Vec<String> {
    let mut path = path.to_vec();
    for _ in 0..16 {
        // The longest prefix that is a module, and the name that follows it.
        let Some(n) = (1..path.len())
            .rev()
            .find(|&n| modules.contains(&path[..n]))
        else {
            break;
        };
        match reexported.get(&path[..=n]) {
            Some(target) => path = [target.as_slice(), &path[n + 1..]].concat(),
            None => break,
        }
    }
    path
}

/// The circles of a directed graph given by its edges: for each strongly connected component of
/// more than one node, one closed walk through it (`a → b → a`).
fn cycles<'a>(edges: impl Iterator<Item = &'a (String, String)>) -> Vec<Vec<String>> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (a, b) in edges {
        next.entry(a).or_default().push(b);
        next.entry(b).or_default();
    }
    let reach = |from: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.to_string()];
        while let Some(at) = stack.pop() {
            for &n in next.get(at.as_str()).into_iter().flatten() {
                if seen.insert(n.to_string()) {
                    stack.push(n.to_string());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&str, BTreeSet<String>> = next.keys().map(|&k| (k, reach(k))).collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for &start in next.keys() {
        if done.contains(start) || !reaches[start].contains(start) {
            continue;
        }
        // Its component: the nodes it reaches that reach it back.
        let component: BTreeSet<&str> = reaches[start]
            .iter()
            .map(String::as_str)
            .filter(|n| reaches[n].contains(start))
            .collect();
        done.extend(component.iter().copied());
        // A shortest walk start → … → start inside the component (breadth first).
        let mut parent: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        let mut last = start;
        'search: while let Some(at) = queue.pop_front() {
            for &n in &next[at] {
                if n == start {
                    last = at;
                    break 'search;
                }
                if component.contains(n) && !parent.contains_key(n) {
                    parent.insert(n, at);
                    queue.push_back(n);
                }
            }
        }
        let mut walk = vec![start.to_string()];
        let mut at = last;
        while at != start {
            walk.push(at.to_string());
            at = parent[at];
        }
        walk.push(start.to_string());
        walk.reverse();
        out.push(walk);
    }
    out
}

fn src(crate_dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(crate_dir)
        .join("src")
}

fn assert_floors(crate_dir: &str, floors: &[(&str, u32)]) {
    let shown = format!("{crate_dir}/src");
    let found = floor_violations(&sources(&src(crate_dir), &shown), floors);
    assert!(
        found.is_empty(),
        "{} import(s) break the floors of {crate_dir}/src:\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn core_imports_go_down_the_floors() {
    assert_floors("core", CORE_FLOORS);
}

#[test]
fn app_imports_go_down_the_floors() {
    assert_floors("app", APP_FLOORS);
}

/// Sources given as `(relative path, text)`.
fn fake(files: &[(&str, &str)]) -> Vec<Source> {
    files
        .iter()
        .map(|(path, text)| Source {
            file: path.to_string(),
            module: module_of(Path::new(path)),
            text: text.to_string(),
        })
        .collect()
}

#[test]
fn the_checker_finds_upward_sideways_and_circular_imports() {
    let floors = [("low", 0), ("high", 1), ("other", 1)];
    let files = fake(&[
        ("lib.rs", "pub mod low; pub mod high; pub mod other;"),
        (
            "low/mod.rs",
            "pub mod a;\npub mod b;\npub mod c;\nuse crate::high::X;\n",
        ),
        // a → b → a through a `super::` path and a path in a macro call; c only below.
        (
            "low/a.rs",
            "fn f() { let _ = format!(\"{}\", crate::low::b::G); }",
        ),
        ("low/b.rs", "use super::a::F;\nuse super::c::H;"),
        ("low/c.rs", "pub const H: u8 = 0;"),
        (
            "high.rs",
            "use crate::low::a::F;\nuse crate::{other::Y, low::c};\nuse crate::Re;\n#[cfg(test)]\nmod tests { use crate::other::Z; }",
        ),
        ("other.rs", "fn g() -> crate::low::c::H { todo!() }"),
    ]);
    assert_eq!(
        floor_violations(&files, &floors),
        [
            "folder `low`: its modules a → b → a import each other in a circle:\n  a → b: low/a.rs:1\n  b → a: low/b.rs:1",
            "high.rs:2: `high` (floor 1) imports `crate::other` (floor 1): a sideways import; a module imports only from floors below its own",
            "high.rs:3: `crate::Re` is an item of the crate root, the top floor: import it from the module it lives in",
            "low/mod.rs:4: `low` (floor 0) imports `crate::high` (floor 1): an upward import; a module imports only from floors below its own",
        ]
    );
    // A module the table does not place, and a table entry with no module.
    let files = fake(&[("lib.rs", "pub mod lost;"), ("lost.rs", "")]);
    assert_eq!(
        floor_violations(&files, &[("gone", 0)]),
        [
            "module `lost` has no floor: add it to the floor table",
            "the floor table places `gone`, which is no module: remove it or add the module",
        ]
    );
}

#[test]
fn the_checker_follows_reexports_and_refuses_globs() {
    // b reaches a through the folder's `pub use` (`super::F` is `a::F`): a circle all the same.
    // An item taken from a higher floor's re-export is an upward import, wherever it is defined.
    let files = fake(&[
        ("lib.rs", "pub mod low;\npub mod high;"),
        (
            "low/mod.rs",
            "pub mod a;\npub mod b;\npub use a::F;\nuse a::*;\nuse self::E::*;\nenum E { X }",
        ),
        (
            "low/a.rs",
            "pub const F: u8 = 0;\nuse super::b::G;\nfn h() -> u8 { crate::high::HF }",
        ),
        (
            "low/b.rs",
            "pub const G: u8 = 0;\nfn g() -> u8 { super::F }\nuse super::*;\n#[cfg(test)]\nmod tests { use super::*; }",
        ),
        ("high.rs", "pub use crate::low::a::F as HF;"),
    ]);
    assert_eq!(
        floor_violations(&files, &[("low", 0), ("high", 1)]),
        [
            "folder `low`: its modules a → b → a import each other in a circle:\n  a → b: low/a.rs:2\n  b → a: low/b.rs:2",
            "low/a.rs:3: `low` (floor 0) imports `crate::high` (floor 1): an upward import; a module imports only from floors below its own",
            "low/b.rs:3: a glob import of the crate's own modules hides what it takes: name the items",
            "low/mod.rs:4: a glob import of the crate's own modules hides what it takes: name the items",
        ]
    );
}

/// The schedules the registry lists: `(file, constant)` pairs read off `registry!`'s call in
/// `schedules/mod.rs`.
fn registered(mod_rs: &str) -> Vec<(String, String, usize)> {
    let ast = syn::parse_file(mod_rs).unwrap();
    let call = ast
        .items
        .iter()
        .find_map(|item| match item {
            syn::Item::Macro(m) if m.mac.path.is_ident("registry") => Some(m.mac.tokens.clone()),
            _ => None,
        })
        .expect("schedules/mod.rs calls registry!");
    let trees: Vec<TokenTree> = call.into_iter().collect();
    trees
        .windows(4)
        .filter_map(|w| match w {
            [
                TokenTree::Ident(file),
                TokenTree::Punct(a),
                TokenTree::Punct(b),
                TokenTree::Ident(c),
            ] if a.as_char() == ':' && b.as_char() == ':' => {
                Some((file.to_string(), c.to_string(), file.span().start().line))
            }
            _ => None,
        })
        .collect()
}

/// Every place outside a schedule's own file that names it: its constant, its module
/// (`schedules::wavek`) or its skeleton string in a comparison — as `file:line: what`.
fn schedule_namings(sources: &[Source], names: &[(String, String, &str)]) -> Vec<String> {
    let mut out = Vec::new();
    for source in sources {
        let reader = read(source);
        for (file, constant, name) in names {
            let own = source.file.ends_with(&format!("schedules/{file}.rs"));
            let shared = ["mod", "skeleton", "slot", "listed"]
                .iter()
                .any(|f| source.file.ends_with(&format!("schedules/{f}.rs")));
            // Other schedules' files may build on it (zb1p is 1f1b's split sibling).
            let sibling = source.file.starts_with("core/src/schedules/") && !shared;
            if own || sibling {
                continue;
            }
            let mut lines: BTreeSet<(usize, String)> = BTreeSet::new();
            // `schedules/mod.rs` holds the registry line (checked on its own).
            let registry = source.file.ends_with("schedules/mod.rs");
            for (line, word) in reader.words.iter().filter(|_| !registry) {
                if word == constant {
                    lines.insert((*line, format!("names `{constant}`")));
                }
            }
            for (line, path) in reader.paths.iter().filter(|_| !registry) {
                if path
                    .windows(2)
                    .any(|w| w[0] == "schedules" && w[1] == *file)
                {
                    lines.insert((*line, format!("names `schedules::{file}`")));
                }
            }
            for (line, text) in &reader.compared {
                if text == name {
                    lines.insert((*line, format!("compares with \"{name}\"")));
                }
            }
            // A name spelled out is one the schedule's file no longer owns.
            for (line, text) in &reader.literals {
                if text == name && !lines.iter().any(|(l, _)| l == line) {
                    lines.insert((*line, format!("spells \"{name}\"")));
                }
            }
            out.extend(
                lines
                    .into_iter()
                    .map(|(line, what)| format!("{}:{line}: {what}", source.file)),
            );
        }
    }
    out.sort();
    out
}

#[test]
fn a_schedule_is_one_file_and_one_registry_line() {
    let core = sources(&src("core"), "core/src");
    let mod_rs = core
        .iter()
        .find(|s| s.file == "core/src/schedules/mod.rs")
        .unwrap();
    let listed = registered(&mod_rs.text);
    // The registry and the library agree, one entry per schedule file.
    let names: Vec<&str> = mpipe::schedules::REGISTRY
        .iter()
        .map(|s| s.name())
        .collect();
    assert_eq!(listed.len(), names.len(), "registry! lists {listed:?}");
    let files: BTreeSet<String> = std::fs::read_dir(src("core").join("schedules"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|f| f.strip_suffix(".rs").map(str::to_string))
        .filter(|f| !matches!(f.as_str(), "mod" | "skeleton" | "slot" | "listed"))
        .collect();
    let in_registry: BTreeSet<String> = listed.iter().map(|(f, _, _)| f.clone()).collect();
    assert_eq!(
        files, in_registry,
        "every schedule file is registered, and only those"
    );
    // Inside mod.rs, each schedule appears on its one registry line and nowhere else.
    let reader = read(mod_rs);
    for (file, constant, line) in &listed {
        let mentions: BTreeSet<usize> = reader
            .words
            .iter()
            .filter(|(_, w)| w == file || w == constant)
            .map(|(l, _)| *l)
            .collect();
        assert_eq!(
            mentions,
            BTreeSet::from([*line]),
            "schedules/mod.rs names `{file}` outside its registry line"
        );
    }
    // Outside schedules/, no code names one: not the core, its CLI or the app.
    let mut everything = core;
    everything.extend(sources_with_binaries(&src("core"), "core/src"));
    everything.extend(sources(&src("app"), "app/src"));
    everything.extend(sources_with_binaries(&src("app"), "app/src"));
    let triples: Vec<(String, String, &str)> = listed
        .iter()
        .zip(&names)
        .map(|((f, c, _), n)| (f.clone(), c.clone(), *n))
        .collect();
    let found = schedule_namings(&everything, &triples);
    assert!(
        found.is_empty(),
        "code outside schedules/ names a schedule (a new schedule must need only its file and its registry line):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_naming_check_finds_a_schedule_named_outside_its_file() {
    let files = fake(&[
        ("schedules/wavek.rs", "pub const WAVEK: u8 = 0;"),
        (
            "tune/sweep.rs",
            "fn f(s: &str) -> bool { let k = mpipe::schedules::wavek::wave_size(); s == \"wavek\" }\nfn g() { use crate::schedules::WAVEK; }\nfn h(s: &str) -> &str { match s { \"wavek\" => \"wavek\", _ => \"\" } }\nfn k() -> String { format!(\"{}\", \"wavek\") }\n#[serde(rename = \"wavek\")]\nstruct S;",
        ),
    ]);
    let names = [("wavek".to_string(), "WAVEK".to_string(), "wavek")];
    assert_eq!(
        schedule_namings(&files, &names),
        [
            "tune/sweep.rs:1: compares with \"wavek\"",
            "tune/sweep.rs:1: names `schedules::wavek`",
            "tune/sweep.rs:2: names `WAVEK`",
            "tune/sweep.rs:3: compares with \"wavek\"",
            "tune/sweep.rs:4: spells \"wavek\"",
            "tune/sweep.rs:5: spells \"wavek\"",
        ]
    );
}

/// The floor table the README shows after `heading`: `(module, floor)` for each backticked module
/// of its rows (a path such as `bin/mpipe/` and the unfloored `lib.rs` left out).
fn readme_floors(readme: &str, heading: &str) -> Vec<(String, u32)> {
    let rows = readme
        .lines()
        .skip_while(|l| l.trim() != heading)
        .skip(1)
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'));
    let mut out = Vec::new();
    for row in rows {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (Some(floor), Some(modules)) = (cells.get(1), cells.get(2)) else {
            continue;
        };
        let Ok(floor) = floor.parse::<u32>() else {
            continue;
        };
        for (i, name) in modules.split('`').enumerate() {
            let name = name.trim_end_matches('/');
            if i % 2 == 1 && !name.contains('/') && !name.contains('.') {
                out.push((name.to_string(), floor));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn the_readme_shows_the_floors_the_test_checks() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
            .unwrap();
    for (heading, floors) in [
        ("`core/src`, bottom first:", CORE_FLOORS),
        ("`app/src`, bottom first:", APP_FLOORS),
    ] {
        let mut expected: Vec<(String, u32)> =
            floors.iter().map(|(m, f)| (m.to_string(), *f)).collect();
        expected.sort();
        assert_eq!(
            readme_floors(&readme, heading),
            expected,
            "the README's table after {heading} differs from the architecture test's"
        );
    }
    // How a table reads: several modules a row, paths and files left out, the table's end kept.
    let table = "x, bottom first:\n\n| floor | module | what |\n|---|---|---|\n| 0 | `a/`, `b` | … `not` |\n| 2 | `files`, `bin/mpipe/` | |\n| — | `lib.rs` | |\n\n| 9 | `after` | |";
    assert_eq!(
        readme_floors(table, "x, bottom first:"),
        [
            ("a".to_string(), 0),
            ("b".to_string(), 0),
            ("files".to_string(), 2)
        ]
    );
}
