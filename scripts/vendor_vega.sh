#!/usr/bin/env bash
# Vendor Vega, Vega-Lite and Vega-Embed into _static/vendor/ so the built book draws its altair
# charts without a network (the default altair output loads them from a CDN), and MathJax into
# _extra/mathjax/ so its formulas typeset offline too. MathJax stays out of _static because Jupyter
# Book adds every .js under _static to every page, and Sphinx loads MathJax itself on pages with
# math: it would load twice. Sphinx copies _extra/ to the site's root (html_extra_path).
# Run once when upgrading; the result is committed. Needs npm and the npm registry, nothing else.
set -euo pipefail

VEGA_VERSION="${VEGA_VERSION:-6.4.0}"
VEGA_LITE_VERSION="${VEGA_LITE_VERSION:-6.4.3}"
VEGA_EMBED_VERSION="${VEGA_EMBED_VERSION:-7.3.0}"
MATHJAX_VERSION="${MATHJAX_VERSION:-3.2.2}"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$root/_static/vendor"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cd "$work"
npm pack --silent "vega@$VEGA_VERSION" "vega-lite@$VEGA_LITE_VERSION" "vega-embed@$VEGA_EMBED_VERSION" \
    "mathjax@$MATHJAX_VERSION" >/dev/null

mkdir -p "$dest"
for name in vega vega-lite vega-embed; do
    mkdir -p "$work/$name"
    tar xzf "$work/$name"-[0-9]*.tgz -C "$work/$name"
    # The source map is not shipped, so drop the comment that points browsers at it.
    sed '/^\/\/# sourceMappingURL=/d' "$work/$name/package/build/$name.min.js" > "$dest/$name.min.js"
    cp "$work/$name/package/LICENSE" "$dest/LICENSE-$name"
done

cat > "$dest/VERSIONS" <<TXT
Fetched with scripts/vendor_vega.sh (npm pack), unmodified except that the sourceMappingURL
comment is removed. Each library's BSD-3-Clause licence is in LICENSE-<name>.
vega $VEGA_VERSION
vega-lite $VEGA_LITE_VERSION
vega-embed $VEGA_EMBED_VERSION
TXT
# The "full" TeX component carries every TeX extension, so nothing is fetched on demand.
mathjax_dest="$root/_extra/mathjax"
mkdir -p "$mathjax_dest" "$work/mathjax"
tar xzf "$work"/mathjax-[0-9]*.tgz -C "$work/mathjax"
cp "$work/mathjax/package/es5/tex-svg-full.js" "$mathjax_dest/tex-svg-full.js"
cp "$work/mathjax/package/LICENSE" "$mathjax_dest/LICENSE"
cat > "$mathjax_dest/VERSIONS" <<TXT
Fetched with scripts/vendor_vega.sh (npm pack), unmodified. Apache-2.0 licence in LICENSE.
mathjax $MATHJAX_VERSION (es5/tex-svg-full.js)
TXT

echo "vendored into $dest and $mathjax_dest:"
ls -l "$dest" "$mathjax_dest"
