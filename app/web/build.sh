#!/usr/bin/env bash
# Builds the web site of Mpipe Studio (index.html, the JS glue, the wasm) into the folder given
# (default: target/web-site). Serve that folder over HTTP, e.g.:
#   python3 -m http.server 8080 --bind 127.0.0.1 --directory target/web-site
#
# With rustup's wasm32 target (`rustup target add wasm32-unknown-unknown`) the ordinary cargo
# builds it. Without it (these machines reach no rustup target), Debian's web toolchain builds
# the standard library from source (DESIGN.md §7):
#   apt-get install rustc-web cargo-web rust-web-src lld-22
# Either way the `wasm-bindgen` command must be the version of the `wasm-bindgen` crate in
# Cargo.lock (the script names the `cargo install` line when it is not).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-$root/target/web-site}"
cd "$root"

# The wasm-bindgen CLI must match the crate the app links, exactly.
want=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [ "$have" != "$want" ]; then
  echo "build.sh: needs wasm-bindgen $want (found: ${have:-none}); install it with:" >&2
  echo "  cargo install wasm-bindgen-cli --version $want" >&2
  exit 1
fi

if command -v rustup >/dev/null && rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  echo "build.sh: rustup's wasm32-unknown-unknown target" >&2
  cargo build --release --locked -p mpipe-studio --bin mpipe-studio --target wasm32-unknown-unknown \
    --target-dir "$root/target/web-rustup"
  wasm="$root/target/web-rustup/wasm32-unknown-unknown/release/mpipe-studio.wasm"
else
  echo "build.sh: Debian's web toolchain (std built from source)" >&2
  for need in /usr/bin/cargo /usr/bin/rustc wasm-ld-22; do
    if ! command -v "$need" >/dev/null; then
      echo "build.sh: no rustup wasm32 target and no $need; install one of:" >&2
      echo "  rustup target add wasm32-unknown-unknown" >&2
      echo "  apt-get install rustc-web cargo-web rust-web-src lld-22" >&2
      exit 1
    fi
  done
  # Debian's rustc and cargo (not rustup's), on the unstable -Zbuild-std they allow with
  # RUSTC_BOOTSTRAP; their own target folder, so neither toolchain rebuilds the other's.
  # Nothing of another toolchain's (a cargo test run sets some of these) reaches it.
  env -u RUSTC -u RUSTC_WRAPPER -u RUSTDOC -u RUSTUP_TOOLCHAIN -u CARGO -u CARGO_TARGET_DIR \
    -u RUSTFLAGS -u CARGO_ENCODED_RUSTFLAGS -u CARGO_BUILD_TARGET \
    PATH=/usr/bin:/bin RUSTC_BOOTSTRAP=1 \
    CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER=wasm-ld-22 \
    cargo build --release --locked -p mpipe-studio --bin mpipe-studio \
    --target wasm32-unknown-unknown -Zbuild-std=std,panic_abort --target-dir "$root/target/web"
  wasm="$root/target/web/wasm32-unknown-unknown/release/mpipe-studio.wasm"
fi

mkdir -p "$out"
wasm-bindgen --target web --no-typescript --out-dir "$out" "$wasm"
cp app/web/index.html "$out/index.html"
size=$(du -k "$out/mpipe-studio_bg.wasm" | cut -f1)
echo "build.sh: built $out (mpipe-studio_bg.wasm: ${size} KiB)" >&2
