#!/bin/sh
# Rewrites the README's CLI figures (the fenced blocks marked `<!-- mpipe-output -->`) from what
# the CLI prints now; `cargo test` fails while any of them differs from the CLI's output.
set -eu
cd "$(dirname "$0")/.."
UPDATE_README=1 cargo test -p mpipe --test readme_figures
git --no-pager diff --stat -- README.md
